// SPDX-License-Identifier: GPL-2.0-only
// Probes used by `mysqltrace doctor` and the probe-delivery tests: a uprobe,
// a USDT probe and a syscall tracepoint, each writing one record per hit of
// the traced process into the per-CPU rings.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>

#include "ring.bpf.h"

char LICENSE[] SEC("license") = "GPL";

// Inputs.
const volatile __u32 target_tgid = 0;
const volatile __s64 target_syscall = -1;

static __always_inline int emit(__u32 source, __u64 cookie, __u64 arg)
{
    struct mt_selftest_event *ev;
    void *ring;

    if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
        return 0;
    ev = mt_reserve(&ring, MT_EV_SELFTEST, sizeof(*ev));
    if (!ev)
        return 0;
    ev->source = source;
    ev->_pad0 = 0;
    ev->cookie = cookie;
    ev->arg = arg;
    mt_submit(ring, ev, sizeof(*ev));
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(selftest_uprobe, __u64 arg)
{
    return emit(MT_SELFTEST_UPROBE, bpf_get_attach_cookie(ctx), arg);
}

SEC("usdt")
int BPF_USDT(selftest_usdt, __u64 arg)
{
    // libbpf keeps the attach cookie for its spec id; ours is the USDT cookie.
    return emit(MT_SELFTEST_USDT, bpf_usdt_cookie(ctx), arg);
}

// A BTF raw tracepoint needs no tracefs (a classic `tp/` attach reads the
// event id from tracefs, which is often not mounted).
SEC("tp_btf/sys_enter")
int BPF_PROG(selftest_sys_enter, struct pt_regs *regs, long id)
{
    if (id != target_syscall)
        return 0;
    return emit(MT_SELFTEST_SYSCALL, 0, BPF_CORE_READ(regs, di));
}

// The one-trap floor of bench/ (`pipeline_bench floor`): a uprobe whose
// program only counts the traced process's hits, per CPU, with no record.
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} floor_hits SEC(".maps");

SEC("uprobe")
int selftest_count(struct pt_regs *ctx)
{
    __u32 zero = 0;
    __u64 *n;

    if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
        return 0;
    n = bpf_map_lookup_elem(&floor_hits, &zero);
    if (n)
        (*n)++;
    return 0;
}
