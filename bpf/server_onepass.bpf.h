// SPDX-License-Identifier: GPL-2.0-only
// Server side: one probe per statement. log_slow_statement(THD*) is called
// once per statement (each statement of a multi-statement query, each
// EXECUTE, failing ones; MySQL also once per other command) when it is done
// and answered, and the THD then holds all a statement record needs: its
// start (start_utime), Lock_time, rows, outcome, text, schema, connection id
// and command (shared/FACTS.md 3b). One trap per statement, no entry probe
// (FACTS.md section 8: the entry probe alone costs ~5% of point_select).
//
// Part of server.bpf.c, which includes it after its inputs, thread state and
// helpers; not a standalone header.
#pragma once

// Inputs.
// Statements take this path (the others' probes are not attached).
const volatile __u32 onepass = 0;
// THD::start_utime, read alone when --min-duration needs it before anything
// else, and by the stage sampler to tell statements apart.
const volatile __s64 off_start_utime = -1;
// THD::db (LEX_CSTRING), for --db.
const volatile __s64 off_db = -1;
// --db and --user, decided here before anything is copied (0: no filter;
// longer names are left to userspace).
const volatile char filter_db[MT_FILTER_NAME_MAX] = {};
const volatile __u32 filter_db_len = 0;
const volatile char filter_user[MT_FILTER_NAME_MAX] = {};
const volatile __u32 filter_user_len = 0;
// start_utime's clock minus bpf_ktime_get_ns()'s, in microseconds: 0 for a
// monotonic start_utime (MariaDB), realtime - monotonic for a wall-clock one
// (MySQL). Kept up to date by userspace (the wall clock can be stepped).
__s64 start_shift_us = 0;

// Whether the `len` bytes of buf are `want`.
static __always_inline int same_bytes(const char *buf, __u64 len, const volatile char *want,
                                      __u32 want_len) {
    if (len != want_len)
        return 0;
    for (int i = 0; i < MT_FILTER_NAME_MAX - 1; i++) {
        if (i >= len)
            break;
        if (buf[i] != want[i])
            return 0;
    }
    return 1;
}

// Whether `len` bytes at `src` (a server address) are `want`.
static __always_inline int same_name(const void *src, __u64 len, const volatile char *want,
                                     __u32 want_len) {
    char buf[MT_FILTER_NAME_MAX];

    if (!src || len != want_len || len == 0 || len > MT_FILTER_NAME_MAX - 1)
        return 0;
    barrier_var(len);
    if (bpf_probe_read_user(buf, len & (MT_FILTER_NAME_MAX - 1), src))
        return 0;
    return same_bytes(buf, len, want, want_len);
}

// --db: the statement's CURRENT_SCHEMA.
static __always_inline int db_matches(void *thd) {
    struct {
        __u64 str, len;
    } db = {};

    if (off_db < 0 || bpf_probe_read_user(&db, sizeof(db), thd + off_db))
        return 0;
    return same_name((const void *)db.str, db.len, filter_db, filter_db_len);
}

// --user: the connection's account (MySQL: a String {ptr, length};
// MariaDB: a NUL-terminated char *).
static __always_inline int user_matches(void *thd) {
    struct {
        __u64 ptr, len;
    } str = {};
    char buf[MT_FILTER_NAME_MAX];
    void *sctx;
    long n;

    if (off_security_ctx < 0 || off_sctx_user < 0)
        return 0;
    sctx = (void *)read_u64(thd, off_security_ctx);
    if (!sctx || bpf_probe_read_user(&str, sizeof(str), sctx + off_sctx_user))
        return 0;
    if (sctx_lengths)
        return same_name((const void *)str.ptr, str.len, filter_user, filter_user_len);
    n = bpf_probe_read_user_str(buf, sizeof(buf), (const void *)str.ptr);
    return n > 0 && same_bytes(buf, n - 1, filter_user, filter_user_len);
}

// Sampled stages on this path: the samples kept are those of the statement
// the thread runs now, told apart by its THD's start_utime (no entry probe
// marks its beginning). False before the thread's first statement end.
static __always_inline int onepass_resync(struct thread_state *st) {
    __u64 epoch;

    if (!st->thd)
        return 0;
    epoch = read_u64(st->thd, off_start_utime);
    if (epoch != st->sample_epoch) {
        st->sample_epoch = epoch;
        st->ev.n_samples = 0;
        st->ev.samples_lost = 0;
        st->off_cpu_since = 0;
    }
    return 1;
}

static __always_inline int text_command(__u32 command) {
    return command == COM_QUERY || command == COM_STMT_PREPARE || command == COM_STMT_EXECUTE ||
           command == COM_STMT_FETCH || command == COM_STMT_BULK_EXECUTE;
}

SEC("uprobe")
int BPF_KPROBE(server_log_slow_statement, void *thd) {
    struct mt_server_statement_event *ev;
    struct scratch_slot *slot_mem;
    struct thread_state *st = 0;
    __u64 now, start, off = 0, n, src;
    __u32 slot;
    __u8 *g;

    if (!traced() || !thd)
        return 0;
    // The filters first: a statement they drop costs the trap and a read.
    now = bpf_ktime_get_ns();
    if (min_duration_ns) {
        start = read_u64(thd, off_start_utime);
        if (start && (start - start_shift_us) * 1000 + min_duration_ns > now)
            return 0;
    }
    if (only_thread_id && thread_id_of(thd) != only_thread_id)
        return 0;
    if (filter_db_len && !db_matches(thd))
        return 0;
    if (filter_user_len && !user_matches(thd))
        return 0;
    if (mt_scratch_claim(&slot))
        return 0;
    slot_mem = bpf_map_lookup_elem(&scratch, &slot);
    if (!slot_mem)
        goto out;
    ev = (struct mt_server_statement_event *)slot_mem->bytes;
    g = slot_mem->gather;
    gather(g, thd);
    if (want_accounts || sampled_stages) {
        st = state_of(1);
        if (st) {
            st->thd = thd;
            // Stamped before the statement: the reader orders records by
            // time, and the account must come first. The connection id and
            // the Security_context pointer come from the copies when they
            // are there (a read costs ~80 ns, docs/PERFORMANCE.md).
            if (want_accounts) {
                __u64 sctx = at_security_ctx >= 0 ? gathered(g, at_security_ctx)
                                                  : read_u64(thd, off_security_ctx);
                __u64 id = at_thread_id >= 0 ? gathered(g, at_thread_id) & thread_id_mask
                                             : thread_id_of(thd);

                send_account_at(st, thd, id, now - 1, account_key((void *)sctx));
            }
        }
    }
    start = gathered(g, at_start_utime);
    ev->start_ns = start ? (start - start_shift_us) * 1000 : now;
    if (ev->start_ns > now)
        ev->start_ns = now;
    ev->command = gathered_u32(g, at_command);
    ev->seq = 0;
    ev->flags = MT_STMT_ENDED | MT_STMT_ONEPASS;
    ev->n_stages = 0;
    ev->stages_lost = 0;
    ev->n_samples = 0;
    ev->samples_lost = 0;
    ev->sample_period_us = 0;
    __builtin_memset(&ev->begin, 0, sizeof(ev->begin));
    __builtin_memset(&ev->end, 0, sizeof(ev->end));
    if (st && sampled_stages) {
        ev->flags |= MT_STMT_SAMPLED;
        ev->sample_period_us = sample_period_us;
        n = st->ev.n_samples;
        if (st->sample_epoch == start && start && n) {
            if (n > MT_STAGE_SLOTS)
                n = MT_STAGE_SLOTS;
            off = n * sizeof(struct mt_stage_samples);
            barrier_var(off);
            if (off > MT_STAGE_SLOTS * sizeof(struct mt_stage_samples))
                goto out;
            if (bpf_probe_read_kernel(ev->data, off, st->samples))
                goto out;
            ev->n_samples = n;
            ev->samples_lost = st->ev.samples_lost;
        }
        // What is sampled from now on is not this statement's.
        st->sample_epoch = 0;
        st->ev.n_samples = 0;
    }
    off = describe_from_thd(ev, g, thd, off);

    ev->text_copied = 0;
    ev->text_len = 0;
    ev->text_addr = 0;
    if (!text_command(ev->command)) {
        // No statement ran: the THD's row counters still hold the last
        // statement's (MySQL resets them per statement only).
        ev->rows_sent = 0;
        ev->rows_examined = 0;
        goto send;
    }
    // SQL_TEXT: the THD's, which the slow log prints (a multi-statement
    // query's rest is cut in userspace).
    src = gathered(g, at_query_string);
    n = gathered(g, at_query_string + 8);
    // COM_STMT_EXECUTE: the statement prepared, with its `?` (MySQL's THD
    // has it with its values), as in end_statement().
    if (ev->command == COM_STMT_EXECUTE && off_last_prepared >= 0 &&
        ev->error != ER_UNKNOWN_STMT_HANDLER)
        prepared_text(thd, &src, &n);
    ev->text_addr = src;
    ev->text_len = n;
    off = copy_text(ev, src, n, off);
send:
    mt_fill_header_at(&ev->hdr, MT_EV_SERVER_STATEMENT, sizeof(*ev) + off, now);
    mt_output(ev, sizeof(*ev) + off);
out:
    mt_scratch_release(slot);
    return 0;
}
