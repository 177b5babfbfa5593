// SPDX-License-Identifier: GPL-2.0-only
#include "harness/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace mysqltrace::test::harness {

using namespace std::chrono_literals;

Error sys_error(int err, const std::string &what) {
    return Error{err, what + ": " + std::strerror(err)};
}

std::optional<std::string> read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

Result<void> write_file(const std::string &path, const std::string &content) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        return sys_error(errno, "cannot create " + path);
    }
    size_t done = 0;
    while (done < content.size()) {
        ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            int err = errno;
            ::close(fd);
            return sys_error(err, "cannot write " + path);
        }
        done += static_cast<size_t>(n);
    }
    ::close(fd);
    return {};
}

std::string log_tail(const std::string &path, size_t from, size_t max_bytes) {
    auto text = read_file(path);
    if (!text) {
        return "(no log at " + path + ")";
    }
    std::string s = from < text->size() ? text->substr(from) : std::string();
    if (s.size() > max_bytes) {
        s = "..." + s.substr(s.size() - max_bytes);
    }
    return s.empty() ? "(log " + path + " is empty)" : s;
}

size_t file_size(const std::string &path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
}

std::optional<unsigned long long> process_start_time(pid_t pid) {
    auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) {
        return std::nullopt;
    }
    size_t paren = stat->rfind(')');
    if (paren == std::string::npos) {
        return std::nullopt;
    }
    std::istringstream fields(stat->substr(paren + 1));
    std::string field;
    for (int i = 3; i <= 22; ++i) {
        if (!(fields >> field)) {
            return std::nullopt;
        }
    }
    return std::strtoull(field.c_str(), nullptr, 10);
}

// fork+exec rather than posix_spawn: PR_SET_PDEATHSIG must be set in the
// child. Only async-signal-safe calls happen between fork and exec.
Result<pid_t> spawn(const std::vector<std::string> &args, const std::string &out_path,
                    bool own_process_group) {
    std::vector<char *> argv;
    for (const auto &a : args) {
        argv.push_back(const_cast<char *>(a.c_str()));
    }
    argv.push_back(nullptr);

    int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (out_fd < 0) {
        return sys_error(errno, "cannot open " + out_path);
    }
    int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    int status_pipe[2];
    if (null_fd < 0 || ::pipe2(status_pipe, O_CLOEXEC) != 0) {
        int err = errno;
        ::close(out_fd);
        if (null_fd >= 0) {
            ::close(null_fd);
        }
        return sys_error(err, "cannot prepare child");
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        int err = 0;
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
            err = errno;
        } else if (::getppid() != parent) {
            // The parent died before PDEATHSIG was armed; nobody would reap us.
            ::_exit(127);
        }
        if (err == 0 && own_process_group && ::setpgid(0, 0) != 0) {
            err = errno;
        }
        if (err == 0 &&
            (::dup2(null_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(out_fd, 2) < 0)) {
            err = errno;
        }
        if (err == 0) {
            // Blocked and ignored signals survive exec; mariadbd expects
            // the defaults.
            sigset_t none;
            sigemptyset(&none);
            ::sigprocmask(SIG_SETMASK, &none, nullptr);
            struct sigaction dfl {};
            dfl.sa_handler = SIG_DFL;
            for (int sig : {SIGPIPE, SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) {
                ::sigaction(sig, &dfl, nullptr);
            }
            // Keep the test's own sockets and pipes out of the server.
            ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
            ::execv(argv[0], argv.data());
            err = errno;
        }
        ssize_t ignored = ::write(status_pipe[1], &err, sizeof(err));
        (void)ignored;
        ::_exit(127);
    }
    int fork_err = errno;
    ::close(status_pipe[1]);
    ::close(out_fd);
    ::close(null_fd);
    if (pid < 0) {
        ::close(status_pipe[0]);
        return sys_error(fork_err, "fork");
    }
    // EOF means exec succeeded (the pipe is close-on-exec).
    int child_err = 0;
    ssize_t n;
    do {
        n = ::read(status_pipe[0], &child_err, sizeof(child_err));
    } while (n < 0 && errno == EINTR);
    ::close(status_pipe[0]);
    if (n == sizeof(child_err)) {
        ::waitpid(pid, nullptr, 0);
        return sys_error(child_err, "cannot execute " + args[0]);
    }
    return pid;
}

std::optional<int> wait_child(pid_t pid, Clock::time_point deadline) {
    for (;;) {
        int status = 0;
        pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            return status;
        }
        if (r < 0 && errno != EINTR) {
            if (::kill(pid, 0) != 0 && errno == ESRCH) {
                return -1;
            }
        }
        if (Clock::now() >= deadline) {
            return std::nullopt;
        }
        std::this_thread::sleep_for(10ms);
    }
}

std::string describe_status(int status) {
    if (status == -1) {
        return "exited (status unknown)";
    }
    if (WIFEXITED(status)) {
        return "exited with status " + std::to_string(WEXITSTATUS(status));
    }
    if (WIFSIGNALED(status)) {
        return std::string("was killed by signal ") + ::strsignal(WTERMSIG(status));
    }
    return "stopped";
}

}  // namespace mysqltrace::test::harness
