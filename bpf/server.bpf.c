// SPDX-License-Identifier: GPL-2.0-only
// Server side: one record per command a mariadbd/mysqld thread dispatches.
// A single entry uprobe on dispatch_command, placed on its first emulated
// instruction (shared/FACTS.md section 2: about -3% on point selects).
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "ring.bpf.h"

char LICENSE[] SEC("license") = "GPL";

// Inputs.
const volatile __u32 target_tgid = 0;
const volatile __s64 thd_thread_id_offset = -1;  // learnt from thd_get_thread_id
const volatile __u32 max_sql = 4096;

// Records with text are built in a scratch slot (ring.bpf.h), then copied
// into the ring with their true size (a ring reservation must have a
// constant size). A plain array, as per-CPU map values are limited to 32 KiB.
struct scratch_slot {
    __u8 bytes[sizeof(struct mt_server_command_event) + MT_MAX_SQL];
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct scratch_slot);
} scratch SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(server_dispatch_command, __u32 command, void *thd, const char *packet, __u32 len)
{
    struct mt_server_command_event *ev;
    __u32 slot;
    __u64 n;
    __u64 size;

    if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
        return 0;
    if (mt_scratch_claim(&slot))
        return 0;
    ev = (struct mt_server_command_event *)bpf_map_lookup_elem(&scratch, &slot);
    if (!ev) {
        mt_scratch_release(slot);
        return 0;
    }
    ev->thread_id = 0;
    if (thd_thread_id_offset >= 0)
        bpf_probe_read_user(&ev->thread_id, sizeof(ev->thread_id), thd + thd_thread_id_offset);
    ev->command = command;
    ev->packet_len = len;
    n = len < max_sql ? len : max_sql;
    if (n > MT_MAX_SQL)
        n = MT_MAX_SQL;
    // Make clang use the clamped register below instead of recomputing from
    // `len`, so the verifier sees the bound.
    barrier_var(n);
    if (n && bpf_probe_read_user(ev->data, n, packet))
        n = 0;
    ev->copied = n;
    ev->_pad0 = 0;
    size = sizeof(*ev) + n;
    mt_fill_header(&ev->hdr, MT_EV_SERVER_COMMAND, size);
    mt_output(ev, size);
    mt_scratch_release(slot);
    return 0;
}
