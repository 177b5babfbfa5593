// SPDX-License-Identifier: GPL-2.0-only
// Records that BPF programs write into mysqltrace's per-CPU ring buffers.
// One definition for BPF and C++: fixed-width fields, explicit padding, no
// pointers or bool; the C++ side static_asserts the sizes (abi_check.cpp).
#pragma once

#include "mysqltrace/abi/types.h"

// Bumped whenever a record layout below changes incompatibly.
#define MT_ABI_VERSION 1

// The largest number of CPUs the per-CPU ring array can serve.
#define MT_MAX_CPUS 256

enum mt_event_type {
    MT_EV_SELFTEST = 1,        // doctor and tests: one probe hit
    MT_EV_SERVER_COMMAND = 2,  // a server thread entered dispatch_command
};

// Common header of every record. `size` is the whole record including this
// header and any payload.
struct mt_event_header {
    __u32 type;
    __u32 size;
    __u32 cpu;
    __u32 _pad0;
    __u64 ts_ns;  // CLOCK_MONOTONIC (bpf_ktime_get_ns)
    __u32 pid;    // thread group id
    __u32 tid;
};

enum mt_selftest_source {
    MT_SELFTEST_UPROBE = 1,
    MT_SELFTEST_USDT = 2,
    MT_SELFTEST_SYSCALL = 3,
};

struct mt_selftest_event {
    struct mt_event_header hdr;
    __u32 source;  // enum mt_selftest_source
    __u32 _pad0;
    __u64 cookie;  // attach cookie of the probe site that fired
    __u64 arg;     // first argument of the probed function / probe / syscall
};

// Per-CPU delivery counters kept by the BPF side (a PERCPU_ARRAY of one).
struct mt_ring_stats {
    __u64 events;         // records written
    __u64 drops;          // records lost: ring full or no ring for this CPU
    __u64 dropped_bytes;  // payload bytes of the lost records
};

// Largest statement text copied per command (the --max-sql ceiling); a power
// of two so BPF can bound copies with a mask.
#define MT_MAX_SQL 65536

struct mt_server_command_event {
    struct mt_event_header hdr;
    __u64 thread_id;   // the server's connection id (THD::thread_id)
    __u32 command;     // enum_server_command
    __u32 packet_len;  // true length of the command's argument bytes
    __u32 copied;      // bytes of it that follow in data[]
    __u32 _pad0;
    __u8 data[];  // the argument: SQL text for COM_QUERY
};
