// SPDX-License-Identifier: GPL-2.0-only
// Server side: table I/O (--table-io).
//
// Entry and return probes (one uprobe_multi link each, sharing their traps)
// on the exported handler::ha_* row methods; cookie: enum mt_table_op. A
// return probe costs a second trap per row, which is why this is opt-in.
//
// Part of server.bpf.c, which includes it after server_waits.bpf.h: it uses
// server.bpf.c's inputs, struct thread_state and helpers, and is not a
// standalone header.
#pragma once

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
