// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server`'s life on both flavours (MariaDB 10.11, MySQL 9.7;
// performance_schema OFF): probes that come and go cleanly under load,
// --max-statements, the return probe that ends statements where a build
// lacks the end-of-command site, live output, the server exiting, --duration,
// --reader-nice, errors, and `doctor --pid`.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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

TEST_P(ServerTrace, MaxStatementsDetachesStageProbes) {
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
    EXPECT_NE(r.err.find(want().statements_only), std::string::npos) << r.err;
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

TEST_P(ServerTrace, AttachDetachUnderLoadLeavesTheServerHealthy) {
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

// Builds without the end-of-command stage site end statements with a return
// probe on dispatch_command; forced here on the tested build.
TEST_P(ServerTrace, ReturnProbeEndsStatementsWhenTheSiteIsMissing) {
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

TEST_P(ServerTrace, EventsArriveWhileTracing) {
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

TEST_P(ServerTrace, EndsCleanlyWhenTheServerExits) {
    auto tracer = start_server_tracer(*server_, {"--output", out_path_ + ".txt"});
    ASSERT_TRUE(server_->stop().ok());
    auto r = tracer->wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("; traced process exited\n"), std::string::npos) << r.err;
}

// The nice value of a process's main thread (field 19 of
// /proc/PID/task/TID/stat).
int nice_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/stat");
    std::string stat;
    std::getline(in, stat);
    // Fields after the command name, which is in parentheses.
    std::istringstream rest(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && rest >> field; i++) {
    }
    return std::stoi(field);
}

// --reader-nice: the thread that reads the rings runs at that nice value,
// the traced server at its own.
TEST_P(ServerTrace, ReaderNiceSetsTheReadersPriorityOnly) {
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

// Without --reader-nice, a reader that falls behind (here: stopped while a
// client keeps the server busy, so its 512 KiB rings fill) runs at nice -20
// when it runs again, real-time while its rings are over half full, and
// says so at the end. (It starts at -20 too, and
// this trace is shorter than the 10 s of keeping up that bring it back.)
TEST_P(ServerTrace, ReaderBehindRaisesItsPriorityAndSaysSo) {
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0};
    auto tracer = start_server_tracer(*server_, {"--ring-kib", "512", "--output", "/dev/null"});
    std::thread load([&] {
        MYSQL *l = connect();
        while (!stop) {
            failures += run_query(l, "select 1") != 0;
        }
        mysql_close(l);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(kill(tracer->pid(), SIGSTOP), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ASSERT_EQ(kill(tracer->pid(), SIGCONT), 0);
    int nice = 0;
    for (int i = 0; i < 100 && nice != -20; i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        nice = nice_of(tracer->pid());
    }
    // Woken with a ring full: straight to the highest step.
    EXPECT_EQ(nice, -20);
    EXPECT_EQ(nice_of(server_->pid()), 0);
    stop = true;
    load.join();
    EXPECT_EQ(failures, 0);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    // Once at least: the stop. The load goes on after it, and on a busy
    // machine the reader may fall behind again before the end.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        r.err, m,
        std::regex("mysqltrace: the reader fell behind ([0-9]+) times?; it ran at nice "
                   "-20 for ")))
        << r.err;
    EXPECT_GE(std::stoi(m[1].str()), 1) << r.err;
    // A ring more than half full at that wakeup: real-time until it keeps up.
    EXPECT_NE(r.err.find(" s in all, real-time (SCHED_RR) "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(" s of it (--reader-nice N fixes its priority)\n"), std::string::npos)
        << r.err;
}

// A mode whose events a format has no place for is refused, never dropped
// silently.
TEST_P(ServerTrace, ModesTheFormatCannotShowAreRefused) {
    const std::string pid = std::to_string(server_->pid());
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--threads", "--format", "slowlog"}, "--threads and --transactions are written by"},
        {{"--transactions", "--format", "pfs-sql", "--output", out_path_ + ".d"},
         "--threads and --transactions are written by"},
        {{"--transactions", "--duty", "10"}, "without --duty"},
        {{"--locks", "--format", "slowlog"}, "--locks writes its waits"},
        {{"--locks", "--duty", "10", "--format", "digests"}, "--locks writes its waits"},
        {{"--interval", "5"}, "--interval prints digest summaries"},
    };
    for (const auto &[extra, message] : cases) {
        std::vector<std::string> argv = {MYSQLTRACE_BINARY, "server", "--pid", pid};
        argv.insert(argv.end(), extra.begin(), extra.end());
        auto r = run_command(argv);
        EXPECT_EQ(r.exit_code, 2) << extra[0] << " " << extra[1] << ": " << r.err;
        EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    }
}

TEST_P(ServerTrace, DurationStops) {
    auto tracer = start_server_tracer(*server_, {"--duration", "0.5", "--output", out_path_});
    auto r = tracer->wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("mysqltrace: 0 statements, 0 records dropped; duration reached\n"),
              std::string::npos)
        << r.err;
}

// doctor --pid: flavour, version and hooks of a running server, and its modes.
TEST_P(ServerTrace, DoctorNamesFlavourVersionHooksAndModes) {
    auto r = run_command({MYSQLTRACE_BINARY, "doctor", "--pid", std::to_string(server_->pid())});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    // The version as the server reports it (SELECT VERSION()).
    EXPECT_NE(
        r.out.find("server: " + want().doctor_server + ", version " + server_->version() + " ("),
        std::string::npos)
        << r.out;
    std::vector<std::string> lines = {"command start    found", "statement start  found",
                                      "statement end    found", "THD thread id", "statements"};
    lines.insert(lines.end(), want().doctor_lines.begin(), want().doctor_lines.end());
    for (const auto &line : lines) {
        EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
    }
    // Never probes the endbr64 of a CET build.
    EXPECT_EQ(r.out.find("`endbr64`"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("single-stepped"), std::string::npos) << r.out;
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

INSTANTIATE_TEST_SUITE_P(Flavours, ServerTrace, ::testing::ValuesIn(all_flavours()),
                         flavour_param_name);

}  // namespace
