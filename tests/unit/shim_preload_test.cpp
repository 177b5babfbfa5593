// SPDX-License-Identifier: GPL-2.0-only
// libmysqltrace-shim.so preloaded into programs that have nothing to do with
// MySQL, or do not reach a server: everything they print, their exit status
// and their errno values must be exactly what they are without it.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "temp_dir.h"

extern char **environ;

namespace {

namespace fs = std::filesystem;

const std::string kShim = MYSQLTRACE_SHIM_PATH;
const std::string kProgs = MYSQLTRACE_TESTPROGS_DIR;

struct Outcome {
    std::string out, err;
    int status = -1;  // as waitpid() reports it
};

std::string slurp(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The LD_PRELOAD this test was started with, if any: kept behind the shim.
std::optional<std::string> inherited_preload() {
    const char *v = std::getenv("LD_PRELOAD");
    if (v == nullptr || *v == '\0') {
        return std::nullopt;
    }
    return std::string(v);
}

std::string with_inherited(const std::string &preload) {
    auto old = inherited_preload();
    return old ? preload + ":" + *old : preload;
}

// Runs argv with LD_PRELOAD set to `preload` (nullopt: as inherited).
Outcome run(const std::vector<std::string> &argv, const std::optional<std::string> &preload) {
    Outcome o;
    mysqltrace::test::TempDir dir("shim_preload_test");
    if (dir.path().empty()) {
        return o;
    }
    const std::string out = dir.file("out"), err = dir.file("err");

    std::vector<std::string> env;
    for (char **e = environ; *e != nullptr; e++) {
        if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) {
            env.emplace_back(*e);
        }
    }
    if (preload) {
        env.push_back("LD_PRELOAD=" + *preload);
    } else if (auto old = inherited_preload()) {
        env.push_back("LD_PRELOAD=" + *old);
    }
    std::vector<char *> envp, args;
    for (auto &s : env) {
        envp.push_back(s.data());
    }
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto &s : argv_copy) {
        args.push_back(s.data());
    }
    args.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    EXPECT_EQ(rc, 0) << argv[0] << ": " << std::strerror(rc);
    if (rc == 0) {
        EXPECT_EQ(waitpid(pid, &o.status, 0), pid);
        o.out = slurp(out);
        o.err = slurp(err);
    }
    return o;
}

void expect_same(const Outcome &plain, const Outcome &shimmed, const std::string &what) {
    EXPECT_EQ(plain.status, shimmed.status) << what;
    EXPECT_EQ(plain.out, shimmed.out) << what;
    EXPECT_EQ(plain.err, shimmed.err) << what;
}

TEST(ShimPreload, IsLoadedAndSilent) {
    auto maps = run({"/bin/cat", "/proc/self/maps"}, with_inherited(kShim));
    EXPECT_EQ(maps.status, 0);
    EXPECT_NE(maps.out.find(fs::path(kShim).filename().string()), std::string::npos);
    // The dynamic loader reports a preload it cannot load on stderr.
    EXPECT_EQ(maps.err, "");
}

TEST(ShimPreload, PlainProgramUnchanged) {
    std::vector<std::string> prog = {kProgs + "/shim_plain"};
    auto plain = run(prog, std::nullopt);
    ASSERT_EQ(plain.status, 0) << plain.out << plain.err;
    EXPECT_NE(plain.out.find("== end: 0 unexpected"), std::string::npos);
    // Several runs: the threads and the fork race differently each time.
    for (int i = 0; i < 3; i++) {
        expect_same(plain, run(prog, with_inherited(kShim)), "shim_plain with the shim");
    }
}

TEST(ShimPreload, ShimLoadedTwice) {
    std::vector<std::string> prog = {kProgs + "/shim_plain"};
    auto plain = run(prog, std::nullopt);
    // The same path twice is loaded once; a copy elsewhere is a second
    // object whose interposers then chain to the first's.
    mysqltrace::test::TempDir dir("shim_copy");
    ASSERT_FALSE(dir.path().empty());
    fs::path copy = dir.file("libmysqltrace-shim-copy.so");
    fs::copy_file(kShim, copy);
    expect_same(plain, run(prog, with_inherited(kShim + ":" + kShim)), "the same shim twice");
    expect_same(plain, run(prog, with_inherited(kShim + ":" + copy.string())), "two copies");
    auto maps = run({"/bin/cat", "/proc/self/maps"}, with_inherited(kShim + ":" + copy.string()));
    EXPECT_NE(maps.out.find(copy.string()), std::string::npos);
}

TEST(ShimPreload, AlongsideAnotherPreload) {
    std::vector<std::string> prog = {kProgs + "/shim_plain"};
    auto plain = run(prog, std::nullopt);
    expect_same(plain, run(prog, with_inherited("libz.so.1:" + kShim)), "after another library");
    expect_same(plain, run(prog, with_inherited(kShim + ":libz.so.1")), "before another library");
}

TEST(ShimPreload, LibrariesLoadedLocallyStillReachTheirFunctions) {
    std::vector<std::string> prog = {kProgs + "/shim_dlopen", kProgs + "/libshim_dlopen_lib.so"};
    auto plain = run(prog, std::nullopt);
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_NE(plain.out.find("mysql_real_connect: failed, error 2002"), std::string::npos)
        << plain.out;
    EXPECT_NE(plain.out.find("SSL_read: -1, SSL_get_error 2"), std::string::npos) << plain.out;
    expect_same(plain, run(prog, with_inherited(kShim)), "shim_dlopen with the shim");
}

TEST(ShimPreload, ClientProgramsUnchanged) {
    int ran = 0;
    for (std::vector<std::string> prog :
         {std::vector<std::string>{"/usr/bin/mariadb", "--version"},
          std::vector<std::string>{"/usr/bin/sysbench", "--version"}}) {
        if (access(prog[0].c_str(), X_OK) != 0) {
            continue;
        }
        ran++;
        auto plain = run(prog, std::nullopt);
        EXPECT_EQ(plain.status, 0) << prog[0];
        EXPECT_FALSE(plain.out.empty()) << prog[0];
        expect_same(plain, run(prog, with_inherited(kShim)), prog[0]);
    }
    if (ran == 0) {
        GTEST_SKIP() << "neither mariadb nor sysbench is installed";
    }
}

}  // namespace
