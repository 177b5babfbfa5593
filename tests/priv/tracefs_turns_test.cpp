// SPDX-License-Identifier: GPL-2.0-only
// Tracers that mount tracefs for a moment take turns (bpf/tracefs.h,
// with_tracefs): one's unmount never takes it away from another's read. Run
// in a private mount namespace with no tracefs, as on a machine without one.
#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "bpf/tracefs.h"
#include "priv/priv.h"

namespace mysqltrace::bpf {
namespace {

std::string mountinfo() {
    std::ifstream f("/proc/self/mountinfo");
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// In the child: tracefs and debugfs unmounted from this namespace. Exit
// codes: 0 every read succeeded and some mounted tracefs, 1 a read failed,
// 2 nothing was mounted, 3 no private namespace.
[[noreturn]] void race(int threads, int rounds) {
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr)) {
        _exit(3);
    }
    for (int i = 0; i < 16; i++) {
        std::string dir = find_tracefs(mountinfo());
        if (dir.empty()) {
            break;
        }
        if (dir.ends_with("/tracing") && dir != "/sys/kernel/tracing") {
            dir.resize(dir.size() - 8);  // debugfs
        }
        umount2(dir.c_str(), MNT_DETACH);
    }
    if (!find_tracefs(mountinfo()).empty()) {
        _exit(3);
    }
    std::atomic<int> failed{0};
    std::atomic<int> mounted{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++) {
        pool.emplace_back([&] {
            for (int r = 0; r < rounds; r++) {
                std::vector<std::string> notes;
                auto ok = with_tracefs(
                    [](const std::string &dir) -> Result<void> {
                        auto id = tracepoint_id(dir, "syscalls", "sys_enter_read");
                        if (!id) {
                            return id.error();
                        }
                        return {};
                    },
                    &notes);
                failed += !ok;
                mounted += !notes.empty();
            }
        });
    }
    for (auto &t : pool) {
        t.join();
    }
    _exit(failed ? 1 : mounted ? 0 : 2);
}

TEST(Tracefs, TracersThatMountItTakeTurns) {
    MYSQLTRACE_REQUIRE_ROOT();
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        race(4, 50);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0)
        << "1: a read failed (an unmount took tracefs away), 2: nothing was mounted, 3: no "
           "private mount namespace without tracefs";
}

}  // namespace
}  // namespace mysqltrace::bpf
