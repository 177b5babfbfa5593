// SPDX-License-Identifier: GPL-2.0-only
// Server side: waits, from the syscall tracepoints (a futex's caller found on
// the stack), and the idle wait between commands, from the statement probes.
//
// Part of server.bpf.c, which includes it after server_stages.bpf.h: it uses
// server.bpf.c's inputs, struct thread_state and helpers, and is not a
// standalone header.
#pragma once

// x86-64 syscall numbers.
#define NR_read 0
#define NR_write 1
#define NR_close 3
#define NR_pread64 17
#define NR_pwrite64 18
#define NR_readv 19
#define NR_writev 20
#define NR_sendto 44
#define NR_sendmsg 46
#define NR_fsync 74
#define NR_fdatasync 75
#define NR_futex 202
#define NR_openat 257

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

// Whether `ret` follows a call instruction, as a return address does: a
// word of the server's code address range that does not (a function
// pointer kept in a local, as MySQL's timer and MDL code leave in glibc's
// uninitialised wait frames) is not a caller. call rel32 (e8), and the
// indirect calls ff /2 through a register, a disp8/disp32 base or %rip.
static __always_inline int after_call(__u64 ret) {
    __u8 c[8];

    if (bpf_probe_read_user(c, sizeof(c), (void *)(ret - 8)))
        return 0;
    return c[3] == 0xe8 || (c[6] == 0xff && (c[7] & 0xf8) == 0xd0) ||
           (c[5] == 0xff && (c[6] & 0xf8) == 0x50) || (c[2] == 0xff && c[3] == 0x15) ||
           (c[2] == 0xff && (c[3] & 0xf8) == 0x90);
}

// Whether the return address at words[i] is the live one of a caller that
// keeps a frame pointer (MySQL 9.7's code does): glibc's wait code below it
// saved that caller's %rbp (a stack address above the return address, where
// the caller's own saved %rbp and return address sit). A stale return
// address left in glibc's uninitialised locals by an earlier call (MySQL's
// my_timer_nanoseconds calling clock_gettime before a timed wait) has no
// such frame. Only the words read are looked at: a deeper frame fails.
#define SAVED_REGS_SCAN 16

static __always_inline int frame_of_caller(struct scan_buf *b, __u64 sp, int i) {
    for (int d = 1; d <= SAVED_REGS_SCAN; d++) {
        __u64 f, k, ret;

        if (d > i)
            break;
        f = b->words[(i - d) & (CALLER_SCAN - 1)];
        if (f <= sp + 8 * i || f >= sp + 8 * (CALLER_SCAN - 1) || (f & 7))
            continue;
        k = (f - sp) / 8 + 1;
        ret = b->words[k & (CALLER_SCAN - 1)];
        if (ret >= text_lo && ret < text_hi)
            return 1;
    }
    return 0;
}

// `sp`: the thread's user stack pointer at the syscall.
static __always_inline __u64 server_caller(__u64 sp) {
    struct scan_buf *b;
    __u64 first = 0;
    __u32 zero = 0;

    // Syscall tracepoints run with preemption on: the buffer may be shared
    // with another task on this CPU, which costs at worst a wrong caller.
    b = bpf_map_lookup_elem(&scan, &zero);
    if (!b || bpf_probe_read_user(b->words, sizeof(b->words), (void *)sp))
        return 0;
    for (int i = 0; i < CALLER_SCAN; i++) {
        __u64 w = b->words[i];

        if (w < text_lo || w >= text_hi || !after_call(w))
            continue;
        if (!first)
            first = w;
        if (frame_of_caller(b, sp, i))
            return w;
    }
    return first;
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

// The THD the calling server thread runs now (thd_from_tls), or 0.
static __always_inline void *current_thd(void) {
    struct task_struct *t = bpf_get_current_task_btf();
    __u64 fsbase = BPF_CORE_READ(t, thread.fsbase);
    void *thd = 0;

    if (!fsbase || bpf_probe_read_user(&thd, sizeof(thd), (void *)(fsbase + thd_tp_off)))
        return 0;
    return thd;
}

// The start of syscall `nr` with its first four arguments; `regs`: the
// thread's user registers when at hand (else looked up, for a futex's stack).
static __always_inline int wait_enter(long nr, __u64 a0, __u64 a1, __u64 a2, __u64 a3,
                                      struct pt_regs *regs) {
    struct thread_state *st;
    __u32 kind, op;

    kind = wait_kind(nr);
    if (!kind)
        return 0;
    if (thd_from_tls) {
        void *thd = current_thd();

        if (!thd)
            return 0;  // not a connection thread now
        st = state_of(1);
        if (!st)
            return 0;
        st->thd = thd;
        st->sc_flags = text_command(read_u32(thd, off_command)) ? MT_WAIT_IN_STATEMENT : 0;
    } else {
        st = state_of(0);
        if (!st || !st->thd)
            return 0;  // not a connection thread (yet)
        st->sc_flags = st->active ? MT_WAIT_IN_STATEMENT : 0;
    }
    st->sc_value = 0;
    st->sc_caller = 0;
    if (kind == MT_WAIT_FUTEX) {
        op = (__u32)a1 & FUTEX_CMD_MASK;
        if (op != FUTEX_WAIT && op != FUTEX_WAIT_BITSET && op != FUTEX_LOCK_PI &&
            op != FUTEX_LOCK_PI2) {
            st->sc_kind = 0;  // a wake: never blocks
            return 0;
        }
        st->sc_object = a0;
        st->sc_value = (__u32)a2;
        if (a3)
            st->sc_flags |= MT_WAIT_TIMED;
        if (!regs)
            regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
        st->sc_caller = server_caller(BPF_CORE_READ(regs, sp));
    } else if (kind == MT_WAIT_OPEN) {
        st->sc_object = 0;  // the fd comes back at exit
        st->sc_flags |= MT_WAIT_FILE;
    } else {
        __u32 cls;

        st->sc_object = (__u32)a0;  // the fd
        // send takes sockets only: the descriptor table is read for the
        // calls that take any file.
        cls = kind == MT_WAIT_SEND ? MT_WAIT_SOCKET : fd_class(st->sc_object);
        if (!cls) {
            st->sc_kind = 0;
            return 0;
        }
        st->sc_flags |= cls;
    }
    st->sc_kind = kind;
    st->sc_start = bpf_ktime_get_ns();
    return 0;
}

// Sends the thread's idle wait (its client's think time before this
// command): from the end of its last statement to `end`, when the next
// command begins, as performance_schema counts one idle wait. Taken from the
// statement probes, not from the reads and polls of the socket: those
// syscalls' tracepoints ran ~10 times a statement (the client's own calls
// among them) for one record. A new connection on a thread of the server's
// cache (another THD) was not idle: nothing is sent.
static __always_inline void send_idle(struct thread_state *st, void *thd, __u64 end) {
    struct mt_server_wait_event *ev;
    void *ring;
    __u64 id;

    if (!st->idle_start || st->idle_thd != thd || !st->thd) {
        st->idle_start = 0;
        return;
    }
    id = thread_id_of(st->thd);
    send_account(st, st->thd, id);
    ev = mt_reserve(&ring, MT_EV_SERVER_WAIT, sizeof(*ev));
    if (ev) {
        ev->hdr.ts_ns = end;
        ev->start_ns = st->idle_start;
        ev->thread_id = id;
        ev->object = st->idle_object;
        ev->bytes = 0;
        ev->caller = 0;
        ev->value = 0;
        ev->kind = MT_WAIT_POLL;
        ev->flags = MT_WAIT_SOCKET;
        ev->ret = 0;
        ev->_pad0 = 0;
        mt_submit(ring, ev, sizeof(*ev));
    }
    st->idle_start = 0;
}

// The end of the syscall that wait_enter() began, with its result.
static __always_inline int wait_exit(long ret) {
    struct mt_server_wait_event *ev;
    struct thread_state *st;
    void *ring;
    __u64 id, now;

    st = state_of(0);
    if (!st || !st->sc_kind)
        return 0;
    if (st->sc_flags & MT_WAIT_SOCKET) {
        if (!(st->sc_flags & MT_WAIT_IN_STATEMENT) && st->sc_kind == MT_WAIT_READ) {
            st->sc_kind = 0;  // reading the next command: part of the idle wait
            return 0;
        }
        if (st->sc_kind == MT_WAIT_WRITE || st->sc_kind == MT_WAIT_SEND)
            st->idle_object = st->sc_object;  // the client's, named in the idle wait
    }
    now = bpf_ktime_get_ns();
    if (!(st->sc_flags & MT_WAIT_IN_STATEMENT) && st->idle_start)
        st->idle_start = now;  // the idle wait begins after this one
    id = thread_id_of(st->thd);
    send_account(st, st->thd, id);
    ev = mt_reserve(&ring, MT_EV_SERVER_WAIT, sizeof(*ev));
    if (ev) {
        ev->hdr.ts_ns = now;
        ev->start_ns = st->sc_start;
        ev->thread_id = id;
        ev->object = st->sc_kind == MT_WAIT_OPEN && ret >= 0 ? (__u64)ret : st->sc_object;
        ev->bytes = (st->sc_kind == MT_WAIT_READ || st->sc_kind == MT_WAIT_WRITE ||
                     st->sc_kind == MT_WAIT_SEND) &&
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

// The per-syscall tracepoints (syscalls:sys_enter_futex, ...): they run for
// the syscalls they name only. Attached by id (tracefs) in userspace.
#define MT_WAIT_SYSCALL(name)                                                       \
    SEC("tracepoint/syscalls/sys_enter_" #name)                                     \
    int server_enter_##name(struct trace_event_raw_sys_enter *ctx) {                \
        if (!traced())                                                              \
            return 0;                                                               \
        return wait_enter(NR_##name, ctx->args[0], ctx->args[1], ctx->args[2],      \
                          ctx->args[3], 0);                                         \
    }                                                                               \
    SEC("tracepoint/syscalls/sys_exit_" #name)                                      \
    int server_exit_##name(struct trace_event_raw_sys_exit *ctx) {                  \
        if (!traced())                                                              \
            return 0;                                                               \
        return wait_exit(ctx->ret);                                                 \
    }

MT_WAIT_SYSCALL(read)
MT_WAIT_SYSCALL(write)
MT_WAIT_SYSCALL(close)
MT_WAIT_SYSCALL(pread64)
MT_WAIT_SYSCALL(pwrite64)
MT_WAIT_SYSCALL(readv)
MT_WAIT_SYSCALL(writev)
MT_WAIT_SYSCALL(sendto)
MT_WAIT_SYSCALL(sendmsg)
MT_WAIT_SYSCALL(fsync)
MT_WAIT_SYSCALL(fdatasync)
MT_WAIT_SYSCALL(futex)
MT_WAIT_SYSCALL(openat)

// The raw tracepoints, when tracefs (the per-syscall tracepoints' ids) is
// out of reach: they run for every syscall of every process.
SEC("tp_btf/sys_enter")
int BPF_PROG(server_sys_enter, struct pt_regs *regs, long id) {
    if (!traced() || !wait_kind(id))
        return 0;
    return wait_enter(id, BPF_CORE_READ(regs, di), BPF_CORE_READ(regs, si),
                      BPF_CORE_READ(regs, dx), BPF_CORE_READ(regs, r10), regs);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(server_sys_exit, struct pt_regs *regs, long ret) {
    if (!traced())
        return 0;
    return wait_exit(ret);
}
