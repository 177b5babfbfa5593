// SPDX-License-Identifier: GPL-2.0-only
// Server side: transactions (server --transactions). trans_begin(THD*,
// flags) opens an explicit one; ha_commit_trans(THD*, all) and
// ha_rollback_trans(THD*, all) run at each statement's end that used a
// transactional engine (all = 0) and at a transaction's end (all = 1): each
// sends one record with the THD's option bits, isolation level and access
// mode, and userspace (server/transactions.cpp) tells which ends a
// transaction. A probe per statement that touches a transactional engine:
// opt-in.
//
// Part of server.bpf.c, which includes it after its inputs, thread state and
// helpers; not a standalone header.
#pragma once

// THD::variables.option_bits, THD::tx_isolation (4 bytes), THD::tx_read_only
// (1 byte); -1: unknown.
const volatile __s64 off_option_bits = -1;
const volatile __s64 off_tx_isolation = -1;
const volatile __s64 off_tx_read_only = -1;
// THD::start_utime, whatever the statement path.
const volatile __s64 off_txn_start_utime = -1;

static __always_inline void send_txn(void *thd, __u32 op, __u32 arg) {
    struct mt_server_txn_event *ev;
    void *ring;
    __u8 ro = 0;

    if (!traced() || !thd)
        return;
    ev = mt_reserve(&ring, MT_EV_SERVER_TXN, sizeof(*ev));
    if (!ev)
        return;  // counted as a drop
    ev->thread_id = thread_id_of(thd);
    ev->option_bits = read_u64(thd, off_option_bits);
    ev->stmt_start_us = read_u64(thd, off_txn_start_utime);
    ev->op = op;
    ev->arg = arg;
    ev->isolation = read_u32(thd, off_tx_isolation);
    if (off_tx_read_only >= 0)
        bpf_probe_read_user(&ro, 1, thd + off_tx_read_only);
    ev->read_only = ro;
    mt_submit(ring, ev, sizeof(*ev));
}

SEC("uprobe")
int BPF_KPROBE(server_txn_begin, void *thd, __u32 flags) {
    send_txn(thd, MT_TXN_BEGIN, flags);
    return 0;
}

// A statement's commit or rollback (all = 0; bool: the low byte). The
// whole transaction's (all = 1) is not sent: the servers' own internal
// transactions use it too; trans_commit & co. below say when a client's
// transaction ends.
SEC("uprobe")
int BPF_KPROBE(server_txn_commit, void *thd, __u32 all) {
    if (!(all & 0xff))
        send_txn(thd, MT_TXN_COMMIT, 0);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(server_txn_rollback, void *thd, __u32 all) {
    if (!(all & 0xff))
        send_txn(thd, MT_TXN_ROLLBACK, 0);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(server_txn_end_commit, void *thd) {
    send_txn(thd, MT_TXN_END_COMMIT, 1);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(server_txn_end_rollback, void *thd) {
    send_txn(thd, MT_TXN_END_ROLLBACK, 1);
    return 0;
}
