// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace run -- CMD`: real clients started under the shim, talking to a
// real server, MariaDB and Oracle MySQL 9.7. The exact WL#6226 event sequence
// (with the shim's API call lines) of each scenario (NAME.mysql.trace for
// MySQL), the same sequence as attach mode sees, and client-side failures
// reported with the library's own errors.
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/client_session.h"
#include "priv/priv.h"

namespace {

using namespace mysqltrace::test;

// The server is only the clients' peer; one per flavour for the whole
// suite, started by the first test that needs it.
class RunTrace : public ::testing::TestWithParam<ServerFlavour> {
  protected:
    static void TearDownTestSuite() { stop_peer_servers(); }

    bool mysql() const { return GetParam() == ServerFlavour::mysql; }
    // The expected trace of this flavour.
    std::string expected(const std::string &name) const { return mysql() ? name + ".mysql" : name; }

    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        server_ = peer_server(GetParam(), true);
        ASSERT_NE(server_, nullptr);
        out_ = trace_path_for_test(*server_);
    }

    std::vector<std::string> c_client(const std::vector<std::string> &extra = {},
                                      bool tcp = false) const {
        std::vector<std::string> argv = {testprog("mt_client")};
        if (tcp) {
            argv.insert(argv.end(),
                        {"--host", server_->host(), "--port", std::to_string(server_->port())});
        } else {
            argv.insert(argv.end(), {"--socket", server_->socket_path()});
        }
        argv.insert(argv.end(), {"--user", server_->user(), "--password", server_->password()});
        argv.insert(argv.end(), extra.begin(), extra.end());
        return argv;
    }

    // The normalised trace with the API call lines moved to the end: each
    // kind is an exact sequence, but where a call's return falls among the
    // packets of its reply depends on how the kernel split the server's
    // writes into the client's reads.
    std::string normalised(const TracedSession &s) const {
        std::istringstream in(normalise_trace(s.trace, {{server_->root_dir(), "<dir>"}}));
        std::string events, calls;
        for (std::string line; std::getline(in, line);) {
            (line.find(": api: ") != std::string::npos ? calls : events) += line + "\n";
        }
        return events + "---- API calls ----\n" + calls;
    }

    // Runs the steps under `mysqltrace run`, checks every answer, a clean end
    // and the trace against tests/priv/expected/<expected>.trace.
    TracedSession check(const std::string &expected, const std::vector<std::string> &client,
                        const std::vector<Step> &steps,
                        const std::vector<std::string> &tracer_args = {}, int exit_code = 0) {
        auto s = run_under_run(client, steps, tracer_args, out_);
        EXPECT_EQ(s.answers.size(), steps.size());
        for (size_t i = 0; i < steps.size() && i < s.answers.size(); i++) {
            EXPECT_EQ(s.answers[i], steps[i].answer) << steps[i].command;
        }
        EXPECT_EQ(s.tracer_exit, exit_code) << s.tracer_stderr;
        EXPECT_NE(s.tracer_stderr.find(" 0 records dropped; traced process exited\n"),
                  std::string::npos)
            << s.tracer_stderr;
        EXPECT_TRUE(matches_expected(this->expected(expected), normalised(s)));
        return s;
    }

    MariadbServer *server_ = nullptr;
    std::string out_;
};

const std::vector<Step> kBasic = {
    {"connect", "ok"},
    {"query select a, b from mt.t order by a", "ok 1 2"},
    {"query select 1 from dual where 1 = 0", "ok 1 0"},
    {"query select * from mt.nosuch", "error 1146 Table 'mt.nosuch' doesn't exist"},
    {"quit", "ok"}};

TEST_P(RunTrace, CResultSetEmptyResultErrorQuit) {
    check("run_c_basic", c_client(), kBasic);
}

TEST_P(RunTrace, CMultiStatementsPreparedAdmin) {
    check("run_c_more", c_client({"--multi"}, true),
          {{"connect", "ok"},
           {"query select 1; select 2, 3; do 1", "ok 2 2"},
           {"prepare select a, b, ? + 1 from mt.t where a <= ?", "ok"},
           {"execute 41 2", "ok 2"},
           {"close_stmt", "ok"},
           {"ping", "ok"},
           {"reset", "ok"},
           {"initdb mt", "ok"},
           {"stats", "ok"},
           {"change_user " + server_->user() + " " + server_->password(), "ok"},
           {"quit", "ok"}});
}

TEST_P(RunTrace, CLocalInfile) {
    std::string csv = server_->root_dir() + "/run_rows.csv";
    std::ofstream(csv) << "7,seven\n8,eight\n";
    check("run_c_local_infile", c_client({"--local-infile"}),
          {{"connect", "ok"},
           {"query load data local infile '" + csv + "' into table mt.t fields terminated by ','",
            "ok 0 0"},
           {"query delete from mt.t where a > 2", "ok 0 0"},
           {"quit", "ok"}});
}

TEST_P(RunTrace, CTls) {
    check("run_c_tls", c_client({"--ssl"}, true),
          {{"connect", "ok"}, {"query select 'secret' as word", "ok 1 1"}, {"quit", "ok"}});
}

TEST_P(RunTrace, MariadbCliBatchAndTls) {
    // The CLI links the client library statically: no API calls to see, the
    // shim's socket and OpenSSL interposers carry the whole trace.
    check("run_cli_batch",
          {"/usr/bin/mariadb", "--no-defaults", "--socket=" + server_->socket_path(),
           "--user=" + server_->user(), "--password=" + server_->password(), "--batch", "-e",
           "select a, b from mt.t order by a; select * from mt.nosuch"},
          {}, {}, 1);
    check("run_cli_tls",
          {"/usr/bin/mariadb", "--no-defaults", "--host=" + server_->host(),
           "--port=" + std::to_string(server_->port()), "--user=" + server_->user(),
           "--password=" + server_->password(), "--ssl", "--skip-ssl-verify-server-cert", "--batch",
           "-e", "select 'secret' as word"},
          {});
}

// The stage/event lines of a trace, per connection ("conn: STAGE EVENT").
std::vector<std::string> event_sequence(const std::string &trace) {
    static const std::regex re(R"(mysqltrace: (\d+): stage: (\w+), event: (\w+))");
    std::vector<std::string> seq;
    std::istringstream in(trace);
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_search(line, m, re)) {
            seq.push_back(m[1].str() + ": " + m[2].str() + " " + m[3].str());
        }
    }
    return seq;
}

TEST_P(RunTrace, SameEventsAsAttachMode) {
    // One workload, traced once from the shim and once from the syscalls.
    const std::vector<Step> steps = {
        {"connect", "ok"},
        {"query select a, b from mt.t order by a", "ok 1 2"},
        {"query select * from mt.nosuch", "error 1146 Table 'mt.nosuch' doesn't exist"},
        {"prepare select a from mt.t where a = ?", "ok"},
        {"execute 1", "ok 1"},
        {"close_stmt", "ok"},
        {"ping", "ok"},
        {"quit", "ok"}};
    auto run = run_under_run(c_client(), steps, {}, out_ + ".run");
    auto attach = run_traced(c_client(), steps, {}, out_ + ".attach");
    ASSERT_EQ(run.tracer_exit, 0) << run.tracer_stderr;
    ASSERT_EQ(attach.tracer_exit, 0) << attach.tracer_stderr;
    EXPECT_EQ(run.answers, attach.answers);
    auto from_run = event_sequence(run.trace);
    auto from_attach = event_sequence(attach.trace);
    ASSERT_GT(from_run.size(), 40u);
    // Events only one mode sees: none. (The API call lines are extra output
    // of run mode, not WL#6226 events, and are not part of the sequence.)
    EXPECT_EQ(from_run, from_attach);
    EXPECT_NE(run.trace.find("api: mysql_real_connect("), std::string::npos);
    EXPECT_EQ(attach.trace.find("api: "), std::string::npos);
}

TEST_P(RunTrace, RefusedConnectionIsAnErrorEventWithTheLibrarysError) {
    // A loopback port nobody listens on: bind one, note it, close it.
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
    ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len), 0);
    int port = ntohs(a.sin_port);
    close(fd);
    auto s = run_under_run({testprog("mt_client"), "--host", "127.0.0.1", "--port",
                            std::to_string(port), "--user", "u", "--password", "p"},
                           {{"connect", ""}}, {}, out_);
    ASSERT_EQ(s.answers.size(), 1u);
    EXPECT_EQ(
        s.answers[0].rfind("error 2002 ", 0) == 0 || s.answers[0].rfind("error 2003 ", 0) == 0,
        true)
        << s.answers[0];
    std::string code = s.answers[0].substr(6, 4);
    std::string norm =
        std::regex_replace(normalised(s), std::regex(std::to_string(port)), "<port>");
    // No server takes part: one expected trace for both flavours.
    EXPECT_TRUE(matches_expected("run_refused", norm));
    EXPECT_NE(norm.find("Client error " + code + " (HY000): "), std::string::npos) << norm;
}

TEST_P(RunTrace, ServerKilledMidQueryIsLostConnection) {
    // A server of its own, killed while the client waits for a reply.
    ServerOptions opts;
    opts.flavour = GetParam();
    auto own = MariadbServer::start(opts);
    ASSERT_TRUE(own.ok()) << own.error().message;
    auto &srv = **own;
    std::vector<std::string> argv = {
        MYSQLTRACE_BINARY,     "run",         "--output",        out_,     "--",
        testprog("mt_client"), "--socket",    srv.socket_path(), "--user", srv.user(),
        "--password",          srv.password()};
    GatedClient client(argv, out_ + ".stderr");
    client.open_gate();
    ASSERT_EQ(client.command("connect"), "ok");
    std::thread killer([&srv] {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        kill(srv.pid(), SIGKILL);
    });
    std::string answer = client.command("query select sleep(30)");
    killer.join();
    EXPECT_EQ(answer.rfind("error 2013 ", 0), 0u) << answer;
    EXPECT_EQ(client.finish(), 0);
    std::ifstream in(out_);
    std::stringstream ss;
    ss << in.rdbuf();
    TracedSession s;
    s.trace = ss.str();
    EXPECT_TRUE(matches_expected(expected("run_server_killed"), normalised(s)));
}

// sysbench (libmariadb, two threads, prepared statements) three ways: plain,
// with the shim preloaded but no tracer, and under `mysqltrace run`. The
// shim changes nothing sysbench reports, and the trace has one
// COM_STMT_EXECUTE and one mysql_stmt_execute call per query it counts.
TEST_P(RunTrace, SysbenchUnchangedByTheShimAndFullyTraced) {
    auto prepared = server_->prepare_sysbench_point_select(1000);
    ASSERT_TRUE(prepared.ok()) << prepared.error().message;
    std::vector<std::string> sb = prepared.value();
    for (const char *a : {"--threads=2", "--events=2000", "--time=0", "run"}) {
        sb.push_back(a);
    }
    // What sysbench counts: its "queries performed" and error lines.
    auto counts = [](const std::string &report) {
        std::string out;
        static const std::regex re(
            R"(^\s*(read|write|other|total|ignored errors|reconnects):.*?(\d+))");
        std::istringstream in(report);
        for (std::string line; std::getline(in, line);) {
            std::smatch m;
            if (std::regex_search(line, m, re)) {
                out += m[1].str() + "=" + m[2].str() + " ";
            }
        }
        return out;
    };
    auto plain = run_command(sb);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    auto env = sb;
    env.insert(env.begin(), {"/usr/bin/env", "LD_PRELOAD=" + std::string(MYSQLTRACE_SHIM)});
    auto shimmed = run_command(env);
    ASSERT_EQ(shimmed.exit_code, 0) << shimmed.err;
    EXPECT_EQ(counts(shimmed.out), counts(plain.out));
    EXPECT_NE(counts(plain.out).find("read=2000 "), std::string::npos) << plain.out;
    EXPECT_EQ(shimmed.err, plain.err);

    auto traced = sb;
    traced.insert(traced.begin(),
                  {MYSQLTRACE_BINARY, "run", "--format", "json", "--output", out_, "--"});
    auto t = run_command(traced);
    ASSERT_EQ(t.exit_code, 0) << t.err;
    EXPECT_EQ(counts(t.out), counts(plain.out));
    EXPECT_NE(t.err.find(" 0 records dropped; traced process exited\n"), std::string::npos)
        << t.err;
    std::map<std::string, long> seen;
    for (const auto &j : mysqltrace::test::read_json_lines(out_)) {
        if (j["kind"] == "protocol" && j["event"] == "SEND_COMMAND") {
            seen[j["command"].get<std::string>()]++;
        } else if (j["kind"] == "api") {
            seen[j["function"].get<std::string>()]++;
            EXPECT_FALSE(j["failed"].get<bool>()) << j.dump();
        }
    }
    EXPECT_EQ(seen["COM_STMT_EXECUTE"], 2000);
    EXPECT_EQ(seen["mysql_stmt_execute"], 2000);
    EXPECT_EQ(seen["mysql_real_connect"], 2);
    EXPECT_EQ(seen["COM_STMT_PREPARE"], 2);
    EXPECT_EQ(seen["COM_QUIT"], 2);
}

// The kernel's run counts of the BPF programs process `pid` holds, by name
// (bpftool reads the full name from BTF); needs BPF stats on.
std::map<std::string, uint64_t> prog_runs(pid_t pid) {
    std::map<std::string, uint64_t> out;
    std::set<std::string> ids;  // links name their program too
    std::error_code ec;
    for (const auto &e :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fdinfo", ec)) {
        std::ifstream in(e.path());
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("prog_id:", 0) != 0) {
                continue;
            }
            std::string id = line.substr(line.find_first_not_of(" \t", 8));
            if (!ids.insert(id).second) {
                continue;
            }
            auto r = run_command({"/usr/sbin/bpftool", "-j", "prog", "show", "id", id});
            EXPECT_EQ(r.exit_code, 0) << r.err;
            auto j = nlohmann::json::parse(r.out, nullptr, false);
            if (j.is_object() && j.contains("name")) {
                out[j["name"].get<std::string>()] += j.value("run_cnt", uint64_t{0});
            }
        }
    }
    return out;
}

TEST_P(RunTrace, HotCallsCostOneProbeHitEach) {
    // Kernel BPF stats (run counts) while this descriptor is open.
    union bpf_attr attr = {};
    attr.enable_stats.type = BPF_STATS_RUN_TIME;
    int stats = static_cast<int>(syscall(__NR_bpf, BPF_ENABLE_STATS, &attr, sizeof(attr)));
    ASSERT_GE(stats, 0) << "BPF_ENABLE_STATS: " << std::strerror(errno);
    // Uprobes on a file fire in every process that maps it, and other tests
    // run traced clients at the same time: a private copy of the shim (its
    // own inode) gets hits from this client only.
    std::string shim = out_ + ".shim.so";
    std::filesystem::copy_file(MYSQLTRACE_SHIM, shim,
                               std::filesystem::copy_options::overwrite_existing);
    std::vector<std::string> argv = {MYSQLTRACE_BINARY, "run", "--shim", shim,
                                     "--output",        out_,  "--"};
    for (const auto &a : c_client()) {
        argv.push_back(a);
    }
    GatedClient run(argv);
    run.open_gate();
    ASSERT_EQ(run.command("connect"), "ok");
    ASSERT_EQ(run.command("prepare select ?"), "ok");
    // Each query: mysql_real_query (its begin deferred to its send),
    // mysql_store_result (quiet); each execute: mysql_stmt_execute,
    // mysql_stmt_fetch (quiet). A send and a receive each.
    constexpr uint64_t kN = 100;
    auto hits = [&](const std::string &cmd, const std::string &answer) {
        auto before = prog_runs(run.pid());
        for (uint64_t i = 0; i < kN; i++) {
            EXPECT_EQ(run.command(cmd), answer);
        }
        auto after = prog_runs(run.pid());
        std::map<std::string, uint64_t> d;
        for (const char *p : {"client_shim_api_begin", "client_shim_api_end", "client_shim_io"}) {
            EXPECT_TRUE(after.count(p)) << p;
            d[p] = after[p] - before[p];
        }
        return d;
    };
    for (const auto &[cmd, answer] : std::vector<std::pair<std::string, std::string>>{
             {"query select 1", "ok 1 1"}, {"execute 1", "ok 1"}}) {
        auto d = hits(cmd, answer);
        EXPECT_EQ(d["client_shim_api_begin"], 0u) << cmd;
        EXPECT_EQ(d["client_shim_api_end"], kN) << cmd;
        EXPECT_EQ(d["client_shim_io"], 2 * kN) << cmd;
    }
    EXPECT_EQ(run.command("quit"), "ok");
    EXPECT_EQ(run.finish(), 0);
    close(stats);
    std::filesystem::remove(shim);
}

INSTANTIATE_TEST_SUITE_P(Flavours, RunTrace, ::testing::ValuesIn(all_flavours()),
                         [](const ::testing::TestParamInfo<ServerFlavour> &info) {
                             return flavour_name(info.param);
                         });

}  // namespace
