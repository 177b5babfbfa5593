// SPDX-License-Identifier: GPL-2.0-only
// /proc/PID/maps: which file, at which offset, backs an address of a process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <sys/types.h>

#include "util/result.h"

namespace mysqltrace::proc {

struct Mapping {
    uint64_t start = 0;
    uint64_t end = 0;
    uint64_t file_offset = 0;
    std::string perms;  // "r-xp"
    std::string path;   // empty for anonymous memory
};

Result<std::vector<Mapping>> read_maps(pid_t pid);

// /proc/PID/map_files/START-END: a link to the very file `m` maps (root
// only), whatever its path looks like from here.
std::string map_file_path(pid_t pid, const Mapping &m);

// Mapped files are probed by path: a uprobe needs the file and the offset in
// it. Returns that pair for `addr` in process `pid`.
struct FileLocation {
    std::string path;
    uint64_t offset = 0;
};
Result<FileLocation> locate_address(pid_t pid, uint64_t addr);

// `path` as process `pid` sees it, reached from here through
// /proc/PID/root: that path, when it names the same file as `path` resolved
// inside the process's root (openat2 RESOLVE_IN_ROOT). A symlink in a
// container's tree that points out of it (an absolute link is followed from
// the tracer's own root otherwise) gets an error instead: a tracer running as
// root must never read or probe a host file a container user chose.
Result<std::string> path_in_root(pid_t pid, const std::string &path);

// True when the process exists (it may belong to another user).
bool process_exists(pid_t pid);

// Copies up to `len` bytes at `addr` of process `pid` into `buf` (through
// /proc/PID/mem); returns how many were read, or -1 with errno set.
ssize_t read_memory(pid_t pid, uint64_t addr, void *buf, size_t len);

}  // namespace mysqltrace::proc
