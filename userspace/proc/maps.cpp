// SPDX-License-Identifier: GPL-2.0-only
#include "proc/maps.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <unistd.h>

namespace mysqltrace::proc {

Result<std::vector<Mapping>> read_maps(pid_t pid) {
    std::string path = "/proc/" + std::to_string(pid) + "/maps";
    std::ifstream in(path);
    if (!in) {
        return make_error(errno, "cannot read " + path);
    }
    std::vector<Mapping> maps;
    std::string line;
    while (std::getline(in, line)) {
        Mapping m;
        char perms[8] = {};
        unsigned long long start = 0, end = 0, off = 0, inode = 0;
        int path_at = 0;
        if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %llu %n", &start, &end, perms, &off,
                        &inode, &path_at) < 5) {
            continue;
        }
        m.start = start;
        m.end = end;
        m.file_offset = off;
        m.perms = perms;
        if (path_at > 0 && static_cast<size_t>(path_at) < line.size()) {
            m.path = line.substr(static_cast<size_t>(path_at));
        }
        maps.push_back(std::move(m));
    }
    return maps;
}

Result<FileLocation> locate_address(pid_t pid, uint64_t addr) {
    auto maps = read_maps(pid);
    if (!maps) {
        return maps.error();
    }
    for (const auto &m : *maps) {
        if (addr >= m.start && addr < m.end) {
            if (m.path.empty() || m.path[0] != '/') {
                return Error{ENOENT, "address is not backed by a file"};
            }
            return FileLocation{m.path, addr - m.start + m.file_offset};
        }
    }
    return Error{ENOENT, "address is not mapped"};
}

Result<std::string> path_in_root(pid_t pid, const std::string &path) {
    const std::string root = "/proc/" + std::to_string(pid) + "/root";
    const std::string via_root = root + path;
    int root_fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        return make_error(errno, "cannot open " + root);
    }
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    const int fd =
        static_cast<int>(::syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof(how)));
    const int err = errno;
    ::close(root_fd);
    if (fd < 0) {
        return make_error(err,
                          "cannot open " + path + " inside the root of pid " + std::to_string(pid));
    }
    struct stat inside {
    }, plain{};
    const bool same = ::fstat(fd, &inside) == 0 && ::stat(via_root.c_str(), &plain) == 0 &&
                      inside.st_dev == plain.st_dev && inside.st_ino == plain.st_ino;
    ::close(fd);
    if (!same) {
        return Error{EXDEV, via_root + " leads out of the root of pid " + std::to_string(pid) +
                                " (a symlink to an absolute path?): not read"};
    }
    return via_root;
}

Result<std::string> mapped_file(pid_t pid, const Mapping &m) {
    char range[40];
    std::snprintf(range, sizeof(range), "%" PRIx64 "-%" PRIx64, m.start, m.end);
    const std::string link = "/proc/" + std::to_string(pid) + "/map_files/" + range;
    struct stat mapped {};
    if (::stat(link.c_str(), &mapped) != 0) {
        return make_error(errno,
                          "cannot reach " + m.path + " as mapped by pid " + std::to_string(pid));
    }
    auto in_root = path_in_root(pid, m.path);
    struct stat at_path {};
    if (in_root && ::stat(in_root->c_str(), &at_path) == 0 && at_path.st_dev == mapped.st_dev &&
        at_path.st_ino == mapped.st_ino) {
        return in_root;
    }
    return link;
}

bool process_exists(pid_t pid) {
    return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

ssize_t read_memory(pid_t pid, uint64_t addr, void *buf, size_t len) {
    const std::string path = "/proc/" + std::to_string(pid) + "/mem";
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = ::pread(fd, buf, len, static_cast<off_t>(addr));
    const int err = errno;
    ::close(fd);
    errno = err;
    return n;
}

}  // namespace mysqltrace::proc
