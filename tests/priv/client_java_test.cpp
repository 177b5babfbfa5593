// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace client --pid` on a JVM (tests/testprogs/java_client, MariaDB
// Connector/J from Debian's libmariadb-java, run by the JDK): the exact
// WL#6226 event sequence over the unix socket (Connector/J's localSocket,
// through JNA), plain TCP, and TLS, whose cleartext comes from mysqltrace's
// Java agent (java/): loaded by the tracer through the JDK's attach
// mechanism, or given with -javaagent at the JVM's start.
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/client_session.h"
#include "priv/priv.h"

namespace {

using namespace mysqltrace::test;

const std::string kClientJar = MYSQLTRACE_JAVA_CLIENT_JAR;
const std::string kJava = MYSQLTRACE_JAVA;
const std::string kAgentDir = MYSQLTRACE_JAVA_AGENT_BUILD_DIR;

enum class Agent { none, at_start };

class ClientJava : public ::testing::TestWithParam<ServerFlavour> {
  protected:
    virtual bool tls() const { return false; }
    bool mysql() const { return GetParam() == ServerFlavour::mysql; }
    std::string expected(const std::string &name) const { return mysql() ? name + ".mysql" : name; }

    static void TearDownTestSuite() { stop_peer_servers(); }

    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        // Not a skip: a JDK is part of the test dependencies.
        ASSERT_FALSE(kClientJar.empty() || kJava.empty())
            << "no JDK found when the tests were built (scripts/install-deps.sh installs it)";
        ASSERT_TRUE(std::filesystem::exists(kClientJar)) << kClientJar;
        server_ = peer_server(GetParam(), tls());
        ASSERT_NE(server_, nullptr);
        out_ = trace_path_for_test(*server_);
    }

    std::vector<std::string> client(bool tcp, const std::vector<std::string> &extra = {},
                                    Agent agent = Agent::none) const {
        // The JDK's own classes are not verified by default: the agent's
        // rewritten methods must pass the verifier all the same.
        std::vector<std::string> argv = {kJava, "-XX:+UnlockDiagnosticVMOptions",
                                         "-XX:+BytecodeVerificationLocal"};
        if (agent == Agent::at_start) {
            argv.push_back("-javaagent:" + kAgentDir + "/mysqltrace-agent.jar");
        }
        for (const auto &a :
             {std::string("-cp"),
              kClientJar + ":/usr/share/java/mariadb-java-client.jar:/usr/share/java/jna.jar",
              std::string("MtJavaClient"), std::string("--user"), server_->user(),
              std::string("--password"), server_->password()}) {
            argv.push_back(a);
        }
        for (auto &a : server_address_args(*server_, tcp)) {
            argv.push_back(std::move(a));
        }
        argv.insert(argv.end(), extra.begin(), extra.end());
        return argv;
    }

    // Starts the JVM, waits until its main() answers (a command that needs
    // no server), plays `before` untraced, attaches the tracer, plays
    // `steps`, and checks every answer and the trace against `expected`.
    // Returns the tracer's stderr.
    std::string check(const std::string &expected, const std::vector<std::string> &argv,
                      const std::vector<Step> &steps, const std::vector<Step> &before = {},
                      const std::vector<std::string> &tracer_extra = {}) {
        GatedClient c(argv);
        c.open_gate();
        EXPECT_EQ(c.command("ping"), "error 0 not connected");
        for (const auto &step : before) {
            EXPECT_EQ(c.command(step.command), step.answer) << step.command;
        }
        return attach_and_check(c, *server_, this->expected(expected), steps, out_, tracer_extra);
    }

    MariadbServer *server_ = nullptr;
    std::string out_;
};

std::string param_name(const ::testing::TestParamInfo<ServerFlavour> &info) {
    return flavour_name(info.param);
}

TEST_P(ClientJava, UnixSocket) {
    const std::string err = check("java_basic", client(false), basic_steps());
    // A JVM with no TLS in use still gets the agent (its TLS may come later).
    EXPECT_NE(err.find("(the agent loaded by mysqltrace through the attach mechanism)"),
              std::string::npos)
        << err;
}

TEST_P(ClientJava, TcpMultiStatements) {
    check("java_multi", client(true, {"--multi"}),
          {{"connect", "ok"}, {"query select 1; select 2, 3; do 1", "ok 2 2"}, {"quit", "ok"}}, {},
          {"--no-java-agent"});
}

// Connections open before the trace are joined at their next command.
const std::vector<Step> kBeforeTrace = {{"connect", "ok"},
                                        {"query select a, b from mt.t order by a", "ok 1 2"}};
const std::vector<Step> kAfterAttach = {
    {"query select 1 from dual where 1 = 0", "ok 1 0"}, {"ping", "ok"}, {"quit", "ok"}};

TEST_P(ClientJava, AttachMidConnection) {
    check("java_mid_connection", client(true), kAfterAttach, kBeforeTrace);
}

// TLS: the socket carries TLS records; the cleartext comes from the Java
// agent's probes.
class ClientJavaTls : public ClientJava {
  protected:
    bool tls() const override { return true; }
};

std::vector<Step> tls_steps(bool mysql) {
    std::vector<Step> s = basic_steps();
    // The cipher text cannot hold this word; the trace must show it.
    s.insert(s.begin() + 1, {mysql ? "query select 'secret' as word, @@tls_version"
                                   : "query select 'secret' as word, @@have_ssl",
                             "ok 1 1"});
    s.insert(s.begin() + 2, {"query show status like 'Ssl_version'", "ok 1 1"});
    return s;
}

TEST_P(ClientJavaTls, AgentLoadedByTracer) {
    const std::string err = check("java_tls", client(true, {"--ssl"}), tls_steps(mysql()));
    EXPECT_NE(err.find("TLS cleartext from the JDK's TLS sockets, through the probes of "),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("(the agent loaded by mysqltrace through the attach mechanism)"),
              std::string::npos)
        << err;
}

TEST_P(ClientJavaTls, AgentAtStart) {
    // -javaagent: the same trace; the tracer finds the library mapped.
    const std::string err =
        check("java_tls", client(true, {"--ssl"}, Agent::at_start), tls_steps(mysql()));
    EXPECT_NE(err.find("(loaded by the JVM)"), std::string::npos) << err;
}

TEST_P(ClientJavaTls, AttachMidConnection) {
    // The TLS session was set up before the trace (and before the agent):
    // the already loaded stream classes are retransformed, and the socket
    // is learnt from the syscalls of the first write after the attach.
    check("java_tls_mid_connection", client(true, {"--ssl"}), kAfterAttach, kBeforeTrace);
}

TEST_P(ClientJavaTls, AttachDisabledIsAWarning) {
    // A JVM that refuses attaching gets no agent (and no SIGQUIT, which
    // would print a thread dump on its stdout): a warning, and the plain
    // part of the trace.
    auto argv = client(true, {"--ssl"});
    argv.insert(argv.begin() + 1, "-XX:+DisableAttachMechanism");
    GatedClient c(argv);
    c.open_gate();
    EXPECT_EQ(c.command("ping"), "error 0 not connected");
    const std::string pid = std::to_string(c.pid());
    BackgroundCommand tracer({MYSQLTRACE_BINARY, "client", "--pid", pid, "--output", out_});
    ASSERT_TRUE(tracer.wait_for_stderr("Ctrl-C to stop")) << tracer.stderr_so_far();
    EXPECT_EQ(c.command("connect"), "ok");
    EXPECT_EQ(c.command("query select 'secret'"), "ok 1 1");
    EXPECT_EQ(c.command("quit"), "ok");
    EXPECT_EQ(c.finish(), 0);
    auto r = tracer.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("mysqltrace: warning: JVM " + pid +
                         " was started with -XX:+DisableAttachMechanism; the cleartext of its "
                         "TLS connections is not seen\n"),
              std::string::npos)
        << r.err;
    const std::string trace = read_file(out_);
    EXPECT_NE(trace.find("SSL request; client capabilities: 0x1beab82"), std::string::npos)
        << trace;
    EXPECT_EQ(trace.find("secret"), std::string::npos) << trace;
}

TEST_P(ClientJavaTls, BigStatementAndResult) {
    // A 40,000-byte statement, cut into TLS records by the JDK, and a
    // result of 100,000 bytes, read by many read() calls, most served from
    // the session's buffer without a syscall.
    check("java_tls_big", client(true, {"--ssl"}, Agent::at_start),
          {{"connect", "ok"},
           {"bigquery 40000", "ok 1 1"},
           {"query select length(repeat('y', 100000)), repeat('y', 100000)", "ok 1 1"},
           {"quit", "ok"}});
}

TEST_P(ClientJavaTls, ThreadsOnTheirOwnConnections) {
    // 8 threads, each on its own TLS connection, 25 statements each.
    GatedClient c(client(true, {"--ssl"}));
    c.open_gate();
    EXPECT_EQ(c.command("ping"), "error 0 not connected");
    BackgroundCommand tracer({MYSQLTRACE_BINARY, "client", "--pid", std::to_string(c.pid()),
                              "--format", "json", "--output", out_});
    ASSERT_TRUE(tracer.wait_for_stderr("Ctrl-C to stop")) << tracer.stderr_so_far();
    EXPECT_EQ(c.command("parallel 8 25"), "ok 200");
    c.finish();
    auto r = tracer.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; traced process exited\n"), std::string::npos)
        << r.err;
    std::map<std::string, std::vector<uint64_t>> seen;
    std::map<uint64_t, std::set<std::string>> conn_thread;
    long rows = 0;
    for (const auto &j : read_json_lines(out_)) {
        if (j["kind"] == "protocol_command" && j["command"] == "COM_QUERY") {
            const std::string sql = j["sql"].get<std::string>();
            if (!sql.starts_with("select ") || sql.starts_with("select @@")) {
                continue;  // Connector/J's own statements at connect
            }
            const uint64_t conn = j["conn"].get<uint64_t>();
            seen[sql].push_back(conn);
            conn_thread[conn].insert(sql.substr(0, sql.find(',')));
            rows += j["rows"].get<long>();
        }
    }
    EXPECT_EQ(seen.size(), 200u);
    for (int t = 1; t <= 8; t++) {
        for (int q = 1; q <= 25; q++) {
            const std::string sql = "select " + std::to_string(t) + ", " + std::to_string(q);
            EXPECT_EQ(seen[sql].size(), 1u) << sql;
        }
    }
    EXPECT_EQ(conn_thread.size(), 8u);
    for (const auto &[conn, threads] : conn_thread) {
        EXPECT_EQ(threads.size(), 1u) << conn;
    }
    EXPECT_EQ(rows, 200);
}

INSTANTIATE_TEST_SUITE_P(Flavours, ClientJava, ::testing::ValuesIn(all_flavours()), param_name);
INSTANTIATE_TEST_SUITE_P(Flavours, ClientJavaTls, ::testing::ValuesIn(all_flavours()), param_name);

}  // namespace
