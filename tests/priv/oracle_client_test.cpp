// SPDX-License-Identifier: GPL-2.0-only
// Oracle's own client against Oracle MySQL 9.7: the `mysql` CLI (libmysqlclient
// linked in statically, OpenSSL 3 dynamically) and tests/testprogs/mt_client.c
// built against the sid chroot's libmysqlclient.so.24, both run inside the
// chroot (their library paths are the chroot's). What the client library's
// own WL#6226 trace plugin reports (the shim registers one under `mysqltrace
// run`) is the oracle: the rebuilt event sequence must equal it exactly, for
// caching_sha2_password's fast path, full authentication over TLS and with
// the RSA key exchange on a plain socket, and for zstd and zlib compression.
// Its non-blocking API (mt_client --nonblocking) traces as the blocking
// calls do, against MySQL 9.7 and MariaDB 10.11.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
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
namespace fs = std::filesystem;

const std::string kSandbox = std::string(MYSQLTRACE_SOURCE_DIR) + "/scripts/mysql-sandbox.sh";

class OracleClient : public ::testing::Test {
  protected:
    static void TearDownTestSuite() { server_.reset(); }

    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        if (!server_) {
            ServerOptions o;
            o.flavour = ServerFlavour::mysql;
            o.tls = true;
            auto s = MariadbServer::start(o);
            ASSERT_TRUE(s.ok()) << s.error().message;
            server_ = std::move(s).value();
            auto r = server_->query(
                "CREATE DATABASE mt; CREATE TABLE mt.t (id INT PRIMARY KEY, name VARCHAR(16));"
                "INSERT INTO mt.t VALUES (1, 'apple'), (2, 'pear'), (3, 'plum');"
                // mysql_query_attribute_string(), to show the server got them.
                "INSTALL COMPONENT 'file://component_query_attributes'");
            ASSERT_TRUE(r.ok()) << r.error().message;
            ASSERT_NO_FATAL_FAILURE(build_client());
            // The shim must be the same file inside the chroot (where the
            // client loads it) and outside (where the probes attach): the
            // server's directory is both.
            fs::copy_file(MYSQLTRACE_SHIM, dir() + "/libmysqltrace-shim.so",
                          fs::copy_options::overwrite_existing);
        }
        std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
        std::replace(name.begin(), name.end(), '/', '.');
        out_ = dir() + "/" + name + ".trace";
    }

    static std::string dir() { return server_->root_dir(); }

    // mt_client.c against the chroot's libmysqlclient (only its MySQL headers:
    // the chroot's libc headers are newer than the host's compiler's).
    static void build_client() {
        const std::string root = server_->chroot_dir();
        fs::create_directories(dir() + "/inc");
        fs::create_symlink(root + "/usr/include/mysql", dir() + "/inc/mysql");
        auto r = run_command({"/usr/bin/cc", "-O1", "-o", dir() + "/mt_client_mysql",
                              std::string(MYSQLTRACE_SOURCE_DIR) + "/tests/testprogs/mt_client.c",
                              "-I" + root + "/usr/include/mysql", "-I" + dir() + "/inc",
                              "-L" + root + "/usr/lib/x86_64-linux-gnu", "-lmysqlclient",
                              "-Wl,--allow-shlib-undefined"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }

    // A program of the chroot, run with the server's directory visible.
    static std::vector<std::string> in_chroot(std::vector<std::string> argv) {
        argv.insert(argv.begin(), {kSandbox, "exec", dir(), "--"});
        return argv;
    }

    // `peer`: the server it talks to (default: the MySQL 9.7 one).
    static std::vector<std::string> c_client(const std::vector<std::string> &extra,
                                             const MariadbServer *peer = nullptr) {
        const MariadbServer &p = peer != nullptr ? *peer : *server_;
        std::vector<std::string> argv = {dir() + "/mt_client_mysql",
                                         "--host",
                                         p.host(),
                                         "--port",
                                         std::to_string(p.port()),
                                         "--user",
                                         p.user(),
                                         "--password",
                                         p.password(),
                                         "--database",
                                         "mt"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        return in_chroot(argv);
    }

    static std::vector<std::string> cli(const std::vector<std::string> &extra) {
        std::vector<std::string> argv = {
            "/usr/bin/mysql",       "--no-defaults",
            "-h" + server_->host(), "-P" + std::to_string(server_->port()),
            "-u" + server_->user(), "-p" + server_->password()};
        argv.insert(argv.end(), extra.begin(), extra.end());
        return in_chroot(argv);
    }

    std::vector<std::string> shim_args() const {
        return {"--shim", dir() + "/libmysqltrace-shim.so"};
    }

    static std::unique_ptr<MariadbServer> server_;
    std::string out_;
};

std::unique_ptr<MariadbServer> OracleClient::server_;

const std::vector<Step> kCSteps = {
    {"connect", "ok"},
    {"attrs trace_id abc123 n2 v2", "ok"},
    {"query SELECT mysql_query_attribute_string('trace_id')", "ok 1 1"},
    {"prepare SELECT id, name FROM t WHERE id > ?", "ok"},
    {"execute 1", "ok 2"},
    {"close_stmt", "ok"},
    {"query SELECT nope FROM t", "error 1054 Unknown column 'nope' in 'field list'"},
    {"quit", "ok"},
};

// Event blocks ("mysqltrace: ..." and its indented detail lines) that the
// library's trace plugin reported are left out, and API call lines go to
// the end: where a call's return falls among its reply's packets depends on
// how the kernel split the server's writes.
std::string rebuilt_only(const std::string &normalised) {
    std::istringstream in(normalised);
    std::vector<std::string> blocks;
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with("    ") && !blocks.empty()) {
            blocks.back() += line + "\n";
        } else {
            blocks.push_back(line + "\n");
        }
    }
    std::string events, calls;
    for (const auto &b : blocks) {
        if (b.find("reported by the client library's trace plugin") != std::string::npos) {
            continue;
        }
        (b.find(": api: ") != std::string::npos ? calls : events) += b;
    }
    return events + "---- API calls ----\n" + calls;
}

TEST_F(OracleClient, RunLibmysqlclientTlsQueryAttributesPreparedError) {
    auto s = run_under_run(c_client({"--ssl-mode", "REQUIRED"}), kCSteps, shim_args(), out_);
    ASSERT_EQ(s.answers.size(), kCSteps.size()) << s.tracer_stderr;
    for (size_t i = 0; i < kCSteps.size(); i++) {
        EXPECT_EQ(s.answers[i], kCSteps[i].answer) << kCSteps[i].command;
    }
    EXPECT_EQ(s.tracer_exit, 0) << s.tracer_stderr;
    EXPECT_TRUE(matches_expected("oracle_run_c_tls.mysql",
                                 rebuilt_only(normalise_trace(s.trace, {{dir(), "<dir>"}}))));
}

// The "stage: S, event: E" pairs of a text trace: those the library's trace
// plugin reported, and those rebuilt from the wire.
std::pair<std::vector<std::string>, std::vector<std::string>> event_sources(
    const std::string &trace) {
    static const std::regex re(R"(mysqltrace: \d+: (stage: \w+, event: \w+))");
    std::vector<std::string> library, rebuilt;
    std::istringstream in(trace);
    std::vector<std::string> *last = nullptr;
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_search(line, m, re)) {
            rebuilt.push_back(m[1].str());
            last = &rebuilt;
        } else if (!line.starts_with("    ")) {
            last = nullptr;
        } else if (last != nullptr && line.find("reported by the client library's trace plugin") !=
                                          std::string::npos) {
            library.push_back(rebuilt.back());
            rebuilt.pop_back();
            last = nullptr;
        }
    }
    return {library, rebuilt};
}

// libmysqlclient's own non-blocking API (the client calls each
// *_nonblocking function until it is not NET_ASYNC_NOT_READY) gives the same
// trace as the blocking calls, API lines included: each operation begins at
// its first call and ends at the call that completes it.
TEST_F(OracleClient, RunNonblockingApiTracesAsTheBlockingOne) {
    auto steps = [](bool nonblocking) {
        return std::vector<Step>{
            {"connect", "ok"},
            {"attrs trace_id abc123 n2 v2", "ok"},
            {"query SELECT mysql_query_attribute_string('trace_id')", "ok 1 1"},
            // The server answers after 0.1 s: the first call cannot find it.
            {"query SELECT sleep(0.1) AS s", "ok 1 1"},
            {"waited", nonblocking ? "ok waited" : "ok not waited"},
            {"query SELECT id, name FROM t ORDER BY id; SELECT 1; DO 1", "ok 2 4"},
            {"query SELECT nope FROM t", "error 1054 Unknown column 'nope' in 'field list'"},
            {"reset", "ok"},
            {"quit", "ok"},
        };
    };
    std::string traces[2];
    for (bool nonblocking : {false, true}) {
        std::vector<std::string> extra = {"--ssl-mode", "REQUIRED", "--multi"};
        if (nonblocking) {
            extra.push_back("--nonblocking");
        }
        const auto want = steps(nonblocking);
        auto s = run_under_run(c_client(extra), want, shim_args(),
                               out_ + (nonblocking ? ".nonblocking" : ".blocking"));
        ASSERT_EQ(s.answers.size(), want.size()) << s.tracer_stderr;
        for (size_t i = 0; i < want.size(); i++) {
            EXPECT_EQ(s.answers[i], want[i].answer) << want[i].command;
        }
        EXPECT_EQ(s.tracer_exit, 0) << s.tracer_stderr;
        traces[nonblocking] = rebuilt_only(normalise_trace(s.trace, {{dir(), "<dir>"}}));
        // The library's own trace plugin is the oracle of the blocking run.
        // Not of the non-blocking one: there 9.7.4 reports AUTH_PLUGIN again
        // at every call that finds the server's reply not there yet, and no
        // READ_PACKET for the greeting (the rebuilt sequence equals the
        // blocking run's, checked below).
        const auto [library, rebuilt] = event_sources(s.trace);
        EXPECT_GT(library.size(), 40u);
        if (!nonblocking) {
            EXPECT_EQ(rebuilt, library);
        }
        if (nonblocking) {
            // The call that sent the query began the operation, and the one
            // that read the reply ended it: the server slept 0.1 s in
            // between, so the call spans it (a call reported from its last
            // attempt would not).
            static const std::regex re(
                R"(api: mysql_real_query\(0x[0-9a-f]+\) -> OK; time: (\d+)\.\d+ ms; SQL: SELECT sleep)");
            std::smatch m;
            ASSERT_TRUE(std::regex_search(s.trace, m, re)) << s.trace;
            EXPECT_GE(std::stoi(m[1].str()), 100) << m[0].str();
        }
    }
    EXPECT_TRUE(matches_expected("oracle_run_c_nonblocking.mysql", traces[1]));
    EXPECT_EQ(traces[1], traces[0]);
}

// The same client against MariaDB 10.11 (no query attributes there).
TEST_F(OracleClient, RunNonblockingApiAgainstMariadb) {
    ServerOptions o;
    o.flavour = ServerFlavour::mariadb;
    o.tls = true;
    auto peer = MariadbServer::start(o);
    ASSERT_TRUE(peer.ok()) << peer.error().message;
    auto r = (*peer)->query(
        "CREATE DATABASE mt; CREATE TABLE mt.t (id INT PRIMARY KEY, name VARCHAR(16));"
        "INSERT INTO mt.t VALUES (1, 'apple'), (2, 'pear'), (3, 'plum')");
    ASSERT_TRUE(r.ok()) << r.error().message;
    const std::vector<Step> steps = {
        {"connect", "ok"},
        {"query SELECT id, name FROM t ORDER BY id; SELECT 1; DO 1", "ok 2 4"},
        {"query SELECT nope FROM t", "error 1054 Unknown column 'nope' in 'SELECT'"},
        {"reset", "ok"},
        {"quit", "ok"},
    };
    std::string traces[2];
    for (bool nonblocking : {false, true}) {
        std::vector<std::string> extra = {"--ssl-mode", "REQUIRED", "--multi"};
        if (nonblocking) {
            extra.push_back("--nonblocking");
        }
        auto s = run_under_run(c_client(extra, peer->get()), steps, shim_args(),
                               out_ + (nonblocking ? ".nonblocking" : ".blocking"));
        ASSERT_EQ(s.answers.size(), steps.size()) << s.tracer_stderr;
        for (size_t i = 0; i < steps.size(); i++) {
            EXPECT_EQ(s.answers[i], steps[i].answer) << steps[i].command;
        }
        EXPECT_EQ(s.tracer_exit, 0) << s.tracer_stderr;
        traces[nonblocking] = rebuilt_only(normalise_trace(s.trace, {{dir(), "<dir>"}}));
    }
    EXPECT_TRUE(matches_expected("oracle_run_c_nonblocking_mariadb", traces[1]));
    EXPECT_EQ(traces[1], traces[0]);
}

// One session under `mysqltrace run --format json`: the stage/event pairs the
// library reported, and those rebuilt from the wire, in order.
struct Sequences {
    std::vector<std::string> library;
    std::vector<std::string> rebuilt;
    std::vector<std::string> details;  // every detail line of rebuilt events
};

Sequences sequences(const std::string &path) {
    Sequences out;
    for (const auto &j : read_json_lines(path)) {
        if (j.value("kind", "") != "protocol") {
            continue;
        }
        std::string e = j.value("stage", "") + " " + j.value("event", "");
        if (j.value("source", "") == "library") {
            out.library.push_back(e);
            continue;
        }
        out.rebuilt.push_back(e);
        for (const auto &d : j.value("details", nlohmann::json::array())) {
            out.details.push_back(d.get<std::string>());
        }
    }
    return out;
}

struct AuthCase {
    const char *name;
    std::vector<std::string> options;
    bool flush;  // empty the server's caching_sha2 cache: full authentication
    std::vector<std::string> expect_details;
};

class OracleAuth : public OracleClient, public ::testing::WithParamInterface<AuthCase> {};

TEST_P(OracleAuth, RebuiltSequenceEqualsTheLibrarysOwnTrace) {
    const AuthCase &c = GetParam();
    if (c.flush) {
        auto r = server_->query("FLUSH PRIVILEGES");
        ASSERT_TRUE(r.ok()) << r.error().message;
    }
    std::vector<std::string> args = shim_args();
    args.insert(args.end(), {"--format", "json"});
    auto s = run_under_run(c_client(c.options), kCSteps, args, out_);
    ASSERT_EQ(s.answers.size(), kCSteps.size()) << s.tracer_stderr;
    for (size_t i = 0; i < kCSteps.size(); i++) {
        EXPECT_EQ(s.answers[i], kCSteps[i].answer) << kCSteps[i].command;
    }
    EXPECT_EQ(s.tracer_exit, 0) << s.tracer_stderr;
    Sequences q = sequences(out_);
    ASSERT_GT(q.library.size(), 40u) << "the library's trace plugin reported nothing";
    EXPECT_EQ(q.rebuilt, q.library);
    for (const auto &d : c.expect_details) {
        EXPECT_NE(std::find(q.details.begin(), q.details.end(), d), q.details.end()) << d;
    }
    EXPECT_NE(std::find(q.details.begin(), q.details.end(),
                        "Query attributes: trace_id='abc123', n2='v2'"),
              q.details.end());
    // Secrets: no trace of the password, in clear or hex.
    const std::string raw = read_file(out_);
    EXPECT_EQ(raw.find("mtpass"), std::string::npos);
    EXPECT_EQ(raw.find("6d7470617373"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Sha2AndCompression, OracleAuth,
    ::testing::Values(
        AuthCase{"tls_fast",
                 {"--ssl-mode", "REQUIRED"},
                 false,
                 {"Auth more data: 1 bytes (fast authentication succeeded)"}},
        AuthCase{"tls_full",
                 {"--ssl-mode", "REQUIRED"},
                 true,
                 {"Auth more data: 1 bytes (full authentication required)",
                  "Auth data: 7 bytes (password in clear text, inside TLS)"}},
        AuthCase{"rsa_plain",
                 {"--ssl-mode", "DISABLED", "--get-server-public-key"},
                 true,
                 {"Auth data: 1 bytes (request for the server's RSA public key)",
                  "Auth data: 256 bytes (password encrypted with the server's RSA public key)"}},
        AuthCase{"zstd_plain",
                 {"--ssl-mode", "DISABLED", "--get-server-public-key", "--compression-algorithms",
                  "zstd"},
                 false,
                 {"Row: 3, 'plum'"}},
        AuthCase{"zlib_tls",
                 {"--ssl-mode", "REQUIRED", "--compression-algorithms", "zlib"},
                 false,
                 {"Row: 3, 'plum'"}}),
    [](const ::testing::TestParamInfo<AuthCase> &i) { return std::string(i.param.name); });

TEST_F(OracleClient, ClientPidJoinsTheCliMidConnectionWithQueryAttributes) {
    // The 9.7 CLI over TCP (TLS by default), already connected and past its
    // first statement when the tracer attaches.
    GatedClient client(cli({"--commands", "mt"}), out_ + ".client.stderr");
    client.open_gate();
    client.send("SELECT 1;");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    BackgroundCommand tracer(
        {MYSQLTRACE_BINARY, "client", "--pid", std::to_string(client.pid()), "--output", out_});
    ASSERT_TRUE(tracer.wait_for_stderr("Ctrl-C to stop"));
    client.send("SELECT id, name FROM t ORDER BY id;");
    client.send("query_attributes n1 v1 n2 v2");
    client.send(
        "SELECT mysql_query_attribute_string('n1') AS a, mysql_query_attribute_string('n2') AS "
        "b;");
    client.send("SELECT 'no attributes' AS c;");
    EXPECT_EQ(client.finish(), 0);
    auto r = tracer.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string trace = read_file(out_);
    EXPECT_EQ(trace.find("\\x00"), std::string::npos) << trace;
    EXPECT_TRUE(matches_expected("oracle_cli_mid_connection.mysql", normalise_trace(trace)));
}

}  // namespace
