// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace client` attached to real clients talking to a real server,
// MariaDB and Oracle MySQL 9.7: the exact WL#6226 event sequence of each
// scenario, compared with the expected trace in tests/priv/expected/ (times,
// pids and ids normalised; NAME.mysql.trace for MySQL, whose handshake and
// authentication differ).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/client_session.h"
#include "priv/priv.h"

namespace {

using namespace mysqltrace::test;

// The server is only the clients' peer here; each flavour gets one for the
// whole suite (one more with TLS), started by the first test that needs it.
class ClientTrace : public ::testing::TestWithParam<ServerFlavour> {
  protected:
    static void TearDownTestSuite() { stop_peer_servers(); }

    virtual bool tls() const { return false; }
    bool mysql() const { return GetParam() == ServerFlavour::mysql; }
    // The expected trace of this flavour.
    std::string expected(const std::string &name) const { return mysql() ? name + ".mysql" : name; }

    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        server_ = peer_server(GetParam(), tls());
        ASSERT_NE(server_, nullptr);
        out_ = trace_path_for_test(*server_);
    }

    // sysbench point_select's arguments, its 1000-row table made afresh.
    std::vector<std::string> sysbench_prepared() {
        auto args = server_->prepare_sysbench_point_select(1000);
        EXPECT_TRUE(args.ok()) << args.error().message;
        return args ? args.value() : std::vector<std::string>{};
    }

    // The libmariadb driver over the unix socket, or over loopback TCP.
    std::vector<std::string> c_client(const std::vector<std::string> &extra = {}) {
        return with(extra, {testprog("mt_client"), "--socket", server_->socket_path()});
    }
    std::vector<std::string> c_client_tcp(const std::vector<std::string> &extra = {}) {
        return with(extra, {testprog("mt_client"), "--host", server_->host(), "--port",
                            std::to_string(server_->port())});
    }
    std::vector<std::string> with(const std::vector<std::string> &extra,
                                  std::vector<std::string> argv) {
        for (const auto &a : {std::string("--user"), server_->user(), std::string("--password"),
                              server_->password()}) {
            argv.push_back(a);
        }
        argv.insert(argv.end(), extra.begin(), extra.end());
        return argv;
    }
    // Runs the steps, checks every answer and the trace against `expected`.
    void check(const std::string &expected, const std::vector<std::string> &client,
               const std::vector<Step> &steps, std::vector<std::string> tracer_args = {},
               const std::vector<std::string> &tracer_prefix = {}) {
        auto s = run_traced(client, steps, tracer_args, out_, tracer_prefix);
        ASSERT_EQ(s.answers.size(), steps.size());
        for (size_t i = 0; i < steps.size(); i++) {
            EXPECT_EQ(s.answers[i], steps[i].answer) << steps[i].command;
        }
        EXPECT_EQ(s.tracer_exit, 0) << s.tracer_stderr;
        EXPECT_NE(s.tracer_stderr.find(" 0 records dropped; traced process exited\n"),
                  std::string::npos)
            << s.tracer_stderr;
        EXPECT_TRUE(matches_expected(this->expected(expected),
                                     normalise_trace(s.trace, {{server_->root_dir(), "<dir>"}})));
    }

    MariadbServer *server_ = nullptr;
    std::string out_;
};

std::string param_name(const ::testing::TestParamInfo<ServerFlavour> &info) {
    return flavour_name(info.param);
}

TEST_P(ClientTrace, CResultSetEmptyResultErrorQuit) {
    check("c_basic", c_client(),
          {{"connect", "ok"},
           {"query select a, b from mt.t order by a", "ok 1 2"},
           {"query select 1 from dual where 1 = 0", "ok 1 0"},
           {"query select * from mt.nosuch", "error 1146 Table 'mt.nosuch' doesn't exist"},
           {"query insert into mt.t values (3, 'three')", "ok 0 0"},
           {"query delete from mt.t where a = 3", "ok 0 0"},
           {"quit", "ok"}});
}

// A reply peeked at (recv and recvmsg with MSG_PEEK) before the library
// reads it: the peeked bytes are not stream bytes, and the trace is the one
// of the same query read plainly.
TEST_P(ClientTrace, CPeekedReplyCountsOnce) {
    check("c_peek", c_client(),
          {{"connect", "ok"},
           {"peek select a, b from mt.t order by a", "ok 1 2"},
           {"query select 1 from dual where 1 = 0", "ok 1 0"},
           {"quit", "ok"}});
}

TEST_P(ClientTrace, SummaryOnly) {
    check("c_summary_only", c_client(),
          {{"connect", "ok"},
           {"query select a, b from mt.t order by a", "ok 1 2"},
           {"query select * from mt.nosuch", "error 1146 Table 'mt.nosuch' doesn't exist"},
           {"quit", "ok"}},
          {"--summary-only"});
}

TEST_P(ClientTrace, CTcpMultiStatements) {
    check("c_multi", c_client_tcp({"--multi"}),
          {{"connect", "ok"}, {"query select 1; select 2, 3; do 1", "ok 2 2"}, {"quit", "ok"}});
}

TEST_P(ClientTrace, CPreparedStatement) {
    check("c_prepared", c_client(),
          {{"connect", "ok"},
           {"prepare select a, b, ? + 1 from mt.t where a <= ?", "ok"},
           {"execute 41 2", "ok 2"},
           {"close_stmt", "ok"},
           {"quit", "ok"}});
}

TEST_P(ClientTrace, CLocalInfile) {
    std::string csv = server_->root_dir() + "/rows.csv";
    std::ofstream(csv) << "7,seven\n8,eight\n";
    check("c_local_infile", c_client({"--local-infile"}),
          {{"connect", "ok"},
           {"query load data local infile '" + csv + "' into table mt.t fields terminated by ','",
            "ok 0 0"},
           {"query delete from mt.t where a > 2", "ok 0 0"},
           {"quit", "ok"}});
}

TEST_P(ClientTrace, CPingInitDbStatisticsChangeUser) {
    check("c_admin", c_client(),
          {{"connect", "ok"},
           {"ping", "ok"},
           {"initdb mt", "ok"},
           {"stats", "ok"},
           {"change_user " + server_->user() + " " + server_->password(), "ok"},
           {"quit", "ok"}});
}

TEST_P(ClientTrace, CCompressedProtocol) {
    check(
        "c_compressed", c_client({"--compress"}),
        {{"connect", "ok"}, {"query select a, b from mt.t order by a", "ok 1 2"}, {"quit", "ok"}});
}

TEST_P(ClientTrace, CPacketOver16MiB) {
    // 17 MiB of statement: the client splits it into a 16 MiB - 1 packet and
    // its continuation; only --snaplen bytes of each syscall are copied.
    check("c_big_packet", c_client(),
          {{"connect", "ok"}, {"bigquery 17825792", "ok 1 1"}, {"quit", "ok"}});
}

std::string source_testprog(const std::string &name) {
    return std::string(MYSQLTRACE_SOURCE_DIR) + "/tests/testprogs/" + name;
}

TEST_P(ClientTrace, Pymysql) {
    // An independent protocol implementation in Python.
    check("pymysql",
          {"/usr/bin/python3", source_testprog("pymysql_client.py"), "--socket",
           server_->socket_path(), "--user", server_->user(), "--password", server_->password(),
           "--multi"},
          {{"connect", "ok"},
           {"query select a, b from mt.t order by a", "ok 1 2"},
           {"query select * from mt.nosuch", "error 1146 Table 'mt.nosuch' doesn't exist"},
           {"query select 1; select 2, 3; do 1", "ok 2 2"},
           {"ping", "ok"},
           {"initdb mt", "ok"},
           {"quit", "ok"}});
}

TEST_P(ClientTrace, NodeMysql2) {
    // The npm mysql2 package: prepared statements and change-user of its own.
    check("mysql2",
          {"/usr/bin/env", "node", source_testprog("mysql2_client.js"), "--host", server_->host(),
           "--port", std::to_string(server_->port()), "--user", server_->user(), "--password",
           server_->password()},
          {{"connect", "ok"},
           {"query select a, b from mt.t order by a", "ok 1 2"},
           {"prepare select a, ? + 1 from mt.t where a <= ?", "ok"},
           {"execute 41 1", "ok 1"},
           {"close_stmt", "ok"},
           {"change_user " + server_->user() + " " + server_->password(), "ok"},
           {"query select * from mt.nosuch", "error 1146 Table 'mt.nosuch' doesn't exist"},
           {"quit", "ok"}});
}

TEST_P(ClientTrace, MariadbCliBatch) {
    // The mariadb CLI links the client library statically (OpenSSL build).
    check("cli_batch",
          {"/usr/bin/mariadb", "--no-defaults", "--socket=" + server_->socket_path(),
           "--user=" + server_->user(), "--password=" + server_->password(), "--batch", "-e",
           "select a, b from mt.t order by a; select * from mt.nosuch"},
          {});
}

TEST_P(ClientTrace, SecretsRedactedUnlessAsked) {
    const std::vector<Step> steps = {
        {"connect", "ok"},
        {"query create user 'leak'@'%' identified by 'hunter2'", "ok 0 0"},
        // MySQL 8 removed PASSWORD(); its SET PASSWORD takes the text.
        {mysql() ? "query set password for 'leak'@'%' = 'hunter3'"
                 : "query set password for 'leak'@'%' = password('hunter3')",
         "ok 0 0"},
        {"query drop user 'leak'@'%'", "ok 0 0"},
        {"quit", "ok"}};
    for (bool show : {false, true}) {
        std::vector<std::string> args = {"--format", "json", "--dump"};
        if (show) {
            args.push_back("--show-secrets");
        }
        auto s = run_traced(c_client(), steps, args, out_ + (show ? ".shown" : ".redacted"));
        EXPECT_EQ(s.tracer_exit, 0) << s.tracer_stderr;
        ASSERT_NE(s.trace.find("identified by"), std::string::npos) << s.trace;
        for (const char *secret : {"hunter2", "hunter3"}) {
            EXPECT_EQ(s.trace.find(secret) != std::string::npos, show) << secret;
        }
        // Packet dumps of statements with secrets are withheld as well.
        EXPECT_EQ(s.trace.find("68756e74657232") != std::string::npos, show);  // "hunter2" in hex
    }
}

TEST_P(ClientTrace, FollowForks) {
    // The traced pid is a shell that runs the client as a child process.
    std::string cmdline;
    for (const auto &a : c_client()) {
        cmdline += "'" + a + "' ";
    }
    const std::vector<Step> steps = {
        {"connect", "ok"}, {"query select 1 from dual where 1 = 0", "ok 1 0"}, {"quit", "ok"}};
    for (bool follow : {false, true}) {
        std::vector<std::string> args;
        if (follow) {
            args.push_back("--follow-forks");
        }
        // "; exit" keeps the shell from exec'ing the client in its place.
        auto s = run_traced({"/bin/sh", "-c", cmdline + "; exit $?"}, steps, args,
                            out_ + (follow ? ".follow" : ".nofollow"));
        EXPECT_EQ(s.tracer_exit, 0) << s.tracer_stderr;
        if (follow) {
            EXPECT_NE(s.trace.find("QUERY: select 1 from dual where 1 = 0"), std::string::npos);
            EXPECT_NE(s.tracer_stderr.find("mysqltrace: 1 connections, 2 commands"),
                      std::string::npos)
                << s.tracer_stderr;
        } else {
            EXPECT_EQ(s.trace, "");
            EXPECT_NE(s.tracer_stderr.find("mysqltrace: 0 connections"), std::string::npos)
                << s.tracer_stderr;
        }
    }
}

TEST_P(ClientTrace, CAttachMidConnectionResyncsAtNextCommand) {
    // The client connects and works before the tracer exists: the trace
    // joins at its next command (WL#6226 cannot; we can).
    GatedClient client(c_client());
    client.open_gate();
    ASSERT_EQ(client.command("connect"), "ok");
    ASSERT_EQ(client.command("query select a, b from mt.t order by a"), "ok 1 2");
    BackgroundCommand tracer(
        {MYSQLTRACE_BINARY, "client", "--pid", std::to_string(client.pid()), "--output", out_});
    ASSERT_TRUE(tracer.wait_for_stderr("Ctrl-C to stop"));
    EXPECT_EQ(client.command("query select 1 from dual where 1 = 0"), "ok 1 0");
    EXPECT_EQ(client.command("ping"), "ok");
    EXPECT_EQ(client.command("quit"), "ok");
    client.finish();
    auto r = tracer.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(out_);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_TRUE(matches_expected(expected("c_mid_connection"), normalise_trace(ss.str())));
}

// sysbench (libmariadb, two threads, server-side prepared statements): every
// query it reports must appear in the trace as exactly one command.
TEST_P(ClientTrace, SysbenchCommandsMatchItsOwnCount) {
    const std::vector<std::string> common = sysbench_prepared();
    ASSERT_FALSE(HasFailure());

    auto run = common;
    for (const char *a : {"--threads=2", "--events=3000", "--time=0", "run"}) {
        run.push_back(a);
    }
    GatedClient client(run);
    BackgroundCommand tracer({MYSQLTRACE_BINARY, "client", "--pid", std::to_string(client.pid()),
                              "--format", "json", "--output", out_});
    ASSERT_TRUE(tracer.wait_for_stderr("Ctrl-C to stop"));
    client.open_gate();
    std::string report;
    for (std::string line; (line = client.read_line()) != "<eof>";) {
        report += line + "\n";
    }
    client.finish();
    auto r = tracer.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; traced process exited\n"), std::string::npos)
        << r.err;

    // sysbench's own count: "read: 3000" under "queries performed".
    std::smatch m;
    ASSERT_TRUE(std::regex_search(report, m, std::regex(R"(read:\s+(\d+))"))) << report;
    const long reported = std::stol(m[1]);
    EXPECT_EQ(reported, 3000);

    std::map<std::string, long> sent;
    std::set<uint64_t> conns;
    long summaries = 0;
    for (const auto &j : mysqltrace::test::read_json_lines(out_)) {
        if (j["kind"] == "protocol" && j["event"] == "SEND_COMMAND") {
            sent[j["command"].get<std::string>()]++;
            conns.insert(j["conn"].get<uint64_t>());
        } else if (j["kind"] == "protocol_command") {
            summaries++;
        }
    }
    std::string seen;
    for (const auto &[cmd, n] : sent) {
        seen += cmd + "=" + std::to_string(n) + " ";
    }
    SCOPED_TRACE(seen);
    EXPECT_EQ(sent["COM_STMT_EXECUTE"], reported);
    EXPECT_EQ(conns.size(), 2u);  // one connection per thread
    EXPECT_EQ(sent["COM_STMT_PREPARE"], 2);
    EXPECT_EQ(sent["COM_QUIT"], 2);
    long total = 0;
    for (const auto &[cmd, n] : sent) {
        total += n;
    }
    EXPECT_EQ(summaries, total);
    if (HasFailure()) {
        std::filesystem::copy_file(out_, "/tmp/sb-fail.json",
                                   std::filesystem::copy_options::overwrite_existing);
    }
}

// sysbench already running when the tracer attaches, and a tracer slow to
// attach (MYSQLTRACE_ATTACH_PAUSE_MS: 50 ms after each syscall tracepoint,
// as when it loses its CPU there): both connections are joined at their next
// command. When each tracepoint recorded from its own attachment on, the
// replies read between sys_exit_recvfrom's and sys_exit_sendto's made the
// connections look like something else, and the trace ended with
// "0 connections".
TEST_P(ClientTrace, SysbenchAttachedMidRunWhileProbesAttachSlowly) {
    const std::vector<std::string> common = sysbench_prepared();
    ASSERT_FALSE(HasFailure());

    // 2000 queries a second: ~50 replies per connection in each pause.
    auto run = common;
    for (const char *a : {"--threads=2", "--rate=2000", "--time=5", "run"}) {
        run.push_back(a);
    }
    GatedClient client(run);
    client.open_gate();
    std::string report;
    for (std::string line; (line = client.read_line()) != "<eof>";) {
        report += line + "\n";
        if (line == "Threads started!") {
            break;
        }
    }
    ASSERT_NE(report.find("Threads started!"), std::string::npos) << report;
    BackgroundCommand tracer({"/usr/bin/env", "MYSQLTRACE_ATTACH_PAUSE_MS=50", MYSQLTRACE_BINARY,
                              "client", "--pid", std::to_string(client.pid()), "--summary-only",
                              "--format", "json", "--output", out_});
    ASSERT_TRUE(tracer.wait_for_stderr("Ctrl-C to stop"));
    for (std::string line; (line = client.read_line()) != "<eof>";) {
        report += line + "\n";
    }
    EXPECT_EQ(client.finish(), 0) << report;
    auto r = tracer.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;

    std::map<std::string, long> commands;
    std::set<uint64_t> conns;
    long summaries = 0;
    long executes_not_one_row = 0;
    for (const auto &j : mysqltrace::test::read_json_lines(out_)) {
        if (j["kind"] != "protocol_command") {
            continue;
        }
        summaries++;
        commands[j["command"].get<std::string>()]++;
        conns.insert(j["conn"].get<uint64_t>());
        if (j["command"] == "COM_STMT_EXECUTE" && j["rows"] != 1) {
            executes_not_one_row++;
        }
    }
    std::string seen;
    for (const auto &[cmd, n] : commands) {
        seen += cmd + "=" + std::to_string(n) + " ";
    }
    SCOPED_TRACE(seen);
    EXPECT_EQ(conns.size(), 2u);
    EXPECT_EQ(commands["COM_STMT_PREPARE"], 0);  // made before the trace
    EXPECT_EQ(commands["COM_QUIT"], 2);
    EXPECT_EQ(executes_not_one_row, 0);
    // Each connection is joined at its next command: the 5 s run leaves
    // about 3 s of 2000 queries a second to see.
    EXPECT_GT(commands["COM_STMT_EXECUTE"], 2000);
    EXPECT_NE(r.err.find("mysqltrace: 2 connections, " + std::to_string(summaries) + " commands, "),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; traced process exited\n"), std::string::npos)
        << r.err;
}

// TLS: the socket carries TLS records, the cleartext comes from uprobes on
// the client's TLS library (GnuTLS for libmariadb, OpenSSL for the CLI).
class ClientTraceTls : public ClientTrace {
  protected:
    bool tls() const override { return true; }
    std::vector<Step> gnutls_steps() const {
        return {{"connect", "ok"},
                // MySQL 9 has no have_ssl any more.
                {mysql() ? "query select 'secret' as word, @@tls_version"
                         : "query select 'secret' as word, @@have_ssl",
                 "ok 1 1"},
                {"query show status like 'Ssl_version'", "ok 1 1"},
                {"quit", "ok"}};
    }
};

TEST_P(ClientTraceTls, CGnutls) {
    check("c_tls_gnutls", c_client_tcp({"--ssl"}), gnutls_steps());
}

// Before Linux 6.6 the TLS probes go on a perf link each instead of one
// uprobe_multi link per library (MYSQLTRACE_NO_UPROBE_MULTI=1 takes that
// path here): the same trace.
TEST_P(ClientTraceTls, CGnutlsPerUprobeLinks) {
    check("c_tls_gnutls", c_client_tcp({"--ssl"}), gnutls_steps(), {},
          {"/usr/bin/env", "MYSQLTRACE_NO_UPROBE_MULTI=1"});
}

TEST_P(ClientTraceTls, MariadbCliOpenssl) {
    check("cli_tls_openssl",
          {"/usr/bin/mariadb", "--no-defaults", "--host=" + server_->host(),
           "--port=" + std::to_string(server_->port()), "--user=" + server_->user(),
           "--password=" + server_->password(), "--ssl", "--skip-ssl-verify-server-cert", "--batch",
           "-e", "select 'secret' as word"},
          {});
}

INSTANTIATE_TEST_SUITE_P(Flavours, ClientTrace, ::testing::ValuesIn(all_flavours()), param_name);
INSTANTIATE_TEST_SUITE_P(Flavours, ClientTraceTls, ::testing::ValuesIn(all_flavours()), param_name);

}  // namespace
