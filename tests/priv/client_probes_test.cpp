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

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/client_session.h"
#include "priv/priv.h"
#include "priv/tracefs_util.h"

namespace {

using namespace mysqltrace::test;

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
        std::vector<std::string> wrapped = in_namespace(setup);
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
    auto a = attach(kMountTracefs);
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

// The raw tracepoints record the same conversation: the same expected trace
// as ClientTrace.CResultSetEmptyResultErrorQuit.
TEST(ClientProbes, RawTracepointsTraceTheSameEvents) {
    MYSQLTRACE_REQUIRE_ROOT();
    MariadbServer *server = peer_server(ServerFlavour::mariadb, false);
    ASSERT_NE(server, nullptr);
    const std::vector<Step> steps = {
        {"connect", "ok"},
        {"query select a, b from mt.t order by a", "ok 1 2"},
        {"query select 1 from dual where 1 = 0", "ok 1 0"},
        {"query select * from mt.nosuch", "error 1146 Table 'mt.nosuch' doesn't exist"},
        {"query insert into mt.t values (3, 'three')", "ok 0 0"},
        {"query delete from mt.t where a = 3", "ok 0 0"},
        {"quit", "ok"}};
    auto s = run_traced({testprog("mt_client"), "--socket", server->socket_path(), "--user",
                         server->user(), "--password", server->password()},
                        steps, {}, trace_path_for_test(*server),
                        in_namespace(std::string(kUnmountTracefs) + kNoTracefsMountPoint));
    const std::string root = server->root_dir();
    stop_peer_servers();
    ASSERT_EQ(s.answers.size(), steps.size());
    for (size_t i = 0; i < steps.size(); i++) {
        EXPECT_EQ(s.answers[i], steps[i].answer) << steps[i].command;
    }
    EXPECT_EQ(s.tracer_exit, 0) << s.tracer_stderr;
    EXPECT_NE(s.tracer_stderr.find("using the raw syscall tracepoints instead"), std::string::npos)
        << s.tracer_stderr;
    EXPECT_NE(s.tracer_stderr.find(" 0 records dropped; traced process exited\n"),
              std::string::npos)
        << s.tracer_stderr;
    EXPECT_TRUE(matches_expected("c_basic", normalise_trace(s.trace, {{root, "<dir>"}})));
}

}  // namespace
