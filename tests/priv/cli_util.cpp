// SPDX-License-Identifier: GPL-2.0-only
#include "priv/cli_util.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <grp.h>

namespace mysqltrace::test {

namespace {

pid_t spawn(const std::vector<std::string> &argv, uid_t as_uid, int *out_fd, int *err_fd) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(out[1], 1);
        dup2(err[1], 2);
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        // Undo what a test runner may have blocked: the tracer's Ctrl-C path
        // must see SIGINT as a user's shell would deliver it.
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        if (as_uid != 0) {
            if (setgroups(0, nullptr) != 0 || setgid(as_uid) != 0 || setuid(as_uid) != 0) {
                _exit(126);
            }
        }
        std::vector<char *> args;
        for (const auto &a : argv) {
            args.push_back(const_cast<char *>(a.c_str()));
        }
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    *out_fd = out[0];
    *err_fd = err[0];
    return pid;
}

int exit_code(int status) {
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

CommandResult run_command(const std::vector<std::string> &argv, uid_t as_uid) {
    BackgroundCommand c(argv, as_uid);
    return c.wait();
}

BackgroundCommand::BackgroundCommand(const std::vector<std::string> &argv, uid_t as_uid) {
    pid_ = spawn(argv, as_uid, &out_fd_, &err_fd_);
}

BackgroundCommand::~BackgroundCommand() {
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) {
        close(out_fd_);
    }
    if (err_fd_ >= 0) {
        close(err_fd_);
    }
}

void BackgroundCommand::drain(int timeout_ms) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    if (poll(fds, 2, timeout_ms) <= 0) {
        return;
    }
    char buf[65536];
    for (int i = 0; i < 2; i++) {
        if (fds[i].revents & (POLLIN | POLLHUP)) {
            ssize_t n = read(fds[i].fd, buf, sizeof(buf));
            if (n > 0) {
                (i == 0 ? result_.out : result_.err).append(buf, static_cast<size_t>(n));
            } else {
                close(fds[i].fd);
                (i == 0 ? out_fd_ : err_fd_) = -1;
            }
        }
    }
}

bool BackgroundCommand::wait_for_stderr(const std::string &text, int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (result_.err.find(text) == std::string::npos) {
        if (err_fd_ < 0 || std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        drain(100);
    }
    return true;
}

CommandResult BackgroundCommand::stop(int sig) {
    if (pid_ > 0) {
        kill(pid_, sig);
    }
    return wait();
}

CommandResult BackgroundCommand::wait() {
    while (out_fd_ >= 0 || err_fd_ >= 0) {
        drain(1000);
    }
    if (pid_ > 0) {
        int status = 0;
        waitpid(pid_, &status, 0);
        result_.exit_code = exit_code(status);
        pid_ = -1;
    }
    return result_;
}

std::string read_file(const std::string &path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<nlohmann::json> read_json_lines(const std::string &path) {
    std::ifstream in(path);
    std::vector<nlohmann::json> rows;
    for (std::string line; std::getline(in, line);) {
        rows.push_back(nlohmann::json::parse(line));
    }
    return rows;
}

}  // namespace mysqltrace::test
