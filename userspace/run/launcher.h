// SPDX-License-Identifier: GPL-2.0-only
// Starts the command of `mysqltrace run` held at a gate: forked, but not yet
// exec'd, so the tracer can attach its probes before the command runs any code
// of its own. release() lets it exec; wait() reaps it; exit_like() makes
// mysqltrace end the way the command did.
//
// The command is a plain child of mysqltrace: same process group and session
// (Ctrl-C from the terminal and job control reach it as if run directly), the
// same stdin/stdout/stderr, and no other descriptor of mysqltrace. There is
// deliberately no PR_SET_PDEATHSIG: once released, the command must live and
// die as it would untraced, even if the tracer goes away. Only a command still
// at the gate ends with its parent (it sees the gate close and _exit(127)s).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <sys/types.h>

#include "bpf/handles.h"
#include "util/result.h"

namespace mysqltrace::run {

struct LaunchOptions {
    // CMD and its arguments; argv[0] is looked up in mysqltrace's PATH like execvp.
    std::vector<std::string> argv;
    // Library to put first in LD_PRELOAD (see compose_preload). Empty: leave
    // LD_PRELOAD alone.
    std::string preload;
    // Set (or replaced) in the child only. An LD_PRELOAD here stands in for
    // the inherited one when `preload` is set.
    std::vector<std::pair<std::string, std::string>> extra_env;
};

struct ExitStatus {
    bool signaled = false;
    int code = 0;    // exit code; 128 + signal when signaled, as shells report it
    int signal = 0;  // the killing signal when signaled
    bool core_dumped = false;
};

// Decodes a waitpid() status of a process that has ended.
ExitStatus exit_status_from_wait(int wstatus);

// The LD_PRELOAD value that loads `shim` first and then every library of
// `existing` (null: unset) in order. glibc splits LD_PRELOAD on spaces and
// colons; the result uses colons. Entries naming the shim, by its path or by
// its file name (another copy of it), are dropped so it is never loaded twice.
std::string compose_preload(const std::string &shim, const char *existing);

class Launcher {
  public:
    // Forks the child, which resets its signal mask and dispositions to the
    // defaults, marks every descriptor above 2 close-on-exec and waits at the
    // gate. Returns once the child is forked, not when it is ready.
    static Result<std::unique_ptr<Launcher>> start(const LaunchOptions &opts);

    Launcher(const Launcher &) = delete;
    Launcher &operator=(const Launcher &) = delete;
    // Unreleased: kills and reaps the child. Released and still running: it
    // is left to run (only reaped if it has already exited).
    ~Launcher();

    pid_t pid() const { return pid_; }
    // pidfd_open() of the child: readable once it has exited (poll/epoll).
    int pidfd() const { return pidfd_.get(); }

    // Opens the gate and returns once the child has exec'd the command or
    // failed to: then the error is "cannot run 'CMD': <strerror>" with the
    // errno as code, the child has exited 127 (not found) or 126 (found but
    // not runnable), like a shell, and wait() returns that status. A child
    // killed at the gate is not an error here; wait() reports how it died.
    // Calling it again returns the first answer.
    Result<void> release();

    // Blocks until the released child ends and reaps it; afterwards returns
    // the same status again. An error, without waiting, before release().
    Result<ExitStatus> wait();

    // kill(child, sig) unless it has already been reaped.
    void forward_signal(int sig);

  private:
    Launcher(pid_t pid, std::string name, bpf::Fd gate)
        : pid_(pid), name_(std::move(name)), gate_(std::move(gate)) {}
    Result<ExitStatus> reap();

    pid_t pid_;
    std::string name_;  // argv[0], for messages
    bpf::Fd gate_;      // our end of the child's gate/report socket
    bpf::Fd pidfd_;
    bool released_ = false;
    std::optional<Error> exec_error_;
    std::optional<ExitStatus> status_;  // set once reaped
};

// Ends mysqltrace the way the command ended: exit(code), or for a death by
// signal, that signal raised on itself with the default action and unblocked,
// so a parent shell sees the same (falling back to exit(128 + signal)). No
// core of mysqltrace is written for a command that dumped core.
[[noreturn]] void exit_like(const ExitStatus &st);

}  // namespace mysqltrace::run
