// SPDX-License-Identifier: GPL-2.0-only
// Server side: connections (server --threads). Three probes, each hit once
// per connection, never per statement: thd_prepare_connection(THD*)'s entry
// and return (the login is done when it returns false: the account and the
// schema are the connection's), end_connection(THD*)'s entry; and with
// MySQL's performance_schema on, pfs_set_thread_connect_attrs_vc(buffer,
// length, cs), where the server hands it the client's connect attributes.
//
// Part of server.bpf.c, which includes it after its inputs, thread state and
// helpers; not a standalone header.
#pragma once

// The THD a connection thread is logging in, from the entry to the return.
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 1024);
    __type(key, __u32);
    __type(value, __u64);
} logging_in SEC(".maps");

// A NUL-terminated name of the account (user, host or ip field of the
// Security_context) into `dst`; its length.
static __always_inline __u64 sctx_name(char *dst, __u64 size, void *sctx, __s64 off) {
    __u64 p;
    long n;

    dst[0] = 0;
    if (!sctx || off < 0)
        return 0;
    if (sctx_lengths)
        return account_string(dst, size, sctx, off);
    p = read_u64(sctx, off);
    if (!p)
        return 0;
    n = bpf_probe_read_user_str(dst, size, (const void *)p);
    return n > 1 ? n - 1 : 0;
}

static __always_inline void send_thread(void *thd, __u32 op) {
    struct mt_server_thread_event *ev;
    struct {
        __u64 str, len;
    } db = {};
    void *ring;
    void *sctx;
    __u64 n;

    ev = mt_reserve(&ring, MT_EV_SERVER_THREAD, sizeof(*ev));
    if (!ev)
        return;  // counted as a drop
    ev->thread_id = thread_id_of(thd);
    ev->op = op;
    ev->attrs_total = 0;
    ev->attrs_len = 0;
    sctx = off_security_ctx >= 0 ? (void *)read_u64(thd, off_security_ctx) : 0;
    sctx_name(ev->user, sizeof(ev->user), sctx, off_sctx_user);
    sctx_name(ev->host, sizeof(ev->host), sctx, off_sctx_host);
    sctx_name(ev->ip, sizeof(ev->ip), sctx, off_sctx_ip);
    ev->db[0] = 0;
    if (off_db >= 0 && bpf_probe_read_user(&db, sizeof(db), thd + off_db) == 0 && db.str) {
        n = db.len;
        if (n > sizeof(ev->db) - 1)
            n = sizeof(ev->db) - 1;
        barrier_var(n);
        if (n && bpf_probe_read_user(ev->db, n, (const void *)db.str) == 0)
            ev->db[n] = 0;
        else
            ev->db[0] = 0;
    }
    mt_submit(ring, ev, sizeof(*ev));
}

SEC("uprobe")
int BPF_KPROBE(server_login_begin, void *thd) {
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    __u64 v = (__u64)thd;

    if (!traced() || !thd)
        return 0;
    bpf_map_update_elem(&logging_in, &tid, &v, BPF_ANY);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(server_login_end, long failed) {
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    __u64 *thd;

    if (!traced())
        return 0;
    thd = bpf_map_lookup_elem(&logging_in, &tid);
    if (!thd)
        return 0;
    // bool: only the low byte is the result.
    if (!(failed & 0xff) && *thd)
        send_thread((void *)*thd, MT_THREAD_CONNECT);
    bpf_map_delete_elem(&logging_in, &tid);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(server_connection_end, void *thd) {
    if (!traced() || !thd)
        return 0;
    send_thread(thd, MT_THREAD_DISCONNECT);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(server_connect_attrs, const void *buffer, __u32 length) {
    struct mt_server_thread_event *ev;
    void *ring;
    __u64 n = length;

    if (!traced() || !buffer)
        return 0;
    ev = mt_reserve(&ring, MT_EV_SERVER_THREAD, sizeof(*ev));
    if (!ev)
        return 0;
    ev->thread_id = 0;
    ev->op = MT_THREAD_ATTRS;
    ev->attrs_total = length;
    ev->user[0] = 0;
    ev->host[0] = 0;
    ev->ip[0] = 0;
    ev->db[0] = 0;
    // n in a 64-bit register of its own before the clamp, and the clamped
    // one used: clang 19 otherwise compares the 32-bit argument and reads
    // with a copy taken before the compare, which the verifier sees unbounded.
    barrier_var(n);
    if (n > MT_MAX_THREAD_ATTRS)
        n = MT_MAX_THREAD_ATTRS;
    barrier_var(n);
    if (n && bpf_probe_read_user(ev->attrs, n, buffer))
        n = 0;
    ev->attrs_len = n;
    mt_submit(ring, ev, sizeof(*ev));
    return 0;
}
