// SPDX-License-Identifier: GPL-2.0-only
// Runs the mysqltrace binary as a user would and captures what it printed.
#pragma once

#include <signal.h>
#include <string>
#include <sys/types.h>
#include <vector>

#include <nlohmann/json.hpp>

namespace mysqltrace::test {

struct CommandResult {
    int exit_code = -1;  // -1: killed by a signal
    std::string out;
    std::string err;
};

// Runs argv[0] with argv, optionally as another uid (with no capabilities),
// and waits for it.
CommandResult run_command(const std::vector<std::string> &argv, uid_t as_uid = 0);

// A file's contents ("" if it cannot be read).
std::string read_file(const std::string &path);

// Every line of a JSON-lines file (a --format json trace), parsed.
std::vector<nlohmann::json> read_json_lines(const std::string &path);

// A command running in the background.
class BackgroundCommand {
  public:
    explicit BackgroundCommand(const std::vector<std::string> &argv, uid_t as_uid = 0);
    ~BackgroundCommand();
    // Waits until stderr contains `text` (or the process exits / timeout).
    bool wait_for_stderr(const std::string &text, int timeout_ms = 20000);
    // Sends `sig` (if still running) and collects the result.
    CommandResult stop(int sig = SIGINT);
    // Waits for a normal exit.
    CommandResult wait();
    pid_t pid() const { return pid_; }
    // What it printed on stderr so far (as read by wait_for_stderr).
    const std::string &stderr_so_far() const { return result_.err; }

  private:
    void drain(int timeout_ms);
    pid_t pid_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    CommandResult result_;
};

}  // namespace mysqltrace::test
