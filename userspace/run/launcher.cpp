// SPDX-License-Identifier: GPL-2.0-only
#include "run/launcher.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string_view>

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace mysqltrace::run {

namespace {

// What the child sends back on the gate socket when it cannot go on. Nothing
// at all (EOF) means it exec'd: the socket is close-on-exec.
struct ChildReport {
    int stage;
    int err;
};
constexpr int kStageFds = 1;
constexpr int kStageExec = 2;

[[noreturn]] void report_and_exit(int gate, int stage, int err) {
    const ChildReport r{stage, err};
    // MSG_NOSIGNAL: a parent that has gone away must not turn a quiet exit
    // into a SIGPIPE death.
    (void)send(gate, &r, sizeof(r), MSG_NOSIGNAL);
    // Shell convention: 127 not found, 126 found but not runnable.
    _exit(stage == kStageExec && err != ENOENT ? 126 : 127);
}

// Runs in the forked child, so only async-signal-safe calls: mysqltrace may
// have other threads whose locks were copied mid-use.
[[noreturn]] void child_main(int parent_end, int gate, char *const argv[], char *const envp[]) {
    // exec keeps ignored signals and the mask, and mysqltrace blocks
    // SIGINT/SIGTERM/SIGHUP for its signalfd: the command must start clean.
    // The parent blocked everything around fork() so none of its handlers
    // can run here before this reset.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; sig++) {
        (void)sigaction(sig, &dfl, nullptr);  // SIGKILL, SIGSTOP and libc's own refuse
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);

    // Our copy of the parent's end must go, or its close would never read as
    // EOF here.
    close(parent_end);
    // Nothing of mysqltrace (BPF maps, rings, output files) may leak into the
    // command. Close-on-exec rather than closed keeps the gate usable until
    // exec.
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
        report_and_exit(gate, kStageFds, errno);
    }

    char go = 0;
    ssize_t n;
    do {
        n = read(gate, &go, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) {
        // The gate closed without release: the tracer gave up or died.
        _exit(127);
    }
    // glibc's execvpe builds candidate paths on the stack, no malloc.
    execvpe(argv[0], argv, envp);
    report_and_exit(gate, kStageExec, errno);
}

std::string_view file_name(std::string_view path) {
    size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The child's environment: ours, with extra_env set over it and LD_PRELOAD
// composed. A key given twice in extra_env keeps its last value.
Result<std::vector<std::string>> child_env(const LaunchOptions &opts) {
    const bool preload = !opts.preload.empty();
    const char *existing = std::getenv("LD_PRELOAD");
    std::vector<std::string> env;
    auto given_later = [&](size_t i) {
        for (size_t j = i + 1; j < opts.extra_env.size(); j++) {
            if (opts.extra_env[j].first == opts.extra_env[i].first) {
                return true;
            }
        }
        return false;
    };
    for (size_t i = 0; i < opts.extra_env.size(); i++) {
        const auto &[key, value] = opts.extra_env[i];
        if (key.empty() || key.find('=') != std::string::npos) {
            return Error{EINVAL, "invalid environment variable name '" + key + "'"};
        }
        if (given_later(i)) {
            continue;
        }
        if (preload && key == "LD_PRELOAD") {
            existing = value.c_str();
            continue;
        }
        env.push_back(key + "=" + value);
    }
    auto replaced = [&](std::string_view entry) {
        std::string_view name = entry.substr(0, entry.find('='));
        if (preload && name == "LD_PRELOAD") {
            return true;
        }
        for (const auto &kv : opts.extra_env) {
            if (kv.first == name) {
                return true;
            }
        }
        return false;
    };
    std::vector<std::string> out;
    for (char **e = environ; *e != nullptr; e++) {
        if (!replaced(*e)) {
            out.emplace_back(*e);
        }
    }
    out.insert(out.end(), env.begin(), env.end());
    if (preload) {
        out.push_back("LD_PRELOAD=" + compose_preload(opts.preload, existing));
    }
    return out;
}

std::vector<char *> c_array(std::vector<std::string> &strings) {
    std::vector<char *> out;
    out.reserve(strings.size() + 1);
    for (auto &s : strings) {
        out.push_back(s.data());
    }
    out.push_back(nullptr);
    return out;
}

}  // namespace

ExitStatus exit_status_from_wait(int wstatus) {
    ExitStatus st;
    if (WIFSIGNALED(wstatus)) {
        st.signaled = true;
        st.signal = WTERMSIG(wstatus);
        st.code = 128 + st.signal;
        st.core_dumped = WCOREDUMP(wstatus);
    } else {
        st.code = WEXITSTATUS(wstatus);
    }
    return st;
}

std::string compose_preload(const std::string &shim, const char *existing) {
    const std::string_view shim_name = file_name(shim);
    std::string out = shim;
    std::string_view rest = existing != nullptr ? existing : "";
    while (!rest.empty()) {
        // glibc's separators, and only those: a tab is part of a name to it.
        size_t end = rest.find_first_of(" :");
        std::string_view entry = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
        if (entry.empty()) {
            continue;
        }
        if (!shim.empty() && (entry == shim || file_name(entry) == shim_name)) {
            continue;
        }
        if (!out.empty()) {
            out += ':';
        }
        out += entry;
    }
    return out;
}

Result<std::unique_ptr<Launcher>> Launcher::start(const LaunchOptions &opts) {
    if (opts.argv.empty() || opts.argv.front().empty()) {
        return Error{EINVAL, "no command to run"};
    }
    const std::string &name = opts.argv.front();
    if (opts.preload.find_first_of(" :") != std::string::npos) {
        return Error{EINVAL, "cannot preload '" + opts.preload +
                                 "': LD_PRELOAD cannot hold a path with a space or a colon"};
    }
    // Everything the child needs is built before fork(): after it, the child
    // may not allocate.
    auto env = child_env(opts);
    if (!env) {
        return env.error();
    }
    std::vector<std::string> args = opts.argv;
    std::vector<char *> argv_c = c_array(args);
    std::vector<char *> envp_c = c_array(*env);

    // A socket pair, not a pipe: the gate byte goes one way and the failure
    // report the other, and send(MSG_NOSIGNAL) to a child that died at the
    // gate cannot raise SIGPIPE in mysqltrace.
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return make_error(errno, "cannot start '" + name + "'");
    }
    bpf::Fd ours(sv[0]);
    bpf::Fd theirs(sv[1]);

    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    const pid_t pid = fork();
    if (pid == 0) {
        child_main(ours.get(), theirs.get(), argv_c.data(), envp_c.data());
    }
    const int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (pid < 0) {
        return make_error(fork_errno, "cannot start '" + name + "'");
    }
    theirs.reset();

    std::unique_ptr<Launcher> l(new Launcher(pid, name, std::move(ours)));
    l->pidfd_.reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
    if (!l->pidfd_.valid()) {
        // ~Launcher kills and reaps the child, still at its gate.
        return make_error(errno, "cannot watch pid " + std::to_string(pid));
    }
    return l;
}

Launcher::~Launcher() {
    if (status_) {
        return;
    }
    if (!released_) {
        // Killed, not only shut out: a child stopped at the gate (Ctrl-Z
        // reaches the whole process group) would never see the gate close.
        forward_signal(SIGKILL);
        gate_.reset();
        (void)reap();
        return;
    }
    // Released: the command is the user's, not ours to stop. Reap it only if
    // it is already gone.
    int ws = 0;
    if (waitpid(pid_, &ws, WNOHANG) == pid_) {
        status_ = exit_status_from_wait(ws);
    }
}

Result<void> Launcher::release() {
    if (released_) {
        if (exec_error_) {
            return *exec_error_;
        }
        return {};
    }
    released_ = true;
    const char go = 1;
    ssize_t n;
    do {
        n = send(gate_.get(), &go, 1, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    // A failed send means the child died at the gate; any report it left is
    // still queued, so read on either way.
    ChildReport r{};
    size_t got = 0;
    while (got < sizeof(r)) {
        n = recv(gate_.get(), reinterpret_cast<char *>(&r) + got, sizeof(r) - got, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;  // EOF: exec'd. ECONNRESET: killed with the gate byte unread.
        }
        got += static_cast<size_t>(n);
    }
    gate_.reset();
    if (got != sizeof(r)) {
        return {};
    }
    exec_error_ = r.stage == kStageExec
                      ? make_error(r.err, "cannot run '" + name_ + "'")
                      : make_error(r.err, "cannot start '" + name_ +
                                              "': cannot keep mysqltrace's descriptors from it");
    // It exits right after reporting: reap it now so no zombie is left even
    // if wait() is never called.
    (void)reap();
    return *exec_error_;
}

Result<ExitStatus> Launcher::wait() {
    if (!released_) {
        return Error{EINVAL, "cannot wait for '" + name_ + "': it was never released"};
    }
    return reap();
}

Result<ExitStatus> Launcher::reap() {
    if (status_) {
        return *status_;
    }
    int ws = 0;
    pid_t r;
    do {
        r = waitpid(pid_, &ws, 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        return make_error(errno, "cannot wait for pid " + std::to_string(pid_));
    }
    status_ = exit_status_from_wait(ws);
    return *status_;
}

void Launcher::forward_signal(int sig) {
    if (status_) {
        return;  // reaped: the pid may already be someone else's
    }
    if (pidfd_.valid()) {
        (void)syscall(SYS_pidfd_send_signal, pidfd_.get(), sig, nullptr, 0);
    } else {
        // Unreaped, so the pid is still our child's, if only as a zombie.
        (void)kill(pid_, sig);
    }
}

[[noreturn]] void exit_like(const ExitStatus &st) {
    if (!st.signaled) {
        std::exit(st.code);
    }
    const int sig = st.signal;
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    // A stop signal would suspend mysqltrace instead of ending it.
    const bool stops = sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
    if (sig > 0 && sig < NSIG && !stops) {
        // The command's core is the one that matters. One of mysqltrace would
        // be noise and could hold captured statements; not dumpable also
        // stops a core_pattern pipe, which ignores RLIMIT_CORE.
        (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        rlimit core{};
        if (getrlimit(RLIMIT_CORE, &core) == 0) {
            core.rlim_cur = 0;
            (void)setrlimit(RLIMIT_CORE, &core);
        }
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        (void)sigaction(sig, &dfl, nullptr);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
        raise(sig);
    }
    // Still alive: this signal's default action does not end a process.
    std::exit(128 + sig);
}

}  // namespace mysqltrace::run
