// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server` on Oracle MySQL 9.7 (the harness's sid chroot): the
// statements of one connection, checked against the server's own
// performance_schema.events_statements_history_long row for row, and the
// same workload with performance_schema OFF, the case the tracer is for.
// `doctor --pid` on both flavours.
#include <unistd.h>

#include <chrono>
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
using mysqltrace::test::run_prepared;
using mysqltrace::test::run_query;
using mysqltrace::test::server_tracer_argv;
using mysqltrace::test::ServerFlavour;
using mysqltrace::test::ServerOptions;
using mysqltrace::test::wait_gone;
using nlohmann::json;

// One statement as performance_schema shows it; "NULL" for SQL NULL.
struct Row {
    std::string event_name, sql, schema;
    unsigned err = 0;
    std::string sqlstate, message;
    uint64_t rows_sent = 0, rows_examined = 0, rows_affected = 0;
};

// What the tracer reports that performance_schema does not, by design:
// - statement/com/Init DB: SQL_TEXT is the schema given (P_S: NULL), and
//   CURRENT_SCHEMA the one the command ends in (P_S: the one it began in);
// - statement/com/Execute: SQL_TEXT is the statement with its parameters
//   (what THD::query() and the slow log show; P_S shows the `?` text);
// - statement/com/Close stmt: no SQL_TEXT (P_S: the statement's);
// - statement/com/Prepare (binary protocol): no SQL_TEXT on the default
//   one-probe path: by log_slow_statement the THD no longer holds it, and
//   the server's slow log has none either (--every-command gives it);
// - a statement that fails in a multi-statement query: SQL_TEXT is its
//   own (P_S: its own and the rest of the query, never run).
Row as_traced(Row p) {
    if (p.event_name == "statement/com/Init DB") {
        p.sql = "mt_db";
        p.schema = "mt_db";
    } else if (p.event_name == "statement/com/Execute") {
        p.sql = "EXPANDED";  // compared against the expected list instead
    } else if (p.event_name == "statement/com/Close stmt") {
        p.sql = "NULL";
    } else if (p.event_name == "statement/com/Prepare") {
        p.sql = "";
    } else if (p.err != 0 && p.sql.find("; ") != std::string::npos) {
        p.sql = p.sql.substr(0, p.sql.find("; "));
    }
    if (p.err == 0) {
        p.sqlstate = "NULL";  // P_S says 00000 after an OK, nothing after a result set
    }
    return p;
}

std::string str(const json &v) {
    return v.is_null() ? "NULL" : v.is_string() ? v.get<std::string>() : v.dump();
}

class ServerMysql : public ::testing::TestWithParam<bool> {
  protected:
    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        ServerOptions opts;
        opts.flavour = ServerFlavour::mysql;
        if (!GetParam()) {
            opts.extra_args.push_back("--performance-schema=OFF");
        }
        auto s = MariadbServer::start(opts);
        ASSERT_TRUE(s.ok()) << s.error().message;
        server_ = std::move(s).value();
        out_path_ = server_->root_dir() + "/trace.json";
    }

    MYSQL *connect() { return connect_to(*server_, CLIENT_MULTI_STATEMENTS); }

    std::unique_ptr<MariadbServer> server_;
    std::string out_path_;
};

// The workload and what the tracer must report for it, in order.
const std::vector<Row> &expected() {
    static const std::vector<Row> want = {
        {"statement/sql/select", "select 1", "NULL", 0, "NULL", "NULL", 1, 1, 0},
        {"statement/com/Init DB", "mt_db", "mt_db", 0, "NULL", "NULL", 0, 0, 0},
        {"statement/com/Ping", "NULL", "mt_db", 0, "NULL", "NULL", 0, 0, 0},
        {"statement/sql/select", "select 1", "mt_db", 0, "NULL", "NULL", 1, 1, 0},
        {"statement/sql/select", "select 2, 3", "mt_db", 0, "NULL", "NULL", 1, 1, 0},
        {"statement/sql/select", "select * from no_such_table", "mt_db", 1146, "42S02",
         "Table 'mt_db.no_such_table' doesn't exist", 0, 0, 0},
        {"statement/sql/insert", "insert into t values (1, 'a'), (2, 'b'), (3, 'c')", "mt_db", 0,
         "NULL", "NULL", 0, 0, 3},
        {"statement/sql/select", "select a from t where a >= 2", "mt_db", 0, "NULL", "NULL", 2, 3,
         0},
        {"statement/sql/update", "update t set b = 'z' where a = 1", "mt_db", 0, "NULL", "NULL", 0,
         1, 1},
        {"statement/sql/delete", "delete from t where a = 3", "mt_db", 0, "NULL", "NULL", 0, 1, 1},
        {"statement/sql/select", "select nosuch from t", "mt_db", 1054, "42S22",
         "Unknown column 'nosuch' in 'field list'", 0, 0, 0},
        {"statement/com/Prepare", "", "mt_db", 0, "NULL", "NULL", 0, 0, 0},
        {"statement/com/Execute", "select a, b from t where a = 2", "mt_db", 0, "NULL", "NULL", 1,
         1, 0},
        {"statement/com/Close stmt", "NULL", "mt_db", 0, "NULL", "NULL", 0, 0, 0},
        {"statement/com/Prepare", "", "mt_db", 0, "NULL", "NULL", 0, 0, 0},
        {"statement/com/Execute", "insert into t values (7, 'p')", "mt_db", 0, "NULL", "NULL", 0, 0,
         1},
        {"statement/com/Close stmt", "NULL", "mt_db", 0, "NULL", "NULL", 0, 0, 0},
        {"statement/sql/select", "select connection_id()", "mt_db", 0, "NULL", "NULL", 1, 1, 0},
        {"statement/com/Quit", "NULL", "mt_db", 0, "NULL", "NULL", 0, 0, 0},
    };
    return want;
}

TEST_P(ServerMysql, StatementsEqualPerformanceSchema) {
    const bool pfs = GetParam();
    ASSERT_TRUE(server_
                    ->query("CREATE DATABASE mt_db; CREATE TABLE mt_db.t (a INT PRIMARY KEY, b "
                            "VARCHAR(10))")
                    .ok());
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    std::string pfs_thread;
    if (pfs) {
        ASSERT_TRUE(server_
                        ->query("UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' "
                                "WHERE NAME = 'events_statements_history_long'; TRUNCATE "
                                "performance_schema.events_statements_history_long")
                        .ok());
        auto t = server_->query(
            "SELECT THREAD_ID FROM performance_schema.threads WHERE "
            "PROCESSLIST_ID = " +
            std::to_string(id));
        ASSERT_TRUE(t.ok() && t->size() == 1);
        pfs_thread = (*t)[0][0];
    }
    auto tracer = std::make_unique<BackgroundCommand>(server_tracer_argv(
        *server_, {"--stages", "off", "--format", "json", "--output", out_path_}));
    ASSERT_TRUE(tracer->wait_for_stderr("Ctrl-C to stop")) << tracer->stop(SIGKILL).err;

    ASSERT_EQ(run_query(m, "select 1"), 0u);
    ASSERT_EQ(mysql_select_db(m, "mt_db"), 0);
    ASSERT_EQ(mysql_ping(m), 0);
    EXPECT_EQ(run_query(m, "select 1;  select 2, 3;select * from no_such_table; select 4"), 1146u);
    ASSERT_EQ(run_query(m, "insert into t values (1, 'a'), (2, 'b'), (3, 'c')"), 0u);
    ASSERT_EQ(run_query(m, "select a from t where a >= 2"), 0u);
    ASSERT_EQ(run_query(m, "update t set b = 'z' where a = 1"), 0u);
    ASSERT_EQ(run_query(m, "delete from t where a = 3"), 0u);
    EXPECT_EQ(run_query(m, "select nosuch from t"), 1054u);
    run_prepared(m, "select a, b from t where a = ?", 2);
    run_prepared(m, "insert into t values (?, 'p')", 7);
    ASSERT_EQ(run_query(m, "select connection_id()"), 0u);
    mysql_close(m);
    wait_gone(*server_, id);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; interrupted\n"), std::string::npos) << r.err;

    std::vector<json> traced;
    for (auto &j : read_json_lines(out_path_)) {
        if (j["kind"] == "statement" && j["THREAD_ID"] == id) {
            traced.push_back(std::move(j));
        }
    }
    const auto &want = expected();
    ASSERT_EQ(traced.size(), want.size()) << r.err;
    for (size_t i = 0; i < want.size(); i++) {
        const auto &e = traced[i];
        SCOPED_TRACE("statement " + std::to_string(i) + ": " + e.dump());
        EXPECT_EQ(e["EVENT_NAME"], want[i].event_name);
        EXPECT_EQ(str(e["SQL_TEXT"]), want[i].sql);
        EXPECT_EQ(str(e["CURRENT_SCHEMA"]), want[i].schema);
        EXPECT_EQ(e["MYSQL_ERRNO"], want[i].err);
        EXPECT_EQ(e["ERRORS"], want[i].err ? 1 : 0);
        if (want[i].err != 0) {
            EXPECT_EQ(str(e["RETURNED_SQLSTATE"]), want[i].sqlstate);
            EXPECT_EQ(str(e["MESSAGE_TEXT"]), want[i].message);
        }
        EXPECT_EQ(e["ROWS_SENT"], want[i].rows_sent);
        EXPECT_EQ(e["ROWS_EXAMINED"], want[i].rows_examined);
        EXPECT_EQ(e["ROWS_AFFECTED"], want[i].rows_affected);
        EXPECT_EQ(e["pid"], server_->pid());
        EXPECT_LE(e["TIMER_START"].get<uint64_t>(), e["TIMER_END"].get<uint64_t>());
        if (i > 0) {
            EXPECT_GE(e["TIMER_START"].get<uint64_t>(), traced[i - 1]["TIMER_END"].get<uint64_t>());
        }
    }
    if (!pfs) {
        return;
    }
    // The oracle: the server's own rows for the same connection.
    auto rows = server_->query(
        "SELECT EVENT_NAME, IFNULL(SQL_TEXT, 'NULL'), IFNULL(CURRENT_SCHEMA, 'NULL'), "
        "MYSQL_ERRNO, IFNULL(RETURNED_SQLSTATE, 'NULL'), IFNULL(MESSAGE_TEXT, 'NULL'), ROWS_SENT, "
        "ROWS_EXAMINED, ROWS_AFFECTED FROM performance_schema.events_statements_history_long "
        "WHERE THREAD_ID = " +
        pfs_thread + " AND NESTING_EVENT_LEVEL = 0 ORDER BY EVENT_ID");
    ASSERT_TRUE(rows.ok()) << rows.error().message;
    ASSERT_EQ(rows->size(), traced.size());
    for (size_t i = 0; i < rows->size(); i++) {
        const auto &c = (*rows)[i];
        Row p{c[0],
              c[1],
              c[2],
              static_cast<unsigned>(std::stoul(c[3])),
              c[4],
              c[5],
              std::stoull(c[6]),
              std::stoull(c[7]),
              std::stoull(c[8])};
        const Row t = as_traced(p);
        const auto &e = traced[i];
        SCOPED_TRACE("performance_schema row " + std::to_string(i) + ": " + c[0] + " " + c[1]);
        EXPECT_EQ(e["EVENT_NAME"], t.event_name);
        if (t.sql != "EXPANDED") {
            EXPECT_EQ(str(e["SQL_TEXT"]), t.sql);
        }
        EXPECT_EQ(str(e["CURRENT_SCHEMA"]), t.schema);
        EXPECT_EQ(e["MYSQL_ERRNO"], t.err);
        if (t.err != 0) {
            EXPECT_EQ(str(e["RETURNED_SQLSTATE"]), t.sqlstate);
            EXPECT_EQ(str(e["MESSAGE_TEXT"]), t.message);
        }
        EXPECT_EQ(e["ROWS_SENT"], t.rows_sent);
        EXPECT_EQ(e["ROWS_EXAMINED"], t.rows_examined);
        EXPECT_EQ(e["ROWS_AFFECTED"], t.rows_affected);
    }
}

INSTANTIATE_TEST_SUITE_P(PerformanceSchema, ServerMysql, testing::Bool(),
                         [](const testing::TestParamInfo<bool> &info) {
                             return info.param ? std::string("pfs_on") : std::string("pfs_off");
                         });

// doctor --pid: flavour, version and hooks of a running server, and its modes.
class DoctorPid : public ::testing::TestWithParam<ServerFlavour> {};

TEST_P(DoctorPid, NamesFlavourVersionHooksAndModes) {
    MYSQLTRACE_REQUIRE_ROOT();
    ServerOptions opts;
    opts.flavour = GetParam();
    auto s = MariadbServer::start(opts);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto r = mysqltrace::test::run_command(
        {MYSQLTRACE_BINARY, "doctor", "--pid", std::to_string((*s)->pid())});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const bool mysql = GetParam() == ServerFlavour::mysql;
    // The version as the server reports it (SELECT VERSION()).
    EXPECT_NE(r.out.find(std::string("server: ") + (mysql ? "MySQL" : "MariaDB") + ", version " +
                         (*s)->version() + " ("),
              std::string::npos)
        << r.out;
    for (const char *line : {"command start    found", "statement start  found",
                             "statement end    found", "THD thread id", "statements"}) {
        EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
    }
    if (mysql) {
        EXPECT_NE(r.out.find("dispatch_sql_command(THD*, Parser_state*, bool)"), std::string::npos)
            << r.out;
        EXPECT_NE(r.out.find("log_slow_statement(THD*): 2 call site(s) in dispatch_command"),
                  std::string::npos)
            << r.out;
        EXPECT_NE(r.out.find("THD thread id          found    +0x25d0 (4 bytes)"),
                  std::string::npos)
            << r.out;
        EXPECT_NE(r.out.find("THD query id           MISSING"), std::string::npos) << r.out;
    } else {
        EXPECT_NE(r.out.find("mysql_parse(THD*, char*, unsigned int, Parser_state*)"),
                  std::string::npos)
            << r.out;
    }
    // Never probes the endbr64 of a CET build.
    EXPECT_EQ(r.out.find("`endbr64`"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("single-stepped"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Flavours, DoctorPid, testing::ValuesIn(mysqltrace::test::all_flavours()),
                         [](const testing::TestParamInfo<ServerFlavour> &info) {
                             return mysqltrace::test::flavour_name(info.param);
                         });

}  // namespace
