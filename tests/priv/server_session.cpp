// SPDX-License-Identifier: GPL-2.0-only
#include "priv/server_session.h"

#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "priv/priv.h"

namespace mysqltrace::test {

MYSQL *connect_to(const MariadbServer &server, unsigned long flags, const char *db,
                  const std::string &user, const std::string &password) {
    MYSQL *m = mysql_init(nullptr);
    const std::string &u = user.empty() ? server.user() : user;
    const std::string &p = user.empty() ? server.password() : password;
    EXPECT_NE(mysql_real_connect(m, nullptr, u.c_str(), p.c_str(), db, 0,
                                 server.socket_path().c_str(), flags),
              nullptr)
        << mysql_error(m);
    return m;
}

unsigned run_query(MYSQL *m, const std::string &sql) {
    if (mysql_query(m, sql.c_str()) != 0) {
        return mysql_errno(m);
    }
    do {
        mysql_free_result(mysql_store_result(m));
    } while (mysql_next_result(m) == 0);
    return mysql_errno(m);
}

void run_prepared(MYSQL *m, const std::string &sql, int v) {
    MYSQL_STMT *st = mysql_stmt_init(m);
    ASSERT_EQ(mysql_stmt_prepare(st, sql.c_str(), sql.size()), 0) << mysql_stmt_error(st);
    MYSQL_BIND b{};
    b.buffer_type = MYSQL_TYPE_LONG;
    b.buffer = &v;
    ASSERT_EQ(mysql_stmt_bind_param(st, &b), 0);
    ASSERT_EQ(mysql_stmt_execute(st), 0) << mysql_stmt_error(st);
    mysql_stmt_store_result(st);
    mysql_stmt_close(st);
}

void wait_gone(MariadbServer &server, unsigned long id) {
    for (int i = 0; i < 200; i++) {
        auto rows = server.query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = " +
                                 std::to_string(id));
        ASSERT_TRUE(rows.ok()) << rows.error().message;
        if ((*rows)[0][0] == "0") {
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "connection " << id << " did not go away";
}

std::vector<std::string> server_tracer_argv(const MariadbServer &server,
                                            const std::vector<std::string> &extra) {
    std::vector<std::string> argv = {MYSQLTRACE_BINARY, "server", "--pid",
                                     std::to_string(server.pid())};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
}

std::unique_ptr<BackgroundCommand> start_server_tracer(const MariadbServer &server,
                                                       const std::vector<std::string> &extra) {
    auto t = std::make_unique<BackgroundCommand>(server_tracer_argv(server, extra));
    EXPECT_TRUE(t->wait_for_stderr("Ctrl-C to stop"));
    return t;
}

}  // namespace mysqltrace::test

namespace mysqltrace::test {

using nlohmann::json;

const ServerExpectations &expectations(ServerFlavour flavour) {
    static const ServerExpectations mariadb = {
        .executing_stage = "stage/sql/Executing",
        .unknown_column_clause = "'SELECT'",
        .profile_first_state = "Starting",
        .examined_without_table = 0,
        .examined_by_range = 2,
        .select_stages = {"starting",
                          "checking permissions",
                          "Opening tables",
                          "After opening tables",
                          "System lock",
                          "table lock",
                          "init",
                          "Optimizing",
                          "Statistics",
                          "Preparing",
                          "Executing",
                          "Sending data",
                          "End of update loop",
                          "Query end",
                          "Commit",
                          "Query end",
                          "closing tables",
                          "Unlocking tables",
                          "closing tables",
                          "Query end",
                          "Starting cleanup",
                          "Freeing items",
                          "Updating status",
                          "Reset for next command"},
        .failed_stages = {"starting", "checking permissions", "Opening tables",
                          "After opening tables", "System lock", "table lock", "init",
                          "End of update loop", "Query end", "Rollback", "Query end",
                          "closing tables", "Unlocking tables", "closing tables", "Query end",
                          "Starting cleanup", "Freeing items", "Updating status",
                          "Reset for next command"},
        // The "starting" before dispatch_command: no site, no source.
        .command_start = "starting@",
        .next_statement_start = "starting@sql_parse.cc:1989",
        .next_statement_follows = "Freeing items",
        .command_end = "Reset for next command",
        .pfs_unregistered_stages = {"Updating status"},
        .pfs_quit_extra = {"Rollback"},
        .redo_log_name = "ib_logfile",
        // InnoDB writes whole log blocks and may split them at 4 KiB: at
        // least one whole 4 KiB write of its own; the rest may go out in
        // another thread's group commit when the machine is busy.
        .redo_log_min_write = 4096,
        .statements_only = "tracing statements only (5 probes)",
        .doctor_server = "MariaDB",
        .doctor_lines = {"mysql_parse(THD*, char*, unsigned int, Parser_state*)"},
    };
    static const ServerExpectations mysql = {
        .executing_stage = "stage/sql/executing",
        .unknown_column_clause = "'field list'",
        .profile_first_state = "starting",
        .profile_state_width = 30,
        .examined_without_table = 1,
        .examined_by_range = 3,
        .select_stages = {"starting", "Executing hook on transaction begin.", "starting",
                          "checking permissions", "Opening tables", "init", "System lock",
                          "optimizing", "statistics", "preparing", "executing", "end", "query end",
                          "waiting for handler commit", "closing tables", "freeing items",
                          "cleaning up"},
        .failed_stages = {"starting", "Executing hook on transaction begin.", "starting",
                          "checking permissions", "Opening tables", "end", "query end",
                          "closing tables", "freeing items", "cleaning up"},
        .command_start = "starting@init_net_server_extension.cc:111",
        .next_statement_start = "starting@sql_parse.cc:2226",
        .next_statement_follows = "freeing items",
        .command_end = "cleaning up",
        .pfs_unregistered_stages = {},
        .pfs_quit_extra = {},
        .redo_log_name = "/#innodb_redo/#ib_redo",
        .redo_log_min_write = 1,
        .statements_only = "tracing statements only (6 probes)",
        .doctor_server = "MySQL",
        .doctor_lines = {"dispatch_sql_command(THD*, Parser_state*, bool)",
                         "log_slow_statement(THD*): 2 call site(s) in dispatch_command",
                         "THD thread id          found    +0x25d0 (4 bytes)",
                         "THD query id           found    +0x25a8"},
    };
    return flavour == ServerFlavour::mysql ? mysql : mariadb;
}

std::string flavour_param_name(const ::testing::TestParamInfo<ServerFlavour> &info) {
    return flavour_name(info.param);
}

ServerOptions ServerTraceTest::options() const {
    ServerOptions opts;
    opts.flavour = flavour();
    if (flavour() == ServerFlavour::mysql) {
        opts.extra_args.push_back("--performance-schema=OFF");
    }
    return opts;
}

void ServerTraceTest::SetUp() {
    MYSQLTRACE_REQUIRE_ROOT();
    auto s = MariadbServer::start(options());
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(s).value();
    out_path_ = server_->root_dir() + "/trace.json";
}

std::vector<json> ServerTraceTest::rows(const std::string &kind, unsigned long thread_id) const {
    std::vector<json> evs;
    for (auto &j : read_json_lines(out_path_)) {
        if (j["kind"] == kind && (thread_id == 0 || j["THREAD_ID"] == thread_id)) {
            evs.push_back(std::move(j));
        }
    }
    return evs;
}

void ServerTraceTest::traced_connection(const std::string &stages, void (*workload)(MYSQL *),
                                        unsigned long *id, const char *db,
                                        const std::function<void(unsigned long)> &connected) {
    MYSQL *m = connect_to(*server_, CLIENT_MULTI_STATEMENTS, db);
    ASSERT_NE(m, nullptr);
    *id = mysql_thread_id(m);
    if (connected) {
        connected(*id);
    }
    // --every-command: the workloads' Init DB, Ping, Close stmt and Quit
    // never reach log_slow_statement on MariaDB, nor a binary PREPARE's text
    // on MySQL (the default one-probe path's own sequence is
    // server_onepass_test.cpp's).
    auto tracer = start_server_tracer(*server_, {"--stages", stages, "--every-command", "--format",
                                                 "json", "--output", out_path_});
    workload(m);
    mysql_close(m);
    wait_gone(*server_, *id);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; interrupted\n"), std::string::npos) << r.err;
}

// Each command starts as its packet header arrives and ends cleaning up; a
// further statement of a query starts in dispatch_command's loop, and only
// the query's last statement cleans up.
void ServerTraceTest::expect_command_stages(const std::vector<StagedStatement> &traced) const {
    // 7 statements (two in one query), 3 prepared statement commands, COM_QUIT.
    ASSERT_EQ(traced.size(), 11u);
    EXPECT_EQ(traced[0].sql, "select a, b from t where a >= 2");
    EXPECT_EQ(traced[0].names, want().select_stages);
    EXPECT_EQ(traced[4].sql, "select nosuch from t");
    EXPECT_EQ(traced[4].names, want().failed_stages);
    for (size_t i = 0; i < traced.size(); i++) {
        const auto &t = traced[i];
        ASSERT_FALSE(t.names.empty()) << t.sql;
        EXPECT_EQ(t.with_source.front(),
                  i == 6 ? want().next_statement_start : want().command_start)
            << t.sql;
        EXPECT_EQ(t.names.back(), i == 5 ? want().next_statement_follows : want().command_end)
            << t.sql;
    }
}

std::vector<json> waits_of(const std::vector<json> &all, const std::string &sql, json *stmt) {
    for (const auto &e : all) {
        if (e["kind"] == "statement" && e["SQL_TEXT"] == sql) {
            *stmt = e;
        }
    }
    std::vector<json> out;
    if (stmt->is_null()) {
        return out;
    }
    std::set<uint64_t> ids = {(*stmt)["EVENT_ID"].get<uint64_t>()};  // it and its stages
    for (const auto &e : all) {
        if (e["THREAD_ID"] != (*stmt)["THREAD_ID"] || e["NESTING_EVENT_ID"].is_null()) {
            continue;
        }
        if (e["kind"] == "stage" && ids.count(e["NESTING_EVENT_ID"].get<uint64_t>())) {
            ids.insert(e["EVENT_ID"].get<uint64_t>());
        }
        if (e["kind"] == "wait" && ids.count(e["NESTING_EVENT_ID"].get<uint64_t>())) {
            out.push_back(e);
        }
    }
    return out;
}

void stage_workload(MYSQL *m) {
    ASSERT_EQ(run_query(m, "select a, b from t where a >= 2"), 0u);
    ASSERT_EQ(run_query(m, "insert into t values (10, 'k')"), 0u);
    ASSERT_EQ(run_query(m, "update t set b = 'u' where a = 1"), 0u);
    ASSERT_EQ(run_query(m, "delete from t where a = 10"), 0u);
    EXPECT_EQ(run_query(m, "select nosuch from t"), 1054u);
    ASSERT_EQ(run_query(m, "select 1; select b from t where a = 2"), 0u);
    run_prepared(m, "select a, b from t where a = ?", 2);
}

const TableIoWorkload &table_io_workload() {
    static const TableIoWorkload workload = {
        {"select * from t where a = 2", {"fetch"}},
        // Three rows, then the end of the table.
        {"select * from t", {"fetch", "fetch", "fetch", "fetch:137"}},
        {"insert into t values (4, 'w')", {"insert"}},
        {"update t set b = 'q' where a = 1", {"fetch", "update"}},
        {"delete from t where a = 3", {"fetch", "delete"}},
        // An index range: its first row, the next two, the end of the range.
        {"select count(*) from t where b > 'a'", {"fetch", "fetch", "fetch", "fetch:137"}},
        {"select * from t where a = 99", {"fetch:120"}},
    };
    return workload;
}

std::string table_io_call(const json &w) {
    const std::string op = w["OPERATION"];
    return w.contains("handler_error") ? op + ":" + std::to_string(w["handler_error"].get<int>())
                                       : op;
}

std::string base_name(const std::string &path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::vector<StagedStatement> statements_with_stages(const std::vector<json> &all,
                                                    unsigned long id) {
    std::vector<StagedStatement> traced;
    std::map<uint64_t, size_t> by_event;
    for (const auto &e : all) {
        if (e["kind"] == "statement" && e["THREAD_ID"] == id) {
            by_event[e["EVENT_ID"].get<uint64_t>()] = traced.size();
            traced.push_back({str(e["SQL_TEXT"]), {}, {}});
        }
    }
    for (const auto &e : all) {
        if (e["kind"] != "stage" || e["THREAD_ID"] != id) {
            continue;
        }
        auto it = by_event.find(e["NESTING_EVENT_ID"].get<uint64_t>());
        EXPECT_NE(it, by_event.end()) << e.dump();
        if (it == by_event.end()) {
            continue;
        }
        const std::string name = e["EVENT_NAME"].get<std::string>().substr(strlen("stage/sql/"));
        const std::string source =
            e["SOURCE"].is_null() ? "" : base_name(e["SOURCE"].get<std::string>());
        traced[it->second].names.push_back(name);
        traced[it->second].with_source.push_back(name + "@" + source);
    }
    return traced;
}

void create_table_t(MariadbServer &server) {
    auto r = server.query(
        "CREATE DATABASE mt_db; CREATE TABLE mt_db.t (a INT PRIMARY KEY, b VARCHAR(20), KEY (b)); "
        "INSERT INTO mt_db.t VALUES (1, 'x'), (2, 'y'), (3, 'z')");
    ASSERT_TRUE(r.ok()) << r.error().message;
}

void statement_workload(MYSQL *m) {
    ASSERT_EQ(run_query(m, "select 1"), 0u);
    ASSERT_EQ(run_query(m, "create database mt_db"), 0u);
    ASSERT_EQ(mysql_select_db(m, "mt_db"), 0);
    ASSERT_EQ(mysql_ping(m), 0);
    EXPECT_EQ(run_query(m, "select 1;  select 2, 3;select * from no_such_table; select 4"), 1146u);
    ASSERT_EQ(run_query(m, "create table t (a int primary key, b varchar(10))"), 0u);
    ASSERT_EQ(run_query(m, "insert into t values (1, 'a'), (2, 'b'), (3, 'c')"), 0u);
    ASSERT_EQ(run_query(m, "select a from t where a >= 2"), 0u);
    ASSERT_EQ(run_query(m, "update t set b = 'z' where a = 1"), 0u);
    ASSERT_EQ(run_query(m, "delete from t where a = 3"), 0u);
    EXPECT_EQ(run_query(m, "select nosuch from t"), 1054u);
    run_prepared(m, "select a, b from t where a = ?", 2);
    run_prepared(m, "insert into t values (?, 'p')", 7);
    ASSERT_EQ(run_query(m, "select connection_id()"), 0u);
}

std::vector<ExpectedStatement> expected_statements(ServerFlavour flavour) {
    const ServerExpectations &x = expectations(flavour);
    const uint64_t no_table = x.examined_without_table;
    // COM_STMT_EXECUTE's text is the statement prepared, with its `?` (as
    // performance_schema shows it; the slow log has the values).
    const std::string select_2 = "select a, b from t where a = ?";
    const std::string insert_7 = "insert into t values (?, 'p')";
    return {
        {"statement/sql/select", "select 1", "NULL", 0, "NULL", "NULL", 1, no_table, 0},
        {"statement/sql/create_db", "create database mt_db", "NULL", 0, "NULL", "NULL", 0, 0, 1},
        {"statement/com/Init DB", "mt_db", "mt_db", 0, "NULL", "NULL", 0, 0, 0},
        {"statement/com/Ping", "NULL", "mt_db", 0, "NULL", "NULL", 0, 0, 0},
        {"statement/sql/select", "select 1", "mt_db", 0, "NULL", "NULL", 1, no_table, 0},
        {"statement/sql/select", "select 2, 3", "mt_db", 0, "NULL", "NULL", 1, no_table, 0},
        {"statement/sql/select", "select * from no_such_table", "mt_db", 1146, "42S02",
         "Table 'mt_db.no_such_table' doesn't exist", 0, 0, 0},
        {"statement/sql/create_table", "create table t (a int primary key, b varchar(10))", "mt_db",
         0, "NULL", "NULL", 0, 0, 0},
        {"statement/sql/insert", "insert into t values (1, 'a'), (2, 'b'), (3, 'c')", "mt_db", 0,
         "NULL", "NULL", 0, 0, 3},
        {"statement/sql/select", "select a from t where a >= 2", "mt_db", 0, "NULL", "NULL", 2,
         x.examined_by_range, 0},
        {"statement/sql/update", "update t set b = 'z' where a = 1", "mt_db", 0, "NULL", "NULL", 0,
         1, 1},
        {"statement/sql/delete", "delete from t where a = 3", "mt_db", 0, "NULL", "NULL", 0, 1, 1},
        {"statement/sql/select", "select nosuch from t", "mt_db", 1054, "42S22",
         "Unknown column 'nosuch' in " + x.unknown_column_clause, 0, 0, 0},
        {"statement/com/Prepare", "select a, b from t where a = ?", "mt_db", 0, "NULL", "NULL", 0,
         0, 0},
        {"statement/com/Execute", select_2, "mt_db", 0, "NULL", "NULL", 1, 1, 0},
        {"statement/com/Close stmt", "NULL", "mt_db", 0, "NULL", "NULL", 0, 0, 0},
        {"statement/com/Prepare", "insert into t values (?, 'p')", "mt_db", 0, "NULL", "NULL", 0, 0,
         0},
        {"statement/com/Execute", insert_7, "mt_db", 0, "NULL", "NULL", 0, 0, 1},
        {"statement/com/Close stmt", "NULL", "mt_db", 0, "NULL", "NULL", 0, 0, 0},
        {"statement/sql/select", "select connection_id()", "mt_db", 0, "NULL", "NULL", 1, no_table,
         0},
        {"statement/com/Quit", "NULL", "mt_db", 0, "NULL", "NULL", 0, 0, 0},
    };
}

std::string str(const json &v) {
    return v.is_null() ? "NULL" : v.is_string() ? v.get<std::string>() : v.dump();
}

void expect_statements(const std::vector<json> &traced, const std::vector<ExpectedStatement> &want,
                       pid_t server_pid) {
    ASSERT_EQ(traced.size(), want.size());
    uint64_t last_end = 0;
    for (size_t i = 0; i < want.size(); i++) {
        const auto &e = traced[i];
        SCOPED_TRACE("statement " + std::to_string(i) + ": " + e.dump());
        EXPECT_EQ(e["EVENT_NAME"], want[i].event_name);
        EXPECT_EQ(str(e["SQL_TEXT"]), want[i].sql);
        EXPECT_EQ(str(e["CURRENT_SCHEMA"]), want[i].schema);
        EXPECT_EQ(e["MYSQL_ERRNO"], want[i].err);
        EXPECT_EQ(e["ERRORS"], want[i].err ? 1 : 0);
        EXPECT_EQ(str(e["RETURNED_SQLSTATE"]), want[i].sqlstate);
        EXPECT_EQ(str(e["MESSAGE_TEXT"]), want[i].message);
        EXPECT_EQ(e["ROWS_SENT"], want[i].rows_sent);
        EXPECT_EQ(e["ROWS_EXAMINED"], want[i].rows_examined);
        EXPECT_EQ(e["ROWS_AFFECTED"], want[i].rows_affected);
        EXPECT_EQ(e["pid"], server_pid);
        // Event ids run on per connection; a statement ends where the next begins.
        EXPECT_EQ(e["EVENT_ID"], i + 1);
        EXPECT_EQ(e["END_EVENT_ID"], i + 2);
        EXPECT_GE(e["TIMER_START"].get<uint64_t>(), last_end);
        EXPECT_EQ(e["TIMER_WAIT"].get<uint64_t>(),
                  e["TIMER_END"].get<uint64_t>() - e["TIMER_START"].get<uint64_t>());
        last_end = e["TIMER_END"];
    }
}

}  // namespace mysqltrace::test
