// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server` against a real throwaway mariadbd and a real libmariadb
// client: the exact commands of one connection, in order, and clean stops.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/priv.h"

namespace {

using mysqltrace::test::BackgroundCommand;
using mysqltrace::test::MariadbServer;
using mysqltrace::test::run_command;

class ServerTrace : public ::testing::Test {
  protected:
    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        auto s = MariadbServer::start();
        ASSERT_TRUE(s.ok()) << s.error().message;
        server_ = std::move(s).value();
        out_path_ = server_->root_dir() + "/trace.json";
    }

    MYSQL *connect() {
        MYSQL *m = mysql_init(nullptr);
        EXPECT_NE(
            mysql_real_connect(m, nullptr, server_->user().c_str(), server_->password().c_str(),
                               nullptr, 0, server_->socket_path().c_str(), 0),
            nullptr)
            << mysql_error(m);
        return m;
    }

    // Returns once the server has finished with connection `id` (its COM_QUIT
    // has been dispatched), so the trace holds everything it did.
    void wait_gone(unsigned long id) {
        for (int i = 0; i < 200; i++) {
            auto rows =
                server_->query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = " +
                               std::to_string(id));
            ASSERT_TRUE(rows.ok()) << rows.error().message;
            if ((*rows)[0][0] == "0") {
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        FAIL() << "connection " << id << " did not go away";
    }

    std::unique_ptr<BackgroundCommand> start_tracer(std::vector<std::string> extra) {
        std::vector<std::string> argv = {MYSQLTRACE_BINARY, "server", "--pid",
                                         std::to_string(server_->pid())};
        argv.insert(argv.end(), extra.begin(), extra.end());
        auto t = std::make_unique<BackgroundCommand>(argv);
        EXPECT_TRUE(t->wait_for_stderr("Ctrl-C to stop"));
        return t;
    }

    // The JSON events of one connection.
    std::vector<nlohmann::json> events_of(unsigned long thread_id) {
        std::ifstream in(out_path_);
        std::vector<nlohmann::json> evs;
        for (std::string line; std::getline(in, line);) {
            auto j = nlohmann::json::parse(line);
            if (j["THREAD_ID"] == thread_id) {
                evs.push_back(j);
            }
        }
        return evs;
    }

    std::unique_ptr<MariadbServer> server_;
    std::string out_path_;
};

TEST_F(ServerTrace, ExactCommandsOfOneConnection) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    auto tracer = start_tracer({"--format", "json", "--output", out_path_});

    ASSERT_EQ(mysql_query(m, "select 1"), 0);
    mysql_free_result(mysql_store_result(m));
    ASSERT_EQ(mysql_select_db(m, "mysql"), 0);
    ASSERT_EQ(mysql_ping(m), 0);
    ASSERT_EQ(mysql_query(m, "select 'a\nb'"), 0);
    mysql_free_result(mysql_store_result(m));
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
    wait_gone(id);

    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; interrupted\n"), std::string::npos) << r.err;

    auto evs = events_of(id);
    const std::vector<std::pair<std::string, std::string>> want = {
        {"COM_QUERY", "select 1"},
        {"COM_INIT_DB", ""},
        {"COM_PING", ""},
        {"COM_QUERY", "select 'a\nb'"},
        {"COM_STMT_PREPARE", "select ? + 1"},
        {"COM_STMT_EXECUTE", ""},
        {"COM_STMT_CLOSE", ""},
        {"COM_QUIT", ""},
    };
    ASSERT_EQ(evs.size(), want.size());
    uint64_t last_ts = 0;
    for (size_t i = 0; i < want.size(); i++) {
        EXPECT_EQ(evs[i]["kind"], "command");
        EXPECT_EQ(evs[i]["command"], want[i].first) << i;
        EXPECT_EQ(evs[i]["pid"], server_->pid());
        EXPECT_GE(evs[i]["ts_ns"].get<uint64_t>(), last_ts);
        EXPECT_EQ(evs[i]["TIMER_START"].get<uint64_t>(), evs[i]["ts_ns"].get<uint64_t>() * 1000);
        last_ts = evs[i]["ts_ns"];
        if (!want[i].second.empty()) {
            EXPECT_EQ(evs[i]["SQL_TEXT"], want[i].second) << i;
        }
    }
    EXPECT_EQ(evs[1]["SQL_TEXT"], "mysql");  // COM_INIT_DB carries the schema name
    EXPECT_EQ(evs[0]["EVENT_NAME"], "statement/com/Query");
    EXPECT_EQ(evs[7]["EVENT_NAME"], "statement/com/Quit");
}

TEST_F(ServerTrace, TextRowsAndTruncation) {
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    auto tracer = start_tracer({"--max-sql", "20", "--output", out_path_});
    std::string long_sql = "select '" + std::string(100, 'x') + "'";
    ASSERT_EQ(mysql_query(m, long_sql.c_str()), 0);
    mysql_free_result(mysql_store_result(m));
    mysql_close(m);
    wait_gone(id);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;

    std::ifstream in(out_path_);
    std::vector<std::string> mine;
    std::string header;
    std::getline(in, header);
    EXPECT_EQ(header, "TIME            THREAD_ID EVENT_NAME                 SQL_TEXT");
    for (std::string line; std::getline(in, line);) {
        // "HH:MM:SS.uuuuuu" then the row; keep rows of this connection.
        std::istringstream fields(line.substr(16));
        unsigned long tid = 0;
        fields >> tid;
        if (tid == id) {
            mine.push_back(line.substr(16));
        }
    }
    char want_query[128], want_quit[128];
    snprintf(want_query, sizeof(want_query),
             "%9lu statement/com/Query        select 'xxxxxxxxxxxx... (%zu bytes)", id,
             long_sql.size());
    snprintf(want_quit, sizeof(want_quit), "%9lu statement/com/Quit", id);
    ASSERT_EQ(mine.size(), 2u);
    EXPECT_EQ(mine[0], want_query);
    EXPECT_EQ(mine[1], want_quit);
}

TEST_F(ServerTrace, EventsArriveWhileTracing) {
    // Records must reach the output during the trace, not only when it ends
    // (producers batch their wakeups; the reader must still drain).
    auto tracer = start_tracer({"--output", out_path_});
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(mysql_query(m, "select 'live-marker'"), 0);
    mysql_free_result(mysql_store_result(m));
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
    auto tracer = start_tracer({"--output", out_path_ + ".txt"});
    ASSERT_TRUE(server_->stop().ok());
    auto r = tracer->wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("; traced process exited\n"), std::string::npos) << r.err;
}

TEST_F(ServerTrace, DurationStops) {
    auto tracer = start_tracer({"--duration", "0.5", "--output", out_path_});
    auto r = tracer->wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("mysqltrace: 0 commands, 0 records dropped; duration reached\n"),
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
