// SPDX-License-Identifier: GPL-2.0-only
// A traced process's files are read through its root and never out of it: a
// process chrooted into a tree whose symlinks point at absolute host paths
// (what a container user controls) gets those links resolved inside its root
// or refused, never followed to the host's files.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "calls/functions.h"
#include "priv/priv.h"
#include "proc/maps.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
using mysqltrace::proc::path_in_root;
using mysqltrace::test::TempDir;

// A child whose root is `dir`, waiting to be killed.
pid_t chrooted_child(const std::string &dir) {
    int ready[2];
    if (pipe(ready) != 0) {
        return -1;
    }
    const pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        const char ok = chroot(dir.c_str()) == 0 && chdir("/") == 0 ? 'y' : 'n';
        (void)!write(ready[1], &ok, 1);
        pause();
        _exit(0);
    }
    close(ready[1]);
    char ok = 'n';
    (void)!read(ready[0], &ok, 1);
    close(ready[0]);
    if (ok != 'y') {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        return -1;
    }
    return pid;
}

TEST(ProcRoot, SymlinksOutOfTheRootAreNeverFollowed) {
    MYSQLTRACE_REQUIRE_ROOT();
    TempDir root("mysqltrace-root");
    const fs::path r = root.path();
    fs::create_directories(r / "usr/lib");
    fs::create_directories(r / "etc");
    std::ofstream(r / "usr/lib/libreal.so") << "inside";
    std::ofstream(r / "etc/hostname") << "the container's own";
    // Absolute links: the tracer would resolve them from its own root.
    fs::create_symlink("/etc/hostname", r / "usr/lib/libshadowed.so");  // exists in both
    fs::create_symlink("/etc/os-release", r / "usr/lib/libhost.so");    // only on the host
    fs::create_symlink("../lib/libreal.so", r / "usr/lib/librelative.so");
    const pid_t pid = chrooted_child(r);
    ASSERT_GT(pid, 0);
    const std::string proc_root = "/proc/" + std::to_string(pid) + "/root";

    auto real = path_in_root(pid, "/usr/lib/libreal.so");
    ASSERT_TRUE(real.ok()) << real.error().message;
    EXPECT_EQ(*real, proc_root + "/usr/lib/libreal.so");
    auto relative = path_in_root(pid, "/usr/lib/librelative.so");
    EXPECT_TRUE(relative.ok()) << relative.error().message;

    // Resolved inside the root it is the container's file; followed plainly
    // it would be the host's: refused.
    auto shadowed = path_in_root(pid, "/usr/lib/libshadowed.so");
    ASSERT_FALSE(shadowed.ok());
    EXPECT_EQ(shadowed.error().code, EXDEV);
    // Only the host has it: refused too.
    EXPECT_FALSE(path_in_root(pid, "/usr/lib/libhost.so").ok());
    EXPECT_FALSE(path_in_root(pid, "/usr/lib/missing.so").ok());

    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
}

// A process chrooted below our root maps files by paths that are ours (the
// kernel shows a mapping's path as the reader sees it), not paths inside its
// root: `calls --pid` reaches them through map_files, the very files mapped.
TEST(ProcRoot, FilesOfAProcessChrootedBelowOurRoot) {
    MYSQLTRACE_REQUIRE_ROOT();
    TempDir root("mysqltrace-root");
    const pid_t pid = chrooted_child(root.path());
    ASSERT_GT(pid, 0);
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    auto files = mysqltrace::calls::mapped_files(pid, "");
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    ASSERT_TRUE(files.ok()) << files.error().message;
    const std::string via = "/proc/" + std::to_string(pid) + "/map_files/";
    bool found = false;
    for (const auto &f : *files) {
        EXPECT_EQ(f.open_path.rfind(via, 0), 0u) << f.path << " opened as " << f.open_path;
        found = found || f.path == self;
    }
    EXPECT_TRUE(found) << self << " is not among the child's files";
}

}  // namespace
