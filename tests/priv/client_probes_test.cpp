// SPDX-License-Identifier: GPL-2.0-only
// Which kernel probes `mysqltrace client` attaches for the socket syscalls:
// the per-syscall tracepoints of exactly the calls it records, whether
// tracefs is mounted or not (it mounts it to read their ids), and the two raw
// syscall tracepoints when tracefs cannot be mounted. Read back from the
// kernel with `bpftool perf`. The unmounting happens in a private mount
// namespace of the tracer's own: the machine's mounts stay as they are.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "priv/cli_util.h"
#include "priv/priv.h"

namespace {

using mysqltrace::test::BackgroundCommand;
using mysqltrace::test::run_command;

// A process to trace that does nothing.
class Sleeper {
  public:
    Sleeper() {
        pid_ = fork();
        if (pid_ == 0) {
            execlp("sleep", "sleep", "600", static_cast<char *>(nullptr));
            _exit(127);
        }
    }
    ~Sleeper() {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    pid_t pid() const { return pid_; }

  private:
    pid_t pid_ = -1;
};

// Unmounts every tracefs and debugfs in the (private) mount namespace.
constexpr const char *kUnmountTracefs =
    "for m in $(findmnt -n -l -o TARGET -t tracefs,debugfs | sort -r); do umount -l \"$m\"; done; ";

// Besides, hides /sys/kernel behind a read-only tmpfs (keeping its BTF), so
// that /sys/kernel/tracing is gone and tracefs cannot be mounted there.
constexpr const char *kNoTracefsMountPoint =
    "hold=$(mktemp -d) && mount --bind /sys/kernel/btf \"$hold\" && "
    "mount -t tmpfs -o size=64k tmpfs /sys/kernel && mkdir /sys/kernel/btf && "
    "mount --move \"$hold\" /sys/kernel/btf && mount -o remount,ro /sys/kernel && "
    "rmdir \"$hold\" || exit 99; ";

// The tracepoints (per-syscall "tracepoint" and "raw_tracepoint") the
// process `pid` has BPF programs on, as "TYPE NAME".
std::set<std::string> tracepoints_of(pid_t pid) {
    auto r = run_command({"/bin/sh", "-c", "exec bpftool -j perf show"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> out;
    for (const auto &e : nlohmann::json::parse(r.out)) {
        std::string type = e.value("fd_type", "");
        if (e.value("pid", -1) == pid && (type == "tracepoint" || type == "raw_tracepoint")) {
            out.insert(type + " " + e.value("tracepoint", ""));
        }
    }
    return out;
}

const std::set<std::string> kPerSyscall = {
    "tracepoint sys_enter_close",        "tracepoint sys_enter_shutdown",
    "tracepoint sys_enter_write",        "tracepoint sys_enter_writev",
    "tracepoint sys_enter_sendto",       "tracepoint sys_enter_sendmsg",
    "tracepoint sys_exit_read",          "tracepoint sys_exit_write",
    "tracepoint sys_exit_readv",         "tracepoint sys_exit_writev",
    "tracepoint sys_exit_recvfrom",      "tracepoint sys_exit_sendto",
    "tracepoint sys_exit_recvmsg",       "tracepoint sys_exit_sendmsg",
    "tracepoint sys_exit_connect",       "raw_tracepoint sched_process_fork",
    "raw_tracepoint sched_process_exit",
};

const std::set<std::string> kRaw = {
    "raw_tracepoint sys_enter",
    "raw_tracepoint sys_exit",
    "raw_tracepoint sched_process_fork",
    "raw_tracepoint sched_process_exit",
};

struct Attached {
    std::set<std::string> tracepoints;
    std::string err;
};

// Runs `mysqltrace client --pid` on a sleeping process, in a private mount
// namespace prepared by `setup` (shell), and reads its tracepoints.
Attached attach(const std::string &setup) {
    Sleeper target;
    std::vector<std::string> argv = {
        MYSQLTRACE_BINARY, "client", "--pid",    std::to_string(target.pid()),
        "--no-tls",        "-o",     "/dev/null"};
    if (!setup.empty()) {
        std::vector<std::string> wrapped = {
            "/usr/bin/unshare",    "--mount", "--propagation", "private", "sh", "-c",
            setup + "exec \"$@\"", "sh"};
        wrapped.insert(wrapped.end(), argv.begin(), argv.end());
        argv = wrapped;
    }
    BackgroundCommand tracer(argv);
    Attached a;
    bool ready = tracer.wait_for_stderr("Ctrl-C to stop");
    EXPECT_TRUE(ready) << tracer.stderr_so_far();
    if (ready) {
        a.tracepoints = tracepoints_of(tracer.pid());
    }
    auto r = tracer.stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    a.err = r.err;
    return a;
}

TEST(ClientProbes, PerSyscallTracepoints) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto a = attach("");
    EXPECT_EQ(a.tracepoints, kPerSyscall);
    EXPECT_EQ(a.err.find("tracefs"), std::string::npos) << a.err;
}

TEST(ClientProbes, MountsTracefsWhenAbsent) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto a = attach(kUnmountTracefs);
    EXPECT_EQ(a.tracepoints, kPerSyscall);
    EXPECT_NE(a.err.find("mysqltrace: tracefs was not mounted: mounted it on /sys/kernel/tracing "
                         "to read the syscall tracepoint ids, unmounted it again\n"),
              std::string::npos)
        << a.err;
}

TEST(ClientProbes, RawTracepointsWhenTracefsCannotBeMounted) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto a = attach(std::string(kUnmountTracefs) + kNoTracefsMountPoint);
    EXPECT_EQ(a.tracepoints, kRaw);
    EXPECT_NE(a.err.find("mysqltrace: tracefs is not mounted and cannot be mounted on "
                         "/sys/kernel/tracing: No such file or directory; using the raw syscall "
                         "tracepoints instead, which run for every syscall on the machine\n"),
              std::string::npos)
        << a.err;
}

}  // namespace
