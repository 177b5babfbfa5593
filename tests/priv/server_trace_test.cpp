// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server` against a real throwaway mariadbd and real libmariadb
// clients: the exact statements of a connection with their outcome, exact
// stages checked against the server's own SHOW PROFILE, sampled stages,
// per-thread CPU, concurrency, and probes that come and go cleanly.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
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

using mysqltrace::test::BackgroundCommand;
using mysqltrace::test::connect_to;
using mysqltrace::test::MariadbServer;
using mysqltrace::test::read_json_lines;
using mysqltrace::test::run_command;
using mysqltrace::test::run_query;
using mysqltrace::test::start_server_tracer;
using mysqltrace::test::wait_gone;
using nlohmann::json;

class ServerTrace : public ::testing::Test {
  protected:
    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        auto s = MariadbServer::start();
        ASSERT_TRUE(s.ok()) << s.error().message;
        server_ = std::move(s).value();
        out_path_ = server_->root_dir() + "/trace.json";
    }

    MYSQL *connect(unsigned long flags = 0) { return connect_to(*server_, flags); }

    // The JSON rows of the trace of `kind`, of one connection (0: all).
    std::vector<json> rows(const std::string &kind, unsigned long thread_id = 0) {
        std::vector<json> evs;
        for (auto &j : read_json_lines(out_path_)) {
            if (j["kind"] == kind && (thread_id == 0 || j["THREAD_ID"] == thread_id)) {
                evs.push_back(std::move(j));
            }
        }
        return evs;
    }

    std::unique_ptr<MariadbServer> server_;
    std::string out_path_;
};

TEST_F(ServerTrace, ExactStatementsOfOneConnection) {
    MYSQL *m = connect(CLIENT_MULTI_STATEMENTS);
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    // --every-command: Init DB, Ping, Close stmt and Quit never reach
    // log_slow_statement on MariaDB (the one-probe path's sequence:
    // server_onepass_test.cpp).
    auto tracer = start_server_tracer(*server_, {"--stages", "off", "--every-command", "--format",
                                                 "json", "--output", out_path_});

    ASSERT_EQ(run_query(m, "select 1"), 0u);
    ASSERT_EQ(mysql_select_db(m, "mysql"), 0);
    ASSERT_EQ(mysql_ping(m), 0);
    EXPECT_EQ(run_query(m, "select 1;  select 2, 3;select * from no_such_table; select 4"), 1146u);
    ASSERT_EQ(run_query(m, "create database mt_db"), 0u);
    ASSERT_EQ(run_query(m, "create table mt_db.t (a int)"), 0u);
    ASSERT_EQ(run_query(m, "insert into mt_db.t values (1), (2), (3)"), 0u);
    ASSERT_EQ(run_query(m, "select a from mt_db.t where a >= 2"), 0u);
    MYSQL_STMT *st = mysql_stmt_init(m);
    const char *ps = "select ? + 1";
    ASSERT_EQ(mysql_stmt_prepare(st, ps, strlen(ps)), 0);
    int v = 41;
    MYSQL_BIND b{};
    b.buffer_type = MYSQL_TYPE_LONG;
    b.buffer = &v;
    ASSERT_EQ(mysql_stmt_bind_param(st, &b), 0);
    ASSERT_EQ(mysql_stmt_execute(st), 0);
    mysql_stmt_store_result(st);
    mysql_stmt_close(st);
    mysql_close(m);
    wait_gone(*server_, id);

    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; interrupted\n"), std::string::npos) << r.err;

    struct Want {
        std::string event_name;
        json sql;
        json schema;
        uint64_t rows_sent = 0, rows_affected = 0;
        unsigned err = 0;
    };
    const json null;
    const std::vector<Want> want = {
        {"statement/sql/select", "select 1", null, 1, 0, 0},
        {"statement/com/Init DB", "mysql", "mysql", 0, 0, 0},
        {"statement/com/Ping", null, "mysql", 0, 0, 0},
        {"statement/sql/select", "select 1", "mysql", 1, 0, 0},
        {"statement/sql/select", "select 2, 3", "mysql", 1, 0, 0},
        {"statement/sql/select", "select * from no_such_table", "mysql", 0, 0, 1146},
        {"statement/sql/create_db", "create database mt_db", "mysql", 0, 1, 0},
        {"statement/sql/create_table", "create table mt_db.t (a int)", "mysql", 0, 0, 0},
        {"statement/sql/insert", "insert into mt_db.t values (1), (2), (3)", "mysql", 0, 3, 0},
        {"statement/sql/select", "select a from mt_db.t where a >= 2", "mysql", 2, 0, 0},
        {"statement/com/Prepare", "select ? + 1", "mysql", 0, 0, 0},
        {"statement/com/Execute", "select ? + 1", "mysql", 1, 0, 0},
        {"statement/com/Close stmt", null, "mysql", 0, 0, 0},
        {"statement/com/Quit", null, "mysql", 0, 0, 0},
    };
    auto evs = rows("statement", id);
    ASSERT_EQ(evs.size(), want.size()) << r.err;
    uint64_t last_end = 0;
    for (size_t i = 0; i < want.size(); i++) {
        const auto &e = evs[i];
        SCOPED_TRACE("statement " + std::to_string(i) + ": " + e.dump());
        EXPECT_EQ(e["EVENT_NAME"], want[i].event_name);
        EXPECT_EQ(e["SQL_TEXT"], want[i].sql);
        EXPECT_EQ(e["CURRENT_SCHEMA"], want[i].schema);
        EXPECT_EQ(e["ROWS_SENT"], want[i].rows_sent);
        EXPECT_EQ(e["ROWS_AFFECTED"], want[i].rows_affected);
        EXPECT_EQ(e["MYSQL_ERRNO"], want[i].err);
        EXPECT_EQ(e["ERRORS"], want[i].err ? 1 : 0);
        EXPECT_EQ(e["pid"], server_->pid());
        // Event ids run on per connection; a statement ends where the next begins.
        EXPECT_EQ(e["EVENT_ID"], i + 1);
        EXPECT_EQ(e["END_EVENT_ID"], i + 2);
        EXPECT_GE(e["TIMER_START"].get<uint64_t>(), last_end);
        EXPECT_EQ(e["TIMER_WAIT"].get<uint64_t>(),
                  e["TIMER_END"].get<uint64_t>() - e["TIMER_START"].get<uint64_t>());
        last_end = e["TIMER_END"];
    }
    EXPECT_EQ(evs[5]["RETURNED_SQLSTATE"], "42S02");
    EXPECT_EQ(evs[5]["MESSAGE_TEXT"], "Table 'mysql.no_such_table' doesn't exist");
    EXPECT_TRUE(evs[4]["RETURNED_SQLSTATE"].is_null());
    EXPECT_EQ(evs[9]["ROWS_EXAMINED"], 3);
    EXPECT_EQ(evs[9]["DIGEST_TEXT"], "select a from mt_db.t where a >= ?");
}

TEST_F(ServerTrace, TextRowsAndTruncation) {
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
    for (std::string line; std::getline(in, line);) {
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
    EXPECT_EQ(mine[2], "    ERROR 1054 (42S22): Unknown column 'nosuchcolumn' in 'SELECT'");
    EXPECT_EQ(mine[3], "statement/com/Quit                 0");
}

// The oracle: the server's own SHOW PROFILE for a statement, and the exact
// stages mysqltrace traced for the same statement, state for state.
TEST_F(ServerTrace, ExactStagesMatchShowProfile) {
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
        // The one listed difference: SHOW PROFILE names the first state
        // "Starting" (QUERY_PROFILE's own opening entry); performance_schema
        // and mysqltrace call the stage "starting".
        ASSERT_FALSE(traced.empty());
        EXPECT_EQ(traced[0], "starting");
        traced[0] = "Starting";
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

TEST_F(ServerTrace, StageCpuIsPerThreadAndExact) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    auto tracer = start_server_tracer(
        *server_, {"--stages", "exact", "--format", "json", "--output", out_path_});
    ASSERT_EQ(run_query(m, "select benchmark(2000000, md5('mysqltrace'))"), 0u);
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
    const json exec = stage_of("stage/sql/Executing");
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

TEST_F(ServerTrace, SampledStagesFindTheDominantStage) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    auto tracer = start_server_tracer(
        *server_, {"--format", "json", "--output", out_path_});  // sampled: default
    // One statement first: on the one-probe path the thread's first statement
    // since the attach has no samples (its THD is known from its end on).
    ASSERT_EQ(run_query(m, "select 0"), 0u);
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(run_query(m, "select sleep(0.3)"), 0u);
        ASSERT_EQ(run_query(m, "select benchmark(1500000, md5('mysqltrace'))"), 0u);
    }
    mysql_close(m);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;

    std::map<std::string, json> by_digest;
    for (const auto &p : rows("stage_profile")) {
        by_digest[p["DIGEST_TEXT"]] = p;
    }
    ASSERT_TRUE(by_digest.count("select sleep(?)")) << r.err;
    ASSERT_TRUE(by_digest.count("select benchmark(?, md5(?))")) << r.err;
    const json &sl = by_digest["select sleep(?)"];
    EXPECT_EQ(sl["COUNT_STAR"], 2);
    EXPECT_EQ(sl["stages"][0]["EVENT_NAME"], "stage/sql/User sleep") << sl.dump();
    EXPECT_GT(sl["stages"][0]["share"].get<double>(), 0.9) << sl.dump();
    EXPECT_GE(sl["stages"][0]["switches"].get<uint64_t>(), 2u) << sl.dump();
    const json &bm = by_digest["select benchmark(?, md5(?))"];
    EXPECT_EQ(bm["COUNT_STAR"], 2);
    EXPECT_EQ(bm["stages"][0]["EVENT_NAME"], "stage/sql/Executing") << bm.dump();
    EXPECT_GT(bm["stages"][0]["share"].get<double>(), 0.9) << bm.dump();
    EXPECT_GT(bm["on_cpu_samples"].get<uint64_t>(), 50u) << bm.dump();
}

TEST_F(ServerTrace, ConcurrentConnectionsAttributedExactly) {
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

// BPF links a process holds open: each attached probe or probe group.
size_t bpf_link_fds(pid_t pid) {
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    size_t n = 0;
    if (DIR *d = opendir(dir.c_str())) {
        while (dirent *e = readdir(d)) {
            char target[256] = {};
            const std::string p = dir + "/" + e->d_name;
            if (readlink(p.c_str(), target, sizeof(target) - 1) > 0 &&
                std::string(target) == "anon_inode:bpf_link") {
                n++;
            }
        }
        closedir(d);
    }
    return n;
}

TEST_F(ServerTrace, MaxStatementsDetachesStageProbes) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    auto tracer = start_server_tracer(*server_, {"--stages", "exact", "--max-statements", "3",
                                                 "--format", "json", "--output", out_path_});
    const size_t links_before = bpf_link_fds(tracer->pid());
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(run_query(m, "select " + std::to_string(i)), 0u);
    }
    ASSERT_TRUE(tracer->wait_for_stderr("exact stage probes detached after 3 statements"));
    const size_t links_after = bpf_link_fds(tracer->pid());
    for (int i = 3; i < 6; i++) {
        ASSERT_EQ(run_query(m, "select " + std::to_string(i)), 0u);
    }
    mysql_close(m);
    wait_gone(*server_, id);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    // The stage sites' link is gone; the statement probes remain.
    EXPECT_EQ(links_after, links_before - 1) << r.err;
    EXPECT_NE(r.err.find("tracing statements only (5 probes)"), std::string::npos) << r.err;
    auto stmts = rows("statement", id);
    ASSERT_EQ(stmts.size(), 7u);
    std::map<uint64_t, int> stages_of;
    for (const auto &s : rows("stage", id)) {
        stages_of[s["NESTING_EVENT_ID"]]++;
    }
    for (int i = 0; i < 3; i++) {
        EXPECT_GT(stages_of[stmts[i]["EVENT_ID"]], 5) << i;
    }
    for (int i = 3; i < 7; i++) {
        EXPECT_EQ(stmts[i]["SQL_TEXT"], i < 6 ? json("select " + std::to_string(i)) : json());
        EXPECT_EQ(stages_of[stmts[i]["EVENT_ID"]], 0) << i;
    }
}

// The BPF programs a process holds, by id (its fds' fdinfo say).
std::set<uint64_t> bpf_programs_of(pid_t pid) {
    std::set<uint64_t> ids;
    const std::string dir = "/proc/" + std::to_string(pid) + "/fdinfo";
    if (DIR *d = opendir(dir.c_str())) {
        while (dirent *e = readdir(d)) {
            std::ifstream in(dir + "/" + e->d_name);
            for (std::string line; std::getline(in, line);) {
                if (line.rfind("prog_id:", 0) == 0) {
                    ids.insert(std::stoull(line.substr(8)));
                }
            }
        }
        closedir(d);
    }
    return ids;
}

// Programs of `ids` the kernel still has loaded.
size_t still_loaded(const std::set<uint64_t> &ids) {
    size_t n = 0;
    for (uint64_t id : ids) {
        n += run_command({"/usr/sbin/bpftool", "prog", "show", "id", std::to_string(id)})
                 .exit_code == 0;
    }
    return n;
}

TEST_F(ServerTrace, AttachDetachUnderLoadLeavesTheServerHealthy) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0}, done{0};
    std::thread load([&] {
        MYSQL *l = connect();
        while (!stop) {
            failures += run_query(l, "select count(*) from information_schema.PROCESSLIST") != 0;
            done++;
        }
        mysql_close(l);
    });
    for (const char *mode : {"exact", "sampled", "off", "exact"}) {
        auto tracer = start_server_tracer(*server_, {"--stages", mode, "--output", "/dev/null"});
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        auto r = tracer->stop(SIGINT);
        EXPECT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    }
    // A tracer killed outright: the kernel drops its probes with it.
    auto killed = start_server_tracer(*server_, {"--stages", "exact", "--output", "/dev/null"});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto ids = bpf_programs_of(killed->pid());
    EXPECT_GT(ids.size(), 5u);
    EXPECT_EQ(still_loaded(ids), ids.size());
    killed->stop(SIGKILL);
    for (int i = 0; i < 100 && still_loaded(ids) != 0; i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(still_loaded(ids), 0u);
    stop = true;
    load.join();
    EXPECT_EQ(failures, 0);
    EXPECT_GT(done, 0);
    EXPECT_EQ(run_query(m, "select 1"), 0u);
    mysql_close(m);
}

TEST_F(ServerTrace, FiltersByConnectionDurationSchemaAndUser) {
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

// Builds without the end-of-command stage site end statements with a return
// probe on dispatch_command; forced here on the tested build.
TEST_F(ServerTrace, ReturnProbeEndsStatementsWhenTheSiteIsMissing) {
    MYSQL *m = connect(CLIENT_MULTI_STATEMENTS);
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    BackgroundCommand tracer({"/usr/bin/env", "MYSQLTRACE_SERVER_END=return", MYSQLTRACE_BINARY,
                              "server", "--pid", std::to_string(server_->pid()), "--every-command",
                              "--format", "json", "--output", out_path_});
    ASSERT_TRUE(tracer.wait_for_stderr("Ctrl-C to stop"));
    ASSERT_EQ(run_query(m, "select 1; select 2"), 0u);
    EXPECT_EQ(run_query(m, "select * from mysql.no_such_table"), 1146u);
    mysql_close(m);
    wait_gone(*server_, id);
    auto r = tracer.stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("a return probe on dispatch_command ends statements"), std::string::npos)
        << r.err;
    auto evs = rows("statement", id);
    ASSERT_EQ(evs.size(), 4u);
    EXPECT_EQ(evs[0]["SQL_TEXT"], "select 1");
    EXPECT_EQ(evs[1]["SQL_TEXT"], "select 2");
    EXPECT_EQ(evs[1]["ROWS_SENT"], 1);
    EXPECT_EQ(evs[2]["MYSQL_ERRNO"], 1146);
    EXPECT_EQ(evs[3]["EVENT_NAME"], "statement/com/Quit");
    for (const auto &e : evs) {
        EXPECT_FALSE(e.contains("end")) << e.dump();  // each one's end was seen
    }
}

// The wait events of the statement with this text, and the statement.
std::vector<json> waits_of(const std::vector<json> &all, const std::string &sql, json *stmt) {
    for (const auto &e : all) {
        if (e["kind"] == "statement" && e["SQL_TEXT"] == sql) {
            *stmt = e;
        }
    }
    std::set<uint64_t> ids;  // the statement and its stages
    if (!stmt->is_null()) {
        ids.insert((*stmt)["EVENT_ID"].get<uint64_t>());
    }
    std::vector<json> out;
    for (const auto &e : all) {
        if (stmt->is_null() || e["THREAD_ID"] != (*stmt)["THREAD_ID"]) {
            continue;
        }
        if (e["kind"] == "stage" && ids.count(e["NESTING_EVENT_ID"].get<uint64_t>())) {
            ids.insert(e["EVENT_ID"].get<uint64_t>());
        }
        if (e["kind"] == "wait" && !e["NESTING_EVENT_ID"].is_null() &&
            ids.count(e["NESTING_EVENT_ID"].get<uint64_t>())) {
            out.push_back(e);
        }
    }
    return out;
}

TEST_F(ServerTrace, WaitsOfLocksFilesSocketsAndIdleTime) {
    ASSERT_TRUE(server_
                    ->query("create database mt_db; create table mt_db.t (a int primary key, "
                            "b text) engine=InnoDB; insert into mt_db.t values (1, 'x')")
                    .ok());
    MYSQL *holder = connect();
    MYSQL *waiter = connect();
    ASSERT_NE(holder, nullptr);
    ASSERT_NE(waiter, nullptr);
    auto tracer = start_server_tracer(
        *server_, {"--waits", "--stages", "exact", "--format", "json", "--output", out_path_});
    // Uncontended statements: no synchronisation waits.
    for (int i = 0; i < 20; i++) {
        ASSERT_EQ(run_query(waiter, "select b from mt_db.t where a = 1"), 0u);
    }
    // A table lock held for 300 ms: the other connection's select waits.
    ASSERT_EQ(run_query(holder, "lock tables mt_db.t write"), 0u);
    std::thread blocked([&] { EXPECT_EQ(run_query(waiter, "select count(*) from mt_db.t"), 0u); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_EQ(run_query(holder, "unlock tables"), 0u);
    blocked.join();
    // A commit: InnoDB writes and syncs its log in the committing thread.
    ASSERT_EQ(run_query(waiter, "insert into mt_db.t values (2, repeat('y', 5000))"), 0u);
    // 200 ms of the client thinking: the server thread is idle.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(run_query(waiter, "select 'after idle'"), 0u);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped;"), std::string::npos) << r.err;

    const std::vector<json> all = read_json_lines(out_path_);
    json st;
    for (const auto &w : waits_of(all, "select b from mt_db.t where a = 1", &st)) {
        EXPECT_NE(w["EVENT_NAME"].get<std::string>().rfind("wait/synch/", 0), 0u) << w.dump();
    }
    ASSERT_FALSE(st.is_null());

    json blocked_st;
    auto lock_waits = waits_of(all, "select count(*) from mt_db.t", &blocked_st);
    ASSERT_FALSE(blocked_st.is_null());
    const json *lock = nullptr;
    for (const auto &w : lock_waits) {
        if (w["EVENT_NAME"].get<std::string>().rfind("wait/synch/cond/sql/", 0) == 0 &&
            w["TIMER_WAIT"].get<uint64_t>() > 200'000'000'000ull) {
            lock = &w;
        }
    }
    ASSERT_NE(lock, nullptr) << blocked_st.dump();
    EXPECT_EQ((*lock)["OPERATION"], "timed_wait");
    EXPECT_LE((*lock)["TIMER_WAIT"].get<uint64_t>(), blocked_st["TIMER_WAIT"].get<uint64_t>());
    EXPECT_GT((*lock)["OBJECT_INSTANCE_BEGIN"].get<uint64_t>(), 0u);
    // It nests in the stage the statement was waiting in.
    EXPECT_EQ((*lock)["NESTING_EVENT_TYPE"], "STAGE");
    for (const auto &e : all) {
        if (e["kind"] == "stage" && e["EVENT_ID"] == (*lock)["NESTING_EVENT_ID"] &&
            e["THREAD_ID"] == blocked_st["THREAD_ID"]) {
            EXPECT_EQ(e["EVENT_NAME"], "stage/sql/Waiting for table metadata lock");
        }
    }

    json insert_st;
    bool log_sync = false;
    uint64_t log_written = 0;
    for (const auto &w :
         waits_of(all, "insert into mt_db.t values (2, repeat('y', 5000))", &insert_st)) {
        if (w["EVENT_NAME"] == "wait/io/file/innodb/innodb_log_file") {
            EXPECT_NE(w["OBJECT_NAME"].get<std::string>().find("ib_logfile"), std::string::npos);
            EXPECT_EQ(w["OBJECT_TYPE"], "FILE");
            log_sync |= w["OPERATION"] == "sync";
            if (w["OPERATION"] == "write") {
                log_written += w["NUMBER_OF_BYTES"].get<uint64_t>();
            }
        }
    }
    ASSERT_FALSE(insert_st.is_null());
    EXPECT_TRUE(log_sync);
    // The row's redo, in one write or in several (InnoDB writes whole log
    // blocks and may split them at 4 KiB): at least one whole 4 KiB write of
    // its own; the rest may go out in another thread's group commit when the
    // machine is busy (seen with the suite running in parallel: 4096 bytes).
    EXPECT_GE(log_written, 4096u);

    // The reply of a statement goes out in it; the time before the next
    // command is idle, outside any statement.
    json last;
    bool sent = false;
    for (const auto &w : waits_of(all, "select 'after idle'", &last)) {
        if (w["EVENT_NAME"] == "wait/io/socket/sql/client_connection" && w["OPERATION"] == "send") {
            sent = true;
            EXPECT_GT(w["NUMBER_OF_BYTES"].get<uint64_t>(), 0u);
        }
    }
    EXPECT_TRUE(sent) << last.dump();
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
    // The summary: one row per event name.
    std::map<std::string, uint64_t> counted;
    for (const auto &e : all) {
        if (e["kind"] == "wait") {
            counted[e["EVENT_NAME"]]++;
        }
    }
    size_t summaries = 0;
    for (const auto &e : all) {
        if (e["kind"] == "wait_summary") {
            summaries++;
            EXPECT_EQ(e["COUNT_STAR"], counted[e["EVENT_NAME"]]) << e.dump();
        }
    }
    EXPECT_EQ(summaries, counted.size());
    mysql_close(holder);
    mysql_close(waiter);
}

// --table-io: each row a statement reads or writes through the handler is
// one wait/io/table/sql/handler wait, nested in its statement.
TEST_F(ServerTrace, TableIoRowsAsHandlerWaits) {
    ASSERT_TRUE(server_
                    ->query("create database mt_db; create table mt_db.t (a int primary key, "
                            "b varchar(20), key (b)) engine=InnoDB; "
                            "insert into mt_db.t values (1, 'x'), (2, 'y'), (3, 'z')")
                    .ok());
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    auto tracer = start_server_tracer(
        *server_, {"--table-io", "--stages", "off", "--format", "json", "--output", out_path_});
    const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
        {"select * from mt_db.t where a = 2", {"fetch"}},
        // Three rows, then the end of the table.
        {"select * from mt_db.t", {"fetch", "fetch", "fetch", "fetch"}},
        {"insert into mt_db.t values (4, 'w')", {"insert"}},
        {"update mt_db.t set b = 'q' where a = 1", {"fetch", "update"}},
        {"delete from mt_db.t where a = 3", {"fetch", "delete"}},
        // An index range: its first row, the next two, the end of the range.
        {"select count(*) from mt_db.t where b > 'a'", {"fetch", "fetch", "fetch", "fetch"}},
    };
    for (const auto &[sql, ops] : expected) {
        ASSERT_EQ(run_query(m, sql), 0u) << sql;
    }
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 14 waits, 0 records dropped;"), std::string::npos) << r.err;
    mysql_close(m);

    const std::vector<json> all = read_json_lines(out_path_);
    size_t rows = 0;
    for (const auto &[sql, ops] : expected) {
        json st;
        std::vector<std::string> seen;
        uint64_t waited = 0;
        for (const auto &w : waits_of(all, sql, &st)) {
            EXPECT_EQ(w["EVENT_NAME"], "wait/io/table/sql/handler") << w.dump();
            EXPECT_EQ(w["OBJECT_SCHEMA"], "mt_db") << w.dump();
            EXPECT_EQ(w["OBJECT_NAME"], "t") << w.dump();
            EXPECT_EQ(w["OBJECT_TYPE"], "TABLE") << w.dump();
            EXPECT_GT(w["OBJECT_INSTANCE_BEGIN"].get<uint64_t>(), 0u) << w.dump();
            EXPECT_EQ(w["NESTING_EVENT_TYPE"], "STATEMENT") << w.dump();
            EXPECT_TRUE(w["NUMBER_OF_BYTES"].is_null()) << w.dump();
            EXPECT_GE(w["TIMER_START"].get<uint64_t>(), st["TIMER_START"].get<uint64_t>());
            EXPECT_LE(w["TIMER_END"].get<uint64_t>(), st["TIMER_END"].get<uint64_t>());
            waited += w["TIMER_WAIT"].get<uint64_t>();
            seen.push_back(w["OPERATION"]);
        }
        ASSERT_FALSE(st.is_null()) << sql;
        EXPECT_EQ(seen, ops) << sql;
        EXPECT_LE(waited, st["TIMER_WAIT"].get<uint64_t>()) << sql;
        rows += ops.size();
    }
    EXPECT_EQ(rows, 14u);
    bool summarised = false;
    for (const auto &e : all) {
        if (e["kind"] == "wait_summary" && e["EVENT_NAME"] == "wait/io/table/sql/handler") {
            EXPECT_EQ(e["COUNT_STAR"], rows);
            summarised = true;
        }
    }
    EXPECT_TRUE(summarised);
}

// Under load, two records per statement of mixed sizes (the statement and its
// row): the rings must wake the reader in time, so nothing is dropped and
// every row is there.
TEST_F(ServerTrace, TableIoUnderLoadLosesNothing) {
    ASSERT_TRUE(server_->query("create database if not exists sbtest").ok());
    const std::vector<std::string> common = server_->sysbench_point_select(1000);
    auto prep = common;
    prep.push_back("prepare");
    auto p = run_command(prep);
    ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
    auto tracer = start_server_tracer(
        *server_, {"--table-io", "--stages", "off", "--format", "json", "--output", out_path_});
    constexpr int kEvents = 20000;
    auto run = common;
    for (const char *a : {"--threads=2", "--events=20000", "--time=0", "run"}) {
        run.push_back(a);
    }
    auto sb = run_command(run);
    ASSERT_EQ(sb.exit_code, 0) << sb.err;
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped;"), std::string::npos) << r.err;
    long fetches = 0, selects = 0;
    for (const auto &e : rows("wait")) {
        if (e["OBJECT_NAME"] == "sbtest1" && e["OPERATION"] == "fetch") {
            fetches++;
        }
    }
    for (const auto &e : rows("statement")) {
        if (e["EVENT_NAME"] == "statement/com/Execute" &&
            e["SQL_TEXT"] == "SELECT c FROM sbtest1 WHERE id=?") {
            selects++;
        }
    }
    // One primary key lookup per point select.
    EXPECT_EQ(selects, kEvents);
    EXPECT_EQ(fetches, kEvents);
}

// WL#4878 trace files, merged and loaded into an ordinary database with
// share/schema.sql, agree with mysqltrace's own summary.
TEST_F(ServerTrace, TraceFilesLoadAndMatchTheSummary) {
    const std::string dir = server_->root_dir() + "/tracefiles";
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    auto tracer = start_server_tracer(
        *server_, {"--waits", "--stages", "exact", "--format", "pfs-sql", "--output", dir});
    ASSERT_EQ(run_query(m, "create database mt_db"), 0u);
    ASSERT_EQ(run_query(m, "create table mt_db.t (a int primary key, b text) engine=InnoDB"), 0u);
    ASSERT_EQ(run_query(m, "insert into mt_db.t values (1, 'it''s \\\\ a \"test\"')"), 0u);
    ASSERT_EQ(run_query(m, "select * from mt_db.t"), 0u);
    EXPECT_EQ(run_query(m, "select * from mt_db.nosuch"), 1146u);
    auto r = tracer->stop(SIGINT);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    mysql_close(m);
    // WL#4878 names each file by the connection's account; the header says it too.
    const std::string actor = server_->user() + "@localhost";
    std::ifstream own(dir + "/thread." + actor + "." + std::to_string(id));
    std::string first;
    ASSERT_TRUE(std::getline(own, first)) << "no trace file thread." << actor << "." << id;
    EXPECT_EQ(first.rfind("/* MySQL Trace File for " + actor + " on ", 0), 0u) << first;

    const std::string merged = server_->root_dir() + "/merged.sql";
    auto files = run_command({"/bin/sh", "-c", "ls " + dir + "/thread.*"});
    std::vector<std::string> argv = {MYSQLTRACE_BINARY, "merge", "--output", merged};
    std::istringstream names(files.out);
    for (std::string f; names >> f;) {
        argv.push_back(f);
    }
    ASSERT_GT(argv.size(), 4u);
    auto mr = run_command(argv);
    ASSERT_EQ(mr.exit_code, 0) << mr.err;

    ASSERT_TRUE(server_->query("create database mt_trace").ok());
    const std::string client = "mariadb --no-defaults -S " + server_->socket_path() + " -u" +
                               server_->user() + " -p" + server_->password() + " mt_trace";
    auto load = run_command(
        {"/bin/sh", "-c",
         client + " < " MYSQLTRACE_SOURCE_DIR "/share/schema.sql && " + client + " < " + merged});
    ASSERT_EQ(load.exit_code, 0) << load.err;

    // The summary printed at the end: "EVENT_NAME COUNT_STAR ..." rows.
    std::map<std::string, uint64_t> summary;
    std::istringstream out(r.out);
    bool in_waits = false;
    for (std::string line; std::getline(out, line);) {
        if (line.rfind("---- waits by event name", 0) == 0) {
            in_waits = true;
            std::getline(out, line);  // column titles
            continue;
        }
        if (in_waits && line.rfind("----", 0) == 0) {
            in_waits = false;
        }
        if (in_waits && !line.empty()) {
            std::istringstream f(line);
            std::string name;
            uint64_t n = 0;
            f >> name >> n;
            summary[name] = n;
        }
    }
    ASSERT_FALSE(summary.empty()) << r.out;
    auto loaded = server_->query(
        "select EVENT_NAME, COUNT(*) from mt_trace.events_waits_current "
        "where TIMER_END is not null group by EVENT_NAME");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    std::map<std::string, uint64_t> from_db;
    for (const auto &row : *loaded) {
        from_db[row[0]] = std::stoull(row[1]);
    }
    EXPECT_EQ(from_db, summary);
    auto err = server_->query(
        "select MYSQL_ERRNO, RETURNED_SQLSTATE from mt_trace.events_statements_current "
        "where SQL_TEXT = 'select * from mt_db.nosuch' and TIMER_END is not null");
    ASSERT_TRUE(err.ok());
    ASSERT_EQ(err->size(), 1u);
    EXPECT_EQ((*err)[0][0], "1146");
    EXPECT_EQ((*err)[0][1], "42S02");
    auto text = server_->query(
        "select count(*) from mt_trace.events_statements_current where SQL_TEXT = "
        "'insert into mt_db.t values (1, ''it''''s \\\\\\\\ a \"test\"'')'");
    ASSERT_TRUE(text.ok());
    EXPECT_EQ((*text)[0][0], "2");  // its start row and its end row, text intact
}

// WL#4878: a full disk stops the output that cannot be written, with one
// message naming it; the trace, its other outputs and the server go on.
TEST_F(ServerTrace, FullFilesystemStopsOnlyThatOutput) {
    const std::string dir = server_->root_dir() + "/full";
    ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
    auto mounted = run_command({"/bin/mount", "-t", "tmpfs", "-o", "size=16k", "mt-full", dir});
    ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
    struct Unmount {
        std::string dir;
        ~Unmount() { run_command({"/bin/umount", "-l", dir}); }
    } unmount{dir};
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    const std::string text_file = dir + "/trace.txt";
    auto files = start_server_tracer(*server_, {"--format", "pfs-sql", "--output", dir + "/files"});
    auto text =
        start_server_tracer(*server_, {"--thread-id", std::to_string(id), "--output", text_file});
    constexpr int kStatements = 400;  // ~100 KiB of trace file rows, ~40 KiB of text
    for (int i = 0; i < kStatements; i++) {
        ASSERT_EQ(run_query(m, "select repeat('x', 60), " + std::to_string(i)), 0u);
    }
    auto rf = files->stop(SIGINT);
    auto rt = text->stop(SIGINT);
    EXPECT_EQ(rf.exit_code, 0) << rf.err;
    EXPECT_EQ(rt.exit_code, 0) << rt.err;
    const std::string own =
        dir + "/files/thread." + server_->user() + "@localhost." + std::to_string(id);
    EXPECT_NE(rf.err.find("mysqltrace: " + own +
                          ": No space left on device: trace of this thread stopped"),
              std::string::npos)
        << rf.err;
    EXPECT_NE(rt.err.find("mysqltrace: writing " + text_file +
                          " failed: No space left on device; this output is disabled"),
              std::string::npos)
        << rt.err;
    // Every statement was still traced, and the summary on stdout is whole.
    EXPECT_NE(rf.out.find("# statement/sql/select x" + std::to_string(kStatements) + ","),
              std::string::npos)
        << rf.out;
    EXPECT_NE(rt.err.find("mysqltrace: " + std::to_string(kStatements) + " statements"),
              std::string::npos)
        << rt.err;
    // The server never noticed.
    EXPECT_EQ(run_query(m, "select 1"), 0u);
    mysql_close(m);
}

TEST_F(ServerTrace, EventsArriveWhileTracing) {
    // Records must reach the output during the trace, not only when it ends
    // (producers batch their wakeups; the reader must still drain).
    auto tracer = start_server_tracer(*server_, {"--output", out_path_});
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(run_query(m, "select 'live-marker'"), 0u);
    bool seen = false;
    for (int i = 0; i < 100 && !seen; i++) {
        std::ifstream in(out_path_);
        std::stringstream ss;
        ss << in.rdbuf();
        seen = ss.str().find("select 'live-marker'") != std::string::npos;
        if (!seen) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    EXPECT_TRUE(seen) << "the statement did not reach the output within 5 s";
    mysql_close(m);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(ServerTrace, EndsCleanlyWhenTheServerExits) {
    auto tracer = start_server_tracer(*server_, {"--output", out_path_ + ".txt"});
    ASSERT_TRUE(server_->stop().ok());
    auto r = tracer->wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("; traced process exited\n"), std::string::npos) << r.err;
}

// --reader-nice: the thread that reads the rings runs at that nice value
// (field 19 of /proc/PID/task/TID/stat), the traced server at its own.
TEST_F(ServerTrace, ReaderNiceSetsTheReadersPriorityOnly) {
    auto nice_of = [](pid_t pid) {
        std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/stat");
        std::string stat;
        std::getline(in, stat);
        // Fields after the command name, which is in parentheses.
        std::istringstream rest(stat.substr(stat.rfind(')') + 2));
        std::string field;
        for (int i = 3; i <= 19 && rest >> field; i++) {
        }
        return std::stoi(field);
    };
    auto tracer = start_server_tracer(*server_, {"--reader-nice", "-7", "--output", out_path_});
    int nice = 0;
    for (int i = 0; i < 100 && nice != -7; i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        nice = nice_of(tracer->pid());
    }
    EXPECT_EQ(nice, -7);
    EXPECT_EQ(nice_of(server_->pid()), 0);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;

    auto bad = run_command({MYSQLTRACE_BINARY, "server", "--pid", std::to_string(server_->pid()),
                            "--reader-nice", "25"});
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
    EXPECT_NE(bad.err.find("--reader-nice"), std::string::npos) << bad.err;
}

TEST_F(ServerTrace, DurationStops) {
    auto tracer = start_server_tracer(*server_, {"--duration", "0.5", "--output", out_path_});
    auto r = tracer->wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("mysqltrace: 0 statements, 0 records dropped; duration reached\n"),
              std::string::npos)
        << r.err;
}

TEST(ServerTraceErrors, OneClearLine) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto nopid = run_command({MYSQLTRACE_BINARY, "server", "--pid", "999999999"});
    EXPECT_EQ(nopid.exit_code, 1);
    EXPECT_EQ(nopid.err, "mysqltrace: no such process: 999999999\n");
    BackgroundCommand sleeper({"/bin/sleep", "30"});
    auto notdb = run_command({MYSQLTRACE_BINARY, "server", "--pid", std::to_string(sleeper.pid())});
    EXPECT_EQ(notdb.exit_code, 1);
    EXPECT_EQ(notdb.err, "mysqltrace: pid " + std::to_string(sleeper.pid()) +
                             " is not a MySQL/MariaDB server (no dispatch_command symbol)\n");
}

}  // namespace
