// SPDX-License-Identifier: GPL-2.0-only
// Which bytes of a server object (the THD, its Diagnostics_area) the BPF
// side copies per statement. Every bpf_probe_read_user costs ~65 ns on the
// project's VM whatever its size up to about a KiB (a fault-safe copy with
// its checks), and a statement needs a dozen fields: nearby fields are read
// as one window, and the BPF side picks them out of the copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mysqltrace::server {

struct ReadField {
    int64_t offset = -1;  // in the object; -1: unknown in this build, never read
    uint32_t size = 8;
};

struct ReadWindow {
    int64_t offset = 0;  // in the object
    uint32_t length = 0;
    uint32_t at = 0;  // where the copy goes in the gather area
};

struct ReadPlan {
    std::vector<ReadWindow> windows;
    // Per field, in the order given: its position in the gather area, or -1.
    std::vector<int32_t> at;
};

// Groups the known fields into at most `max_windows` windows of at most
// `window_max` bytes each, placed `window_max` apart in the gather area.
// Windows are merged greedily in offset order; when more would be needed,
// the fields left over get -1 (the caller reads nothing for them).
ReadPlan plan_reads(const std::vector<ReadField> &fields, uint32_t window_max, size_t max_windows);

// Adds `extra` to the fields of `plan` (planned from `fields` with the same
// limits) where that costs no more windows and leaves every field placed
// before its place: then `plan` is replanned with it and fields gains it.
// Returns extra's position in the gather area, or -1 (nothing changed).
int32_t plan_extra(ReadPlan &plan, std::vector<ReadField> &fields, ReadField extra,
                   uint32_t window_max, size_t max_windows);

}  // namespace mysqltrace::server
