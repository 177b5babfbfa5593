// SPDX-License-Identifier: GPL-2.0-only
// For tests of how mysqltrace attaches to syscalls: the tracepoints a process
// has BPF programs on, and a private mount namespace without tracefs (the
// machine's own mounts stay as they are).
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

namespace mysqltrace::test {

// Shell that unmounts every tracefs and debugfs in the (private) mount
// namespace.
extern const char *const kUnmountTracefs;

// Shell that mounts tracefs on /sys/kernel/tracing (in the private mount
// namespace) unless it is there already: the machine's own may have none.
extern const char *const kMountTracefs;

// Shell that, besides, hides /sys/kernel behind a read-only tmpfs (keeping
// its BTF), so that /sys/kernel/tracing is gone and tracefs cannot be
// mounted there.
extern const char *const kNoTracefsMountPoint;

// The tracepoints (per-syscall "tracepoint" and "raw_tracepoint") the
// process `pid` has BPF programs on, as "TYPE NAME" (from `bpftool perf`).
std::set<std::string> tracepoints_of(pid_t pid);

// The argv prefix that runs a command in a private mount namespace after
// the shell `setup`.
std::vector<std::string> in_namespace(const std::string &setup);

}  // namespace mysqltrace::test
