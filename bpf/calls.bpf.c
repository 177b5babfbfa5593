// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace calls`: entry and return of every traced function of one
// process, USDT annotations and thread exits, as compact fixed-size records
// (struct mt_call_event). The call tree is rebuilt in userspace.
//
// Entry and return programs are attached through one uprobe_multi link per
// mapped file each, at the same offsets: the return probe then shares the
// entry probe's trap, and a traced call costs one trap at entry plus the
// return trampoline (shared/FACTS.md section 2).
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>

#include "ring.bpf.h"

char LICENSE[] SEC("license") = "GPL";

// Inputs.
const volatile __u32 target_tgid = 0;
const volatile __u32 target_tid = 0;  // 0: every thread of target_tgid
// 0: the probes fire and return at once (benchmarks: the trap floor).
const volatile __u32 record_calls = 1;

// State: records written per thread, so that userspace can tell exactly
// where in a thread's sequence records were lost (a full ring on any CPU).
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, __u32);
    __type(value, __u64);
} call_seq SEC(".maps");

static __always_inline int traced(__u64 pid_tgid)
{
    if ((pid_tgid >> 32) != target_tgid)
        return 0;
    return target_tid == 0 || (__u32)pid_tgid == target_tid;
}

// A thread runs one probe at a time, so its counter needs no atomics.
static __always_inline __u64 next_seq(__u32 tid)
{
    __u64 *s = bpf_map_lookup_elem(&call_seq, &tid);
    __u64 one = 1;

    if (s)
        return ++*s;
    if (bpf_map_update_elem(&call_seq, &tid, &one, BPF_NOEXIST) != 0)
        return 0;
    return 1;
}

static __always_inline void emit(__u32 tid, __u64 seq, __u32 kind, __u32 func, __u64 sp,
                                 __u64 value)
{
    struct mt_call_event *ev;
    void *ring;

    ev = mt_reserve(&ring, MT_EV_CALL, sizeof(*ev));
    if (!ev)
        return;
    ev->seq = seq;
    ev->sp = sp;
    ev->value = value;
    ev->func = func;
    ev->kind = kind;
    mt_submit(ring, ev, sizeof(*ev));
}

// Loaded as uprobe_multi; cookie: the function's index.
SEC("uprobe")
int calls_entry(struct pt_regs *ctx)
{
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    __u64 sp, ret_addr = 0;

    if (!traced(pid_tgid) || !record_calls)
        return 0;
    // The probe sits on the first instruction (after any endbr64): the
    // stack pointer still points at the return address.
    sp = PT_REGS_SP(ctx);
    bpf_probe_read_user(&ret_addr, sizeof(ret_addr), (void *)sp);
    emit((__u32)pid_tgid, next_seq((__u32)pid_tgid), MT_CALL_ENTRY,
         (__u32)bpf_get_attach_cookie(ctx), sp, ret_addr);
    return 0;
}

// Loaded as uprobe_multi, attached with BPF_F_UPROBE_MULTI_RETURN.
SEC("uprobe")
int calls_return(struct pt_regs *ctx)
{
    __u64 pid_tgid = bpf_get_current_pid_tgid();

    if (!traced(pid_tgid) || !record_calls)
        return 0;
    emit((__u32)pid_tgid, next_seq((__u32)pid_tgid), MT_CALL_RETURN,
         (__u32)bpf_get_attach_cookie(ctx), PT_REGS_SP(ctx), PT_REGS_RC(ctx));
    return 0;
}

SEC("usdt")
int BPF_USDT(calls_usdt)
{
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    long arg = 0;

    if (!traced(pid_tgid))
        return 0;
    if (bpf_usdt_arg_cnt(ctx) > 0)
        bpf_usdt_arg(ctx, 0, &arg);
    emit((__u32)pid_tgid, next_seq((__u32)pid_tgid), MT_CALL_USDT, (__u32)bpf_usdt_cookie(ctx),
         PT_REGS_SP(ctx), (__u64)arg);
    return 0;
}

// ---- Keeping unwinders working ----
//
// A return probe replaces the return address on the stack with the address
// of the kernel's trampoline page. An unwinder (a C++ throw, pthread_exit,
// backtrace()) finds no unwind info there and gives up: a throw through a
// traced call would end in std::terminate. So on entry to an unwinder, every
// replaced return address of the thread is put back, from the kernel's own
// list of pending return probes (current->utask->return_instances: the
// stack slot and the original address of each). The kernel copes with
// probes whose address was put back: it drops them when their frame is gone.
//
// Two ways, chosen at load time:
// - write: bpf_probe_write_user puts the addresses back at once; when the
//   exception is caught, the calls still running above the catch point get
//   the trampoline back, so their returns are seen again.
// - stop: a locked-down kernel refuses that helper. The thread stops the
//   process (SIGSTOP, delivered before the unwinder runs) and hands the
//   slots to mysqltrace, which writes them and continues it (SIGCONT).

// The kernel keeps at most this many pending return probes per thread.
#define MAX_RETURN_INSTANCES MT_CALL_FIXUP_SLOTS
#define SIGSTOP 19

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 64 * 1024);
} call_fixups SEC(".maps");

// Outputs: unwinds whose fix-up record could not be written (the process
// then unwinds into the trampoline and aborts).
__u64 fixups_failed = 0;

static __always_inline __u64 trampoline_of(struct task_struct *task)
{
    return BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
}

static __always_inline void note_unwind(struct pt_regs *ctx, __u64 pid_tgid, __u32 kind,
                                        __u64 count)
{
    if (traced(pid_tgid) && record_calls)
        emit((__u32)pid_tgid, next_seq((__u32)pid_tgid), kind, (__u32)bpf_get_attach_cookie(ctx),
             PT_REGS_SP(ctx), count);
}

// Unwinder entries (cookie: enum mt_call_unwinder), write way. Every thread
// of the process, whatever --tid says: the kernel replaced return addresses
// in all of them.
SEC("uprobe")
int calls_unwind(struct pt_regs *ctx)
{
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    struct return_instance *ri;
    __u64 tramp;
    __u32 restored = 0;

    if ((pid_tgid >> 32) != target_tgid)
        return 0;
    tramp = trampoline_of(task);
    ri = BPF_CORE_READ(task, utask, return_instances);
    for (int i = 0; i < MAX_RETURN_INSTANCES && ri && tramp; i++) {
        __u64 slot = BPF_CORE_READ(ri, stack);
        __u64 orig = BPF_CORE_READ(ri, orig_ret_vaddr);
        __u64 cur = 0;

        // Newest first: of two instances for one slot (a tail call), the
        // first puts the address back and the second finds it there.
        if (orig != tramp && bpf_probe_read_user(&cur, sizeof(cur), (void *)slot) == 0 &&
            cur == tramp && bpf_probe_write_user((void *)slot, &orig, sizeof(orig)) == 0)
            restored++;
        ri = BPF_CORE_READ(ri, next);
    }
    note_unwind(ctx, pid_tgid, MT_CALL_UNWIND, restored);
    return 0;
}

// Unwinder entries, stop way.
SEC("uprobe")
int calls_unwind_stop(struct pt_regs *ctx)
{
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    struct mt_call_fixup *fx;
    struct return_instance *ri;
    __u64 tramp;
    __u32 n = 0, found = 0;  // found: 0 or 1, or the verifier meets 64 * 64 states

    if ((pid_tgid >> 32) != target_tgid)
        return 0;
    tramp = trampoline_of(task);
    ri = BPF_CORE_READ(task, utask, return_instances);
    if (!ri || !tramp) {
        note_unwind(ctx, pid_tgid, MT_CALL_UNWIND, 0);
        return 0;
    }
    fx = bpf_ringbuf_reserve(&call_fixups, sizeof(*fx), 0);
    if (!fx) {
        __sync_fetch_and_add(&fixups_failed, 1);
        note_unwind(ctx, pid_tgid, MT_CALL_UNWIND, 0);
        return 0;
    }
    // Entry i for instance i (slot 0: nothing to put back), so that the
    // verifier sees one bounded index.
    for (int i = 0; i < MAX_RETURN_INSTANCES; i++) {
        __u64 slot = 0, orig = 0, cur = 0;

        if (!ri)
            break;
        slot = BPF_CORE_READ(ri, stack);
        orig = BPF_CORE_READ(ri, orig_ret_vaddr);
        if (orig == tramp || bpf_probe_read_user(&cur, sizeof(cur), (void *)slot) != 0 ||
            cur != tramp)
            slot = 0;
        else
            found = 1;
        fx->pairs[i].slot = slot;
        fx->pairs[i].orig = orig;
        n = i + 1;
        ri = BPF_CORE_READ(ri, next);
    }
    if (found == 0) {
        bpf_ringbuf_discard(fx, 0);
    } else {
        fx->tgid = pid_tgid >> 32;
        fx->tid = (__u32)pid_tgid;
        fx->count = n;
        fx->_pad0 = 0;
        fx->trampoline = tramp;
        bpf_ringbuf_submit(fx, BPF_RB_FORCE_WAKEUP);
        bpf_send_signal_thread(SIGSTOP);
    }
    // The instances looked at: an upper bound of the probes lifted.
    note_unwind(ctx, pid_tgid, MT_CALL_UNWIND, found ? n : 0);
    return 0;
}

// __cxa_begin_catch, write way: it runs in the catching call's handler, so
// calls whose return address lies above sp still run: re-arm them.
SEC("uprobe")
int calls_catch(struct pt_regs *ctx)
{
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    __u64 sp = PT_REGS_SP(ctx);
    struct return_instance *ri;
    __u64 tramp;
    __u32 rearmed = 0;

    if ((pid_tgid >> 32) != target_tgid)
        return 0;
    tramp = trampoline_of(task);
    ri = BPF_CORE_READ(task, utask, return_instances);
    for (int i = 0; i < MAX_RETURN_INSTANCES && ri && tramp; i++) {
        __u64 slot = BPF_CORE_READ(ri, stack);
        __u64 orig = BPF_CORE_READ(ri, orig_ret_vaddr);
        __u64 cur = 0;

        // Only a slot still holding the address the unwind put back: the
        // kernel still lists the call, so its return through the trampoline
        // is handled as if it had never been lifted.
        if (slot > sp && orig != tramp &&
            bpf_probe_read_user(&cur, sizeof(cur), (void *)slot) == 0 && cur == orig &&
            bpf_probe_write_user((void *)slot, &tramp, sizeof(tramp)) == 0)
            rearmed++;
        ri = BPF_CORE_READ(ri, next);
    }
    note_unwind(ctx, pid_tgid, MT_CALL_CATCH, rearmed);
    return 0;
}

// __cxa_begin_catch, stop way: the calls above go on without return probes.
SEC("uprobe")
int calls_catch_note(struct pt_regs *ctx)
{
    __u64 pid_tgid = bpf_get_current_pid_tgid();

    note_unwind(ctx, pid_tgid, MT_CALL_CATCH, 0);
    return 0;
}

// Runs in the exiting thread. Only threads that produced records report
// their exit: userspace closes whatever they left open.
SEC("tp_btf/sched_process_exit")
int BPF_PROG(calls_thread_exit, struct task_struct *task)
{
    __u64 pid_tgid = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)pid_tgid;
    __u64 *s;

    if (!traced(pid_tgid))
        return 0;
    s = bpf_map_lookup_elem(&call_seq, &tid);
    if (!s)
        return 0;
    emit(tid, *s + 1, MT_CALL_THREAD_EXIT, 0, 0, 0);
    bpf_map_delete_elem(&call_seq, &tid);
    return 0;
}
