// SPDX-License-Identifier: GPL-2.0-only
// Files and child processes for the test servers: small helpers shared by the
// harness's server flavours, not a general process library.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace mysqltrace::test::harness {

using Clock = std::chrono::steady_clock;

Error sys_error(int err, const std::string &what);

std::optional<std::string> read_file(const std::string &path);
// Creates or truncates the file, mode 0600, never through a symlink.
Result<void> write_file(const std::string &path, const std::string &content);
// The last lines of a log, from byte `from` on, for error messages.
std::string log_tail(const std::string &path, size_t from = 0, size_t max_bytes = 3000);
size_t file_size(const std::string &path);

// Field 22 of /proc/PID/stat; with the pid it names one process even after
// the pid has been reused.
std::optional<unsigned long long> process_start_time(pid_t pid);

// Starts args[0] (a path, no PATH search) with stdin from /dev/null and
// stdout and stderr appended to out_path. The child gets SIGKILL when the
// calling thread exits (PR_SET_PDEATHSIG), default signal dispositions and
// none of our descriptors; with own_process_group it leads a new group, so
// that killing -pid takes its own children too.
Result<pid_t> spawn(const std::vector<std::string> &args, const std::string &out_path,
                    bool own_process_group);

// Waits for a child we spawned; nullopt if it is still running at the
// deadline. Returns -1 as status when it was reaped elsewhere (SIGCHLD
// ignored by the test program).
std::optional<int> wait_child(pid_t pid, Clock::time_point deadline);

// "exited with status N", "was killed by signal ...", for messages.
std::string describe_status(int status);

}  // namespace mysqltrace::test::harness
