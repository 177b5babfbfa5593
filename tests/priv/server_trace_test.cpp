// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server` against real throwaway servers of both flavours
// (MariaDB 10.11, MySQL 9.7; performance_schema OFF) and real libmariadb
// clients: the exact statements of a connection with their outcome, exact
// stages checked against the server's own SHOW PROFILE, the stages of every
// kind of command, --format profile, sampled stages, per-thread CPU,
// concurrency, and the filters.
#include <atomic>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/priv.h"
#include "priv/server_session.h"

namespace {

using namespace mysqltrace::test;
using nlohmann::json;

class ServerTrace : public ServerTraceTest {};

// A CPU-bound statement on both flavours (MySQL 9.7 has no md5() without a
// component; rand() defeats constant folding), and its digest.
const std::string kCpuBound = "select benchmark(1000000, crc32(concat('mysqltrace', rand())))";
const std::string kCpuBoundDigest = "select benchmark(?, crc32(concat(?, rand())))";

TEST_P(ServerTrace, ExactStatementsOfOneConnection) {
    unsigned long id = 0;
    ASSERT_NO_FATAL_FAILURE(traced_connection("off", statement_workload, &id));
    const auto evs = rows("statement", id);
    const auto want = expected_statements(flavour());
    expect_statements(evs, want, server_->pid());
    ASSERT_EQ(evs.size(), want.size());
    EXPECT_EQ(evs[9]["SQL_TEXT"], "select a from t where a >= 2");
    EXPECT_EQ(evs[9]["DIGEST_TEXT"], "select a from t where a >= ?");
}

TEST_P(ServerTrace, TextRowsAndTruncation) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    // --every-command: the Quit line below (MariaDB's COM_QUIT never
    // reaches log_slow_statement).
    auto tracer = start_server_tracer(
        *server_, {"--stages", "off", "--every-command", "--max-sql", "20", "--output", out_path_});
    std::string long_sql = "select '" + std::string(100, 'x') + "'";
    ASSERT_EQ(run_query(m, long_sql), 0u);
    EXPECT_EQ(run_query(m, "select nosuchcolumn"), 1054u);
    mysql_close(m);
    wait_gone(*server_, id);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;

    std::ifstream in(out_path_);
    std::vector<std::string> mine;
    std::string header;
    std::getline(in, header);
    EXPECT_EQ(header,
              "TIME            THREAD_ID   DURATION EVENT_NAME                      ROWS SQL_TEXT");
    bool error_line_follows = false;
    std::string line;
    while (std::getline(in, line) && !line.empty()) {  // the summaries follow an empty line
        if (error_line_follows) {
            mine.push_back(line);
            error_line_follows = false;
            continue;
        }
        // "HH:MM:SS.uuuuuu THREAD_ID DURATION" then the row; keep this connection's.
        std::istringstream fields(line.substr(16));
        unsigned long tid = 0;
        fields >> tid;
        if (tid == id) {
            mine.push_back(line.substr(37));
            error_line_follows = line.find("nosuchcolumn") != std::string::npos;
        }
    }
    ASSERT_EQ(mine.size(), 4u);
    EXPECT_EQ(mine[0], "statement/sql/select               1 select 'xxxxxxxxxxxx... (" +
                           std::to_string(long_sql.size()) + " bytes)");
    EXPECT_EQ(mine[1], "statement/sql/select               0 select nosuchcolumn");
    EXPECT_EQ(mine[2], "    ERROR 1054 (42S22): Unknown column 'nosuchcolumn' in " +
                           want().unknown_column_clause);
    EXPECT_EQ(mine[3], "statement/com/Quit                 0");
    // The errors summed by number.
    std::getline(in, line);
    EXPECT_EQ(line, "---- errors by number (events_errors_summary_global_by_error) ----");
    std::getline(in, line);
    std::getline(in, line);
    EXPECT_EQ(line.substr(0, 40), "        1054 42S22                    1 ") << line;
    EXPECT_TRUE(
        line.ends_with("  Unknown column 'nosuchcolumn' in " + want().unknown_column_clause))
        << line;
}

// The oracle: the server's own SHOW PROFILE for a statement, and the exact
// stages mysqltrace traced for the same statement, state for state.
TEST_P(ServerTrace, ExactStagesMatchShowProfile) {
    ASSERT_TRUE(server_
                    ->query("create database mt_db; create table mt_db.t (a int, b text); "
                            "insert into mt_db.t values (1, 'x'), (2, 'yy'), (3, 'zzz')")
                    .ok());
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    auto tracer = start_server_tracer(
        *server_, {"--stages", "exact", "--format", "json", "--output", out_path_});
    ASSERT_EQ(run_query(m, "set profiling = 1"), 0u);
    const std::vector<std::string> statements = {
        "select a from mt_db.t where b like 'y%'",
        "update mt_db.t set b = 'q' where a = 2",
        "select count(*) from mt_db.t group by b order by 1",
        "insert into mt_db.t select a + 10, b from mt_db.t",
    };
    for (const auto &s : statements) {
        ASSERT_EQ(run_query(m, s), 0u) << s;
    }
    std::vector<std::vector<std::string>> profiles;
    for (size_t q = 0; q < statements.size(); q++) {
        ASSERT_EQ(mysql_query(m, ("show profile for query " + std::to_string(q + 1)).c_str()), 0);
        MYSQL_RES *res = mysql_store_result(m);
        std::vector<std::string> states;
        while (MYSQL_ROW row = mysql_fetch_row(res)) {
            states.emplace_back(row[0]);
        }
        mysql_free_result(res);
        profiles.push_back(states);
    }
    mysql_close(m);
    wait_gone(*server_, id);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;

    auto stmts = rows("statement", id);
    auto stages = rows("stage", id);
    for (size_t q = 0; q < statements.size(); q++) {
        SCOPED_TRACE(statements[q]);
        const json *st = nullptr;
        for (const auto &s : stmts) {
            if (s["SQL_TEXT"] == statements[q]) {
                st = &s;
            }
        }
        ASSERT_NE(st, nullptr);
        std::vector<std::string> traced;
        for (const auto &s : stages) {
            if (s["NESTING_EVENT_ID"] == (*st)["EVENT_ID"]) {
                traced.push_back(s["EVENT_NAME"].get<std::string>().substr(strlen("stage/sql/")));
            }
        }
        // The listed differences: SHOW PROFILE may name the first state its
        // own way (MariaDB: "Starting", QUERY_PROFILE's opening entry;
        // performance_schema and mysqltrace call the stage "starting"), and
        // may cut names (MySQL: to 30 characters).
        ASSERT_FALSE(traced.empty());
        EXPECT_EQ(traced[0], "starting");
        traced[0] = want().profile_first_state;
        if (want().profile_state_width != 0) {
            for (auto &name : traced) {
                name = name.substr(0, want().profile_state_width);
            }
        }
        EXPECT_EQ(traced, profiles[q]);
        // Nested stages tile the statement exactly.
        uint64_t at = (*st)["TIMER_START"];
        for (const auto &s : stages) {
            if (s["NESTING_EVENT_ID"] == (*st)["EVENT_ID"]) {
                EXPECT_EQ(s["TIMER_START"], at);
                at = s["TIMER_END"];
            }
        }
        EXPECT_EQ(at, (*st)["TIMER_END"]);
    }
}

TEST_P(ServerTrace, ExactStagesOfEveryKindOfCommand) {
    create_table_t(*server_);
    unsigned long id = 0;
    ASSERT_NO_FATAL_FAILURE(traced_connection("exact", stage_workload, &id, "mt_db"));
    expect_command_stages(statements_with_stages(read_json_lines(out_path_), id));
}

// --format profile: SHOW PROFILE's table, the stages named as the server
// names them, each with its source.
TEST_P(ServerTrace, ProfileFormatNamesStagesAsTheServerDoes) {
    create_table_t(*server_);
    MYSQL *m = connect_to(*server_, 0, "mt_db");
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
    EXPECT_EQ(names, want().select_stages);
    EXPECT_EQ(names.empty() ? "" : names[0] + "@" + base_name(first_source), want().command_start);
}

TEST_P(ServerTrace, StageCpuIsPerThreadAndExact) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    auto tracer = start_server_tracer(
        *server_, {"--stages", "exact", "--format", "json", "--output", out_path_});
    ASSERT_EQ(run_query(m, kCpuBound), 0u);
    ASSERT_EQ(run_query(m, "select sleep(0.2)"), 0u);
    mysql_close(m);
    wait_gone(*server_, id);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;

    auto stages = rows("stage", id);
    auto stage_of = [&](const std::string &name) -> json {
        for (const auto &s : stages) {
            if (s["EVENT_NAME"] == name) {
                return s;
            }
        }
        return {};
    };
    const json exec = stage_of(want().executing_stage);
    ASSERT_FALSE(exec.is_null());
    const double exec_wait = exec["TIMER_WAIT"].get<double>();
    const double exec_cpu = exec["CPU_user"].get<double>() + exec["CPU_system"].get<double>();
    // A CPU-bound stage: its thread was on a CPU all the time it was not
    // preempted (a busy machine, e.g. tests run in parallel, preempts it;
    // a VM may also lose time to its host unseen).
    if (exec["Context_involuntary"].get<uint64_t>() == 0) {
        EXPECT_GT(exec_cpu, 0.8 * exec_wait) << exec.dump();
    } else {
        EXPECT_GT(exec_cpu, 0.25 * exec_wait) << exec.dump();
    }
    EXPECT_LE(exec_cpu, exec_wait) << exec.dump();

    const json sleep = stage_of("stage/sql/User sleep");
    ASSERT_FALSE(sleep.is_null());
    EXPECT_GE(sleep["TIMER_WAIT"].get<uint64_t>(), 200'000'000'000ull);  // ps
    EXPECT_LT(sleep["CPU_user"].get<uint64_t>() + sleep["CPU_system"].get<uint64_t>(),
              10'000'000'000ull)
        << sleep.dump();
    EXPECT_GE(sleep["Context_voluntary"].get<uint64_t>(), 1u);
}

TEST_P(ServerTrace, SampledStagesFindTheDominantStage) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    auto tracer = start_server_tracer(
        *server_, {"--format", "json", "--output", out_path_});  // sampled: default
    // One statement first: on the one-probe path the thread's first statement
    // since the attach has no samples (its THD is known from its end on).
    ASSERT_EQ(run_query(m, "select 0"), 0u);
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(run_query(m, "select sleep(0.3)"), 0u);
        ASSERT_EQ(run_query(m, kCpuBound), 0u);
    }
    mysql_close(m);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;

    std::map<std::string, json> by_digest;
    for (const auto &p : rows("stage_profile")) {
        by_digest[p["DIGEST_TEXT"]] = p;
    }
    ASSERT_TRUE(by_digest.count("select sleep(?)")) << r.err;
    ASSERT_TRUE(by_digest.count(kCpuBoundDigest)) << r.err;
    const json &sl = by_digest["select sleep(?)"];
    EXPECT_EQ(sl["COUNT_STAR"], 2);
    EXPECT_EQ(sl["stages"][0]["EVENT_NAME"], "stage/sql/User sleep") << sl.dump();
    EXPECT_GT(sl["stages"][0]["share"].get<double>(), 0.9) << sl.dump();
    EXPECT_GE(sl["stages"][0]["switches"].get<uint64_t>(), 2u) << sl.dump();
    const json &bm = by_digest[kCpuBoundDigest];
    EXPECT_EQ(bm["COUNT_STAR"], 2);
    EXPECT_EQ(bm["stages"][0]["EVENT_NAME"], want().executing_stage) << bm.dump();
    EXPECT_GT(bm["stages"][0]["share"].get<double>(), 0.9) << bm.dump();
    EXPECT_GT(bm["on_cpu_samples"].get<uint64_t>(), 50u) << bm.dump();
}

TEST_P(ServerTrace, ConcurrentConnectionsAttributedExactly) {
    constexpr int kConns = 8, kEach = 40;
    auto status = [&](const std::string &var) {
        auto rows = server_->query("show global status like '" + var + "'");
        EXPECT_TRUE(rows.ok());
        return std::stoull((*rows)[0][1]);
    };
    std::vector<MYSQL *> conns;
    std::vector<unsigned long> ids;
    for (int i = 0; i < kConns; i++) {
        conns.push_back(connect());
        ids.push_back(mysql_thread_id(conns.back()));
    }
    auto tracer = start_server_tracer(
        *server_, {"--stages", "exact", "--format", "json", "--output", out_path_});
    const uint64_t selects_before = status("Com_select");
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int i = 0; i < kConns; i++) {
        threads.emplace_back([&, i] {
            for (int k = 0; k < kEach; k++) {
                // Every connection runs its own statements, some long enough
                // to overlap the others'.
                const std::string sql =
                    k % 10 == 0
                        ? "select sleep(0.01), 'conn " + std::to_string(i) + "'"
                        : "select " + std::to_string(k) + ", 'conn " + std::to_string(i) + "'";
                failures += run_query(conns[i], sql) != 0;
            }
        });
    }
    for (auto &t : threads) {
        t.join();
    }
    const uint64_t selects = status("Com_select") - selects_before;
    for (MYSQL *m : conns) {
        mysql_close(m);
    }
    for (unsigned long id : ids) {
        wait_gone(*server_, id);
    }
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(failures, 0);
    EXPECT_NE(r.err.find(" 0 records dropped;"), std::string::npos) << r.err;

    EXPECT_EQ(selects, static_cast<uint64_t>(kConns * kEach));
    uint64_t traced_selects = 0;
    for (unsigned long id : ids) {
        for (const auto &s : rows("statement", id)) {
            traced_selects += s["EVENT_NAME"] == "statement/sql/select";
        }
    }
    EXPECT_EQ(traced_selects, selects);  // none lost, none invented
    for (int i = 0; i < kConns; i++) {
        auto mine = rows("statement", ids[i]);
        ASSERT_EQ(mine.size(), static_cast<size_t>(kEach + 1)) << "connection " << i;  // + Quit
        for (int k = 0; k < kEach; k++) {
            const std::string text = mine[k]["SQL_TEXT"];
            EXPECT_NE(text.find("'conn " + std::to_string(i) + "'"), std::string::npos) << text;
            EXPECT_EQ(mine[k]["ROWS_SENT"], 1);
        }
        // Each statement's stages are its own: nested, in order, inside it.
        for (const auto &s : rows("stage", ids[i])) {
            EXPECT_LT(s["NESTING_EVENT_ID"].get<uint64_t>(), s["EVENT_ID"].get<uint64_t>());
        }
    }
}

TEST_P(ServerTrace, FiltersByConnectionDurationSchemaAndUser) {
    MYSQL *a = connect();
    MYSQL *b = connect();
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    MYSQL *r = mysql_init(nullptr);  // root, over the socket
    ASSERT_NE(mysql_real_connect(r, nullptr, "root", nullptr, nullptr, 0,
                                 server_->socket_path().c_str(), 0),
              nullptr)
        << mysql_error(r);
    const unsigned long ida = mysql_thread_id(a), idb = mysql_thread_id(b),
                        idr = mysql_thread_id(r);
    ASSERT_EQ(mysql_select_db(b, "mysql"), 0);
    const std::string by_id = out_path_ + ".id", by_time = out_path_ + ".time",
                      by_db = out_path_ + ".db", by_user = out_path_ + ".user";
    auto t1 = start_server_tracer(*server_, {"--thread-id", std::to_string(ida), "--stages", "off",
                                             "--format", "json", "--output", by_id});
    auto t2 = start_server_tracer(
        *server_, {"--min-duration", "100", "--format", "json", "--output", by_time});
    auto t3 =
        start_server_tracer(*server_, {"--db", "mysql", "--format", "json", "--output", by_db});
    auto t4 =
        start_server_tracer(*server_, {"--user", "root", "--format", "json", "--output", by_user});
    ASSERT_EQ(run_query(a, "select 'a1'"), 0u);
    ASSERT_EQ(run_query(b, "select 'b1'"), 0u);
    ASSERT_EQ(run_query(r, "select 'r1'"), 0u);
    ASSERT_EQ(run_query(a, "select sleep(0.15), 'a2'"), 0u);
    ASSERT_EQ(run_query(b, "select 'b2'"), 0u);
    for (auto *t : {t1.get(), t2.get(), t3.get(), t4.get()}) {
        auto r = t->stop(SIGINT);
        EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    auto texts = [&](const std::string &path) {
        out_path_ = path;
        std::vector<std::string> v;
        for (const auto &s : rows("statement")) {
            if (s["THREAD_ID"] == ida || s["THREAD_ID"] == idb || s["THREAD_ID"] == idr) {
                v.push_back(s["SQL_TEXT"]);
            }
        }
        return v;
    };
    EXPECT_EQ(texts(by_id), (std::vector<std::string>{"select 'a1'", "select sleep(0.15), 'a2'"}));
    EXPECT_EQ(texts(by_time), (std::vector<std::string>{"select sleep(0.15), 'a2'"}));
    EXPECT_EQ(texts(by_db), (std::vector<std::string>{"select 'b1'", "select 'b2'"}));
    EXPECT_EQ(texts(by_user), (std::vector<std::string>{"select 'r1'"}));
    mysql_close(a);
    mysql_close(b);
    mysql_close(r);
}

TEST_P(ServerTrace, AccountsFilterAndNameTraceFiles) {
    create_table_t(*server_);
    ASSERT_TRUE(server_
                    ->query("CREATE USER 'mt_other'@'localhost' IDENTIFIED BY 'otherpw'; GRANT "
                            "SELECT ON mt_db.* TO 'mt_other'@'localhost'")
                    .ok());
    const std::string by_user = server_->root_dir() + "/by_user.json";
    const std::string dir = server_->root_dir() + "/files";
    auto filtered = start_server_tracer(
        *server_, {"--user", "mt_other", "--format", "json", "--output", by_user});
    auto files = start_server_tracer(*server_, {"--format", "pfs-sql", "--output", dir});
    MYSQL *mine = connect_to(*server_, 0, "mt_db");
    MYSQL *other = connect_to(*server_, 0, "mt_db", "mt_other", "otherpw");
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

INSTANTIATE_TEST_SUITE_P(Flavours, ServerTrace, ::testing::ValuesIn(all_flavours()),
                         flavour_param_name);

}  // namespace
