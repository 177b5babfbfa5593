// SPDX-License-Identifier: GPL-2.0-only
// Client side, Java programs: the cleartext of the JDK's TLS sockets
// (sun.security.ssl.SSLSocketImpl), which is Java code with no native
// symbol to probe. mysqltrace's Java agent (java/) makes the application
// streams' read(byte[], int, int) and write(byte[], int, int) call
// libmysqltrace-java.so, whose USDT probes come here
// (include/mysqltrace/abi/usdt.h). Included by client.bpf.c after its
// helpers; the records are the MT_SOCK_TLS_RECV/SEND records of the OpenSSL
// probes.
//
// A call runs on one Java thread, which is one kernel thread (HotSpot's
// platform threads), from enter to exit: the pair is kept by thread id in
// tls_calls, as for SSL_read. The socket: the syscalls made inside the
// call (sys_exit_record); a read served from the session's buffer makes
// none, and takes the socket last seen for the session (tls_socks, keyed
// by tgid and the SSLSocketImpl's identity hash).

SEC("usdt")
int BPF_USDT(client_java_tls_enter, int op, __u32 key)
{
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)pid_tgid;
    struct tls_call c = {};

    if (!traced(pid_tgid >> 32))
        return 0;
    c.ssl = ((pid_tgid >> 32) << 32) | key;
    c.start_ns = bpf_ktime_get_ns();
    c.func = op == MT_SOCK_TLS_RECV ? MT_TLS_JAVA_READ : MT_TLS_JAVA_WRITE;
    bpf_map_update_elem(&tls_calls, &tid, &c, BPF_ANY);
    return 0;
}

SEC("usdt")
int BPF_USDT(client_java_tls_exit, int op, __u32 key, __u64 buf, __s64 ret)
{
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct tls_call *p = bpf_map_lookup_elem(&tls_calls, &tid);
    struct tls_call c;

    if (!p)
        return 0;
    c = *p;
    bpf_map_delete_elem(&tls_calls, &tid);
    if (ret <= 0 || !buf)
        return 0;
    c.buf = buf;
    return tls_cleartext(&c, op == MT_SOCK_TLS_RECV ? MT_SOCK_TLS_RECV : MT_SOCK_TLS_SEND, ret);
}
