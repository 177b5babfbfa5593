// SPDX-License-Identifier: GPL-2.0-only
// Server side: one record per statement a mariadbd thread runs.
//
// A statement begins at dispatch_command's entry (one per client command) or
// at mysql_parse's entry (each statement of a multi-statement COM_QUERY), and
// ends at the end-of-command stage site in dispatch_command (an emulated jcc,
// cheaper than a uretprobe: shared/FACTS.md section 2). Its outcome is read
// there from the THD at offsets userspace learnt from the binary. While it
// runs, per-thread state in task storage collects exact stage marks (one cheap
// probe per stage site, site id from the attach cookie) or stage samples
// (a CPU timer and the scheduler's switch tracepoint), so that each statement
// costs one ring record and no wakeup of its own (FACTS.md section 8).
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "ring.bpf.h"

char LICENSE[] SEC("license") = "GPL";

// Inputs: THD layout of the traced build (server/thd_layout.h), -1 = unknown.
const volatile __u32 target_tgid = 0;
const volatile __s64 off_thread_id = -1;
// The connection id is 8 bytes in MariaDB, 4 in MySQL: the bytes that count.
const volatile __u64 thread_id_mask = ~0ull;
const volatile __s64 off_da_errno = -1;
const volatile __s64 off_da_sqlstate = -1;
const volatile __s64 off_da_message = -1;
// At a statement's end, the THD fields below are copied in at most
// MT_THD_WINDOWS reads (window i to i * MT_THD_WINDOW_MAX of the gather area;
// server/read_plan.h plans them) and picked out of the copy at these
// positions; -1: unknown in this build. A read costs ~65 ns here whatever its
// size up to a KiB, and there are a dozen fields.
const volatile __s64 thd_win_off[MT_THD_WINDOWS] = {};
const volatile __u32 thd_win_len[MT_THD_WINDOWS] = {};
const volatile __s32 at_thread_id = -1;
const volatile __s32 at_query_id = -1;
const volatile __s32 at_sent_rows = -1;
const volatile __s32 at_examined_rows = -1;
const volatile __s32 at_query_string = -1;  // LEX_CSTRING {str, length}
const volatile __s32 at_db = -1;            // LEX_CSTRING
const volatile __s32 at_stmt_da = -1;
// The Diagnostics_area's status and affected rows, in one window after the
// THD's.
const volatile __s64 da_win_off = 0;
const volatile __u32 da_win_len = 0;
const volatile __s32 at_da_status = -1;
const volatile __s32 at_da_affected_rows = -1;
// The THD's own Diagnostics_area (-1: unknown), where m_stmt_da points
// unless a statement swapped in another: then both fields are picked out of
// the THD's windows at these positions, and the DA's window is not read.
const volatile __s64 off_main_da = -1;
const volatile __s32 at_main_da_status = -1;
const volatile __s32 at_main_da_affected_rows = -1;
// Diagnostics_area::m_status values of this build: DA_ERROR (-1: unknown),
// and a bit per status that reports affected rows (DA_OK, MariaDB's
// DA_OK_BULK). Records carry MT_DA_* instead.
const volatile __s32 da_error_status = -1;
const volatile __u32 da_ok_statuses = 0;
const volatile __s64 off_proc_info = -1;
// THD::security_ctx, and in Security_context: user, host, ip (char *).
const volatile __s64 off_security_ctx = -1;
const volatile __s64 off_sctx_user = -1;
const volatile __s64 off_sctx_host = -1;
const volatile __s64 off_sctx_ip = -1;
// Table I/O: handler::table_share, and TABLE_SHARE's db and table_name.
const volatile __s64 off_handler_table_share = -1;
const volatile __s64 off_share_db = -1;
const volatile __s64 off_share_table_name = -1;
// Send each connection's account once (trace file names, --user).
const volatile __u32 want_accounts = 0;
const volatile __u32 max_sql = 4096;
const volatile __u32 sample_period_us = 0;
// The stage site dispatch_command enters ("starting") before each further
// statement of a multi-statement query: that mark opens the next statement.
const volatile __u32 starting_site = ~0u;
// Sites from this index on enter a stage known only at run time.
const volatile __u32 first_dynamic_site = ~0u;
// From cond_site on: entries of THD::enter_cond(cond, mutex, stage, ...),
// from exit_cond_site on: of THD::exit_cond(stage, ...). The stage is an
// argument there, about to become THD::proc_info.
const volatile __u32 cond_site = ~0u;
const volatile __u32 exit_cond_site = ~0u;
// From stage_call_site on: entries of the out-of-line THD::enter_stage(new,
// old, func, file, line) of MySQL 8, where every stage change is one call:
// the stage is argument 2 as at exit_cond, and the source comes with it.
const volatile __u32 stage_call_site = ~0u;
// MySQL 8: THD::m_query_string (LEX_CSTRING), read where each statement is
// parsed (dispatch_sql_command has no text argument); -1: unknown.
const volatile __s64 off_query_string = -1;
// MySQL 8: a command's text is its arguments' (COM_STMT_PREPARE), not what
// THD::m_query_string holds by its end; and the address of the "starting"
// stage name, whose mark before a further statement of a multi-statement
// query opens that statement (as starting_site does on MariaDB); 0: unknown.
const volatile __u32 keep_entry_text = 0;
const volatile __u64 starting_stage_name = 0;
// The end probe fires once per statement, also between the statements of a
// multi-statement query (MySQL: log_slow_statement(THD*), called by
// dispatch_command after each), rather than once per command: a statement
// parsed after it begins a new one. `text_at_end`: the THD's query string
// is the statement's own text there (the slow log prints it), so SQL_TEXT
// is read from it.
const volatile __u32 end_per_statement = 0;
// COM_STMT_PREPARE's text is copied at dispatch_command's entry (the end
// comes after the reply has reused its buffer).
const volatile __u32 copy_prepare_text = 0;
const volatile __u32 text_at_end = 0;

// Switched by userspace while tracing: exact stage probes detach after
// --max-statements, and the records say which statements had them.
__u32 exact_stages = 0;
__u32 sampled_stages = 0;
// Set when server_switch is attached: CPU time comes from its clock.
__u32 switch_clock = 0;
// Waits: syscall tracepoints are attached; text_lo/hi: the server's code,
// where futex callers are looked for on the stack.
const volatile __u64 text_lo = 0;
const volatile __u64 text_hi = 0;

// Only statements of this connection id (0: all), and of at least this
// duration: filtered here, so skipped statements cost no record.
__u64 only_thread_id = 0;
__u64 min_duration_ns = 0;

// enum_server_command values whose text is not in the packet.
#define COM_QUIT 1
#define COM_INIT_DB 2
#define COM_QUERY 3
#define COM_CHANGE_USER 17
#define COM_STMT_PREPARE 22
#define COM_STMT_EXECUTE 23
#define COM_STMT_FETCH 28
#define COM_STMT_BULK_EXECUTE 250

// The statement a thread is running: the record being built, plus its stages.
struct thread_state {
    void *thd;
    __u64 text_src;  // where the statement text is in the server
    __u64 off_cpu_since;
    __u64 off_cpu_stage;
    // The thread's on-CPU time on bpf_ktime_get_ns()'s clock, kept by the
    // switch tracepoint: exact to the ns where the scheduler's own sum is
    // only brought up to date at ticks and switches.
    __u64 cpu_acc;
    __u64 on_since;  // 0: off CPU (or not yet seen on it)
    // The syscall in progress that may be a wait.
    __u64 sc_start;
    __u64 sc_object;
    __u64 sc_value;
    __u64 sc_caller;
    __u64 account_id;  // the connection whose account was sent last (0: none)
    // The handler row operation in progress (--table-io): the outermost one
    // of a thread, as a partitioned table's handler calls its partitions'.
    __u64 tio_start;
    __u64 tio_handler;
    __u32 tio_op;
    __u32 tio_depth;
    __u32 sc_kind;     // 0: none
    __u32 sc_flags;
    __u32 active;
    __u32 parses;   // mysql_parse calls of the current command
    __u32 arg_len;  // bytes in arg[]
    __u32 _pad0;
    // The argument of a command other than a query (a schema name...),
    // copied at entry: the packet buffer holds the reply by the end.
    __u8 arg[MT_MAX_DB];
    struct mt_stage_mark stages[MT_MAX_STAGES];
    struct mt_stage_samples samples[MT_STAGE_SLOTS];  // ev.n_samples of them in use
    struct mt_server_statement_event ev;              // last: its data[] is not used here
};

// Per thread, in the task's own storage: found through the task, without
// the hash lookup a map keyed by thread id costs on every program run (a
// statement with exact stages runs ~30). Freed with the thread, and all at
// once when the map goes.
struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct thread_state);
} threads SEC(".maps");

// A zeroed thread_state to create entries from (too large for the stack).
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct thread_state);
} zero_state SEC(".maps");

// Records are finished in a scratch slot (ring.bpf.h), then copied into the
// ring with their true size. A plain array: per-CPU values are limited.
struct scratch_slot {
    __u8 bytes[sizeof(struct mt_server_statement_event) + MT_STATEMENT_DATA_MAX];
    __u8 gather[MT_GATHER_BYTES];  // copies of the THD's and DA's windows
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct scratch_slot);
} scratch SEC(".maps");

static __always_inline int traced(void) {
    return (bpf_get_current_pid_tgid() >> 32) == target_tgid;
}

static __always_inline __u64 read_u64(const void *base, __s64 off) {
    __u64 v = 0;

    if (base && off >= 0)
        bpf_probe_read_user(&v, sizeof(v), base + off);
    return v;
}

static __always_inline __u32 read_u32(const void *base, __s64 off) {
    __u32 v = 0;

    if (base && off >= 0)
        bpf_probe_read_user(&v, sizeof(v), base + off);
    return v;
}

// A field of the gather area (0 when unknown or not copied).
static __always_inline __u64 gathered(const __u8 *g, __s32 at) {
    if (at < 0 || at > MT_GATHER_BYTES - 8)
        return 0;
    return *(const __u64 *)(g + at);
}

static __always_inline __u32 gathered_u32(const __u8 *g, __s32 at) {
    if (at < 0 || at > MT_GATHER_BYTES - 4)
        return 0;
    return *(const __u32 *)(g + at);
}

// Copies the THD's windows into g. A failed copy leaves zeroes (the read
// helpers clear their destination on failure, which a read of address 0 uses
// to clear a window with nothing to copy).
static __always_inline void gather(__u8 *g, void *thd) {
    for (int i = 0; i < MT_THD_WINDOWS; i++) {
        __u32 len = thd_win_len[i];

        if (len == 0 || len > MT_THD_WINDOW_MAX)
            continue;
        if (thd)
            bpf_probe_read_user(g + i * MT_THD_WINDOW_MAX, len, thd + thd_win_off[i]);
        else
            bpf_probe_read_kernel(g + i * MT_THD_WINDOW_MAX, len, 0);
    }
}

// The status and affected rows of the statement's Diagnostics_area `da`.
static __always_inline void da_outcome(__u8 *g, void *thd, void *da, __u32 *status,
                                       __u64 *affected) {
    __s32 status_at = at_main_da_status, affected_at = at_main_da_affected_rows;

    *status = 0;
    *affected = 0;
    if (!da)
        return;
    if (off_main_da < 0 || da != thd + off_main_da) {
        // Another area than the THD's own: one more copy.
        if (da_win_len == 0 || da_win_len > MT_DA_WINDOW_MAX)
            return;
        if (bpf_probe_read_user(g + MT_THD_WINDOWS * MT_THD_WINDOW_MAX, da_win_len,
                                da + da_win_off))
            return;
        status_at = at_da_status;
        affected_at = at_da_affected_rows;
    }
    *status = gathered_u32(g, status_at);
    if (*status < 32 && (da_ok_statuses & (1u << *status))) {
        *status = MT_DA_OK;
        *affected = gathered(g, affected_at);
    } else if (da_error_status >= 0 && *status == (__u32)da_error_status) {
        *status = MT_DA_ERROR;
    } else if (*status) {
        *status = MT_DA_OTHER;
    }
}

static __always_inline __u64 thread_id_of(void *thd) {
    return read_u64(thd, off_thread_id) & thread_id_mask;
}

// Called by the thread itself, so it is on a CPU now; `now`: bpf_ktime_get_ns()
// (one clock read serves a mark's time and its counters: they cost ~30 ns each).
static __always_inline void read_counters(struct thread_state *st, struct mt_task_counters *c,
                                          __u64 now) {
    struct task_struct *t = bpf_get_current_task_btf();

    if (switch_clock) {
        if (!st->on_since)
            st->on_since = now;
        c->cpu_ns = st->cpu_acc + (now - st->on_since);
    } else {
        c->cpu_ns = t->se.sum_exec_runtime;
    }
    c->utime_ns = t->utime;
    c->stime_ns = t->stime;
    c->nvcsw = t->nvcsw;
    c->nivcsw = t->nivcsw;
    c->min_flt = t->min_flt;
    c->maj_flt = t->maj_flt;
    if (bpf_core_field_exists(t->ioac)) {
        c->read_bytes = t->ioac.read_bytes;
        c->write_bytes = t->ioac.write_bytes;
    } else {
        c->read_bytes = 0;
        c->write_bytes = 0;
    }
}

// Starts a statement of command `command` on `thd`; `seq` statements of the
// same command came before it.
static __always_inline void begin_statement(struct thread_state *st, void *thd, __u32 command,
                                            __u64 text, __u32 text_len, __u32 seq) {
    __u64 now = bpf_ktime_get_ns();

    st->thd = thd;
    st->text_src = text;
    st->off_cpu_since = 0;
    st->active = 1;
    st->ev.start_ns = now;
    st->ev.command = command;
    st->ev.seq = seq;
    st->ev.text_len = text_len;
    st->ev.flags = (exact_stages ? MT_STMT_EXACT : 0) | (sampled_stages ? MT_STMT_SAMPLED : 0);
    st->ev.n_stages = 0;
    st->ev.stages_lost = 0;
    st->ev.samples_lost = 0;
    st->ev.n_samples = 0;
    st->ev.sample_period_us = sampled_stages ? sample_period_us : 0;
    read_counters(st, &st->ev.begin, now);
}

// The most bytes of stage marks and samples a record carries.
#define MARKS_MAX                                   \
    (MT_MAX_STAGES * sizeof(struct mt_stage_mark) + \
     MT_STAGE_SLOTS * sizeof(struct mt_stage_samples))

// Reads the statement's outcome from the THD and sends its record.
// `split_at`: where the next statement of the same query begins (0: none).
static __always_inline void end_statement(struct thread_state *st, __u32 flags, __u64 split_at) {
    struct mt_server_statement_event *ev;
    struct scratch_slot *slot_mem;
    void *thd = st->thd;
    void *da = 0;
    __u8 *g;
    __u64 n_stages, n_samples, off, n, src;
    __u64 now = bpf_ktime_get_ns();
    __u32 slot;
    long len;

    st->active = 0;
    if (min_duration_ns && now - st->ev.start_ns < min_duration_ns)
        return;
    if (only_thread_id && thread_id_of(thd) != only_thread_id)
        return;
    if (mt_scratch_claim(&slot))
        return;
    slot_mem = bpf_map_lookup_elem(&scratch, &slot);
    if (!slot_mem)
        goto out;
    ev = (struct mt_server_statement_event *)slot_mem->bytes;
    g = slot_mem->gather;
    n_stages = st->ev.n_stages;
    if (n_stages > MT_MAX_STAGES)
        n_stages = MT_MAX_STAGES;
    // One copy of the fixed part, one of the stage marks gathered so far,
    // one of the stage samples.
    if (bpf_probe_read_kernel(ev, sizeof(*ev), &st->ev))
        goto out;
    off = n_stages * sizeof(struct mt_stage_mark);
    barrier_var(off);
    if (off > MT_MAX_STAGES * sizeof(struct mt_stage_mark))
        goto out;
    if (off && bpf_probe_read_kernel(ev->data, off, st->stages))
        goto out;
    ev->n_stages = n_stages;
    n_samples = st->ev.n_samples;
    if (n_samples > MT_STAGE_SLOTS)
        n_samples = MT_STAGE_SLOTS;
    n = n_samples * sizeof(struct mt_stage_samples);
    barrier_var(n);
    if (n > MT_STAGE_SLOTS * sizeof(struct mt_stage_samples))
        goto out;
    if (n && bpf_probe_read_kernel(ev->data + off, n, st->samples))
        goto out;
    ev->n_samples = n_samples;
    off += n;
    ev->flags |= flags;
    read_counters(st, &ev->end, now);

    gather(g, thd);
    ev->thread_id = gathered(g, at_thread_id) & thread_id_mask;
    ev->query_id = gathered(g, at_query_id);
    ev->rows_sent = gathered(g, at_sent_rows);
    ev->rows_examined = gathered(g, at_examined_rows);
    da = (void *)gathered(g, at_stmt_da);
    da_outcome(g, thd, da, &ev->da_status, &ev->rows_affected);
    ev->error = 0;
    __builtin_memset(ev->sqlstate, 0, sizeof(ev->sqlstate));
    ev->message_len = 0;
    if (ev->da_status == MT_DA_ERROR) {
        ev->error = read_u32(da, off_da_errno);
        if (da && off_da_sqlstate >= 0)
            bpf_probe_read_user(ev->sqlstate, 5, da + off_da_sqlstate);
        if (da && off_da_message >= 0) {
            len = bpf_probe_read_user_str(ev->data + off, MT_MAX_MESSAGE, da + off_da_message);
            if (len > 1) {
                ev->message_len = len - 1;
                off += len - 1;
            }
        }
    }

    // CURRENT_SCHEMA
    ev->db_len = 0;
    if (at_db >= 0) {
        src = gathered(g, at_db);
        n = gathered(g, at_db + 8);
        if (n > MT_MAX_DB - 1)
            n = MT_MAX_DB - 1;
        barrier_var(n);
        if (src && n && off <= MARKS_MAX + MT_MAX_MESSAGE &&
            bpf_probe_read_user(ev->data + off, n, (void *)src) == 0) {
            ev->db_len = n;
            off += n;
        }
    }

    // SQL_TEXT: the statement mysql_parse was given, else the text the
    // server keeps in the THD (prepared statements, unparsed queries), else
    // the argument copied at entry.
    ev->text_copied = 0;
    if (ev->command != COM_QUERY && ev->command != COM_STMT_PREPARE &&
        ev->command != COM_STMT_EXECUTE && ev->command != COM_STMT_FETCH &&
        ev->command != COM_STMT_BULK_EXECUTE) {
        // No statement ran: the THD's row counters still hold the last
        // statement's (MySQL resets them per statement only).
        ev->rows_sent = 0;
        ev->rows_examined = 0;
    }
    if (st->arg_len || (ev->command != COM_QUERY && ev->command != COM_STMT_PREPARE &&
                        ev->command != COM_STMT_EXECUTE && ev->command != COM_STMT_FETCH &&
                        ev->command != COM_STMT_BULK_EXECUTE)) {
        n = st->arg_len < max_sql ? st->arg_len : max_sql;
        if (n > MT_MAX_DB - 1)
            n = MT_MAX_DB - 1;
        barrier_var(n);
        if (n && off <= MARKS_MAX + MT_MAX_MESSAGE + MT_MAX_DB &&
            bpf_probe_read_kernel(ev->data + off, n, st->arg) == 0) {
            ev->text_copied = n;
            off += n;
        }
        goto send;
    }
    src = st->text_src;
    n = ev->text_len;
    if (split_at > src && split_at - src < n) {
        n = split_at - src;
        ev->text_len = n;
    }
    if ((ev->command != COM_QUERY || !st->parses || text_at_end) && at_query_string >= 0 &&
        !(keep_entry_text && src)) {
        src = gathered(g, at_query_string);
        n = gathered(g, at_query_string + 8);
        ev->text_addr = src;
        ev->text_len = n;
    }
    if (n > max_sql)
        n = max_sql;
    if (n > MT_MAX_SQL)
        n = MT_MAX_SQL;
    barrier_var(n);
    if (src && n && off <= MARKS_MAX + MT_MAX_MESSAGE + MT_MAX_DB &&
        bpf_probe_read_user(ev->data + off, n, (void *)src) == 0) {
        ev->text_copied = n;
        off += n;
    }
send:
    mt_fill_header_at(&ev->hdr, MT_EV_SERVER_STATEMENT, sizeof(*ev) + off, now);
    mt_output(ev, sizeof(*ev) + off);
out:
    mt_scratch_release(slot);
}

// The state of the current thread; `create`: make it if it has none. A
// lookup always succeeds; a creation can fail while another program on this
// CPU is using task storage, and is then tried again at the next command.
static __always_inline struct thread_state *state_of(int create) {
    struct task_struct *task = bpf_get_current_task_btf();
    struct thread_state *st = bpf_task_storage_get(&threads, task, 0, 0);
    __u32 zero = 0;
    void *z;

    if (st || !create)
        return st;
    z = bpf_map_lookup_elem(&zero_state, &zero);
    if (!z)
        return 0;
    return bpf_task_storage_get(&threads, task, z, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

// Sends the account of connection `id` on `thd` unless it was sent last.
static __always_inline void send_account(struct thread_state *st, void *thd, __u64 id) {
    struct mt_server_account_event *ev;
    void *ring;
    void *sctx;
    __u64 p;

    if (!want_accounts || off_security_ctx < 0 || !id || st->account_id == id)
        return;
    ev = mt_reserve(&ring, MT_EV_SERVER_ACCOUNT, sizeof(*ev));
    if (!ev)
        return;  // counted as a drop; tried again at the next command
    st->account_id = id;
    ev->thread_id = id;
    ev->user[0] = 0;
    ev->host[0] = 0;
    sctx = (void *)read_u64(thd, off_security_ctx);
    p = read_u64(sctx, off_sctx_user);
    if (p)
        bpf_probe_read_user_str(ev->user, sizeof(ev->user), (const void *)p);
    p = read_u64(sctx, off_sctx_host);
    if (!p)
        p = read_u64(sctx, off_sctx_ip);
    if (p)
        bpf_probe_read_user_str(ev->host, sizeof(ev->host), (const void *)p);
    mt_submit(ring, ev, sizeof(*ev));
}

// A client command begins: `packet`/`len` is its text (a query, a prepared
// statement), `arg`/`arg_len` the argument of another command (a schema name).
static __always_inline void begin_command(void *thd, __u32 command, const char *packet, __u32 len,
                                          const char *arg, __u64 arg_len) {
    struct thread_state *st;

    st = state_of(1);
    if (!st)
        return;
    if (st->active)
        end_statement(st, MT_STMT_CUT, 0);
    st->parses = 0;
    st->tio_depth = 0;  // a return that was never seen must not hide the next ones
    st->ev.text_addr = (__u64)packet;
    st->arg_len = 0;
    if (arg) {
        __u64 n = arg_len;

        if (n > MT_MAX_DB - 1)
            n = MT_MAX_DB - 1;
        // Make clang use the clamped register, so the verifier sees the bound.
        barrier_var(n);
        if (n && bpf_probe_read_user(st->arg, n, arg) == 0)
            st->arg_len = n;
    }
    begin_statement(st, thd, command, (__u64)packet, len, 0);
    if (want_accounts) {
        send_account(st, thd, thread_id_of(thd));
        // The account changes inside this command: send it again after.
        if (command == COM_CHANGE_USER)
            st->account_id = 0;
    }
}

// MariaDB: dispatch_command(enum_server_command, THD*, char *packet, uint len, bool).
SEC("uprobe")
int BPF_KPROBE(server_dispatch_command, __u32 command, void *thd, const char *packet, __u32 len) {
    int text = command == COM_QUERY || command == COM_STMT_PREPARE ||
               command == COM_STMT_EXECUTE || command == COM_STMT_FETCH ||
               command == COM_STMT_BULK_EXECUTE;

    if (!traced())
        return 0;
    begin_command(thd, command, packet, len, text ? 0 : packet, len);
    return 0;
}

// MySQL 8: dispatch_command(THD*, const COM_DATA*, enum_server_command). The
// command's arguments are a union, already decoded by the server: COM_QUERY
// and COM_STMT_PREPARE start {const char *query; unsigned length}, COM_INIT_DB
// {const char *db_name; unsigned long length}. Other commands' arguments are
// not read.
SEC("uprobe")
int BPF_KPROBE(server_dispatch_command_m8, void *thd, const void *com_data, __u32 command) {
    struct {
        __u64 str, len;
    } a = {};

    if (!traced())
        return 0;
    if (com_data && (command == COM_QUERY || command == COM_STMT_PREPARE ||
                     command == COM_INIT_DB))
        bpf_probe_read_user(&a, sizeof(a), com_data);
    // A statement to prepare is in the packet buffer, which the reply
    // overwrites before the end: copied now (up to MT_MAX_DB - 1 bytes).
    if (command == COM_INIT_DB || (command == COM_STMT_PREPARE && copy_prepare_text))
        begin_command(thd, command, 0, (__u32)a.len, (const char *)a.str, a.len);
    else
        begin_command(thd, command, (const char *)a.str, (__u32)a.len, 0, 0);
    return 0;
}

// A statement of the running command is about to be parsed; its text is
// `rawbuf` (to the end of the query, further statements included).
static __always_inline void begin_parse(void *thd, const char *rawbuf, __u32 len) {
    struct thread_state *st;
    __u32 command, seq;

    st = state_of(0);
    if (!st || st->thd != thd)
        return;
    if (!st->active) {
        // The end probe closed the previous statement of this command.
        if (end_per_statement && st->parses) {
            begin_statement(st, thd, st->ev.command, (__u64)rawbuf, len, st->ev.seq + 1);
            st->ev.text_addr = (__u64)rawbuf;
            st->parses++;
        }
        return;
    }
    if (st->parses) {
        // The next statement of a multi-statement query: the previous one ends.
        struct mt_stage_mark carry;
        __u32 n = st->ev.n_stages;
        int carried = 0;

        if (n > 0 && n - 1 < MT_MAX_STAGES &&
            (st->stages[n - 1].site == starting_site ||
             (starting_stage_name && st->stages[n - 1].stage == starting_stage_name))) {
            carry = st->stages[n - 1];
            st->ev.n_stages = n - 1;
            carried = 1;
        }
        command = st->ev.command;
        seq = st->ev.seq + 1;
        end_statement(st, MT_STMT_SPLIT, (__u64)rawbuf);
        begin_statement(st, thd, command, (__u64)rawbuf, len, seq);
        if (carried) {
            st->stages[0] = carry;
            st->ev.n_stages = 1;
            st->ev.start_ns = carry.ts_ns;
            st->ev.begin = carry.c;
        }
    } else if (rawbuf) {
        st->text_src = (__u64)rawbuf;
        st->ev.text_len = len;
    }
    if (rawbuf)
        st->ev.text_addr = (__u64)rawbuf;
    st->parses++;
}

// MariaDB: mysql_parse(THD*, char *rawbuf, uint length, Parser_state*).
SEC("uprobe")
int BPF_KPROBE(server_mysql_parse, void *thd, const char *rawbuf, __u32 len) {
    if (!traced())
        return 0;
    begin_parse(thd, rawbuf, len);
    return 0;
}

// MySQL 8: dispatch_sql_command(THD*, Parser_state*) (mysql_parse before
// 8.0.22). The statement is THD::m_query_string by then, also for each
// further statement of a multi-statement query; without its offset the
// statements are still split, the later ones without text.
SEC("uprobe")
int BPF_KPROBE(server_sql_command_m8, void *thd) {
    struct {
        __u64 str, len;
    } q = {};

    if (!traced())
        return 0;
    if (off_query_string >= 0)
        bpf_probe_read_user(&q, sizeof(q), thd + off_query_string);
    begin_parse(thd, (const char *)q.str, (__u32)q.len);
    return 0;
}

// The end-of-command stage site of dispatch_command, or (end_per_statement)
// a call of log_slow_statement there; cookie 1: a site after which another
// statement of the same query follows.
SEC("uprobe")
int server_command_end(struct pt_regs *ctx) {
    struct thread_state *st;

    if (!traced())
        return 0;
    st = state_of(0);
    if (st && st->active) {
        end_statement(st, MT_STMT_ENDED | (bpf_get_attach_cookie(ctx) == 1 ? MT_STMT_MORE : 0), 0);
        // After COM_QUIT the thread waits for a new connection: none of its
        // waits belong to this THD any more.
        if (st->ev.command == COM_QUIT)
            st->thd = 0;
    }
    return 0;
}

static __always_inline __u64 current_stage(struct thread_state *st) {
    return read_u64(st->thd, off_proc_info);
}

// Exact stages: one probe per stage site, the site's index as attach cookie.
SEC("uprobe")
int server_stage(struct pt_regs *ctx) {
    struct thread_state *st;
    struct mt_stage_mark *m;
    __u64 stage = 0, now;
    __u32 n, site;

    if (!traced() || !exact_stages)
        return 0;
    st = state_of(0);
    if (!st || !st->active)
        return 0;
    n = st->ev.n_stages;
    if (n >= MT_MAX_STAGES) {
        st->ev.stages_lost++;
        return 0;
    }
    site = (__u32)bpf_get_attach_cookie(ctx);
    if (site >= cond_site) {
        // Two plain loads: clang may not merge them into one ctx access at
        // a computed offset, which the verifier refuses.
        __u64 arg2 = PT_REGS_PARM2(ctx);
        __u64 arg4 = PT_REGS_PARM4(ctx);
        __u64 info;

        barrier_var(arg2);
        barrier_var(arg4);
        info = site >= exit_cond_site ? arg2 : arg4;

        if (!info)
            return 0;                       // no stage change
        stage = read_u64((void *)info, 8);  // PSI_stage_info::m_name
        if (!stage)
            return 0;
    } else if (site >= first_dynamic_site) {
        // Restoring a saved stage that had no name leaves no stage, as
        // SHOW PROFILE also skips it.
        stage = current_stage(st);
        if (!stage)
            return 0;
    }
    now = bpf_ktime_get_ns();
    m = &st->stages[n];
    m->ts_ns = now;
    m->site = site;
    m->stage = stage;
    m->line = 0;
    m->file = 0;
    if (site >= stage_call_site) {
        __u64 file = PT_REGS_PARM5(ctx);
        __u64 line = ctx->r9;  // argument 6 (this libbpf has no PT_REGS_PARM6)

        barrier_var(file);
        barrier_var(line);
        m->file = file;
        m->line = (__u32)line;
    }
    read_counters(st, &m->c, now);
    st->ev.n_stages = n + 1;
    return 0;
}

// Sampled stages: credit `stage` of the running statement.
static __always_inline void credit(struct thread_state *st, __u64 stage, __u32 on_cpu,
                                   __u64 off_cpu_ns) {
    for (int i = 0; i < MT_STAGE_SLOTS; i++) {
        struct mt_stage_samples *s = &st->samples[i];

        if (i >= st->ev.n_samples) {
            // A slot not used yet by this statement.
            s->stage = stage;
            s->on_cpu = 0;
            s->switches = 0;
            s->off_cpu_ns = 0;
            st->ev.n_samples = i + 1;
        } else if (s->stage != stage) {
            continue;
        }
        s->on_cpu += on_cpu;
        if (off_cpu_ns) {
            s->switches++;
            s->off_cpu_ns += off_cpu_ns;
        }
        return;
    }
    st->ev.samples_lost++;
}

SEC("perf_event")
int server_sample(void *ctx) {
    struct thread_state *st;

    if (!sampled_stages || !traced())
        return 0;
    st = state_of(0);
    if (st && st->active)
        credit(st, current_stage(st), 1, 0);
    return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(server_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
    struct thread_state *st;
    __u64 now;

    if (prev->tgid != target_tgid && next->tgid != target_tgid)
        return 0;
    now = bpf_ktime_get_ns();
    if (prev->tgid == target_tgid) {
        st = bpf_task_storage_get(&threads, prev, 0, 0);
        if (st) {
            if (st->on_since)
                st->cpu_acc += now - st->on_since;
            st->on_since = 0;
            // Still in prev's address space: its stage can be read.
            if (sampled_stages && st->active) {
                st->off_cpu_since = now;
                st->off_cpu_stage = current_stage(st);
            }
        }
    }
    if (next->tgid == target_tgid) {
        st = bpf_task_storage_get(&threads, next, 0, 0);
        if (st) {
            st->on_since = now;
            if (st->active && st->off_cpu_since) {
                credit(st, st->off_cpu_stage, 0, now - st->off_cpu_since);
                st->off_cpu_since = 0;
            }
        }
    }
    return 0;
}

// ---- Waits ----

// x86-64 syscall numbers.
#define NR_read 0
#define NR_write 1
#define NR_close 3
#define NR_poll 7
#define NR_pread64 17
#define NR_pwrite64 18
#define NR_readv 19
#define NR_writev 20
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_fsync 74
#define NR_fdatasync 75
#define NR_futex 202
#define NR_openat 257
#define NR_ppoll 271

#define FUTEX_WAIT 0
#define FUTEX_LOCK_PI 6
#define FUTEX_WAIT_BITSET 9
#define FUTEX_LOCK_PI2 13
#define FUTEX_CMD_MASK 0x7f

static __always_inline __u32 wait_kind(long nr) {
    switch (nr) {
        case NR_futex:
            return MT_WAIT_FUTEX;
        case NR_read:
        case NR_pread64:
        case NR_readv:
            return MT_WAIT_READ;
        case NR_write:
        case NR_pwrite64:
        case NR_writev:
            return MT_WAIT_WRITE;
        case NR_fsync:
        case NR_fdatasync:
            return MT_WAIT_SYNC;
        case NR_openat:
            return MT_WAIT_OPEN;
        case NR_close:
            return MT_WAIT_CLOSE;
        case NR_poll:
        case NR_ppoll:
            return MT_WAIT_POLL;
        case NR_recvfrom:
        case NR_recvmsg:
            return MT_WAIT_RECV;
        case NR_sendto:
        case NR_sendmsg:
            return MT_WAIT_SEND;
    }
    return 0;
}

// The first return address into the server's code above the user stack
// pointer: glibc's lock code keeps no frame pointer, so the caller of
// pthread_mutex_lock is found by scanning, not by walking frames.
#define CALLER_SCAN 128

struct scan_buf {
    __u64 words[CALLER_SCAN];
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct scan_buf);
} scan SEC(".maps");

static __always_inline __u64 server_caller(struct pt_regs *regs) {
    __u64 sp = BPF_CORE_READ(regs, sp);
    struct scan_buf *b;
    __u32 zero = 0;

    // Syscall tracepoints run with preemption on: the buffer may be shared
    // with another task on this CPU, which costs at worst a wrong caller.
    b = bpf_map_lookup_elem(&scan, &zero);
    if (!b || bpf_probe_read_user(b->words, sizeof(b->words), (void *)sp))
        return 0;
    for (int i = 0; i < CALLER_SCAN; i++) {
        __u64 w = b->words[i];

        if (w >= text_lo && w < text_hi)
            return w;
    }
    return 0;
}

#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFREG 0100000

// What kind of file the thread's descriptor `fd` is: MT_WAIT_SOCKET,
// MT_WAIT_FILE, or 0 for anything else (pipes, eventfds: not waits).
static __always_inline __u32 fd_class(__u64 fd) {
    struct task_struct *t = bpf_get_current_task_btf();
    struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
    struct file **fds;
    struct file *f = 0;
    __u32 mode;

    if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
        return 0;
    fds = BPF_CORE_READ(fdt, fd);
    if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
        return 0;
    mode = BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT;
    if (mode == S_IFSOCK)
        return MT_WAIT_SOCKET;
    if (mode == S_IFREG)
        return MT_WAIT_FILE;
    return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(server_sys_enter, struct pt_regs *regs, long id) {
    struct thread_state *st;
    __u32 kind, op;

    if (!traced())
        return 0;
    kind = wait_kind(id);
    if (!kind)
        return 0;
    st = state_of(0);
    if (!st || !st->thd)
        return 0;  // not a connection thread (yet)
    st->sc_flags = st->active ? MT_WAIT_IN_STATEMENT : 0;
    st->sc_value = 0;
    st->sc_caller = 0;
    if (kind == MT_WAIT_FUTEX) {
        op = (__u32)BPF_CORE_READ(regs, si) & FUTEX_CMD_MASK;
        if (op != FUTEX_WAIT && op != FUTEX_WAIT_BITSET && op != FUTEX_LOCK_PI &&
            op != FUTEX_LOCK_PI2) {
            st->sc_kind = 0;  // a wake: never blocks
            return 0;
        }
        st->sc_object = BPF_CORE_READ(regs, di);
        st->sc_value = (__u32)BPF_CORE_READ(regs, dx);
        if (BPF_CORE_READ(regs, r10))
            st->sc_flags |= MT_WAIT_TIMED;
        st->sc_caller = server_caller(regs);
    } else if (kind == MT_WAIT_OPEN) {
        st->sc_object = 0;  // the fd comes back at exit
        st->sc_flags |= MT_WAIT_FILE;
    } else if (kind != MT_WAIT_POLL) {
        __u32 cls;

        st->sc_object = (__u32)BPF_CORE_READ(regs, di);  // the fd
        cls = fd_class(st->sc_object);
        if (!cls) {
            st->sc_kind = 0;
            return 0;
        }
        st->sc_flags |= cls;
    } else {
        st->sc_object = 0;
    }
    st->sc_kind = kind;
    st->sc_start = bpf_ktime_get_ns();
    return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(server_sys_exit, struct pt_regs *regs, long ret) {
    struct mt_server_wait_event *ev;
    struct thread_state *st;
    void *ring;
    __u64 id;

    if (!traced())
        return 0;
    st = state_of(0);
    if (!st || !st->sc_kind)
        return 0;
    id = thread_id_of(st->thd);
    send_account(st, st->thd, id);
    ev = mt_reserve(&ring, MT_EV_SERVER_WAIT, sizeof(*ev));
    if (ev) {
        ev->start_ns = st->sc_start;
        ev->thread_id = id;
        ev->object = st->sc_kind == MT_WAIT_OPEN && ret >= 0 ? (__u64)ret : st->sc_object;
        ev->bytes = (st->sc_kind == MT_WAIT_READ || st->sc_kind == MT_WAIT_WRITE ||
                     st->sc_kind == MT_WAIT_RECV || st->sc_kind == MT_WAIT_SEND) &&
                            ret > 0
                        ? (__u64)ret
                        : 0;
        ev->caller = st->sc_caller;
        ev->value = st->sc_value;
        ev->kind = st->sc_kind;
        ev->flags = st->sc_flags;
        ev->ret = ret < 0 ? (__s32)ret : 0;
        ev->_pad0 = 0;
        mt_submit(ring, ev, sizeof(*ev));
    }
    st->sc_kind = 0;
    return 0;
}

// ---- Table I/O (--table-io) ----
//
// Entry and return probes (one uprobe_multi link each, sharing their traps)
// on the exported handler::ha_* row methods; cookie: enum mt_table_op. A
// return probe costs a second trap per row, which is why this is opt-in.

SEC("uprobe")
int server_table_io(struct pt_regs *ctx) {
    struct thread_state *st;

    if (!traced())
        return 0;
    st = state_of(0);
    if (!st || !st->thd)
        return 0;  // not a connection thread
    if (st->tio_depth++ == 0) {
        st->tio_start = bpf_ktime_get_ns();
        st->tio_handler = PT_REGS_PARM1(ctx);
        st->tio_op = (__u32)bpf_get_attach_cookie(ctx);
    }
    return 0;
}

SEC("uprobe")
int server_table_io_ret(struct pt_regs *ctx) {
    struct mt_server_table_io_event *ev;
    struct thread_state *st;
    void *ring, *share;
    // TABLE_SHARE's db and table_name, side by side (server/thd_layout.cpp
    // only learns them so): one read.
    struct {
        __u64 db, db_len, name, name_len;
    } names = {};
    long n;

    if (!traced())
        return 0;
    st = state_of(0);
    if (!st || st->tio_depth == 0 || --st->tio_depth != 0)
        return 0;
    ev = mt_reserve(&ring, MT_EV_SERVER_TABLE_IO, sizeof(*ev));
    if (!ev)
        return 0;
    ev->start_ns = st->tio_start;
    ev->thread_id = thread_id_of(st->thd);
    ev->handler = st->tio_handler;
    ev->ret = (__s32)PT_REGS_RC(ctx);
    ev->op = st->tio_op;
    ev->flags = st->active ? MT_WAIT_IN_STATEMENT : 0;
    ev->db_len = 0;
    ev->name_len = 0;
    ev->db[0] = 0;
    ev->name[0] = 0;
    share = (void *)read_u64((void *)st->tio_handler, off_handler_table_share);
    if (share && off_share_db >= 0 && off_share_table_name == off_share_db + 16 &&
        bpf_probe_read_user(&names, sizeof(names), share + off_share_db) == 0) {
        n = names.db ? bpf_probe_read_user_str(ev->db, sizeof(ev->db), (void *)names.db) : 0;
        ev->db_len = n > 1 ? n - 1 : 0;
        n = names.name ? bpf_probe_read_user_str(ev->name, sizeof(ev->name), (void *)names.name)
                       : 0;
        ev->name_len = n > 1 ? n - 1 : 0;
    }
    mt_submit(ring, ev, sizeof(*ev));
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(server_thread_exit, struct task_struct *task) {
    if (task->tgid != target_tgid)
        return 0;
    // Now rather than when the task is freed; if task storage is busy on
    // this CPU, it is freed then.
    bpf_task_storage_delete(&threads, task);
    return 0;
}
