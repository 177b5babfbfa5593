// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server`'s modes beyond statements on Oracle MySQL 9.7 (the
// harness's sid chroot): exact stages against the server's own
// events_stages_history_long, --format profile, sampled stages, --waits,
// --table-io against table_io_waits_summary_by_table, and accounts (--user,
// pfs-sql file names). Every test runs with performance_schema ON (the
// oracle) and OFF (the case the tracer is for).
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
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
using mysqltrace::test::ServerFlavour;
using mysqltrace::test::ServerOptions;
using mysqltrace::test::start_server_tracer;
using mysqltrace::test::wait_gone;
using nlohmann::json;

std::string base_name(const std::string &path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Length of the longest common subsequence of a and b: how many of one
// sequence's stages the other has, in the same order.
size_t common_in_order(const std::vector<std::string> &a, const std::vector<std::string> &b) {
    std::vector<std::vector<size_t>> t(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
    for (size_t i = 1; i <= a.size(); i++) {
        for (size_t j = 1; j <= b.size(); j++) {
            t[i][j] =
                a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
        }
    }
    return t[a.size()][b.size()];
}

class MysqlModes : public ::testing::TestWithParam<bool> {
  protected:
    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        ServerOptions opts;
        opts.flavour = ServerFlavour::mysql;
        if (!pfs()) {
            opts.extra_args.push_back("--performance-schema=OFF");
        }
        auto s = MariadbServer::start(opts);
        ASSERT_TRUE(s.ok()) << s.error().message;
        server_ = std::move(s).value();
        out_path_ = server_->root_dir() + "/trace.json";
        ASSERT_TRUE(server_
                        ->query("CREATE DATABASE mt_db; CREATE TABLE mt_db.t (a INT PRIMARY KEY, "
                                "b VARCHAR(20), KEY (b)); INSERT INTO mt_db.t VALUES (1, 'x'), "
                                "(2, 'y'), (3, 'z')")
                        .ok());
    }

    static bool pfs() { return GetParam(); }

    MYSQL *connect(const std::string &user = "", const std::string &password = "") {
        return connect_to(*server_, CLIENT_MULTI_STATEMENTS, "mt_db", user, password);
    }

    // performance_schema's THREAD_ID of connection `id`.
    std::string pfs_thread(unsigned long id) {
        auto t = server_->query(
            "SELECT THREAD_ID FROM performance_schema.threads WHERE "
            "PROCESSLIST_ID = " +
            std::to_string(id));
        EXPECT_TRUE(t.ok() && t->size() == 1);
        return t.ok() && t->size() == 1 ? (*t)[0][0] : "0";
    }

    std::unique_ptr<MariadbServer> server_;
    std::string out_path_;
};

// The waits (and stages' waits) nested in the statement whose text is `sql`.
std::vector<json> waits_of(const std::vector<json> &all, const std::string &sql, json *stmt) {
    for (const auto &e : all) {
        if (e["kind"] == "statement" && e["SQL_TEXT"] == sql) {
            *stmt = e;
        }
    }
    std::set<uint64_t> ids;
    std::vector<json> out;
    if (stmt->is_null()) {
        return out;
    }
    ids.insert((*stmt)["EVENT_ID"].get<uint64_t>());
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

// MySQL 9.7's stages of a SELECT with a WHERE and of a statement failing in
// its preparation, as its events_stages_history_long lists them.
const std::vector<std::string> kSelectStages = {
    "starting",       "Executing hook on transaction begin.",
    "starting",       "checking permissions",
    "Opening tables", "init",
    "System lock",    "optimizing",
    "statistics",     "preparing",
    "executing",      "end",
    "query end",      "waiting for handler commit",
    "closing tables", "freeing items",
    "cleaning up"};
const std::vector<std::string> kFailedStages = {
    "starting",       "Executing hook on transaction begin.",
    "starting",       "checking permissions",
    "Opening tables", "end",
    "query end",      "closing tables",
    "freeing items",  "cleaning up"};

TEST_P(MysqlModes, ExactStagesFollowPerformanceSchema) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    std::string pfs_id;
    if (pfs()) {
        ASSERT_TRUE(
            server_
                ->query(
                    "UPDATE performance_schema.setup_instruments SET ENABLED = 'YES', TIMED = "
                    "'YES' WHERE NAME LIKE 'stage/%'; UPDATE performance_schema.setup_consumers "
                    "SET ENABLED = 'YES' WHERE NAME LIKE 'events_stages%' OR NAME LIKE "
                    "'events_statements%'; TRUNCATE "
                    "performance_schema.events_stages_history_long; TRUNCATE "
                    "performance_schema.events_statements_history_long")
                .ok());
        pfs_id = pfs_thread(id);
    }
    auto tracer = start_server_tracer(
        *server_, {"--stages", "exact", "--format", "json", "--output", out_path_});
    ASSERT_EQ(run_query(m, "select a, b from t where a >= 2"), 0u);
    ASSERT_EQ(run_query(m, "insert into t values (10, 'k')"), 0u);
    ASSERT_EQ(run_query(m, "update t set b = 'u' where a = 1"), 0u);
    ASSERT_EQ(run_query(m, "delete from t where a = 10"), 0u);
    EXPECT_EQ(run_query(m, "select nosuch from t"), 1054u);
    ASSERT_EQ(run_query(m, "select 1; select b from t where a = 2"), 0u);
    run_prepared(m, "select a, b from t where a = ?", 2);
    mysql_close(m);
    wait_gone(*server_, id);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; interrupted\n"), std::string::npos) << r.err;

    // The statements of the connection, each with its stages (name, source).
    struct Traced {
        std::string sql;
        std::vector<std::string> names, with_source;
    };
    std::vector<Traced> traced;
    std::map<uint64_t, size_t> by_event;
    const auto all = read_json_lines(out_path_);
    for (const auto &e : all) {
        if (e["kind"] == "statement" && e["THREAD_ID"] == id) {
            by_event[e["EVENT_ID"].get<uint64_t>()] = traced.size();
            Traced t;
            t.sql = e["SQL_TEXT"].is_null() ? "" : e["SQL_TEXT"].get<std::string>();
            traced.push_back(std::move(t));
        }
    }
    for (const auto &e : all) {
        if (e["kind"] != "stage" || e["THREAD_ID"] != id) {
            continue;
        }
        auto it = by_event.find(e["NESTING_EVENT_ID"].get<uint64_t>());
        ASSERT_NE(it, by_event.end()) << e.dump();
        const std::string name = e["EVENT_NAME"].get<std::string>().substr(strlen("stage/sql/"));
        const std::string source =
            e["SOURCE"].is_null() ? "" : base_name(e["SOURCE"].get<std::string>());
        traced[it->second].names.push_back(name);
        traced[it->second].with_source.push_back(name + "@" + source);
    }
    // 7 statements (two in one query), 3 prepared statement commands, COM_QUIT.
    ASSERT_EQ(traced.size(), 11u) << r.err;
    EXPECT_EQ(traced[0].sql, "select a, b from t where a >= 2");
    EXPECT_EQ(traced[0].names, kSelectStages);
    EXPECT_EQ(traced[4].sql, "select nosuch from t");
    EXPECT_EQ(traced[4].names, kFailedStages);
    // Each command starts as its packet header arrives and ends cleaning
    // up; a further statement of a query starts in dispatch_command's loop,
    // and only the query's last statement cleans up.
    for (size_t i = 0; i < traced.size(); i++) {
        const auto &t = traced[i];
        ASSERT_FALSE(t.names.empty()) << t.sql;
        EXPECT_EQ(t.with_source.front(), i == 6 ? "starting@sql_parse.cc:2226"
                                                : "starting@init_net_server_extension.cc:111")
            << t.sql;
        EXPECT_EQ(t.names.back(), i == 5 ? "freeing items" : "cleaning up") << t.sql;
    }
    if (!pfs()) {
        return;
    }
    // The oracle: the server's own stages of the same statements, in order.
    auto stmts = server_->query(
        "SELECT EVENT_ID, IFNULL(SQL_TEXT, '') FROM "
        "performance_schema.events_statements_history_long WHERE THREAD_ID = " +
        pfs_id + " AND NESTING_EVENT_LEVEL = 0 ORDER BY EVENT_ID");
    ASSERT_TRUE(stmts.ok()) << stmts.error().message;
    ASSERT_EQ(stmts->size(), traced.size());
    size_t total = 0, matched = 0;
    for (size_t i = 0; i < stmts->size(); i++) {
        auto stages = server_->query(
            "SELECT SUBSTRING(EVENT_NAME, 11), SOURCE FROM "
            "performance_schema.events_stages_history_long WHERE THREAD_ID = " +
            pfs_id + " AND NESTING_EVENT_ID = " + (*stmts)[i][0] + " ORDER BY EVENT_ID");
        ASSERT_TRUE(stages.ok()) << stages.error().message;
        std::vector<std::string> want;
        for (const auto &row : *stages) {
            want.push_back(row[0] + "@" + row[1]);
        }
        const size_t common = common_in_order(want, traced[i].with_source);
        SCOPED_TRACE("statement " + std::to_string(i) + " " + (*stmts)[i][1]);
        ASSERT_FALSE(want.empty());
        // At least 85% of performance_schema's stages, in its order, with
        // their source lines; and nothing much that it does not have.
        EXPECT_GE(common * 100, want.size() * 85) << common << " of " << want.size();
        EXPECT_GE(common * 100, traced[i].with_source.size() * 85)
            << common << " of " << traced[i].with_source.size() << " traced";
        total += want.size();
        matched += common;
    }
    std::cout << "exact stages: " << matched << " of " << total
              << " performance_schema stages matched in order, with their source\n";
}

TEST_P(MysqlModes, ProfileFormatNamesStagesAsMysqlDoes) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    auto tracer = start_server_tracer(
        *server_, {"--stages", "exact", "--format", "profile", "--output", out_path_});
    ASSERT_EQ(run_query(m, "select a, b from t where a >= 2"), 0u);
    mysql_close(m);
    wait_gone(*server_, id);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(out_path_);
    std::string line;
    bool in_table = false;
    std::vector<std::string> names;
    const std::regex row(R"(^(.*\S)\s+(\d+\.\d{6})\s+\d+\.\d{6}\s+\d+\.\d{6}\s.*?(\S*)$)");
    std::string first_source;
    while (std::getline(in, line)) {
        if (line.rfind("# THREAD_ID " + std::to_string(id) + ", statement/sql/select, ", 0) == 0 &&
            line.find(": select a, b from t where a >= 2") != std::string::npos) {
            in_table = true;
            continue;
        }
        if (!in_table || line.rfind("Status", 0) == 0) {
            continue;
        }
        if (line.empty()) {
            break;
        }
        std::smatch mt;
        ASSERT_TRUE(std::regex_match(line, mt, row)) << line;
        if (names.empty()) {
            first_source = mt[3];
        }
        names.push_back(mt[1]);
    }
    EXPECT_EQ(names, kSelectStages);
    EXPECT_NE(first_source.find("init_net_server_extension.cc:111"), std::string::npos);
}

TEST_P(MysqlModes, SampledStagesFindTheDominantStage) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    auto tracer = start_server_tracer(
        *server_, {"--format", "json", "--output", out_path_});  // sampled: default
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(run_query(m, "select sleep(0.3)"), 0u);
        // CPU-bound (9.7 has no md5() without a component; rand() defeats
        // constant folding).
        ASSERT_EQ(run_query(m, "select benchmark(600000, crc32(concat('mysqltrace', rand())))"),
                  0u);
    }
    mysql_close(m);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, json> by_digest;
    for (const auto &p : read_json_lines(out_path_)) {
        if (p["kind"] == "stage_profile") {
            by_digest[p["DIGEST_TEXT"]] = p;
        }
    }
    ASSERT_TRUE(by_digest.count("select sleep(?)")) << r.err;
    const json &sl = by_digest["select sleep(?)"];
    EXPECT_EQ(sl["COUNT_STAR"], 2);
    EXPECT_EQ(sl["stages"][0]["EVENT_NAME"], "stage/sql/User sleep") << sl.dump();
    EXPECT_GT(sl["stages"][0]["share"].get<double>(), 0.9) << sl.dump();
    const json *bm = nullptr;
    for (const auto &[digest, p] : by_digest) {
        if (digest.rfind("select benchmark(", 0) == 0) {
            bm = &p;
        }
    }
    ASSERT_NE(bm, nullptr) << r.err;
    EXPECT_EQ((*bm)["COUNT_STAR"], 2);
    EXPECT_EQ((*bm)["stages"][0]["EVENT_NAME"], "stage/sql/executing") << bm->dump();
    EXPECT_GT((*bm)["stages"][0]["share"].get<double>(), 0.9) << bm->dump();
    EXPECT_GT((*bm)["on_cpu_samples"].get<uint64_t>(), 50u) << bm->dump();
}

TEST_P(MysqlModes, WaitsOfLocksFilesAndIdleTime) {
    MYSQL *holder = connect();
    MYSQL *waiter = connect();
    ASSERT_NE(holder, nullptr);
    ASSERT_NE(waiter, nullptr);
    auto tracer = start_server_tracer(
        *server_, {"--waits", "--stages", "exact", "--format", "json", "--output", out_path_});
    // A table lock held for 300 ms: the other connection's select waits.
    ASSERT_EQ(run_query(holder, "lock tables t write"), 0u);
    std::thread blocked([&] { EXPECT_EQ(run_query(waiter, "select count(*) from t"), 0u); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_EQ(run_query(holder, "unlock tables"), 0u);
    blocked.join();
    // A commit: InnoDB writes and syncs its redo log in the committing thread.
    ASSERT_EQ(run_query(waiter, "insert into t values (20, repeat('y', 20))"), 0u);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(run_query(waiter, "select 'after idle'"), 0u);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped;"), std::string::npos) << r.err;
    const std::vector<json> all = read_json_lines(out_path_);

    json blocked_st;
    const json *lock = nullptr;
    auto lock_waits = waits_of(all, "select count(*) from t", &blocked_st);
    for (const auto &w : lock_waits) {
        if (w["TIMER_WAIT"].get<uint64_t>() > 200'000'000'000ull) {
            lock = &w;
        }
    }
    ASSERT_NE(lock, nullptr) << blocked_st.dump();
    // Named by the server function that waited (MySQL's frames are followed).
    EXPECT_EQ((*lock)["EVENT_NAME"], "wait/synch/cond/sql/MDL_wait::timed_wait");
    EXPECT_EQ((*lock)["OPERATION"], "timed_wait");
    EXPECT_EQ((*lock)["NESTING_EVENT_TYPE"], "STAGE");
    bool in_mdl_stage = false;
    for (const auto &e : all) {
        if (e["kind"] == "stage" && e["EVENT_ID"] == (*lock)["NESTING_EVENT_ID"] &&
            e["THREAD_ID"] == blocked_st["THREAD_ID"]) {
            in_mdl_stage = e["EVENT_NAME"] == "stage/sql/Waiting for table metadata lock";
        }
    }
    EXPECT_TRUE(in_mdl_stage);

    json insert_st;
    bool log_sync = false, log_write = false;
    for (const auto &w : waits_of(all, "insert into t values (20, repeat('y', 20))", &insert_st)) {
        if (w["EVENT_NAME"] == "wait/io/file/innodb/innodb_log_file") {
            EXPECT_NE(w["OBJECT_NAME"].get<std::string>().find("/#innodb_redo/#ib_redo"),
                      std::string::npos)
                << w.dump();
            log_sync |= w["OPERATION"] == "sync";
            log_write |= w["OPERATION"] == "write";
        }
    }
    ASSERT_FALSE(insert_st.is_null());
    EXPECT_TRUE(log_sync);
    EXPECT_TRUE(log_write);

    json last;
    waits_of(all, "select 'after idle'", &last);
    ASSERT_FALSE(last.is_null());
    bool idle = false;
    for (const auto &e : all) {
        if (e["kind"] == "wait" && e["EVENT_NAME"] == "idle" &&
            e["THREAD_ID"] == last["THREAD_ID"] && e["NESTING_EVENT_ID"].is_null() &&
            e["TIMER_WAIT"].get<uint64_t>() > 150'000'000'000ull &&
            e["TIMER_END"].get<uint64_t>() <= last["TIMER_START"].get<uint64_t>()) {
            idle = true;
        }
    }
    EXPECT_TRUE(idle);
    mysql_close(holder);
    mysql_close(waiter);
}

// Every handler row call, with its result; performance_schema counts the
// same calls, except in its batch mode (the scan of a SELECT's table), where
// the read that finds no more rows is not counted.
TEST_P(MysqlModes, TableIoEqualsPerformanceSchemaCounts) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    if (pfs()) {
        ASSERT_TRUE(
            server_->query("TRUNCATE performance_schema.table_io_waits_summary_by_table").ok());
    }
    auto tracer = start_server_tracer(
        *server_, {"--table-io", "--stages", "off", "--format", "json", "--output", out_path_});
    // op, or op:handler_error.
    const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
        {"select * from t where a = 2", {"fetch"}},
        {"select * from t", {"fetch", "fetch", "fetch", "fetch:137"}},
        {"insert into t values (4, 'w')", {"insert"}},
        {"update t set b = 'q' where a = 1", {"fetch", "update"}},
        {"delete from t where a = 3", {"fetch", "delete"}},
        {"select count(*) from t where b > 'a'", {"fetch", "fetch", "fetch", "fetch:137"}},
        {"select * from t where a = 99", {"fetch:120"}},
    };
    for (const auto &[sql, ops] : expected) {
        ASSERT_EQ(run_query(m, sql), 0u) << sql;
    }
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped;"), std::string::npos) << r.err;
    mysql_close(m);
    const std::vector<json> all = read_json_lines(out_path_);
    std::map<std::string, uint64_t> counted;
    for (const auto &[sql, ops] : expected) {
        json st;
        std::vector<std::string> seen;
        for (const auto &w : waits_of(all, sql, &st)) {
            EXPECT_EQ(w["EVENT_NAME"], "wait/io/table/sql/handler") << w.dump();
            EXPECT_EQ(w["OBJECT_SCHEMA"], "mt_db") << w.dump();
            EXPECT_EQ(w["OBJECT_NAME"], "t") << w.dump();
            EXPECT_EQ(w["NESTING_EVENT_TYPE"], "STATEMENT") << w.dump();
            const std::string op = w["OPERATION"];
            seen.push_back(w.contains("handler_error")
                               ? op + ":" + std::to_string(w["handler_error"].get<int>())
                               : op);
            // performance_schema's batch mode: a SELECT's scan that ends.
            const bool batched_end =
                sql.rfind("select", 0) == 0 && w.value("handler_error", 0) == 137;
            counted[op] += batched_end ? 0 : 1;
        }
        ASSERT_FALSE(st.is_null()) << sql;
        EXPECT_EQ(seen, ops) << sql;
    }
    if (!pfs()) {
        return;
    }
    auto rows = server_->query(
        "SELECT COUNT_FETCH, COUNT_INSERT, COUNT_UPDATE, COUNT_DELETE FROM "
        "performance_schema.table_io_waits_summary_by_table WHERE OBJECT_SCHEMA = 'mt_db' AND "
        "OBJECT_NAME = 't'");
    ASSERT_TRUE(rows.ok() && rows->size() == 1);
    EXPECT_EQ(std::to_string(counted["fetch"]), (*rows)[0][0]);
    EXPECT_EQ(std::to_string(counted["insert"]), (*rows)[0][1]);
    EXPECT_EQ(std::to_string(counted["update"]), (*rows)[0][2]);
    EXPECT_EQ(std::to_string(counted["delete"]), (*rows)[0][3]);
}

TEST_P(MysqlModes, AccountsFilterAndNameTraceFiles) {
    ASSERT_TRUE(server_
                    ->query("CREATE USER 'mt_other'@'localhost' IDENTIFIED BY 'otherpw'; GRANT "
                            "SELECT ON mt_db.* TO 'mt_other'@'localhost'")
                    .ok());
    const std::string by_user = server_->root_dir() + "/by_user.json";
    const std::string dir = server_->root_dir() + "/files";
    auto filtered = start_server_tracer(
        *server_, {"--user", "mt_other", "--format", "json", "--output", by_user});
    auto files = start_server_tracer(*server_, {"--format", "pfs-sql", "--output", dir});
    MYSQL *mine = connect();
    MYSQL *other = connect("mt_other", "otherpw");
    ASSERT_NE(mine, nullptr);
    ASSERT_NE(other, nullptr);
    const unsigned long mine_id = mysql_thread_id(mine), other_id = mysql_thread_id(other);
    ASSERT_EQ(run_query(mine, "select 'mine'"), 0u);
    ASSERT_EQ(run_query(other, "select 'other'"), 0u);
    mysql_close(mine);
    mysql_close(other);
    wait_gone(*server_, mine_id);
    wait_gone(*server_, other_id);
    for (auto *t : {filtered.get(), files.get()}) {
        auto r = t->stop(SIGINT);
        EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    size_t others = 0;
    for (const auto &e : read_json_lines(by_user)) {
        if (e["kind"] == "statement") {
            EXPECT_EQ(e["THREAD_ID"], other_id) << e.dump();
            others += e["SQL_TEXT"] == "select 'other'";
        }
    }
    EXPECT_EQ(others, 1u);
    for (const auto &[actor, id] : {std::pair{server_->user() + "@localhost", mine_id},
                                    std::pair{std::string("mt_other@localhost"), other_id}}) {
        std::ifstream f(dir + "/thread." + actor + "." + std::to_string(id));
        std::string first;
        ASSERT_TRUE(std::getline(f, first)) << "no trace file thread." << actor << "." << id;
        EXPECT_EQ(first.rfind("/* MySQL Trace File for " + actor + " on ", 0), 0u) << first;
    }
}

INSTANTIATE_TEST_SUITE_P(PerformanceSchema, MysqlModes, testing::Bool(),
                         [](const testing::TestParamInfo<bool> &info) {
                             return info.param ? std::string("pfs_on") : std::string("pfs_off");
                         });

}  // namespace
