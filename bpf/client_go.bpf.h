// SPDX-License-Identifier: GPL-2.0-only
// Client side, Go programs: the cleartext of Go's crypto/tls, from uprobes
// on crypto/tls.(*Conn).Read and (*Conn).Write in the (statically linked)
// executable. Included by client.bpf.c after its helpers; the records are
// the MT_SOCK_TLS_RECV/SEND records of the OpenSSL and GnuTLS probes, so
// userspace decodes them the same way.
//
// Go's register ABI (ABIInternal, Go >= 1.17 on amd64): the receiver
// (*tls.Conn) is in RAX, the slice b in RBX (pointer), RCX (length) and RDI
// (capacity); the results n and err come back in RAX and RBX:RCX. R14 holds
// the running goroutine's g at all times in Go code.
//
// No uretprobes: a uretprobe replaces the return address on the stack, and
// Go moves a goroutine's stack when it grows (copystack), then finds a
// return address it does not know. Userspace finds every RET instruction of
// the two functions by disassembly and puts a plain uprobe on each
// (client_go_tls_ret); RAX holds n there.
//
// A call is paired with its return by goroutine, not by thread: a goroutine
// blocked in Read (the netpoller parks it until the server answers) usually
// resumes on another thread (M), and may be preempted anywhere. The key is
// (tgid, g): g is unique among a process's live goroutines, and Go reuses a
// dead g only for a new goroutine. A call left by a panic reaches no RET:
// its entry stays until that g's next call replaces it (or the LRU evicts
// it), and the g's socket syscalls meanwhile count as TLS records.
//
// The socket: the read/write syscalls the same goroutine makes inside the
// call (sys_exit_record in client.bpf.c asks go_tls_call() when the thread
// is in no OpenSSL/GnuTLS call). Go makes them from
// runtime/internal/syscall.Syscall6, assembly that keeps R14, so the
// thread's saved user R14 names the goroutine at the syscall too. A Read
// served from the tls.Conn's own buffer makes no syscall: the socket last
// seen for that *tls.Conn (tls_socks) is used, as for SSL *.

// Set by userspace when it attached the Go probes: the syscall programs
// then look for a Go call (one hash lookup on each socket syscall of a
// traced process).
const volatile __u8 go_tls = 0;

struct go_key {
    __u64 g;
    __u32 tgid;
    __u32 _pad;
};

// Go TLS calls in progress, by goroutine. LRU: a call that panics never
// reaches a RET, and a process that exits leaves its entries behind.
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, struct go_key);
    __type(value, struct tls_call);
} go_tls_calls SEC(".maps");

// The Go TLS call the current goroutine is in, or 0. Called from the
// syscall programs: the user registers are the thread's saved ones.
static __always_inline struct tls_call *go_tls_call(void) {
    struct go_key k = {};
    struct pt_regs *regs;

    if (!go_tls)
        return 0;
    regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
    if (!regs)
        return 0;
    k.g = BPF_CORE_READ(regs, r14);
    k.tgid = bpf_get_current_pid_tgid() >> 32;
    return bpf_map_lookup_elem(&go_tls_calls, &k);
}

// On the first instruction of (*Conn).Read or (*Conn).Write (cookie: enum
// mt_tls_func). A goroutine whose stack must grow runs the prologue twice:
// the second entry replaces the first, with the same arguments.
SEC("uprobe")
int client_go_tls_enter(struct pt_regs *ctx) {
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    struct go_key k = {};
    struct tls_call c = {};

    if (!traced(pid_tgid >> 32))
        return 0;
    k.g = ctx->r14;
    k.tgid = pid_tgid >> 32;
    c.ssl = ctx->ax;  // *tls.Conn
    c.buf = ctx->bx;  // b's data
    c.start_ns = bpf_ktime_get_ns();
    c.func = bpf_get_attach_cookie(ctx);
    bpf_map_update_elem(&go_tls_calls, &k, &c, BPF_ANY);
    return 0;
}

// On each RET of the two functions: n bytes of b were written or read.
SEC("uprobe")
int client_go_tls_ret(struct pt_regs *ctx) {
    struct go_key k = {};
    struct tls_call *p;
    struct tls_call c;
    __s64 n = (__s64)ctx->ax;

    k.g = ctx->r14;
    k.tgid = bpf_get_current_pid_tgid() >> 32;
    p = bpf_map_lookup_elem(&go_tls_calls, &k);
    if (!p)
        return 0;  // the call began before the trace
    c = *p;
    bpf_map_delete_elem(&go_tls_calls, &k);
    if (n <= 0)
        return 0;
    return tls_cleartext(&c, c.func == MT_TLS_GO_READ ? MT_SOCK_TLS_RECV : MT_SOCK_TLS_SEND, n);
}
