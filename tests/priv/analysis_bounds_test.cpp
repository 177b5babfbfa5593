// SPDX-License-Identifier: GPL-2.0-only
// A server binary over an analysis limit (elf/analysis_budget.h), on both
// flavours: `mysqltrace server` and `calls` refuse it naming the limit,
// before anything is attached, and the server is untouched. Under the default limits both
// pass (doctor --pid in server_trace_lifecycle_test.cpp, and every server test).
#include <string>

#include <gtest/gtest.h>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/priv.h"

namespace {

using mysqltrace::test::MariadbServer;
using mysqltrace::test::ServerFlavour;
using mysqltrace::test::ServerOptions;

class AnalysisBounds : public ::testing::TestWithParam<ServerFlavour> {};

TEST_P(AnalysisBounds, ServerRefusesABinaryOverALimit) {
    MYSQLTRACE_REQUIRE_ROOT();
    ServerOptions opts;
    opts.flavour = GetParam();
    auto s = MariadbServer::start(opts);
    ASSERT_TRUE(s.ok()) << s.error().message;
    const std::string pid = std::to_string((*s)->pid());
    // Both analyses decode a few thousand instructions at least (64,508
    // and 3,249 under the defaults).
    auto r = mysqltrace::test::run_command({"/usr/bin/env",
                                            "MYSQLTRACE_ANALYSIS_LIMITS=instructions=1000",
                                            MYSQLTRACE_BINARY, "server", "--pid", pid});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(r.err, "mysqltrace: /proc/" + pid +
                         "/exe: analysis stopped: more than 1000 instructions disassembled "
                         "(analysis limit instructions)\n");
    EXPECT_EQ(r.out, "");
    // The same under doctor --pid, which reports rather than refuses.
    auto d = mysqltrace::test::run_command({"/usr/bin/env",
                                            "MYSQLTRACE_ANALYSIS_LIMITS=instructions=1000",
                                            MYSQLTRACE_BINARY, "doctor", "--pid", pid});
    EXPECT_NE(d.out.find("mysqltrace server refuses it: /proc/" + pid +
                         "/exe: analysis stopped: more than 1000 instructions disassembled "
                         "(analysis limit instructions)\n"),
              std::string::npos)
        << d.out << d.err;
    // `calls` refuses a file it searches that is over a limit (the server
    // binary is mapped first): MariaDB's reached through the server's root,
    // MySQL's (chrooted below our root, in its own mount namespace: its
    // mappings carry our paths) through its link in map_files.
    auto c = mysqltrace::test::run_command(
        {"/usr/bin/env", "MYSQLTRACE_ANALYSIS_LIMITS=symbols=100", MYSQLTRACE_BINARY, "calls",
         "--pid", pid, "--match", "dispatch_command"});
    EXPECT_EQ(c.exit_code, 1) << c.out << c.err;
    const std::string over =
        ": analysis stopped: more than 100 symbol table entries (analysis limit symbols)\n";
    if (GetParam() == ServerFlavour::mariadb) {
        EXPECT_EQ(c.err, "mysqltrace: /proc/" + pid + "/root/usr/sbin/mariadbd" + over);
    } else {
        const std::string via = "mysqltrace: /proc/" + pid + "/map_files/";
        EXPECT_EQ(c.err.substr(0, via.size()), via) << c.err;
        EXPECT_TRUE(c.err.ends_with(over)) << c.err;
    }
    auto rows = (*s)->query("SELECT 1");
    ASSERT_TRUE(rows.ok()) << rows.error().message;
    EXPECT_EQ(*rows, (mysqltrace::test::Rows{{"1"}}));
}

INSTANTIATE_TEST_SUITE_P(Flavours, AnalysisBounds,
                         testing::ValuesIn(mysqltrace::test::all_flavours()),
                         [](const testing::TestParamInfo<ServerFlavour> &info) {
                             return mysqltrace::test::flavour_name(info.param);
                         });

}  // namespace
