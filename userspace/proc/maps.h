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

// Where to open the file mapping `m` of process `pid` maps: its path inside
// the process's root (path_in_root) when that is the file mapped, else
// /proc/PID/map_files/START-END, a link (root only) to the very file mapped
// whatever its path: a process chrooted below our own root has mappings
// named by our paths, not by paths inside its root. An error when neither
// reaches it (the process or the mapping is gone).
Result<std::string> mapped_file(pid_t pid, const Mapping &m);

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
