// SPDX-License-Identifier: GPL-2.0-only
#include "bpf/tracefs.h"

#include <cerrno>
#include <fstream>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace mysqltrace::bpf {

namespace {

constexpr const char *kTracefsMountPoint = "/sys/kernel/tracing";

// mountinfo escapes space, tab, newline and backslash in paths as \ooo.
std::string unescape(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); i++) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            int v = 0;
            bool octal = true;
            for (size_t k = 1; k <= 3; k++) {
                char c = s[i + k];
                if (c < '0' || c > '7') {
                    octal = false;
                    break;
                }
                v = v * 8 + (c - '0');
            }
            if (octal) {
                out.push_back(static_cast<char>(v));
                i += 3;
                continue;
            }
        }
        out.push_back(s[i]);
    }
    return out;
}

}  // namespace

std::string find_tracefs(std::string_view mountinfo) {
    std::string tracefs;
    std::string debugfs;
    std::istringstream in{std::string(mountinfo)};
    std::string line;
    while (std::getline(in, line)) {
        // id parent major:minor root mount-point options [optional...] - fstype source
        // super-options
        std::istringstream f(line);
        std::vector<std::string> fields;
        std::string w;
        while (f >> w) {
            fields.push_back(w);
        }
        size_t dash = 0;
        for (size_t i = 6; i < fields.size(); i++) {
            if (fields[i] == "-") {
                dash = i;
                break;
            }
        }
        if (dash == 0 || dash + 1 >= fields.size() || fields.size() < 5) {
            continue;
        }
        const std::string &type = fields[dash + 1];
        std::string point = unescape(fields[4]);
        // The last mount of a kind wins: it hides earlier ones on the same point.
        if (type == "tracefs" && (tracefs.empty() || point == kTracefsMountPoint)) {
            tracefs = point;
        } else if (type == "debugfs" && debugfs.empty()) {
            debugfs = point + "/tracing";
        }
    }
    return !tracefs.empty() ? tracefs : debugfs;
}

Result<Tracefs> open_tracefs() {
    std::ifstream f("/proc/self/mountinfo");
    std::stringstream text;
    text << f.rdbuf();
    std::string dir = find_tracefs(text.str());
    if (!dir.empty() && access((dir + "/events").c_str(), F_OK) == 0) {
        return Tracefs{dir, false};
    }
    if (mount("nodev", kTracefsMountPoint, "tracefs", 0, nullptr) != 0) {
        return make_error(errno, std::string("tracefs is not mounted and cannot be mounted on ") +
                                     kTracefsMountPoint);
    }
    return Tracefs{kTracefsMountPoint, true};
}

void release_tracefs(const Tracefs &t) {
    if (t.mounted_here) {
        umount2(t.dir.c_str(), MNT_DETACH);
    }
}

Result<int> tracepoint_id(const std::string &tracefs_dir, const std::string &category,
                          const std::string &name) {
    std::string path = tracefs_dir + "/events/" + category + "/" + name + "/id";
    std::ifstream f(path);
    int id = -1;
    if (!(f >> id) || id < 0) {
        return Error{ENOENT, "cannot read the id of tracepoint " + category + ":" + name + " (" +
                                 path + ")"};
    }
    return id;
}

Result<bpf_link *> attach_tracepoint_id(bpf_program *prog, int id) {
    perf_event_attr attr{};
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.size = sizeof(attr);
    attr.config = static_cast<__u64>(id);
    // A tracepoint's BPF programs run on every CPU for every process; the
    // event itself only has to exist.
    int pfd =
        static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC));
    if (pfd < 0) {
        return make_error(errno, "perf_event_open of tracepoint id " + std::to_string(id));
    }
    bpf_link *l = bpf_program__attach_perf_event(prog, pfd);
    if (l == nullptr) {
        int err = errno;
        close(pfd);
        return make_error(err, std::string("cannot attach ") + bpf_program__name(prog) +
                                   " to tracepoint id " + std::to_string(id));
    }
    return l;
}

namespace {
constexpr std::string_view kSyscallPrefix = "tracepoint/syscalls/";
}  // namespace

namespace {

bool is_syscall_tracepoint_program(const bpf_program *prog) {
    return std::string_view(bpf_program__section_name(prog)).starts_with(kSyscallPrefix);
}

bool is_raw_syscall_program(const bpf_program *prog) {
    return std::string_view(bpf_program__section_name(prog)).starts_with("tp_btf/sys_");
}

}  // namespace

namespace {

// An exclusive lock on a file in /run/lock, held while it lives; none when
// the file cannot be opened (a read-only /run): then nothing is serialised.
class TracefsLock {
  public:
    TracefsLock() {
        for (const char *path :
             {"/run/lock/mysqltrace-tracefs.lock", "/run/mysqltrace-tracefs.lock"}) {
            fd_ = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
            if (fd_ >= 0) {
                while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
                }
                return;
            }
        }
    }
    ~TracefsLock() {
        if (fd_ >= 0) {
            close(fd_);  // releases the lock
        }
    }
    TracefsLock(const TracefsLock &) = delete;
    TracefsLock &operator=(const TracefsLock &) = delete;

  private:
    int fd_ = -1;
};

}  // namespace

Result<void> with_tracefs(const std::function<Result<void>(const std::string &dir)> &read,
                          std::vector<std::string> *notes) {
    TracefsLock lock;
    auto fs = open_tracefs();
    if (!fs) {
        return fs.error();
    }
    if (fs->mounted_here) {
        notes->push_back("tracefs was not mounted: mounted it on " + fs->dir +
                         " to read the syscall tracepoint ids, unmounted it again");
    }
    auto r = read(fs->dir);
    release_tracefs(*fs);
    return r;
}

Result<std::vector<std::pair<bpf_program *, int>>> syscall_tracepoint_ids(
    bpf_object *obj, std::vector<std::string> *notes) {
    std::vector<std::pair<bpf_program *, int>> out;
    auto read = [&](const std::string &dir) -> Result<void> {
        bpf_program *prog;
        bpf_object__for_each_program(prog, obj) {
            if (!is_syscall_tracepoint_program(prog)) {
                continue;
            }
            std::string_view sec = bpf_program__section_name(prog);
            auto id =
                tracepoint_id(dir, "syscalls", std::string(sec.substr(kSyscallPrefix.size())));
            if (!id) {
                return id.error();
            }
            out.emplace_back(prog, *id);
        }
        return {};
    };
    auto r = with_tracefs(read, notes);
    if (!r) {
        return r.error();
    }
    return out;
}

SyscallPrograms choose_syscall_programs(bpf_object *obj, bool wanted, const std::string &who,
                                        std::vector<std::string> *notes) {
    SyscallPrograms out;
    if (wanted) {
        auto ids = syscall_tracepoint_ids(obj, notes);
        if (ids) {
            out.per_syscall = std::move(ids).value();
        } else {
            out.raw = true;
            notes->push_back(who + ids.error().message +
                             "; using the raw syscall tracepoints instead, which run for every "
                             "syscall on the machine");
        }
    }
    bpf_program *prog;
    bpf_object__for_each_program(prog, obj) {
        if (is_syscall_tracepoint_program(prog) ||
            std::string_view(bpf_program__section_name(prog)) == "tracepoint") {
            bpf_program__set_autoload(prog, !out.per_syscall.empty());
            bpf_program__set_autoattach(prog, false);
        } else if (is_raw_syscall_program(prog)) {
            bpf_program__set_autoload(prog, out.raw);
        }
    }
    return out;
}

}  // namespace mysqltrace::bpf
