// SPDX-License-Identifier: GPL-2.0-only
// Server side: where statements begin and end (dispatch_command, the parser,
// the end-of-command site).
//
// Part of server.bpf.c, which includes it after its statement record: it uses
// server.bpf.c's inputs, struct thread_state and helpers, and is not a
// standalone header.
#pragma once

// MySQL enters "starting" just before a command (or a further statement of a
// multi-statement query) begins: that mark, kept by keep_starting_mark(),
// becomes the new statement's first stage, with its source.
static __always_inline void take_starting_mark(struct thread_state *st, void *thd) {
    if (st->pre_thd == (__u64)thd && st->pre.ts_ns) {
        st->stages[0] = st->pre;
        st->stages[0].ts_ns = st->ev.start_ns;
        st->stages[0].c = st->ev.begin;
        st->ev.n_stages = 1;
    }
    st->pre_thd = 0;
    st->pre.ts_ns = 0;
}

// server_waits.bpf.h: the thread's idle wait, ended at `end` by the command
// that `thd` begins.
static __always_inline void send_idle(struct thread_state *st, void *thd, __u64 end);

// A client command begins: `packet`/`len` is its text (a query, a prepared
// statement), `arg`/`arg_len` the argument of another command (a schema name).
static __always_inline void begin_command(void *thd, __u32 command, const char *packet, __u32 len,
                                          const char *arg, __u64 arg_len) {
    struct thread_state *st;

    st = state_of(1);
    if (!st)
        return;
    if (st->idle_start)
        send_idle(st, thd, bpf_ktime_get_ns());
    if (st->active && st->end_pending) {
        // "cleaning up" never came (the stage probes were detached): the
        // statement ended where the end probe fired.
        st->end_pending = 2;
        end_statement(st, st->end_flags, 0);
    } else if (st->active) {
        end_statement(st, MT_STMT_CUT, 0);
    }
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
    take_starting_mark(st, thd);
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
// not read. A query's length is 4 bytes: the 4 after it are padding, which
// the server does not clear (seen: a COM_STMT_PREPARE's text copied
// with 255 bytes of the packet buffer after it).
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
        begin_command(thd, command, 0, (__u32)a.len, (const char *)a.str, (__u32)a.len);
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
            take_starting_mark(st, thd);
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

static __always_inline void finish_command(struct thread_state *st, __u32 flags) {
    end_statement(st, flags, 0);
    // After COM_QUIT the thread waits for a new connection: none of its
    // waits belong to this THD any more, and it is not idle.
    if (st->ev.command == COM_QUIT) {
        st->thd = 0;
        st->idle_start = 0;
    }
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
        __u32 flags = MT_STMT_ENDED | (bpf_get_attach_cookie(ctx) == 1 ? MT_STMT_MORE : 0);

        if (cleanup_stage_name && exact_stages && !(flags & MT_STMT_MORE)) {
            st->end_pending = 1;
            st->end_flags = flags;
            st->end_at = bpf_ktime_get_ns();
            return 0;
        }
        finish_command(st, flags);
    }
    return 0;
}
