// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server`'s MySQL 8.0/8.4 symbol profile, against a STAND-IN
// (tests/testprogs/mysql8_abi_standin.cpp): a small program that defines
// MySQL 8's entry points by their mangled names and argument layouts. No
// Oracle MySQL binary is available here, so this checks the profile's
// symbol detection, argument decoding and stage probe, not a real server.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "priv/cli_util.h"
#include "priv/client_session.h"
#include "priv/priv.h"
#include "temp_dir.h"

namespace {

using mysqltrace::test::BackgroundCommand;
using mysqltrace::test::GatedClient;
using mysqltrace::test::read_json_lines;
using mysqltrace::test::testprog;
using nlohmann::json;

class ServerMysql8Standin : public ::testing::Test {
  protected:
    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        standin_ =
            std::make_unique<GatedClient>(std::vector<std::string>{testprog("mysql8_abi_standin")});
        standin_->open_gate();
        ASSERT_EQ(standin_->read_line(), "ready");
    }
    void TearDown() override { standin_.reset(); }

    std::unique_ptr<BackgroundCommand> start_tracer(std::vector<std::string> extra) {
        std::vector<std::string> argv = {
            MYSQLTRACE_BINARY, "server", "--pid",    std::to_string(standin_->pid()),
            "--format",        "json",   "--output", out_path_};
        argv.insert(argv.end(), extra.begin(), extra.end());
        auto t = std::make_unique<BackgroundCommand>(argv);
        EXPECT_TRUE(t->wait_for_stderr("Ctrl-C to stop")) << t->stop(SIGKILL).err;
        return t;
    }

    // Runs one stand-in command and waits for it to be done.
    void run(const std::string &line) { EXPECT_EQ(standin_->command(line), "done " + line); }

    std::vector<json> rows(const std::string &kind) {
        std::vector<json> evs;
        for (auto &j : read_json_lines(out_path_)) {
            if (j["kind"] == kind) {
                evs.push_back(std::move(j));
            }
        }
        return evs;
    }

    mysqltrace::test::TempDir dir_{"mysqltrace-m8"};
    std::string out_path_ = dir_.file("trace.json");
    std::unique_ptr<GatedClient> standin_;
};

TEST_F(ServerMysql8Standin, StatementsFromMysql8Arguments) {
    auto tracer = start_tracer({"--stages", "off"});
    run("query 7 select 1");
    run("initdb 7 mydb");
    run("query 9 select 2;  select 3, 4;select 5");
    run("ping 7");
    run("prepare 9 select ? + 1");
    run("query 7 insert into t values (1), (2)");
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("no end-of-command stage site in this build: a return probe"),
              std::string::npos)
        << r.err;
    // What the stand-in's analysis lacks is named, column by column.
    EXPECT_NE(r.err.find("statements are traced without:\nmysqltrace:   CURRENT_SCHEMA: needs THD "
                         "current schema: reported empty\n"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("ROWS_AFFECTED: needs DA affected rows, DA OK status values"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; interrupted\n"), std::string::npos) << r.err;

    struct Want {
        uint64_t thread_id;
        std::string event_name;
        json sql;
        uint64_t event_id;
    };
    const json null;
    const std::vector<Want> want = {
        {7, "statement/sql/select", "select 1", 1},
        {7, "statement/com/Init DB", "mydb", 2},
        {9, "statement/sql/select", "select 2", 1},
        {9, "statement/sql/select", "select 3, 4", 2},
        {9, "statement/sql/select", "select 5", 3},
        {7, "statement/com/Ping", null, 3},
        {9, "statement/com/Prepare", "select ? + 1", 4},
        {7, "statement/sql/insert", "insert into t values (1), (2)", 4},
    };
    auto evs = rows("statement");
    ASSERT_EQ(evs.size(), want.size()) << r.err;
    uint64_t last_end = 0;
    for (size_t i = 0; i < want.size(); i++) {
        const auto &e = evs[i];
        SCOPED_TRACE("statement " + std::to_string(i) + ": " + e.dump());
        EXPECT_EQ(e["THREAD_ID"], want[i].thread_id);
        EXPECT_EQ(e["EVENT_NAME"], want[i].event_name);
        EXPECT_EQ(e["SQL_TEXT"], want[i].sql);
        EXPECT_EQ(e["EVENT_ID"], want[i].event_id);
        EXPECT_EQ(e["pid"], standin_->pid());
        // No Diagnostics_area accessors in the stand-in: nothing invented.
        EXPECT_EQ(e["MYSQL_ERRNO"], 0);
        EXPECT_TRUE(e["CURRENT_SCHEMA"].is_null());
        EXPECT_FALSE(e.contains("end")) << "each one's end was seen";
        // In the order they ran, one after the other.
        EXPECT_GE(e["TIMER_START"].get<uint64_t>(), last_end);
        EXPECT_GE(e["TIMER_END"].get<uint64_t>(), e["TIMER_START"].get<uint64_t>());
        last_end = e["TIMER_END"];
    }
}

TEST_F(ServerMysql8Standin, ExactStagesFromTheOutOfLineEnterStage) {
    auto tracer = start_tracer({"--stages", "exact"});
    run("query 7 select 1; select 2");
    run("ping 7");
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("statements and exact stages"), std::string::npos) << r.err;
    auto statements = rows("statement");
    ASSERT_EQ(statements.size(), 3u) << r.err;
    EXPECT_EQ(statements[0]["SQL_TEXT"], "select 1");
    EXPECT_EQ(statements[1]["SQL_TEXT"], "select 2");
    // Each stage is THD::enter_stage's argument; the source is its caller's
    // file and line (the stand-in's own, as __FILE__ spells it).
    std::vector<std::string> seq;
    for (const auto &s : rows("stage")) {
        std::string source = s["SOURCE"].is_null() ? "null" : s["SOURCE"].get<std::string>();
        const auto colon = source.rfind(':');
        const auto slash = source.rfind('/', colon);
        ASSERT_NE(colon, std::string::npos) << s.dump();
        EXPECT_EQ(source.substr(slash + 1, colon - slash - 1), "mysql8_abi_standin.cpp");
        EXPECT_GT(std::stoi(source.substr(colon + 1)), 0);
        seq.push_back(std::to_string(s["NESTING_EVENT_ID"].get<uint64_t>()) + " " +
                      s["EVENT_NAME"].get<std::string>());
    }
    // The "starting" the stand-in enters before its second statement opens
    // that statement, as on MariaDB.
    const std::vector<std::string> want = {
        "1 stage/sql/starting",    "1 stage/sql/executing", "1 stage/sql/query end",
        "5 stage/sql/starting",    "5 stage/sql/executing", "5 stage/sql/query end",
        "5 stage/sql/cleaning up", "10 stage/sql/starting", "10 stage/sql/cleaning up",
    };
    EXPECT_EQ(seq, want) << r.err;
}

}  // namespace
