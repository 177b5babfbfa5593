// SPDX-License-Identifier: GPL-2.0-only
#include "harness/mysql_chroot.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <utility>

#include "harness/child_process.h"

namespace mysqltrace::test::harness {

using namespace std::chrono_literals;

std::string sandbox_script(const std::string &configured) {
    if (!configured.empty()) {
        return configured;
    }
    return std::string(MYSQLTRACE_SOURCE_DIR) + "/scripts/mysql-sandbox.sh";
}

Result<std::string> mysql_chroot(const std::string &script, const std::string &scratch_dir) {
    static std::mutex mutex;
    static std::vector<std::pair<std::string, std::string>> known;
    std::lock_guard lock(mutex);
    for (const auto &[s, dir] : known) {
        if (s == script) {
            return dir;
        }
    }
    const std::string log = scratch_dir + "/chroot.log";
    auto pid = spawn({script, "chroot"}, log, true);
    if (!pid) {
        return pid.error();
    }
    auto status = wait_child(pid.value(), Clock::now() + 1200s);
    if (!status) {
        ::kill(-pid.value(), SIGKILL);
        ::waitpid(pid.value(), nullptr, 0);
        return Error{ETIMEDOUT,
                     script + " chroot did not finish in 1200 s; log:\n" + log_tail(log)};
    }
    if (*status != -1 && !(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)) {
        return Error{0,
                     script + " chroot " + describe_status(*status) + "; log:\n" + log_tail(log)};
    }
    // The path is the last line; build progress goes to the same log before it.
    std::string text = read_file(log).value_or("");
    while (!text.empty() && text.back() == '\n') {
        text.pop_back();
    }
    std::string dir = text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    if (dir.empty() || dir[0] != '/' || ::access((dir + kMysqldInChroot).c_str(), X_OK) != 0) {
        return Error{ENOENT, script + " chroot gave no chroot with " + kMysqldInChroot +
                                 "; log:\n" + log_tail(log)};
    }
    known.emplace_back(script, dir);
    return dir;
}

}  // namespace mysqltrace::test::harness
