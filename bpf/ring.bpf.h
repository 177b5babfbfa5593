// SPDX-License-Identifier: GPL-2.0-only
// Per-CPU ring buffers shared by every mysqltrace BPF object.
//
// One BPF ring buffer per CPU, reached through an array of maps indexed by the
// current CPU, so producers on different CPUs never contend on one ring's
// spinlock. Producers never block: a failed reserve counts a drop. Wakeups are
// batched (FACTS.md section 8: per-event wakeups cost more than the probe), so
// the consumer polls with a short timeout and is woken early only when a ring
// fills past mt_wakeup_bytes.
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "mysqltrace/abi/event.h"

struct mt_ring_inner {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 256 * 1024);  // replaced per CPU from userspace
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
    __uint(max_entries, MT_MAX_CPUS);
    __type(key, __u32);
    __array(values, struct mt_ring_inner);
} mt_rings SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct mt_ring_stats);
} mt_stats SEC(".maps");

// Inputs. The tracers set mt_wakeup_bytes to an eighth of their rings
// (bpf::wakeup_bytes); the self-test object keeps this default, which its
// overload benchmark relies on (a 16 KiB ring it never wakes the reader for).
const volatile __u64 mt_wakeup_bytes = 64 * 1024;

// Scratch slots for records too large for the BPF stack. Syscall tracepoints
// (faultable since 6.14) and uprobes run BPF with preemption enabled, so two
// tasks on one CPU can be inside the same program at once: a plain per-CPU
// buffer would mix their records. Each CPU owns MT_SCRATCH_SLOTS slots, taken
// with compare-and-swap; a producer that finds all taken drops its record
// and counts it. Objects that use slots declare a `scratch` array whose size,
// like this one's, userspace sets to possible CPUs * MT_SCRATCH_SLOTS.

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} mt_scratch_busy SEC(".maps");

static __always_inline struct mt_ring_stats *mt_stats_this_cpu(void)
{
    __u32 zero = 0;
    return bpf_map_lookup_elem(&mt_stats, &zero);
}

static __always_inline int mt_scratch_claim(__u32 *slot)
{
    __u32 base = bpf_get_smp_processor_id() * MT_SCRATCH_SLOTS;
    struct mt_ring_stats *st;

    for (int i = 0; i < MT_SCRATCH_SLOTS; i++) {
        __u32 k = base + i;
        __u32 *busy = bpf_map_lookup_elem(&mt_scratch_busy, &k);

        if (busy && __sync_val_compare_and_swap(busy, 0, 1) == 0) {
            *slot = k;
            return 0;
        }
    }
    st = mt_stats_this_cpu();
    if (st) {
        st->drops++;
        st->busy_drops++;
    }
    return -1;
}

static __always_inline void mt_scratch_release(__u32 slot)
{
    __u32 *busy = bpf_map_lookup_elem(&mt_scratch_busy, &slot);

    if (busy)
        __sync_lock_test_and_set(busy, 0);
}

// `ts_ns`: the event's time, a bpf_ktime_get_ns() the caller already read.
static __always_inline void mt_fill_header_at(struct mt_event_header *hdr, __u32 type, __u32 size,
                                              __u64 ts_ns)
{
    __u64 pid_tgid = bpf_get_current_pid_tgid();

    hdr->type = type;
    hdr->size = size;
    hdr->cpu = bpf_get_smp_processor_id();
    hdr->_pad0 = 0;
    hdr->ts_ns = ts_ns;
    hdr->pid = pid_tgid >> 32;
    hdr->tid = (__u32)pid_tgid;
}

static __always_inline void mt_fill_header(struct mt_event_header *hdr, __u32 type, __u32 size)
{
    mt_fill_header_at(hdr, type, size, bpf_ktime_get_ns());
}

// Wakes the reader each time the unread bytes of the ring pass a multiple of
// mt_wakeup_bytes: once when it has fallen that far behind, and once more for
// every further mt_wakeup_bytes, so a missed wakeup (two producers of one CPU
// interleaved by preemption) is made good a little later, never by the
// reader's tick alone. A wakeup for every record past the mark (an irq_work
// each) cost ~5.7 us per record on the project's VM, ten times the trap that
// produced it, whenever the reader was behind. A record takes its size plus
// the ring's 8-byte header, rounded up to 8, so the records' spans tile the
// ring and each multiple falls in exactly one of them (with the bare size, a
// multiple that a record starts on exactly was never seen: with fixed-size
// records, never). `reserved`: the record is already reserved, so the
// unread bytes include it.
static __always_inline __u64 mt_wakeup_flag(void *ring, __u64 size, int reserved)
{
    __u64 avail = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA);
    __u64 span = (size + BPF_RINGBUF_HDR_SZ + 7) & ~7ULL;
    __u64 before = reserved ? (avail > span ? avail - span : 0) : avail;

    return before / mt_wakeup_bytes != (before + span) / mt_wakeup_bytes ? BPF_RB_FORCE_WAKEUP
                                                                         : BPF_RB_NO_WAKEUP;
}

// Copies a finished record (header filled, hdr->size bytes long, size known
// only at run time) into this CPU's ring. Returns 0, or -1 when it was dropped.
static __always_inline int mt_output(void *rec, __u64 size)
{
    struct mt_ring_stats *st = mt_stats_this_cpu();
    __u32 cpu = bpf_get_smp_processor_id();
    void *ring = bpf_map_lookup_elem(&mt_rings, &cpu);
    long err = -1;

    if (ring)
        err = bpf_ringbuf_output(ring, rec, size, mt_wakeup_flag(ring, size, 0));
    if (st) {
        if (err) {
            st->drops++;
            st->dropped_bytes += size;
        } else {
            st->events++;
        }
    }
    return err ? -1 : 0;
}

// Reserve/submit for fixed-size records: no copy. `ring` receives the ring the
// record belongs to; pass it to mt_submit().
static __always_inline void *mt_reserve(void **ring, __u32 type, const __u64 size)
{
    struct mt_ring_stats *st = mt_stats_this_cpu();
    __u32 cpu = bpf_get_smp_processor_id();
    void *rb = bpf_map_lookup_elem(&mt_rings, &cpu);
    struct mt_event_header *hdr = 0;

    if (rb)
        hdr = bpf_ringbuf_reserve(rb, size, 0);
    if (!hdr) {
        if (st) {
            st->drops++;
            st->dropped_bytes += size;
        }
        return 0;
    }
    if (st)
        st->events++;
    mt_fill_header(hdr, type, size);
    *ring = rb;
    return hdr;
}

static __always_inline void mt_submit(void *ring, void *rec, __u64 size)
{
    bpf_ringbuf_submit(rec, mt_wakeup_flag(ring, size, 1));
}
