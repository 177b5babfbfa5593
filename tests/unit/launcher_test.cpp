// SPDX-License-Identifier: GPL-2.0-only
// The launcher of `mysqltrace run`: a gated child that runs real commands
// (sh, cat, ls, touch) once released, with the environment, descriptors and
// signal state it was given, and that never outlives an unreleased Launcher.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "run/launcher.h"
#include "temp_dir.h"

namespace mysqltrace::run {
namespace {

namespace fs = std::filesystem;

using mysqltrace::test::TempDir;

std::string slurp(const std::string &path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Puts `fd` in place of descriptor `target` until destroyed: the child is
// forked in between and inherits it.
class Redirect {
  public:
    Redirect(int target, int fd) : target_(target) {
        std::fflush(nullptr);
        saved_ = fcntl(target, F_DUPFD_CLOEXEC, 3);
        dup2(fd, target);
    }
    ~Redirect() {
        dup2(saved_, target_);
        close(saved_);
    }

  private:
    int target_;
    int saved_;
};

// Starts `opts` with stdout going to `out` (when not empty).
std::unique_ptr<Launcher> start_ok(const LaunchOptions &opts, const std::string &out = "") {
    Result<std::unique_ptr<Launcher>> l = Error{};
    if (out.empty()) {
        l = Launcher::start(opts);
    } else {
        int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        EXPECT_GE(fd, 0);
        Redirect r(STDOUT_FILENO, fd);
        l = Launcher::start(opts);
        close(fd);
    }
    if (!l) {
        ADD_FAILURE() << l.error().message;
        return nullptr;
    }
    return std::move(l).value();
}

// Starts, releases and waits for `argv`, stdout to `out` (when not empty).
ExitStatus run(const std::vector<std::string> &argv, const std::string &out = "") {
    LaunchOptions opts;
    opts.argv = argv;
    auto l = start_ok(opts, out);
    if (!l) {
        return {};
    }
    auto rel = l->release();
    EXPECT_TRUE(rel.ok()) << rel.error().message;
    auto st = l->wait();
    EXPECT_TRUE(st.ok()) << st.error().message;
    return st.ok() ? *st : ExitStatus{};
}

bool reaped(pid_t pid) {
    int ws = 0;
    return waitpid(pid, &ws, WNOHANG) == -1 && errno == ECHILD;
}

bool gone(pid_t pid) {
    return kill(pid, 0) == -1 && errno == ESRCH;
}

// The path of a library this test has loaded whose name contains `part`:
// real libraries to preload, so ld.so has nothing to complain about.
std::string loaded_library(const std::string &part) {
    struct Find {
        std::string part, found;
    } f{part, ""};
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
            auto *f = static_cast<Find *>(data);
            std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
            if (name.find(f->part) != std::string::npos) {
                f->found = name;
                return 1;
            }
            return 0;
        },
        &f);
    return f.found;
}

// --- compose_preload ---

TEST(ComposePreload, ShimAloneWhenNothingIsPreloaded) {
    EXPECT_EQ(compose_preload("/s/libshim.so", nullptr), "/s/libshim.so");
    EXPECT_EQ(compose_preload("/s/libshim.so", ""), "/s/libshim.so");
    EXPECT_EQ(compose_preload("/s/libshim.so", " : :"), "/s/libshim.so");
}

TEST(ComposePreload, ShimFirstThenWhatWasThere) {
    EXPECT_EQ(compose_preload("/s/libshim.so", "/a/liba.so"), "/s/libshim.so:/a/liba.so");
    EXPECT_EQ(compose_preload("/s/libshim.so", "/a/liba.so:/b/libb.so"),
              "/s/libshim.so:/a/liba.so:/b/libb.so");
}

TEST(ComposePreload, SplitsOnSpacesAndColonsLikeGlibc) {
    EXPECT_EQ(compose_preload("/s/libshim.so", "  /a/liba.so   /b/libb.so "),
              "/s/libshim.so:/a/liba.so:/b/libb.so");
    EXPECT_EQ(compose_preload("/s/libshim.so", "/a/liba.so: /b/libb.so::libc.so"),
              "/s/libshim.so:/a/liba.so:/b/libb.so:libc.so");
    // glibc does not split on tabs; neither do we.
    EXPECT_EQ(compose_preload("/s/libshim.so", "/a/x\ty.so"), "/s/libshim.so:/a/x\ty.so");
}

TEST(ComposePreload, NeverLoadsTheShimTwice) {
    EXPECT_EQ(compose_preload("/s/libshim.so", "/s/libshim.so"), "/s/libshim.so");
    EXPECT_EQ(compose_preload("/s/libshim.so", "/a/liba.so /s/libshim.so:/b/libb.so"),
              "/s/libshim.so:/a/liba.so:/b/libb.so");
    // Another copy of it, installed elsewhere or found by name.
    EXPECT_EQ(
        compose_preload("/build/shim/libshim.so", "/usr/lib/libshim.so libshim.so /a/liba.so"),
        "/build/shim/libshim.so:/a/liba.so");
    // Only whole file names count.
    EXPECT_EQ(compose_preload("/s/libshim.so", "/a/libshim.so.1"), "/s/libshim.so:/a/libshim.so.1");
}

TEST(ComposePreload, NoShimKeepsTheExistingList) {
    EXPECT_EQ(compose_preload("", "/a/liba.so /b/libb.so"), "/a/liba.so:/b/libb.so");
    EXPECT_EQ(compose_preload("", nullptr), "");
}

// --- options ---

TEST(Launcher, RejectsWhatCannotBeLaunched) {
    LaunchOptions none;
    auto l = Launcher::start(none);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.error().code, EINVAL);

    LaunchOptions spaced;
    spaced.argv = {"true"};
    spaced.preload = "/my libs/libshim.so";
    l = Launcher::start(spaced);
    ASSERT_FALSE(l.ok());
    EXPECT_NE(l.error().message.find("space or a colon"), std::string::npos) << l.error().message;

    LaunchOptions bad_env;
    bad_env.argv = {"true"};
    bad_env.extra_env = {{"A=B", "c"}};
    l = Launcher::start(bad_env);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.error().code, EINVAL);
}

// --- exit status ---

TEST(Launcher, ExitCodePropagates) {
    ExitStatus st = run({"sh", "-c", "exit 3"});
    EXPECT_FALSE(st.signaled);
    EXPECT_EQ(st.code, 3);
}

TEST(Launcher, DeathBySignalIsReported) {
    ExitStatus st = run({"sh", "-c", "kill -TERM $$"});
    EXPECT_TRUE(st.signaled);
    EXPECT_EQ(st.signal, SIGTERM);
    EXPECT_EQ(st.code, 128 + SIGTERM);
    EXPECT_FALSE(st.core_dumped);
}

TEST(Launcher, MissingCommandIsAClearErrorAndLeavesNoZombie) {
    LaunchOptions opts;
    opts.argv = {"mysqltrace-test-no-such-command", "x"};
    auto l = start_ok(opts);
    ASSERT_TRUE(l);
    const pid_t pid = l->pid();
    auto rel = l->release();
    ASSERT_FALSE(rel.ok());
    EXPECT_EQ(rel.error().code, ENOENT);
    EXPECT_EQ(rel.error().message,
              "cannot run 'mysqltrace-test-no-such-command': No such file or directory");
    EXPECT_TRUE(reaped(pid));  // before wait() is even called
    // Asked again, the same answer.
    auto again = l->release();
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().message, rel.error().message);
    auto st = l->wait();
    ASSERT_TRUE(st.ok());
    EXPECT_FALSE(st->signaled);
    EXPECT_EQ(st->code, 127);
    l.reset();
    EXPECT_TRUE(gone(pid));
}

TEST(Launcher, NonExecutableFileIsA126Error) {
    TempDir dir;
    const std::string script = dir.file("not-executable.sh");
    std::ofstream(script) << "#!/bin/sh\nexit 0\n";
    ASSERT_EQ(chmod(script.c_str(), 0644), 0);
    LaunchOptions opts;
    opts.argv = {script};
    auto l = start_ok(opts);
    ASSERT_TRUE(l);
    auto rel = l->release();
    ASSERT_FALSE(rel.ok());
    EXPECT_EQ(rel.error().code, EACCES);
    EXPECT_EQ(rel.error().message, "cannot run '" + script + "': Permission denied");
    auto st = l->wait();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->code, 126);
}

TEST(Launcher, CommandIsFoundInPath) {
    TempDir dir;
    const std::string out = dir.file("out");
    // No slash: looked up in PATH like execvp.
    ExitStatus st = run({"echo", "found"}, out);
    EXPECT_EQ(st.code, 0);
    EXPECT_EQ(slurp(out), "found\n");
}

// --- the gate ---

TEST(Launcher, ChildDoesNotRunBeforeRelease) {
    TempDir dir;
    const std::string marker = dir.file("ran");
    LaunchOptions opts;
    opts.argv = {"touch", marker};
    auto l = start_ok(opts);
    ASSERT_TRUE(l);
    usleep(200 * 1000);
    EXPECT_FALSE(fs::exists(marker));
    // Still this test's image: it has not exec'd.
    EXPECT_EQ(fs::read_symlink("/proc/" + std::to_string(l->pid()) + "/exe"),
              fs::read_symlink("/proc/self/exe"));
    ASSERT_TRUE(l->release().ok());
    auto st = l->wait();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->code, 0);
    EXPECT_TRUE(fs::exists(marker));
}

TEST(Launcher, UnreleasedLauncherLeavesNoZombieOrOrphan) {
    TempDir dir;
    const std::string marker = dir.file("ran");
    LaunchOptions opts;
    opts.argv = {"touch", marker};
    auto l = start_ok(opts);
    ASSERT_TRUE(l);
    const pid_t pid = l->pid();
    l.reset();
    EXPECT_TRUE(reaped(pid));
    EXPECT_TRUE(gone(pid));
    EXPECT_FALSE(fs::exists(marker));
}

TEST(Launcher, StoppedChildAtTheGateIsStillCleanedUp) {
    LaunchOptions opts;
    opts.argv = {"true"};
    auto l = start_ok(opts);
    ASSERT_TRUE(l);
    const pid_t pid = l->pid();
    ASSERT_EQ(kill(pid, SIGSTOP), 0);
    siginfo_t si{};
    ASSERT_EQ(waitid(P_PID, static_cast<id_t>(pid), &si, WSTOPPED | WNOWAIT), 0);
    alarm(10);  // a hang here fails the test instead of blocking the suite
    l.reset();  // must not hang on a child that cannot read the closed gate
    alarm(0);
    EXPECT_TRUE(reaped(pid));
}

TEST(Launcher, WaitBeforeReleaseIsAnErrorNotAHang) {
    LaunchOptions opts;
    opts.argv = {"true"};
    auto l = start_ok(opts);
    ASSERT_TRUE(l);
    auto st = l->wait();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("never released"), std::string::npos);
}

TEST(Launcher, ChildAtTheGateEndsQuietlyWhenTheTracerDies) {
    TempDir dir;
    const std::string marker = dir.file("ran");
    const std::string err = dir.file("stderr");
    // Orphans come back to this process, so the grandchild can be waited for.
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    const pid_t tracer = fork();
    ASSERT_GE(tracer, 0);
    if (tracer == 0) {
        int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, STDERR_FILENO);
        LaunchOptions opts;
        opts.argv = {"touch", marker};
        auto l = Launcher::start(opts);
        pid_t child = l ? (*l)->pid() : -1;
        (void)!write(p[1], &child, sizeof(child));
        _exit(0);  // dies with the gate closed, no destructor run
    }
    close(p[1]);
    pid_t child = -1;
    ASSERT_EQ(read(p[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
    close(p[0]);
    int ws = 0;
    ASSERT_EQ(waitpid(tracer, &ws, 0), tracer);
    ASSERT_GT(child, 0);
    ASSERT_EQ(waitpid(child, &ws, 0), child);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    EXPECT_TRUE(WIFEXITED(ws));
    EXPECT_EQ(WEXITSTATUS(ws), 127);
    EXPECT_FALSE(fs::exists(marker));
    EXPECT_EQ(slurp(err), "");
}

TEST(Launcher, PidfdIsReadableOnceTheChildExits) {
    LaunchOptions opts;
    opts.argv = {"true"};
    auto l = start_ok(opts);
    ASSERT_TRUE(l);
    ASSERT_GE(l->pidfd(), 0);
    pollfd pfd{l->pidfd(), POLLIN, 0};
    EXPECT_EQ(poll(&pfd, 1, 100), 0);  // at the gate: alive
    ASSERT_TRUE(l->release().ok());
    EXPECT_EQ(poll(&pfd, 1, 10000), 1);
    auto st = l->wait();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->code, 0);
}

TEST(Launcher, ForwardsSignals) {
    LaunchOptions opts;
    opts.argv = {"sleep", "30"};
    auto l = start_ok(opts);
    ASSERT_TRUE(l);
    ASSERT_TRUE(l->release().ok());
    l->forward_signal(SIGTERM);
    auto st = l->wait();
    ASSERT_TRUE(st.ok());
    EXPECT_TRUE(st->signaled);
    EXPECT_EQ(st->signal, SIGTERM);
    l->forward_signal(SIGTERM);  // reaped: a no-op
}

// --- what the child inherits ---

TEST(Launcher, PreloadAndExtraEnvReachTheChild) {
    const std::string shim = loaded_library("libc.so");
    const std::string other = loaded_library("libstdc++.so");
    ASSERT_FALSE(shim.empty());
    ASSERT_FALSE(other.empty());
    TempDir dir;
    const std::string out = dir.file("env");
    ASSERT_EQ(setenv("LD_PRELOAD", (other + " " + shim).c_str(), 1), 0);
    ASSERT_EQ(setenv("MT_REPLACED", "old", 1), 0);
    LaunchOptions opts;
    opts.argv = {"sh", "-c",
                 "printf '%s|%s|%s|' \"$LD_PRELOAD\" \"$MT_EXTRA\" \"$MT_REPLACED\"; "
                 "env | grep -c '^MT_REPLACED='"};
    opts.preload = shim;
    opts.extra_env = {{"MT_EXTRA", "a b=c"}, {"MT_REPLACED", "new"}};
    auto l = start_ok(opts, out);
    unsetenv("LD_PRELOAD");
    unsetenv("MT_REPLACED");
    ASSERT_TRUE(l);
    ASSERT_TRUE(l->release().ok());
    auto st = l->wait();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->code, 0);
    EXPECT_EQ(slurp(out), shim + ":" + other + "|a b=c|new|1\n");
    // Only the child's environment changed.
    EXPECT_EQ(std::getenv("MT_EXTRA"), nullptr);
}

TEST(Launcher, ExtraEnvLdPreloadStandsInForTheInheritedOne) {
    const std::string shim = loaded_library("libc.so");
    const std::string other = loaded_library("libstdc++.so");
    TempDir dir;
    const std::string out = dir.file("env");
    LaunchOptions opts;
    opts.argv = {"sh", "-c", "printf '%s' \"$LD_PRELOAD\""};
    opts.preload = shim;
    opts.extra_env = {{"LD_PRELOAD", other}};
    auto l = start_ok(opts, out);
    ASSERT_TRUE(l);
    ASSERT_TRUE(l->release().ok());
    ASSERT_TRUE(l->wait().ok());
    EXPECT_EQ(slurp(out), shim + ":" + other);
}

TEST(Launcher, ChildInheritsOnlyStdio) {
    TempDir dir;
    const std::string out = dir.file("fds");
    // Descriptors mysqltrace might hold without O_CLOEXEC.
    int leak1 = open("/dev/null", O_RDONLY);
    int leak2 = dup(STDERR_FILENO);
    ASSERT_GE(leak1, 3);
    ASSERT_GE(leak2, 3);
    ExitStatus st = run({"ls", "/proc/self/fd"}, out);
    close(leak1);
    close(leak2);
    EXPECT_EQ(st.code, 0);
    // 0-2 and the directory ls is reading.
    EXPECT_EQ(slurp(out), "0\n1\n2\n3\n");
}

TEST(Launcher, StdinAndStdoutPassThrough) {
    TempDir dir;
    const std::string out = dir.file("cat");
    int p[2];
    ASSERT_EQ(pipe(p), 0);  // no O_CLOEXEC: the child must still drop the write end
    std::unique_ptr<Launcher> l;
    {
        Redirect in(STDIN_FILENO, p[0]);
        LaunchOptions opts;
        opts.argv = {"cat"};
        l = start_ok(opts, out);
    }
    close(p[0]);
    ASSERT_TRUE(l);
    ASSERT_TRUE(l->release().ok());
    ASSERT_EQ(write(p[1], "hello\n", 6), 6);
    close(p[1]);  // cat sees EOF only if no copy of this end leaked into it
    pollfd exited{l->pidfd(), POLLIN, 0};
    if (poll(&exited, 1, 10000) != 1) {
        l->forward_signal(SIGKILL);
        ADD_FAILURE() << "cat did not see EOF: the pipe's write end leaked into it";
    }
    auto st = l->wait();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->code, 0);
    EXPECT_EQ(slurp(out), "hello\n");
}

// The value of "Key:\t..." in /proc/PID/status text.
std::string status_field(const std::string &text, const std::string &key) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(key + ":\t", 0) == 0) {
            return line.substr(key.size() + 2);
        }
    }
    return "?";
}

TEST(Launcher, ChildStartsWithDefaultSignalState) {
    TempDir dir;
    const std::string out = dir.file("status");
    // As mysqltrace does for its signalfd, plus an ignored signal, which exec
    // alone would carry over.
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    auto old_usr1 = signal(SIGUSR1, SIG_IGN);
    auto old_pipe = signal(SIGPIPE, SIG_IGN);
    ExitStatus st = run({"cat", "/proc/self/status"}, out);
    signal(SIGUSR1, old_usr1);
    signal(SIGPIPE, old_pipe);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    EXPECT_EQ(st.code, 0);
    const std::string text = slurp(out);
    EXPECT_EQ(status_field(text, "SigBlk"), "0000000000000000");
    EXPECT_EQ(status_field(text, "SigIgn"), "0000000000000000");
}

TEST(Launcher, ChildSharesProcessGroupAndSession) {
    TempDir dir;
    const std::string out = dir.file("stat");
    ExitStatus st = run({"cat", "/proc/self/stat"}, out);
    EXPECT_EQ(st.code, 0);
    // "pid (comm) state ppid pgrp session ..."
    std::string text = slurp(out);
    std::istringstream fields(text.substr(text.rfind(')') + 1));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    fields >> state >> ppid >> pgrp >> session;
    EXPECT_EQ(ppid, getpid());
    EXPECT_EQ(pgrp, getpgrp());
    EXPECT_EQ(session, getsid(0));
}

// --- exit_like ---

// How a forked helper running `f` ended (stops included).
int status_of(const std::function<void()> &f) {
    const pid_t pid = fork();
    if (pid == 0) {
        f();
        _exit(99);  // exit_like returned: it must not
    }
    int ws = 0;
    waitpid(pid, &ws, WUNTRACED);
    if (WIFSTOPPED(ws)) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
    }
    return ws;
}

TEST(ExitLike, ExitsWithTheCode) {
    int ws = status_of([] { exit_like(ExitStatus{false, 3, 0, false}); });
    ASSERT_TRUE(WIFEXITED(ws));
    EXPECT_EQ(WEXITSTATUS(ws), 3);
}

TEST(ExitLike, DiesOfTheSameSignalEvenIfBlockedOrHandled) {
    int ws = status_of([] {
        // mysqltrace blocks it for its signalfd; a handler would swallow it.
        signal(SIGTERM, [](int) {});
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGTERM);
        sigprocmask(SIG_BLOCK, &s, nullptr);
        exit_like(exit_status_from_wait(SIGTERM));  // a raw status: killed by SIGTERM
    });
    ASSERT_TRUE(WIFSIGNALED(ws));
    EXPECT_EQ(WTERMSIG(ws), SIGTERM);
}

TEST(ExitLike, NoCoreOfTheTracer) {
    TempDir dir;
    const std::string where = dir.file("");
    int ws = status_of([&] {
        // Allow cores as far as permitted; exit_like must still not dump.
        rlimit rl{};
        getrlimit(RLIMIT_CORE, &rl);
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_CORE, &rl);
        (void)!chdir(where.c_str());
        exit_like(ExitStatus{true, 128 + SIGSEGV, SIGSEGV, true});
    });
    ASSERT_TRUE(WIFSIGNALED(ws));
    EXPECT_EQ(WTERMSIG(ws), SIGSEGV);
    EXPECT_FALSE(WCOREDUMP(ws));
}

TEST(ExitLike, FallsBackTo128PlusSignal) {
    // Default action "ignore": raising it does not end the process.
    int ws = status_of([] { exit_like(ExitStatus{true, 128 + SIGWINCH, SIGWINCH, false}); });
    ASSERT_TRUE(WIFEXITED(ws));
    EXPECT_EQ(WEXITSTATUS(ws), 128 + SIGWINCH);
    // A stop signal must not suspend mysqltrace.
    ws = status_of([] { exit_like(ExitStatus{true, 128 + SIGTSTP, SIGTSTP, false}); });
    ASSERT_TRUE(WIFEXITED(ws));
    EXPECT_EQ(WEXITSTATUS(ws), 128 + SIGTSTP);
}

TEST(ExitStatusFromWait, DecodesExitsAndSignals) {
    ExitStatus e = exit_status_from_wait(42 << 8);
    EXPECT_FALSE(e.signaled);
    EXPECT_EQ(e.code, 42);
    ExitStatus s = exit_status_from_wait(SIGKILL);
    EXPECT_TRUE(s.signaled);
    EXPECT_EQ(s.signal, SIGKILL);
    EXPECT_EQ(s.code, 128 + SIGKILL);
    EXPECT_FALSE(s.core_dumped);
    ExitStatus c = exit_status_from_wait(SIGABRT | 0x80);
    EXPECT_TRUE(c.core_dumped);
}

}  // namespace
}  // namespace mysqltrace::run
