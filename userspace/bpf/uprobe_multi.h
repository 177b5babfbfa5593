// SPDX-License-Identifier: GPL-2.0-only
// Attaching uprobes: one perf link each (attach_uprobe), or one BPF link
// for many uprobes of one file (attach_uprobe_multi, kernel 6.6+). Hundreds of
// separate uprobes detach one by one, each waiting for an RCU grace period
// (~0.1 s apiece here); one uprobe_multi link goes at once.
//
// Debian's libbpf 1.1 and UAPI headers predate uprobe_multi, so the attach
// type and the BPF_LINK_CREATE layout are spelled out here
// (include/uapi/linux/bpf.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <sys/types.h>

#include "bpf/handles.h"
#include "util/result.h"

struct bpf_program;

namespace mysqltrace::bpf {

inline constexpr uint32_t kTraceUprobeMulti = 48;  // BPF_TRACE_UPROBE_MULTI

// Whether this kernel has uprobe_multi links (Linux 6.6 or later), unless
// MYSQLTRACE_NO_UPROBE_MULTI=1 is in the environment: the tests use it to
// cover the per-uprobe links a tracer falls back to on older kernels.
bool uprobe_multi_supported();

// A program attached through attach_uprobe_multi() must be loaded with this
// expected attach type: call between the skeleton's open and load.
void prepare_uprobe_multi(bpf_program *prog);

// Attaches `prog` at the file offset `offset` of `path` for process `pid`
// (-1: every process), on a perf link of its own, with `cookie` for
// bpf_get_attach_cookie. `what` names the probe in the error: "cannot
// attach a uprobe to WHAT in PATH (pid PID): REASON".
Result<Link> attach_uprobe(bpf_program *prog, pid_t pid, const std::string &path, uint64_t offset,
                           const std::string &what, bool retprobe = false, uint64_t cookie = 0);

// Attaches `prog` at every file offset of `path` (a file, or a
// /proc/PID/root/... path to one) for process `pid` only, each probe
// identified by the cookie at the same index (bpf_get_attach_cookie).
// `retprobe`: return probes (BPF_F_UPROBE_MULTI_RETURN); they share the trap
// of an entry probe placed at the same offset.
Result<Fd> attach_uprobe_multi(bpf_program *prog, pid_t pid, const std::string &path,
                               const std::vector<uint64_t> &offsets,
                               const std::vector<uint64_t> &cookies, bool retprobe = false);

}  // namespace mysqltrace::bpf
