// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace doctor` and the command line, run as a user would run them.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "priv/cli_util.h"
#include "priv/priv.h"
#include "temp_dir.h"

namespace {

using mysqltrace::test::run_command;

constexpr uid_t kNobody = 65534;

std::vector<std::string> lines(const std::string &s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) {
        out.push_back(l);
    }
    return out;
}

TEST(Doctor, AllChecksPassAsRoot) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto r = run_command({MYSQLTRACE_BINARY, "doctor"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto l = lines(r.out);
    const std::vector<std::string> checks = {"kernel version",
                                             "kernel BTF",
                                             "privileges",
                                             "bpf() syscall",
                                             "ring buffer map",
                                             "BPF program load",
                                             "uprobe attach + delivery",
                                             "USDT attach + delivery",
                                             "syscall tracepoint",
                                             "tracefs/debugfs"};
    ASSERT_EQ(l.size(), checks.size() + 2) << r.out;
    EXPECT_EQ(l[0].rfind("CHECK", 0), 0u);
    const size_t result_col = l[0].find("RESULT");
    for (size_t i = 0; i < checks.size(); i++) {
        EXPECT_EQ(l[i + 1].rfind(checks[i], 0), 0u) << l[i + 1];
        EXPECT_EQ(l[i + 1].substr(result_col, 4), "OK  ") << l[i + 1];
    }
    EXPECT_NE(
        r.out.find("100/100 events through per-CPU rings, 0 drops, probe on `push rbp` (emulated)"),
        std::string::npos);
    EXPECT_EQ(l.back(), "All 10 checks passed: this machine can run mysqltrace.");
}

TEST(Doctor, NamesTheMissingPrivilegeWhenUnprivileged) {
    MYSQLTRACE_REQUIRE_ROOT();
    // The build tree may not be reachable for `nobody`: run a copy.
    mysqltrace::test::TempDir dir("mysqltrace-doctor");
    ASSERT_FALSE(dir.path().empty());
    std::string copy = dir.file("mysqltrace");
    std::filesystem::copy_file(MYSQLTRACE_BINARY, copy);
    chmod(dir.path().c_str(), 0755);
    chmod(copy.c_str(), 0755);
    auto r = run_command({copy, "doctor"}, kNobody);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("privileges                FAIL    uid 65534 lacks CAP_BPF, CAP_PERFMON"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("fix: run as root (sudo mysqltrace ...) or grant CAP_BPF"),
              std::string::npos);
    EXPECT_NE(r.out.find("BPF program load          FAIL"), std::string::npos);
    EXPECT_NE(r.out.find("checks failed."), std::string::npos);
}

TEST(Cli, VersionHelpAndUsageErrors) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto v = run_command({MYSQLTRACE_BINARY, "--version"});
    EXPECT_EQ(v.exit_code, 0);
    EXPECT_EQ(v.out.rfind("mysqltrace ", 0), 0u);
    auto h = run_command({MYSQLTRACE_BINARY, "--help"});
    EXPECT_EQ(h.exit_code, 0);
    EXPECT_NE(h.out.find("doctor"), std::string::npos);
    EXPECT_NE(h.out.find("server"), std::string::npos);
    auto bad = run_command({MYSQLTRACE_BINARY, "doctor", "--no-such-flag"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("--no-such-flag"), std::string::npos) << bad.err;
    auto none = run_command({MYSQLTRACE_BINARY});
    EXPECT_EQ(none.exit_code, 2);
    auto gone = run_command({MYSQLTRACE_BINARY, "client", "--pid", "999999999"});
    EXPECT_EQ(gone.exit_code, 1);
    EXPECT_EQ(gone.err, "mysqltrace: no such process: 999999999\n");
    auto nopid = run_command({MYSQLTRACE_BINARY, "server"});
    EXPECT_EQ(nopid.exit_code, 2);
    EXPECT_NE(nopid.err.find("--pid is required"), std::string::npos) << nopid.err;
}

// A shim whose probes have another shape (an older version's, given with
// --shim) is refused before the command starts, not traced wrongly.
TEST(Cli, RunRefusesAShimOfAnotherVersion) {
    MYSQLTRACE_REQUIRE_ROOT();
    const std::string old = MYSQLTRACE_TESTPROGS_DIR "/libshim_old_probes.so";
    const std::string marker =
        std::filesystem::temp_directory_path() / ("mt-old-shim-" + std::to_string(getpid()));
    auto r = run_command(
        {MYSQLTRACE_BINARY, "run", "--shim", old, "--", "/bin/sh", "-c", "touch " + marker});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err.rfind("mysqltrace: " + old +
                              " is a shim of another mysqltrace version: its "
                              "probe mysqltrace:io takes 10 arguments (",
                          0),
              0u)
        << r.err;
    EXPECT_FALSE(std::filesystem::exists(marker));
    std::filesystem::remove(marker);
}

}  // namespace
