// SPDX-License-Identifier: GPL-2.0-only
// Per-syscall tracepoints (syscalls:sys_enter_read, ...): their ids come from
// tracefs, which is often not mounted. Finds it, mounts it when absent, and
// attaches BPF programs to tracepoints by id.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <bpf/libbpf.h>

#include "util/result.h"

namespace mysqltrace::bpf {

// Where tracefs is mounted according to `mountinfo` (the text of
// /proc/self/mountinfo): a tracefs mount, else the tracing directory of a
// debugfs mount. Empty when neither is there.
std::string find_tracefs(std::string_view mountinfo);

// The tracefs directory to read tracepoint ids from.
struct Tracefs {
    std::string dir;
    bool mounted_here = false;  // this process mounted it on /sys/kernel/tracing
};

// Finds tracefs, or mounts it on /sys/kernel/tracing when it is not mounted.
// Fails when it is not mounted and cannot be.
Result<Tracefs> open_tracefs();

// Unmounts tracefs if open_tracefs() mounted it. Attached tracepoints stay.
void release_tracefs(const Tracefs &t);

// Runs `read` with the directory of tracefs, mounted for that moment when it
// is not (a line in *notes says so) and unmounted after. mysqltrace processes
// take turns here (a lock file in /run/lock), so that one tracer's unmount
// never takes tracefs away from another's read.
Result<void> with_tracefs(const std::function<Result<void>(const std::string &dir)> &read,
                          std::vector<std::string> *notes);

// The id of tracepoint `category`:`name` under `tracefs_dir`.
Result<int> tracepoint_id(const std::string &tracefs_dir, const std::string &category,
                          const std::string &name);

// Attaches `prog` to the tracepoint with id `id` for every process and CPU.
Result<bpf_link *> attach_tracepoint_id(bpf_program *prog, int id);

// The programs of `obj` in sections "tracepoint/syscalls/NAME" and the ids
// of their tracepoints, mounting tracefs for the ids if need be and
// unmounting it again (a line in *notes says so). Fails when tracefs is out
// of reach or an id cannot be read: the caller falls back to the raw
// tracepoints.
Result<std::vector<std::pair<bpf_program *, int>>> syscall_tracepoint_ids(
    bpf_object *obj, std::vector<std::string> *notes);

// How an object's programs take syscalls, set before it is loaded.
struct SyscallPrograms {
    // The per-syscall tracepoint programs and their ids, to attach with
    // attach_tracepoint_id() once loaded.
    std::vector<std::pair<bpf_program *, int>> per_syscall;
    // Else its raw syscall programs ("tp_btf/sys_enter", "tp_btf/sys_exit").
    bool raw = false;
};

// Makes the per-syscall tracepoint programs of `obj` load, or, when
// tracefs is out of reach, its raw syscall programs (a line in *notes says
// so, after `who`), or none of them when not `wanted`. A program in section
// "tracepoint" (no name) is what the per-syscall ones tail-call: it loads
// with them and attaches nowhere.
SyscallPrograms choose_syscall_programs(bpf_object *obj, bool wanted, const std::string &who,
                                        std::vector<std::string> *notes);

}  // namespace mysqltrace::bpf
