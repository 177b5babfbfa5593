// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server --stages off|sampled` takes one probe per statement
// (log_slow_statement) by default: the exact statement sequence of a
// connection through that path on every flavour the harness starts: the
// parts of a multi-statement query with their own text, PREPARE / EXECUTE,
// a failing statement's errno, SQLSTATE and message, rows, schema,
// connection id, and a real Lock_time for a statement that waited for a
// table lock; --db / --thread-id decided in the probe; and the account
// after a COM_CHANGE_USER, which this path does not see.
#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/priv.h"
#include "priv/server_session.h"

namespace {

using mysqltrace::test::BackgroundCommand;
using mysqltrace::test::connect_to;
using mysqltrace::test::MariadbServer;
using mysqltrace::test::read_json_lines;
using mysqltrace::test::run_query;
using mysqltrace::test::server_tracer_argv;
using mysqltrace::test::ServerFlavour;
using mysqltrace::test::ServerOptions;
using mysqltrace::test::wait_gone;
using nlohmann::json;

class ServerOnePass : public ::testing::TestWithParam<ServerFlavour> {
  protected:
    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        ServerOptions opts;
        opts.flavour = GetParam();
        auto s = MariadbServer::start(opts);
        ASSERT_TRUE(s.ok()) << s.error().message;
        server_ = std::move(s).value();
        ASSERT_TRUE(server_
                        ->query("CREATE DATABASE one_db; CREATE DATABASE other_db; CREATE TABLE "
                                "one_db.t (a INT PRIMARY KEY, b VARCHAR(10)); INSERT INTO "
                                "one_db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
                        .ok());
    }

    // The tracer with `extra` options, writing json to a file; started once
    // it says which path it takes.
    std::unique_ptr<BackgroundCommand> trace(const std::vector<std::string> &extra) {
        std::vector<std::string> args = {"--format", "json", "--output", out_};
        args.insert(args.end(), extra.begin(), extra.end());
        auto t = std::make_unique<BackgroundCommand>(server_tracer_argv(*server_, args));
        EXPECT_TRUE(t->wait_for_stderr("Ctrl-C to stop")) << t->stop(SIGKILL).err;
        return t;
    }

    // The statements of connection `id` in the trace.
    std::vector<json> statements_of(unsigned long id) {
        std::vector<json> out;
        for (auto &e : read_json_lines(out_)) {
            if (e["kind"] == "statement" && e["THREAD_ID"] == id) {
                out.push_back(std::move(e));
            }
        }
        return out;
    }

    std::unique_ptr<MariadbServer> server_;
    std::string out_ = "";
};

TEST_P(ServerOnePass, StatementSequence) {
    out_ = server_->root_dir() + "/onepass.json";
    for (const char *stages : {"off", "sampled"}) {
        SCOPED_TRACE(stages);
        auto tracer = trace({"--stages", stages});
        MYSQL *m = connect_to(*server_, CLIENT_MULTI_STATEMENTS, "one_db");
        MYSQL *holder = connect_to(*server_, 0, "one_db");
        const unsigned long id = mysql_thread_id(m);
        ASSERT_EQ(run_query(m, "select b from t where a <= 2"), 0u);
        ASSERT_EQ(run_query(m, "select 1;  select count(*) from t;delete from t where a = 3"), 0u);
        ASSERT_EQ(run_query(m, "prepare s from 'select b from t where a = ?'"), 0u);
        ASSERT_EQ(run_query(m, "set @x = 1"), 0u);
        ASSERT_EQ(run_query(m, "execute s using @x"), 0u);
        ASSERT_EQ(run_query(m, "execute s using @x"), 0u);
        ASSERT_EQ(run_query(m, "deallocate prepare s"), 0u);
        EXPECT_EQ(run_query(m, "select * from no_such_table"), 1146u);
        ASSERT_EQ(run_query(m, "insert into t values (3, 'c')"), 0u);
        // A statement that waits for a table lock another connection holds.
        ASSERT_EQ(run_query(holder, "lock tables t write"), 0u);
        std::thread blocked([&] { EXPECT_EQ(run_query(m, "select count(*) from t"), 0u); });
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ASSERT_EQ(run_query(holder, "unlock tables"), 0u);
        blocked.join();
        // Commands other than COM_QUERY: which reach log_slow_statement
        // differs by flavour (docs/server.md).
        ASSERT_EQ(mysql_ping(m), 0);
        ASSERT_EQ(mysql_select_db(m, "one_db"), 0);
        mysqltrace::test::run_prepared(m, "select b from t where a = ?", 1);
        mysql_close(holder);
        mysql_close(m);
        wait_gone(*server_, id);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        auto r = tracer->stop(SIGINT);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.err.find("one probe per statement (log_slow_statement)"), std::string::npos)
            << r.err;
        EXPECT_NE(r.err.find(" 0 records dropped; interrupted\n"), std::string::npos) << r.err;

        auto all = statements_of(id);
        std::vector<std::string> texts, others;
        for (const auto &s : all) {
            if (s["command"] == "COM_QUERY") {
                texts.push_back(s["SQL_TEXT"].get<std::string>());
            } else {
                others.push_back(s["command"].get<std::string>());
            }
        }
        // An SQL EXECUTE has the text the server's slow log gives it: by
        // log_slow_statement the THD holds the prepared statement's, with
        // its parameters (MySQL) or its markers (MariaDB), no longer the
        // EXECUTE's (the entry and end probes of the other path see that).
        const std::string executed = GetParam() == ServerFlavour::mysql
                                         ? "select b from t where a = 1"
                                         : "select b from t where a = ?";
        const std::vector<std::string> want = {"select b from t where a <= 2",
                                               "select 1",
                                               "select count(*) from t",
                                               "delete from t where a = 3",
                                               "prepare s from 'select b from t where a = ?'",
                                               "set @x = 1",
                                               executed,
                                               executed,
                                               "deallocate prepare s",
                                               "select * from no_such_table",
                                               "insert into t values (3, 'c')",
                                               "select count(*) from t"};
        EXPECT_EQ(texts, want);
        // MySQL calls log_slow_statement for every command of the session;
        // MariaDB 10.11 for statements only: COM_QUERY and the binary
        // protocol's execute, not COM_PING, COM_INIT_DB, COM_STMT_PREPARE,
        // COM_STMT_CLOSE or COM_QUIT (--every-command traces those).
        const std::vector<std::string> want_others =
            GetParam() == ServerFlavour::mysql
                ? std::vector<std::string>{"COM_PING",         "COM_INIT_DB",    "COM_STMT_PREPARE",
                                           "COM_STMT_EXECUTE", "COM_STMT_CLOSE", "COM_QUIT"}
                : std::vector<std::string>{"COM_STMT_EXECUTE"};
        EXPECT_EQ(others, want_others);
        for (const auto &s : all) {
            if (s["command"] == "COM_STMT_EXECUTE") {
                // The binary protocol's execute: the statement prepared, with
                // its `?`, on both (as performance_schema shows it).
                EXPECT_EQ(s["SQL_TEXT"], "select b from t where a = ?") << s.dump();
                EXPECT_EQ(s["ROWS_SENT"], 1u) << s.dump();
            } else if (s["command"] == "COM_INIT_DB") {
                EXPECT_EQ(s["SQL_TEXT"], "one_db") << s.dump();
            }
        }
        std::vector<json> q;
        for (const auto &s : all) {
            if (s["command"] == "COM_QUERY") {
                q.push_back(s);
            }
        }
        ASSERT_EQ(q.size(), want.size());
        for (const auto &s : q) {
            EXPECT_EQ(s["CURRENT_SCHEMA"], "one_db") << s.dump();
            EXPECT_LE(s["TIMER_START"].get<uint64_t>(), s["TIMER_END"].get<uint64_t>());
            EXPECT_LT(s["TIMER_WAIT"].get<uint64_t>(), 60'000'000'000'000ull) << s.dump();
        }
        EXPECT_EQ(q[0]["ROWS_SENT"], 2u);
        EXPECT_EQ(q[2]["ROWS_SENT"], 1u);
        EXPECT_EQ(q[3]["ROWS_AFFECTED"], 1u);
        EXPECT_EQ(q[6]["ROWS_SENT"], 1u);
        EXPECT_EQ(q[7]["ROWS_SENT"], 1u);
        EXPECT_EQ(q[9]["MYSQL_ERRNO"], 1146u);
        EXPECT_EQ(q[9]["RETURNED_SQLSTATE"], "42S02");
        EXPECT_EQ(q[9]["MESSAGE_TEXT"], "Table 'one_db.no_such_table' doesn't exist");
        EXPECT_EQ(q[10]["ROWS_AFFECTED"], 1u);
        for (size_t i = 0; i < q.size(); i++) {
            if (i != 9) {
                EXPECT_EQ(q[i]["MYSQL_ERRNO"], 0u) << q[i].dump();
            }
        }
        // The select that waited ~300 ms for the table lock: its Lock_time
        // says so, and is part of its time.
        const auto lock = q[11]["LOCK_TIME"].get<uint64_t>();
        EXPECT_GT(lock, 0u) << q[11].dump();
        EXPECT_LE(lock, q[11]["TIMER_WAIT"].get<uint64_t>()) << q[11].dump();
        // Restore the row for the next round.
        ASSERT_TRUE(server_->query("DELETE FROM one_db.t WHERE a > 3").ok());
    }
}

// --db, --thread-id and --min-duration are decided in the probe: only the
// chosen statements come out, with their schema.
TEST_P(ServerOnePass, FiltersInTheProbe) {
    out_ = server_->root_dir() + "/filtered.json";
    MYSQL *a = connect_to(*server_, 0, "one_db");
    MYSQL *b = connect_to(*server_, 0, "other_db");
    const unsigned long id_a = mysql_thread_id(a), id_b = mysql_thread_id(b);
    auto tracer = trace({"--stages", "off", "--db", "other_db"});
    ASSERT_EQ(run_query(a, "select 1"), 0u);
    ASSERT_EQ(run_query(b, "select 2"), 0u);
    ASSERT_EQ(run_query(a, "use other_db"), 0u);
    ASSERT_EQ(run_query(a, "select 3"), 0u);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto r = tracer->stop(SIGINT);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> got;
    for (const auto &s : read_json_lines(out_)) {
        if (s["kind"] == "statement") {
            got.push_back(std::to_string(s["THREAD_ID"].get<uint64_t>() == id_a ? 1 : 2) + ":" +
                          s["SQL_TEXT"].get<std::string>());
        }
    }
    // `use other_db` ends in other_db: the server's own slow log puts it there too.
    // Each connection's statements keep their order; across connections the
    // order is the probe's, and the server sends the OK before log_slow_statement,
    // so connection 1's next statement may reach its probe before connection
    // 2's statement does.
    std::stable_sort(got.begin(), got.end(),
                     [](const std::string &x, const std::string &y) { return x[0] > y[0]; });
    EXPECT_EQ(got, (std::vector<std::string>{"2:select 2", "1:use other_db", "1:select 3"}));
    // Dropped in the probe: nothing reached userspace's own filter.
    EXPECT_NE(r.err.find("mysqltrace: 3 statements, "), std::string::npos) << r.err;

    tracer =
        trace({"--stages", "off", "--thread-id", std::to_string(id_b), "--min-duration", "100"});
    ASSERT_EQ(run_query(a, "select sleep(0.2)"), 0u);
    ASSERT_EQ(run_query(b, "select 4"), 0u);
    ASSERT_EQ(run_query(b, "select sleep(0.2)"), 0u);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    r = tracer->stop(SIGINT);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    got.clear();
    for (const auto &s : read_json_lines(out_)) {
        if (s["kind"] == "statement") {
            got.push_back(std::to_string(s["THREAD_ID"].get<uint64_t>() == id_b ? 2 : 1) + ":" +
                          s["SQL_TEXT"].get<std::string>());
        }
    }
    EXPECT_EQ(got, (std::vector<std::string>{"2:select sleep(0.2)"}));
    EXPECT_NE(r.err.find("mysqltrace: 1 statements, "), std::string::npos) << r.err;

    // --user: the account's user name, read in the probe.
    ASSERT_TRUE(server_
                    ->query("CREATE USER 'other'@'localhost' IDENTIFIED BY 'pw0'; GRANT ALL ON "
                            "*.* TO 'other'@'localhost'")
                    .ok());
    MYSQL *c = connect_to(*server_, 0, "one_db", "other", "pw0");
    tracer = trace({"--stages", "off", "--user", "other"});
    ASSERT_EQ(run_query(a, "select 5"), 0u);
    ASSERT_EQ(run_query(c, "select 6"), 0u);
    ASSERT_EQ(run_query(b, "select 7"), 0u);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    r = tracer->stop(SIGINT);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    got.clear();
    for (const auto &s : read_json_lines(out_)) {
        if (s["kind"] == "statement") {
            got.push_back(s["SQL_TEXT"].get<std::string>());
        }
    }
    EXPECT_EQ(got, (std::vector<std::string>{"select 6"}));
    EXPECT_NE(r.err.find("mysqltrace: 1 statements, "), std::string::npos) << r.err;

    // COM_CHANGE_USER: the statements after it are the new account's, though
    // this path sees no command begin (the slow log's User@Host says whose).
    const std::string log = server_->root_dir() + "/change_user.log";
    auto slow = std::make_unique<BackgroundCommand>(
        server_tracer_argv(*server_, {"--format", "slowlog", "--output", log}));
    ASSERT_TRUE(slow->wait_for_stderr("Ctrl-C to stop")) << slow->stop(SIGKILL).err;
    ASSERT_EQ(run_query(c, "select 8"), 0u);
    ASSERT_EQ(mysql_change_user(c, server_->user().c_str(), server_->password().c_str(), "one_db"),
              0)
        << mysql_error(c);
    ASSERT_EQ(run_query(c, "select 9"), 0u);
    ASSERT_EQ(mysql_change_user(c, "other", "pw0", "one_db"), 0) << mysql_error(c);
    ASSERT_EQ(run_query(c, "select 10"), 0u);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    r = slow->stop(SIGINT);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    got.clear();
    std::string who;
    std::istringstream in(mysqltrace::test::read_file(log));
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("# User@Host: ", 0) == 0) {
            who = line.substr(13, line.find('[') - 13);
        } else if (line.rfind("select ", 0) == 0) {
            got.push_back(who + ":" + line);
        }
    }
    EXPECT_EQ(got, (std::vector<std::string>{"other:select 8;", server_->user() + ":select 9;",
                                             "other:select 10;"}));
    mysql_close(a);
    mysql_close(b);
    mysql_close(c);
}

INSTANTIATE_TEST_SUITE_P(Flavours, ServerOnePass,
                         ::testing::ValuesIn(mysqltrace::test::all_flavours()),
                         [](const testing::TestParamInfo<ServerFlavour> &info) {
                             return mysqltrace::test::flavour_name(info.param);
                         });

}  // namespace
