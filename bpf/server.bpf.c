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
// One-probe statements (server_onepass.bpf.h), and Lock_time everywhere:
// THD::start_utime (microseconds), the lock field (lock_is_duration: MySQL's
// m_lock_usec; else MariaDB's utime_after_lock, on start_utime's clock) and
// the running command (4 bytes).
const volatile __s32 at_start_utime = -1;
const volatile __s32 at_lock_time = -1;
const volatile __s32 at_command = -1;
const volatile __u32 lock_is_duration = 0;
// THD::security_ctx, where it fits in the windows above without a read of
// its own (only when accounts are wanted; -1: read it apart).
const volatile __s32 at_security_ctx = -1;
// The connection's memory in use and its high-water mark (8 bytes each),
// picked out of the same copies: no read of their own when they fit.
const volatile __s32 at_mem_used = -1;
const volatile __s32 at_mem_max = -1;
const volatile __u32 mem_max_per_command = 0;
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
// MySQL: user, host and ip are String members {char *ptr; size_t length}
// (not always NUL-terminated); MariaDB: char *.
const volatile __u32 sctx_lengths = 0;
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
// MySQL with exact stages: the address of the "cleaning up" stage name, which
// dispatch_command enters after its last log_slow_statement call. The end
// probe then only marks the statement's end as pending, and the statement
// ends at that stage, which it includes, as in performance_schema; 0: off.
const volatile __u64 cleanup_stage_name = 0;
const volatile __u64 starting_stage_name = 0;
// The end probe fires once per statement, also between the statements of a
// multi-statement query (MySQL: log_slow_statement(THD*), called by
// dispatch_command after each), rather than once per command: a statement
// parsed after it begins a new one. `text_at_end`: the THD's query string
// is the statement's own text there (the slow log prints it), so SQL_TEXT
// is read from it.
const volatile __u32 end_per_statement = 0;
// --waits. On the entry-and-end path also the idle waits between commands
// (server_waits.bpf.h); on the one-probe path userspace finds those.
const volatile __u32 waits_on = 0;
// --waits on the one-probe path: a thread's THD (current_thd) is the pointer
// at this offset from its thread pointer (server/server_target.h), read as
// its waits begin, and the command it runs (THD::m_command, 4 bytes at
// off_command) tells whether the wait is inside a statement. Else (the
// entry-and-end path) the THD a command began in.
const volatile __u32 thd_from_tls = 0;
const volatile __s64 thd_tp_off = 0;
const volatile __s64 off_command = -1;
// COM_STMT_PREPARE's text is copied at dispatch_command's entry (the end
// comes after the reply has reused its buffer).
const volatile __u32 copy_prepare_text = 0;
const volatile __u32 text_at_end = 0;
// COM_STMT_EXECUTE (MySQL): SQL_TEXT is the prepared statement's own text,
// with its `?` as performance_schema shows it, rather than THD::m_query_string
// (the text with the values, which the slow log prints): read from the
// statement the THD last looked up by id, THD::stmt_map's
// m_last_found_statement (off_last_prepared), and in that Prepared_statement
// m_display_query_string if not empty, else m_query_string (LEX_CSTRING).
// -1: unknown in this build, or --format slowlog.
const volatile __s64 off_last_prepared = -1;
const volatile __s64 off_ps_query_string = -1;
const volatile __s64 off_ps_display_query_string = -1;

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
// The error of a COM_STMT_EXECUTE whose statement id is not prepared (a
// protocol constant: the same in MariaDB and MySQL).
#define ER_UNKNOWN_STMT_HANDLER 1243

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
    // --waits: the thread's wait for its client, from the end of its last
    // statement (or of its last wait outside one) to the start of its next
    // command, sent as one idle wait when that command begins.
    __u64 idle_start;   // 0: none
    void *idle_thd;     // the THD whose statement it followed
    __u64 idle_object;  // the client socket's descriptor, as its sends name it
    __u64 account_id;   // the connection whose account was sent last (0: none)
    __u64 account_key;  // and its user name's address, length and first bytes
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
    // MySQL enters "starting" for a command before dispatch_command (when
    // its packet header arrives): that mark, kept until the command begins,
    // gives the statement's first stage its source. pre_thd: its THD.
    __u64 pre_thd;
    struct mt_stage_mark pre;
    // The end probe fired; the statement ends at "cleaning up"
    // (cleanup_stage_name) with these flags, or at the next command.
    __u32 end_pending;
    __u32 end_flags;
    __u64 end_at;  // when the end probe fired: the end, if "cleaning up" never comes
    // The argument of a command other than a query (a schema name...),
    // copied at entry: the packet buffer holds the reply by the end.
    __u8 arg[MT_MAX_DB];
    // One-probe statements with sampled stages: the THD's start_utime when
    // the samples kept began (a new value: another statement, start over).
    __u64 sample_epoch;
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
    st->end_pending = 0;
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

// The text of the prepared statement a COM_STMT_EXECUTE ran (see
// off_last_prepared) into *src and *n; both unchanged if there is none.
static __always_inline void prepared_text(void *thd, __u64 *src, __u64 *n) {
    struct {
        __u64 str, len;
    } t = {};
    void *ps = 0;

    if (off_last_prepared < 0 || off_ps_query_string < 0 ||
        bpf_probe_read_user(&ps, sizeof(ps), thd + off_last_prepared) || !ps)
        return;
    if (off_ps_display_query_string >= 0)
        bpf_probe_read_user(&t, sizeof(t), ps + off_ps_display_query_string);
    if (!t.len && bpf_probe_read_user(&t, sizeof(t), ps + off_ps_query_string))
        return;
    if (t.str && t.len) {
        *src = t.str;
        *n = t.len;
    }
}

// Copies the statement's text, `n` bytes at `src` (up to --max-sql), into
// ev->data from `off` on; returns the new end.
static __always_inline __u64 copy_text(struct mt_server_statement_event *ev, __u64 src, __u64 n,
                                       __u64 off) {
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
    return off;
}

// Fills the statement's identity, outcome, rows, lock time, message and
// CURRENT_SCHEMA from the THD (its windows already copied into g); the
// message and schema go to ev->data from `off` on. Returns the new end.
static __always_inline __u64 describe_from_thd(struct mt_server_statement_event *ev, __u8 *g,
                                               void *thd, __u64 off) {
    void *da = 0;
    __u64 n, src, start, lock;
    long len;

    ev->thread_id = gathered(g, at_thread_id) & thread_id_mask;
    ev->query_id = gathered(g, at_query_id);
    ev->rows_sent = gathered(g, at_sent_rows);
    ev->rows_examined = gathered(g, at_examined_rows);
    // Lock_time: a duration (MySQL's m_lock_usec), or a time on the start's
    // clock (MariaDB's utime_after_lock) from which the start is taken.
    lock = gathered(g, at_lock_time);
    start = gathered(g, at_start_utime);
    if (!lock_is_duration)
        lock = lock > start && start ? lock - start : 0;
    ev->lock_ns = lock * 1000;
    ev->mem_used = gathered(g, at_mem_used);
    ev->mem_max = gathered(g, at_mem_max);
    if (at_mem_used >= 0 && at_mem_max >= 0)
        ev->flags |= MT_STMT_MEMORY | (mem_max_per_command ? MT_STMT_MEMORY_PER_COMMAND : 0);
    da = (void *)gathered(g, at_stmt_da);
    da_outcome(g, thd, da, &ev->da_status, &ev->rows_affected);
    ev->error = 0;
    __builtin_memset(ev->sqlstate, 0, sizeof(ev->sqlstate));
    ev->message_len = 0;
    if (ev->da_status == MT_DA_ERROR) {
        ev->error = read_u32(da, off_da_errno);
        if (da && off_da_sqlstate >= 0)
            bpf_probe_read_user(ev->sqlstate, 5, da + off_da_sqlstate);
        if (da && off_da_message >= 0 && off <= MARKS_MAX) {
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
    return off;
}

// Reads the statement's outcome from the THD and sends its record.
// `split_at`: where the next statement of the same query begins (0: none).
static __always_inline void end_statement(struct thread_state *st, __u32 flags, __u64 split_at) {
    struct mt_server_statement_event *ev;
    struct scratch_slot *slot_mem;
    void *thd = st->thd;
    __u8 *g;
    __u64 n_stages, n_samples, off, n, src;
    __u64 now = st->end_pending == 2 ? st->end_at : bpf_ktime_get_ns();
    __u32 slot;

    st->active = 0;
    if (waits_on) {
        // The thread waits for its client from now until its next command
        // (or until a further statement of this one begins: then unsent).
        st->idle_start = now;
        st->idle_thd = thd;
    }
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
    off = describe_from_thd(ev, g, thd, off);

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
    // An unknown statement id leaves the last statement found in place
    // when the id is that of a statement prepared by SQL (PREPARE name).
    if (ev->command == COM_STMT_EXECUTE && off_last_prepared >= 0 &&
        ev->error != ER_UNKNOWN_STMT_HANDLER) {
        prepared_text(thd, &src, &n);
        ev->text_addr = src;
        ev->text_len = n;
    }
    off = copy_text(ev, src, n, off);
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

// Copies the {ptr, length} string at `sctx + off` into a name field of an
// account record of `size` bytes, NUL-terminated; its length.
static __always_inline __u64 account_string(char *dst, __u64 size, void *sctx, __s64 off) {
    struct {
        __u64 ptr, len;
    } str = {};
    __u64 n;

    dst[0] = 0;
    if (!sctx || off < 0 || bpf_probe_read_user(&str, sizeof(str), sctx + off) || !str.ptr)
        return 0;
    n = str.len;
    if (n > size - 1)
        n = size - 1;
    barrier_var(n);
    if (!n || bpf_probe_read_user(dst, n, (const void *)str.ptr))
        return 0;
    dst[n] = 0;
    return n;
}

// What tells one account of a connection from the next (COM_CHANGE_USER)
// where no probe sees that command: its user name's address, length and
// first 8 bytes. `sctx`: the THD's Security_context pointer.
static __always_inline __u64 account_key(void *sctx) {
    struct {
        __u64 ptr, len;
    } str = {};
    __u64 prefix = 0;

    if (!sctx || off_sctx_user < 0 ||
        bpf_probe_read_user(&str, sctx_lengths ? sizeof(str) : sizeof(str.ptr),
                            sctx + off_sctx_user))
        return 0;
    if (str.ptr)
        bpf_probe_read_user(&prefix, sizeof(prefix), (const void *)str.ptr);
    return str.ptr ^ (str.len << 48) ^ (prefix * 0x9E3779B97F4A7C15ULL);
}

// Sends the account of connection `id` on `thd` unless it was sent last;
// `ts`: its time, when not now (0); `key`: its account_key() where the
// caller cannot see COM_CHANGE_USER (0: not compared).
static __always_inline void send_account_at(struct thread_state *st, void *thd, __u64 id,
                                            __u64 ts, __u64 key) {
    struct mt_server_account_event *ev;
    void *ring;
    void *sctx;
    __u64 p;

    if (!want_accounts || off_security_ctx < 0 || !id ||
        (st->account_id == id && st->account_key == key))
        return;
    ev = mt_reserve(&ring, MT_EV_SERVER_ACCOUNT, sizeof(*ev));
    if (!ev)
        return;  // counted as a drop; tried again at the next command
    st->account_id = id;
    st->account_key = key;
    if (ts)
        ev->hdr.ts_ns = ts;
    ev->thread_id = id;
    ev->user[0] = 0;
    ev->host[0] = 0;
    sctx = (void *)read_u64(thd, off_security_ctx);
    if (sctx_lengths) {
        account_string(ev->user, sizeof(ev->user), sctx, off_sctx_user);
        // A host name, else (not resolved) the client's address.
        if (!account_string(ev->host, sizeof(ev->host), sctx, off_sctx_host))
            account_string(ev->host, sizeof(ev->host), sctx, off_sctx_ip);
        mt_submit(ring, ev, sizeof(*ev));
        return;
    }
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

static __always_inline void send_account(struct thread_state *st, void *thd, __u64 id) {
    send_account_at(st, thd, id, 0, 0);
}

// The probes, in parts that use the inputs, state and helpers above.
#include "server_commands.bpf.h"
#include "server_onepass.bpf.h"
#include "server_stages.bpf.h"
#include "server_waits.bpf.h"
#include "server_table_io.bpf.h"
#include "server_threads.bpf.h"
#include "server_txn.bpf.h"
#include "server_locks.bpf.h"

SEC("tp_btf/sched_process_exit")
int BPF_PROG(server_thread_exit, struct task_struct *task) {
    if (task->tgid != target_tgid)
        return 0;
    // Now rather than when the task is freed; if task storage is busy on
    // this CPU, it is freed then.
    bpf_task_storage_delete(&threads, task);
    return 0;
}
