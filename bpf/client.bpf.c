// SPDX-License-Identifier: GPL-2.0-only
// Client side: the socket I/O of traced processes, from the per-syscall
// tracepoints (syscalls:sys_enter_write, syscalls:sys_exit_read, ...), which
// run only for the syscalls they name; the raw tracepoints sys_enter and
// sys_exit, which run for every syscall on the machine, when tracefs is not
// available (userspace chooses one set; both share the code below).
//
// A call is read at its end (sys_exit), where its argument registers and
// result are both known: what was actually transferred is copied (up to
// `snaplen` bytes, the true length always recorded). sys_enter only notes
// when a send began and sees close/shutdown before they act; no state is
// kept between the two but a send's start time. Sockets are told apart by
// their struct sock: a socket connected while traced is judged in the
// kernel by its first bytes (a MySQL server greets first: seq 0, protocol
// 10) and dropped there if it is anything else; a socket that predates the
// trace is copied until userspace has judged it and written its verdict
// into mt_socks.
//
// `mysqltrace run` uses the USDT programs at the end instead of the syscall
// and TLS probes: the preloaded shim reports each call on a MySQL socket
// once, after it returned, and already knows which sockets to follow.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>

#include "ring.bpf.h"
#include "mysqltrace/abi/usdt.h"

char LICENSE[] SEC("license") = "GPL";

#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define EINPROGRESS 115
#define MSG_PEEK 0x2
#define MSG_ERRQUEUE 0x2000

// x86-64 syscall numbers.
#define NR_read 0
#define NR_write 1
#define NR_close 3
#define NR_readv 19
#define NR_writev 20
#define NR_connect 42
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_shutdown 48

// Inputs.
const volatile __u32 snaplen = 16384;
const volatile __u8 follow_forks = 0;
// With one traced process and no fork following, its tgid: the syscall
// programs run for every syscall on the machine, and an integer compare is
// much cheaper for everyone else than a hash lookup. 0: consult mt_pids.
const volatile __u32 single_tgid = 0;

// Traced processes: tgid -> 1. Filled from userspace; grows on fork with
// follow_forks.
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, __u8);
} mt_pids SEC(".maps");

// State: struct sock address -> enum mt_sock_state.
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 65536);
    __type(key, __u64);
    __type(value, __u8);
} mt_socks SEC(".maps");

enum arg_kind { ARG_BUF = 1, ARG_IOV = 2, ARG_MSG = 3, ARG_ADDR = 4 };

// A socket call: what the record about it needs.
struct inflight {
    __u64 sock;
    __u64 ptr;  // buffer, iovec array, msghdr or sockaddr
    __u64 len;  // buffer length, iovec count or sockaddr length
    __u64 start_ns;  // when the call began: a send's time (see emit())
    __u32 fd;
    __u32 nr;
    __u16 family;
    __u16 kind;  // enum arg_kind
    __u32 _pad;
};

// A TLS library call (SSL_read, gnutls_record_send, ...) in progress, per
// thread. The socket syscalls it makes tell which socket the session uses.
struct tls_call {
    __u64 ssl;
    __u64 buf;
    __u64 out_len;  // size_t * of the _ex variants, else 0
    __u64 sock;     // learnt from a socket syscall made inside the call
    __u64 start_ns;
    __u32 fd;
    __u16 family;
    __u16 func;  // enum mt_tls_func
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32);
    __type(value, struct tls_call);
} tls_calls SEC(".maps");

// TLS session (SSL * or gnutls_session_t) -> its socket, for calls served
// from the library's buffer without a syscall.
struct tls_sock {
    __u64 sock;
    __u32 fd;
    __u16 family;
    __u16 _pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 65536);
    __type(key, __u64);
    __type(value, struct tls_sock);
} tls_socks SEC(".maps");

// Records are assembled in a scratch slot (ring.bpf.h), then copied into the
// ring with their true size. Twice the largest snaplen, so a masked offset
// plus a masked length always stays inside the slot.
struct scratch_slot {
    __u8 bytes[sizeof(struct mt_sock_event) + 2 * MT_MAX_SNAPLEN];
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct scratch_slot);
} scratch SEC(".maps");

// 0 until userspace has attached every program, then 1: the capture starts
// at one instant. Attaching is one syscall per tracepoint, and a tracer that
// loses its CPU between sys_exit_recvfrom and sys_exit_sendto saw the replies
// of connections open before the trace without their commands, judged them
// not MySQL and stopped copying them for good.
volatile __u8 capture_started;

// A process the trace is for (the pid filter alone).
static __always_inline int selected(__u32 tgid)
{
    if (single_tgid)
        return tgid == single_tgid;
    return bpf_map_lookup_elem(&mt_pids, &tgid) != 0;
}

// A process whose calls are recorded now.
static __always_inline int traced(__u32 tgid)
{
    return selected(tgid) && capture_started;
}

// A no-op the verifier knows (kernel 6.2+): `obj` becomes a read-only
// typed pointer, so fields are loaded directly instead of through one
// bpf_probe_read_kernel call each.
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define MT_KCAST(type, p) ((type *)bpf_rdonly_cast((p), bpf_core_type_id_kernel(type)))

// The stream socket behind `fd` of the current process, or 0. This runs for
// every socket call of traced processes: its loads are direct.
static __always_inline struct sock *stream_socket(int fd, __u16 *family)
{
    struct task_struct *task = bpf_get_current_task_btf();
    struct fdtable *fdt = task->files->fdt;
    struct file *fp = 0;
    struct file *f;
    struct socket *so;
    struct sock *sk;
    __u16 fam;

    if (fd < 0 || (unsigned int)fd >= fdt->max_fds)
        return 0;
    bpf_probe_read_kernel(&fp, sizeof(fp), &fdt->fd[fd]);
    if (!fp)
        return 0;
    f = MT_KCAST(struct file, fp);
    if ((f->f_inode->i_mode & S_IFMT) != S_IFSOCK)
        return 0;
    so = MT_KCAST(struct socket, f->private_data);
    if (so->type != SOCK_STREAM)
        return 0;
    sk = so->sk;
    fam = sk->__sk_common.skc_family;
    if (fam != AF_INET && fam != AF_INET6 && fam != AF_UNIX)
        return 0;
    *family = fam;
    return sk;
}

// Takes a scratch slot for a record; release it with mt_scratch_release().
static __always_inline struct mt_sock_event *claim(__u32 *slot)
{
    void *ev;

    if (mt_scratch_claim(slot))
        return 0;
    ev = bpf_map_lookup_elem(&scratch, slot);
    if (!ev)
        mt_scratch_release(*slot);
    return ev;
}

static __always_inline void emit(struct mt_sock_event *ev, __u16 op, const struct inflight *in,
                                 __s64 ret, __u64 copied)
{
    __u64 size;

    if (copied > MT_MAX_SNAPLEN)
        copied = MT_MAX_SNAPLEN;
    barrier_var(copied);
    ev->sock = in->sock;
    ev->ret = ret;
    ev->fd = in->fd;
    ev->op = op;
    ev->family = in->family;
    ev->copied = copied;
    ev->syscall = in->nr;
    size = sizeof(*ev) + copied;
    mt_fill_header(&ev->hdr, MT_EV_SOCK, size);
    // A command is sent when its write starts: on a busy machine the server
    // may have answered before the write returns, and that time is its own.
    if ((op == MT_SOCK_SEND || op == MT_SOCK_TLS_SEND) && in->start_ns)
        ev->hdr.ts_ns = in->start_ns;
    mt_output(ev, size);
}

// Copies up to `len` bytes from user memory to data + off, never past
// snaplen. Returns the number copied.
static __always_inline __u64 copy_user(__u8 *data, __u64 off, const void *src, __u64 len)
{
    __u64 n;

    if (off >= snaplen)
        return 0;
    n = snaplen - off;
    if (len < n)
        n = len;
    off &= MT_MAX_SNAPLEN - 1;
    if (n > MT_MAX_SNAPLEN)
        n = MT_MAX_SNAPLEN;
    barrier_var(n);
    if (n == 0 || bpf_probe_read_user(data + off, n, src))
        return 0;
    return n;
}

static __always_inline __u64 copy_iov(__u8 *data, const struct iovec *iov, __u64 count,
                                      __u64 total)
{
    __u64 copied = 0;

    // Unrolled: clang 19's loop (Debian 13) has states the verifier cannot
    // prune, and client_sys_exit fails to load ("BPF program is too large.
    // Processed 1000001 insn"); clang 14's loop (Debian 12) loads.
#pragma unroll
    for (int i = 0; i < MT_MAX_IOV; i++) {
        struct iovec v;
        __u64 take;

        if (i >= count || total == 0 || copied >= snaplen)
            break;
        if (bpf_probe_read_user(&v, sizeof(v), &iov[i]))
            break;
        take = v.iov_len < total ? v.iov_len : total;
        copied += copy_user(data, copied, v.iov_base, take);
        total -= take;
    }
    return copied;
}

// Per thread: when its current send-type syscall began (see emit()).
struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, __u64);
} send_start SEC(".maps");

// The socket call `nr` on `fd` of a traced process, if `fd` is a stream
// socket: 1 with `in` filled, else 0 with `in` untouched. The caller has
// checked traced().
static __always_inline int socket_call(struct inflight *in, int fd, long nr)
{
    struct sock *sk;
    __u16 family = 0;

    sk = stream_socket(fd, &family);
    if (!sk)
        return 0;
    in->sock = (__u64)sk;
    in->fd = fd;
    in->nr = nr;
    in->family = family;
    return 1;
}

// close and shutdown, before they act (afterwards the fd names nothing).
static __always_inline int sock_end(int fd, long nr)
{
    struct inflight in = {};
    struct mt_sock_event *ev;
    __u8 *state;
    __u8 was;
    __u32 slot;

    if (!socket_call(&in, fd, nr))
        return 0;
    state = bpf_map_lookup_elem(&mt_socks, &in.sock);
    was = state ? *state : MT_SOCK_UNKNOWN;
    // Read before the delete: the element is not ours to read after it.
    if (nr == NR_close)
        bpf_map_delete_elem(&mt_socks, &in.sock);
    if (was == MT_SOCK_IGNORED)
        return 0;
    ev = claim(&slot);
    if (ev) {
        emit(ev, nr == NR_close ? MT_SOCK_CLOSE : MT_SOCK_SHUTDOWN, &in, 0, 0);
        mt_scratch_release(slot);
    }
    return 0;
}

// The start of a send: only its time is kept, the rest is read at its end.
static __always_inline int send_begins(void)
{
    __u64 *start = bpf_task_storage_get(&send_start, bpf_get_current_task_btf(), 0,
                                        BPF_LOCAL_STORAGE_GET_F_CREATE);

    if (start)
        *start = bpf_ktime_get_ns();
    return 0;
}

// The `len` bytes of cleartext at c->buf that a TLS call (OpenSSL,
// GnuTLS, Go's crypto/tls) returned, as a `kind` record on its socket: the
// one a syscall inside the call named, remembered for its connection
// (c->ssl), else the one last remembered (a call served from the library's
// own buffer makes no syscall).
static __always_inline int tls_cleartext(struct tls_call *c, __u32 kind, __u64 len)
{
    struct inflight in = {};
    struct mt_sock_event *ev;
    __u32 slot;

    if (c->sock) {
        struct tls_sock ts = {.sock = c->sock, .fd = c->fd, .family = c->family};

        bpf_map_update_elem(&tls_socks, &c->ssl, &ts, BPF_ANY);
    } else {
        struct tls_sock *ts = bpf_map_lookup_elem(&tls_socks, &c->ssl);

        if (ts) {
            c->sock = ts->sock;
            c->fd = ts->fd;
            c->family = ts->family;
        }
    }
    ev = claim(&slot);
    if (!ev)
        return 0;
    in.sock = c->sock;
    in.fd = c->fd;
    in.family = c->family;
    in.start_ns = c->start_ns;
    emit(ev, kind, &in, len, copy_user(ev->data, 0, (const void *)c->buf, len));
    mt_scratch_release(slot);
    return 0;
}

#include "client_go.bpf.h"
#include "client_java.bpf.h"

// Raw tracepoint fallback: every syscall of every process comes here.
SEC("tp_btf/sys_enter")
int BPF_PROG(client_sys_enter, struct pt_regs *regs, long id)
{
    switch (id) {
    case NR_close: case NR_shutdown: case NR_write: case NR_writev: case NR_sendto:
    case NR_sendmsg:
        break;
    default:
        return 0;
    }
    if (!traced(bpf_get_current_pid_tgid() >> 32))
        return 0;
    if (id == NR_close || id == NR_shutdown)
        return sock_end((int)BPF_CORE_READ(regs, di), id);
    return send_begins();
}

// The per-syscall entry tracepoints: close and shutdown, and the start of a
// send. The process filter comes first.
#define MT_SYS_ENTER_END(name)                                                \
    SEC("tracepoint/syscalls/sys_enter_" #name)                               \
    int client_enter_##name(struct trace_event_raw_sys_enter *ctx)            \
    {                                                                         \
        if (!traced(bpf_get_current_pid_tgid() >> 32))                        \
            return 0;                                                         \
        return sock_end((int)ctx->args[0], NR_##name);                        \
    }

#define MT_SYS_ENTER_SEND(name)                                               \
    SEC("tracepoint/syscalls/sys_enter_" #name)                               \
    int client_enter_##name(void *ctx)                                        \
    {                                                                         \
        if (!traced(bpf_get_current_pid_tgid() >> 32))                        \
            return 0;                                                         \
        return send_begins();                                                 \
    }

MT_SYS_ENTER_END(close)
MT_SYS_ENTER_END(shutdown)
MT_SYS_ENTER_SEND(write)
MT_SYS_ENTER_SEND(writev)
MT_SYS_ENTER_SEND(sendto)
MT_SYS_ENTER_SEND(sendmsg)

// The end of a socket syscall: what was transferred, into `ev`.
// `state` is the socket's entry in mt_socks, if it has one.
static __always_inline void sys_exit_record(struct mt_sock_event *ev, struct inflight *in,
                                            long ret, __u32 tid, __u8 *state)
{
    struct tls_call *tls;
    __u64 copied = 0;
    __u16 op;

    if (in->kind == ARG_ADDR) {
        __u8 fresh = MT_SOCK_FRESH;

        bpf_map_update_elem(&mt_socks, &in->sock, &fresh, BPF_ANY);
        copied = copy_user(ev->data, 0, (const void *)in->ptr, in->len < 128 ? in->len : 128);
        emit(ev, MT_SOCK_CONNECT, in, ret, copied);
        return;
    }
    op = (in->nr == NR_write || in->nr == NR_writev || in->nr == NR_sendto ||
          in->nr == NR_sendmsg) ? MT_SOCK_SEND : MT_SOCK_RECV;

    tls = bpf_map_lookup_elem(&tls_calls, &tid);
    if (!tls)
        tls = go_tls_call();
    if (tls) {
        // Inside SSL_read/SSL_write: these bytes are TLS records, and the
        // cleartext comes from the library call itself. Keep their length.
        tls->sock = in->sock;
        tls->fd = in->fd;
        tls->family = in->family;
        emit(ev, op, in, ret, 0);
        return;
    }
    if (in->kind == ARG_BUF) {
        copied = copy_user(ev->data, 0, (const void *)in->ptr, ret);
    } else if (in->kind == ARG_IOV) {
        copied = copy_iov(ev->data, (const struct iovec *)in->ptr, in->len, ret);
    } else {
        struct user_msghdr msg;

        if (bpf_probe_read_user(&msg, sizeof(msg), (const void *)in->ptr) == 0)
            copied = copy_iov(ev->data, (const struct iovec *)msg.msg_iov, msg.msg_iovlen, ret);
    }

    if (state && (*state == MT_SOCK_FRESH || *state == MT_SOCK_FRESH_HDR)) {
        __u8 verdict = MT_SOCK_IGNORED;

        // The client of a fresh connection never speaks first in MySQL, and
        // the server's first packet is the greeting: length, seq 0, then
        // protocol version 10. Many clients read the 4-byte header alone.
        if (op == MT_SOCK_SEND || ret == 0)
            return;
        if (*state == MT_SOCK_FRESH_HDR) {
            if (copied >= 1 && ev->data[0] == 10)
                verdict = MT_SOCK_MYSQL;
        } else if (copied == 4 && ev->data[3] == 0) {
            verdict = MT_SOCK_FRESH_HDR;
        } else if (copied >= 5 && ev->data[3] == 0 && ev->data[4] == 10) {
            verdict = MT_SOCK_MYSQL;
        }
        bpf_map_update_elem(&mt_socks, &in->sock, &verdict, BPF_ANY);
        if (verdict == MT_SOCK_IGNORED)
            return;
    }
    emit(ev, op, in, ret, copied);
}

// The end of a data or connect syscall of a traced process, with everything
// it moved. `regs` are the call's user registers: its arguments are still
// there.
static __always_inline int sock_call_done(const struct pt_regs *regs, long nr, long ret,
                                          __u16 kind)
{
    struct inflight in = {};
    struct mt_sock_event *ev;
    __u8 *state = 0;
    __u32 slot;

    if (kind == ARG_ADDR) {
        // A non-blocking connect completes later; its bytes still follow.
        if (ret != 0 && ret != -EINPROGRESS)
            return 0;
    } else if (ret < 0) {
        return 0;  // EAGAIN and friends: nothing moved
    }
    // A peek's bytes come again in the receive that takes them, and an error
    // queue holds no stream bytes: neither is part of the stream.
    if ((nr == NR_recvfrom && (regs->r10 & (MSG_PEEK | MSG_ERRQUEUE))) ||
        (nr == NR_recvmsg && (regs->dx & (MSG_PEEK | MSG_ERRQUEUE))))
        return 0;
    // Direct loads: `regs` is a BTF pointer (the task's saved registers).
    if (!socket_call(&in, (int)regs->di, nr))
        return 0;
    if (kind != ARG_ADDR) {
        state = bpf_map_lookup_elem(&mt_socks, &in.sock);
        if (state && *state == MT_SOCK_IGNORED)
            return 0;
    }
    in.ptr = regs->si;
    in.len = regs->dx;
    in.kind = kind;
    if (nr == NR_write || nr == NR_writev || nr == NR_sendto || nr == NR_sendmsg) {
        __u64 *start = bpf_task_storage_get(&send_start, bpf_get_current_task_btf(), 0, 0);

        if (start) {
            in.start_ns = *start;
            *start = 0;  // never taken for a later call's start
        }
    }
    ev = claim(&slot);
    if (!ev)
        return 0;
    sys_exit_record(ev, &in, ret, (__u32)bpf_get_current_pid_tgid(), state);
    mt_scratch_release(slot);
    return 0;
}

// What a data or connect syscall passes: its kind of buffer. 0: another call.
static __always_inline __u16 exit_kind(long nr)
{
    switch (nr) {
    case NR_read: case NR_write: case NR_recvfrom: case NR_sendto: return ARG_BUF;
    case NR_readv: case NR_writev: return ARG_IOV;
    case NR_recvmsg: case NR_sendmsg: return ARG_MSG;
    case NR_connect: return ARG_ADDR;
    default: return 0;
    }
}

// Raw tracepoint fallback. Everything but close and shutdown is read at the
// end of the call: the number of the call is in orig_ax.
SEC("tp_btf/sys_exit")
int BPF_PROG(client_sys_exit, struct pt_regs *regs, long ret)
{
    long nr;
    __u16 kind;

    if (single_tgid && (bpf_get_current_pid_tgid() >> 32) != single_tgid)
        return 0;
    nr = BPF_CORE_READ(regs, orig_ax);
    kind = exit_kind(nr);
    if (!kind || !traced(bpf_get_current_pid_tgid() >> 32))
        return 0;
    return sock_call_done(regs, nr, ret, kind);
}

// The record of a syscalls:sys_exit_NAME tracepoint.
struct syscall_exit_record {
    __u64 common;
    int nr;
    long ret;
};

// The per-syscall exit tracepoints of traced processes end here, by a tail
// call: the one copy of sock_call_done the kernel verifies (~140 ms each on
// this code, nine times over when every tracepoint had its own).
// Userspace puts it in exit_worker; it attaches nowhere.
SEC("tracepoint")
int client_exit_worker(struct syscall_exit_record *ctx)
{
    long nr = ctx->nr;
    __u16 kind = exit_kind(nr);

    if (!kind)
        return 0;
    return sock_call_done((struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()), nr,
                          ctx->ret, kind);
}

struct {
    __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} exit_worker SEC(".maps");

// The per-syscall exit tracepoints. Their record holds the call's number and
// result; the arguments come from the task's user registers.
#define MT_SYS_EXIT(name)                                                             \
    SEC("tracepoint/syscalls/sys_exit_" #name)                                        \
    int client_exit_##name(struct syscall_exit_record *ctx)                           \
    {                                                                                 \
        if (traced(bpf_get_current_pid_tgid() >> 32))                                 \
            bpf_tail_call(ctx, &exit_worker, 0);                                      \
        return 0;                                                                     \
    }

MT_SYS_EXIT(read)
MT_SYS_EXIT(write)
MT_SYS_EXIT(recvfrom)
MT_SYS_EXIT(sendto)
MT_SYS_EXIT(readv)
MT_SYS_EXIT(writev)
MT_SYS_EXIT(recvmsg)
MT_SYS_EXIT(sendmsg)
MT_SYS_EXIT(connect)

SEC("uprobe")
int BPF_KPROBE(client_tls_enter, void *ssl, void *buf, __u64 num, void *out_len)
{
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)pid_tgid;
    struct tls_call c = {};

    if (!traced(pid_tgid >> 32))
        return 0;
    c.ssl = (__u64)ssl;
    c.buf = (__u64)buf;
    c.start_ns = bpf_ktime_get_ns();
    c.func = bpf_get_attach_cookie(ctx);
    if (c.func == MT_TLS_SSL_READ_EX || c.func == MT_TLS_SSL_WRITE_EX)
        c.out_len = (__u64)out_len;
    bpf_map_update_elem(&tls_calls, &tid, &c, BPF_ANY);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(client_tls_exit, long ret)
{
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct tls_call *p = bpf_map_lookup_elem(&tls_calls, &tid);
    struct tls_call c;
    __u64 len = 0;

    if (!p)
        return 0;
    c = *p;
    bpf_map_delete_elem(&tls_calls, &tid);
    if (c.out_len) {
        if (ret != 1 || bpf_probe_read_user(&len, sizeof(len), (const void *)c.out_len))
            return 0;
    } else {
        if (ret <= 0)
            return 0;
        len = ret;
    }
    return tls_cleartext(&c,
                         (c.func == MT_TLS_SSL_READ || c.func == MT_TLS_SSL_READ_EX ||
                          c.func == MT_TLS_GNUTLS_RECV) ? MT_SOCK_TLS_RECV : MT_SOCK_TLS_SEND,
                         len);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(client_fork, struct task_struct *parent, struct task_struct *child)
{
    __u32 ptgid = BPF_CORE_READ(parent, tgid);
    __u32 ctgid = BPF_CORE_READ(child, tgid);
    struct mt_proc_event *ev;
    __u8 one = 1;
    void *ring;

    // selected(): the filter follows forks made while the programs attach.
    if (!follow_forks || ptgid == ctgid || !selected(ptgid))
        return 0;
    bpf_map_update_elem(&mt_pids, &ctgid, &one, BPF_ANY);
    ev = mt_reserve(&ring, MT_EV_PROC, sizeof(*ev));
    if (!ev)
        return 0;
    ev->op = MT_PROC_FORK;
    ev->child = ctgid;
    mt_submit(ring, ev, sizeof(*ev));
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(client_exit, struct task_struct *task)
{
    __u32 tid = BPF_CORE_READ(task, pid);
    __u32 tgid = BPF_CORE_READ(task, tgid);
    struct mt_proc_event *ev;
    void *ring;

    bpf_map_delete_elem(&tls_calls, &tid);
    if (tid != tgid || !selected(tgid))
        return 0;
    bpf_map_delete_elem(&mt_pids, &tgid);
    ev = mt_reserve(&ring, MT_EV_PROC, sizeof(*ev));
    if (!ev)
        return 0;
    ev->op = MT_PROC_EXIT;
    ev->child = 0;
    mt_submit(ring, ev, sizeof(*ev));
    return 0;
}

// ---- The shim's USDT probes (include/mysqltrace/abi/usdt.h) ----
// Each carries the address of its struct on the firing thread's stack: one
// argument and one read, where an argument each cost ~75 ns.

static __noinline int begin_record(__u32 tgid, __u64 info);

SEC("usdt")
int BPF_USDT(client_shim_io, __u64 at)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    struct inflight in = {};
    struct mt_io_probe p;
    struct mt_sock_event *ev;
    __u64 copied = 0;
    __u32 slot;

    if (!traced(tgid) || bpf_probe_read_user(&p, sizeof(p), (const void *)at))
        return 0;
    if (p.begin)
        begin_record(tgid, p.begin);
    ev = claim(&slot);
    if (!ev)
        return 0;
    in.sock = MT_SHIM_SOCK(tgid, p.conn);
    in.fd = p.fd;
    in.family = p.family;
    in.start_ns = p.start_ns;
    if (p.op == MT_SOCK_CONNECT) {
        copied = copy_user(ev->data, 0, (const void *)p.ptr, p.len < 128 ? p.len : 128);
    } else if (p.ret > 0 && p.op != MT_SOCK_CLOSE && p.op != MT_SOCK_SHUTDOWN) {
        if (p.kind == MT_IO_IOV)
            copied = copy_iov(ev->data, (const struct iovec *)p.ptr, p.len, p.ret);
        else
            copied = copy_user(ev->data, 0, (const void *)p.ptr, p.ret);
    }
    emit(ev, p.op, &in, p.ret, copied);
    mt_scratch_release(slot);
    return 0;
}

// Claims a scratch slot for an API record and fills the common fields.
static __always_inline struct mt_api_event *api_record(__u32 *slot, __u32 tgid, __u32 phase,
                                                       __u32 func, __u64 handle, __u32 conn)
{
    struct mt_api_event *ev = (struct mt_api_event *)claim(slot);

    if (!ev)
        return 0;
    ev->handle = handle;
    ev->sock = conn ? MT_SHIM_SOCK(tgid, conn) : 0;
    ev->ret = 0;
    ev->phase = phase;
    ev->func = func;
    ev->error_code = 0;
    ev->thread_id = 0;
    ev->text_len = 0;
    ev->copied = 0;
    __builtin_memset(ev->sqlstate, 0, sizeof(ev->sqlstate));
    return ev;
}

static __always_inline void api_emit_at(struct mt_api_event *ev, __u64 ts_ns)
{
    __u64 copied = ev->copied;
    __u64 size;

    if (copied > MT_MAX_API_TEXT)
        copied = MT_MAX_API_TEXT;
    size = sizeof(*ev) + copied;
    mt_fill_header_at(&ev->hdr, MT_EV_API, size, ts_ns);
    mt_output(ev, size);
}

static __always_inline void api_emit(struct mt_api_event *ev)
{
    api_emit_at(ev, bpf_ktime_get_ns());
}

// The MT_API_BEGIN record of a call (struct mt_api_begin_info at `info`):
// its function, handle, connection and up to MT_MAX_API_TEXT bytes of its
// text argument, stamped with the call's begin, or now when it has none
// (an api_begin hit). One read of the struct, one of the text.
static __noinline int begin_record(__u32 tgid, __u64 info)
{
    struct mt_api_begin_info b;
    struct mt_api_event *ev;
    __u64 n;
    __u32 slot;

    if (bpf_probe_read_user(&b, sizeof(b), (const void *)info))
        return 0;
    ev = api_record(&slot, tgid, MT_API_BEGIN, b.func, b.handle, b.conn);
    if (!ev)
        return 0;
    ev->text_len = b.arg_len > 0xffffffffu ? 0xffffffffu : b.arg_len;
    n = b.arg_len;
    if (n > MT_MAX_API_TEXT)
        n = MT_MAX_API_TEXT;
    barrier_var(n);
    if (b.arg && n && bpf_probe_read_user(ev->data, n, (const void *)b.arg) == 0)
        ev->copied = n;
    api_emit_at(ev, b.begin_ns ? b.begin_ns : bpf_ktime_get_ns());
    mt_scratch_release(slot);
    return 0;
}

SEC("usdt")
int BPF_USDT(client_shim_api_begin, __u64 at)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;

    if (!traced(tgid))
        return 0;
    return begin_record(tgid, at);
}

SEC("usdt")
int BPF_USDT(client_shim_api_end, __u64 at)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    struct mt_api_end_probe p;
    struct mt_api_event *ev;
    __u32 slot;
    long n;

    if (!traced(tgid) || bpf_probe_read_user(&p, sizeof(p), (const void *)at))
        return 0;
    if (p.begin)
        begin_record(tgid, p.begin);
    ev = api_record(&slot, tgid, MT_API_END, p.func, p.handle, p.conn);
    if (!ev)
        return 0;
    ev->ret = p.ret;
    ev->error_code = p.error_code;
    ev->thread_id = p.thread_id;
    if (p.sqlstate)
        bpf_probe_read_user_str(ev->sqlstate, sizeof(ev->sqlstate), (const void *)p.sqlstate);
    if (p.message) {
        n = bpf_probe_read_user_str(ev->data, MT_MAX_API_TEXT, (const void *)p.message);
        if (n > 1) {
            ev->copied = n - 1;  // without the NUL
            ev->text_len = n - 1;
        }
    }
    api_emit(ev);
    mt_scratch_release(slot);
    return 0;
}

SEC("usdt")
int BPF_USDT(client_shim_trace_event, __u64 at)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    struct mt_trace_event_probe p;
    struct mt_api_event *ev;
    __u32 slot;

    if (!traced(tgid) || bpf_probe_read_user(&p, sizeof(p), (const void *)at))
        return 0;
    ev = api_record(&slot, tgid, MT_API_TRACE, p.stage, p.handle, p.conn);
    if (!ev)
        return 0;
    ev->error_code = p.event;
    api_emit(ev);
    mt_scratch_release(slot);
    return 0;
}
