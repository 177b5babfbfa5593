// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace client --pid` on a Go program (tests/testprogs/go_client,
// go-sql-driver/mysql, built with the tests from Debian's golang-go and
// golang-github-go-sql-driver-mysql-dev, offline): the exact WL#6226 event
// sequence over the unix socket, plain TCP and TLS (Go's own crypto/tls in
// the executable, probed at (*Conn).Read/Write's entries and RETs), and the
// same TLS trace from a binary built with -ldflags=-s -w (no ELF symbol
// table: the functions are found in Go's .gopclntab).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <utility>
#include <unistd.h>

#include <gtest/gtest.h>

#include "client/go_tls.h"
#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/client_session.h"
#include "priv/priv.h"

namespace {

using namespace mysqltrace::test;

// The Go client, built with the tests (tests/testprogs/CMakeLists.txt):
// plain and stripped (-ldflags=-s -w). `error` says why when it is missing.
struct GoClients {
    std::string plain, stripped, error;
};

const GoClients &go_clients() {
    static const GoClients built = [] {
        GoClients g{testprog("go_client"), testprog("go_client_stripped"), {}};
        for (const auto *path : {&g.plain, &g.stripped}) {
            if (!std::filesystem::exists(*path)) {
                g.error = *path +
                          " was not built: cmake found no go (scripts/install-deps.sh "
                          "installs golang-go)";
            }
        }
        return g;
    }();
    return built;
}

class ClientGo : public ::testing::TestWithParam<ServerFlavour> {
  protected:
    virtual bool tls() const { return false; }
    bool mysql() const { return GetParam() == ServerFlavour::mysql; }
    std::string expected(const std::string &name) const { return mysql() ? name + ".mysql" : name; }

    static void TearDownTestSuite() { stop_peer_servers(); }

    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        const auto &g = go_clients();
        ASSERT_TRUE(g.error.empty()) << g.error;
        server_ = peer_server(GetParam(), tls());
        ASSERT_NE(server_, nullptr);
        out_ = trace_path_for_test(*server_);
    }

    std::vector<std::string> client(const std::string &binary, bool tcp,
                                    const std::vector<std::string> &extra = {}) const {
        std::vector<std::string> argv = {binary, "--user", server_->user(), "--password",
                                         server_->password()};
        for (auto &a : server_address_args(*server_, tcp)) {
            argv.push_back(std::move(a));
        }
        argv.insert(argv.end(), extra.begin(), extra.end());
        return argv;
    }

    // Starts the Go client (it waits for its first command on stdin), plays
    // `before` untraced, attaches the tracer to the running Go process — its
    // executable must be mapped when the tracer looks for crypto/tls —
    // plays `steps`, and checks every answer and the trace against
    // `expected`. Returns the tracer's stderr.
    std::string check(const std::string &expected, const std::vector<std::string> &argv,
                      const std::vector<Step> &steps, const std::string &out,
                      const std::vector<Step> &before = {}) {
        GatedClient c(argv);
        c.open_gate();
        const std::string exe = "/proc/" + std::to_string(c.pid()) + "/exe";
        for (int i = 0; i < 500 && std::filesystem::read_symlink(exe) != argv[0]; i++) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        EXPECT_EQ(std::filesystem::read_symlink(exe), argv[0]);
        for (const auto &step : before) {
            EXPECT_EQ(c.command(step.command), step.answer) << step.command;
        }
        return attach_and_check(c, *server_, this->expected(expected), steps, out);
    }

    MariadbServer *server_ = nullptr;
    std::string out_;
};

std::string param_name(const ::testing::TestParamInfo<ServerFlavour> &info) {
    return flavour_name(info.param);
}

TEST_P(ClientGo, UnixSocket) {
    check("go_basic", client(go_clients().plain, false), basic_steps(), out_);
}

TEST_P(ClientGo, TcpMultiStatements) {
    check("go_multi", client(go_clients().plain, true, {"--multi"}),
          {{"connect", "ok"}, {"query select 1; select 2, 3; do 1", "ok 2 2"}, {"quit", "ok"}},
          out_);
}

// Connections open before the trace are joined at their next command, as
// for the other clients.
const std::vector<Step> kBeforeTrace = {{"connect", "ok"},
                                        {"query select a, b from mt.t order by a", "ok 1 2"}};
const std::vector<Step> kAfterAttach = {
    {"query select 1 from dual where 1 = 0", "ok 1 0"}, {"ping", "ok"}, {"quit", "ok"}};

TEST_P(ClientGo, AttachMidConnection) {
    check("go_mid_connection", client(go_clients().plain, false), kAfterAttach, out_, kBeforeTrace);
}

// TLS: the socket carries TLS records; the cleartext comes from the uprobes
// on crypto/tls in the executable.
class ClientGoTls : public ClientGo {
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

TEST_P(ClientGoTls, Tls) {
    const std::string err =
        check("go_tls", client(go_clients().plain, true, {"--ssl"}), tls_steps(mysql()), out_);
    // Both functions, found by the ELF symbol table.
    EXPECT_NE(err.find("TLS cleartext from crypto/tls.(*Conn).Read in "), std::string::npos) << err;
    EXPECT_NE(err.find("TLS cleartext from crypto/tls.(*Conn).Write in "), std::string::npos)
        << err;
    EXPECT_NE(err.find("(by .symtab)"), std::string::npos) << err;
}

TEST_P(ClientGoTls, TlsStrippedBinary) {
    // -ldflags='-s -w': no .symtab, no DWARF; Go's .gopclntab still names
    // every function. The trace is the same as the unstripped binary's.
    const std::string err =
        check("go_tls", client(go_clients().stripped, true, {"--ssl"}), tls_steps(mysql()), out_);
    EXPECT_NE(err.find("(by .gopclntab)"), std::string::npos) << err;
    EXPECT_EQ(err.find("warning"), std::string::npos) << err;
}

TEST_P(ClientGoTls, AttachMidConnection) {
    // The TLS session was set up before the trace: its socket is learnt
    // from the syscalls of the first Write after the attach.
    check("go_tls_mid_connection", client(go_clients().plain, true, {"--ssl"}), kAfterAttach, out_,
          kBeforeTrace);
}

TEST_P(ClientGoTls, BigStatementAndResult) {
    // A 40,000-byte statement: Write cuts it into TLS records of 16 KiB,
    // sent by several syscalls inside one call; the snapped cleartext is
    // the first --snaplen bytes. And a result of 100,000 bytes, read by many
    // Read calls, most of them served from the tls.Conn's buffer without a
    // syscall (the socket is the one last seen for that *tls.Conn).
    check("go_tls_big", client(go_clients().plain, true, {"--ssl"}),
          {{"connect", "ok"},
           {"bigquery 40000", "ok 1 1"},
           {"query select length(repeat('y', 100000)), repeat('y', 100000)", "ok 1 1"},
           {"quit", "ok"}},
          out_);
}

TEST_P(ClientGoTls, GoroutinesOnTheirOwnConnections) {
    // 8 goroutines, each on its own TLS connection, 25 statements each:
    // reads park the goroutines, which resume on whatever thread is free
    // (GOMAXPROCS is the machine's 2 cores, plus threads blocked in
    // syscalls). Every statement must be on its own connection, once.
    GatedClient c(client(go_clients().plain, true, {"--ssl"}));
    c.open_gate();
    const std::string exe = "/proc/" + std::to_string(c.pid()) + "/exe";
    for (int i = 0; i < 500 && std::filesystem::read_symlink(exe) != go_clients().plain; i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    BackgroundCommand tracer({MYSQLTRACE_BINARY, "client", "--pid", std::to_string(c.pid()),
                              "--format", "json", "--output", out_});
    ASSERT_TRUE(tracer.wait_for_stderr("Ctrl-C to stop")) << tracer.stderr_so_far();
    EXPECT_EQ(c.command("parallel 8 25"), "ok 200");
    c.finish();
    auto r = tracer.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; traced process exited\n"), std::string::npos)
        << r.err;
    // Statement text -> the connections it was seen on; connection -> the
    // goroutine number its statements name.
    std::map<std::string, std::vector<uint64_t>> seen;
    std::map<uint64_t, std::set<std::string>> conn_goroutine;
    long rows = 0;
    for (const auto &j : read_json_lines(out_)) {
        if (j["kind"] == "protocol_command" && j["command"] == "COM_QUERY") {
            const std::string sql = j["sql"].get<std::string>();
            const uint64_t conn = j["conn"].get<uint64_t>();
            seen[sql].push_back(conn);
            conn_goroutine[conn].insert(sql.substr(0, sql.find(',')));
            rows += j["rows"].get<long>();
        }
    }
    EXPECT_EQ(seen.size(), 200u);
    for (int g = 1; g <= 8; g++) {
        for (int q = 1; q <= 25; q++) {
            const std::string sql = "select " + std::to_string(g) + ", " + std::to_string(q);
            EXPECT_EQ(seen[sql].size(), 1u) << sql;
        }
    }
    EXPECT_EQ(conn_goroutine.size(), 8u);
    for (const auto &[conn, goroutines] : conn_goroutine) {
        EXPECT_EQ(goroutines.size(), 1u) << conn;
    }
    EXPECT_EQ(rows, 200);
}

// Go's own function table gives the stripped binary the same functions,
// probe sites and RETs as the ELF symbol table gives the unstripped one
// (the two builds have the same code).
TEST(ClientGoBinary, PclntabAgreesWithSymtab) {
    MYSQLTRACE_REQUIRE_ROOT();
    const auto &g = go_clients();
    ASSERT_TRUE(g.error.empty()) << g.error;
    auto plain = mysqltrace::client::find_go_tls_in_file(g.plain);
    auto stripped = mysqltrace::client::find_go_tls_in_file(g.stripped);
    EXPECT_TRUE(plain.warnings.empty());
    EXPECT_TRUE(stripped.warnings.empty());
    ASSERT_EQ(plain.functions.size(), 2u);
    ASSERT_EQ(stripped.functions.size(), 2u);
    for (auto *fs : {&plain.functions, &stripped.functions}) {
        std::sort(fs->begin(), fs->end(),
                  [](const auto &x, const auto &y) { return x.symbol < y.symbol; });
    }
    for (size_t i = 0; i < 2; i++) {
        const auto &a = plain.functions[i];
        const auto &b = stripped.functions[i];
        EXPECT_EQ(a.found_by, ".symtab");
        EXPECT_EQ(b.found_by, ".gopclntab");
        EXPECT_EQ(a.symbol, b.symbol);
        EXPECT_EQ(a.func, b.func);
        EXPECT_EQ(a.entry.offset, b.entry.offset) << a.symbol;
        EXPECT_EQ(a.entry.instruction, b.entry.instruction) << a.symbol;
        ASSERT_EQ(a.returns.size(), b.returns.size()) << a.symbol;
        for (size_t r = 0; r < a.returns.size(); r++) {
            EXPECT_EQ(a.returns[r].offset, b.returns[r].offset) << a.symbol;
            EXPECT_EQ(a.returns[r].instruction, "ret");
        }
        EXPECT_GE(a.returns.size(), 2u) << a.symbol;
    }
    // Not Go: nothing, and no warning.
    auto c = mysqltrace::client::find_go_tls_in_file("/bin/true");
    EXPECT_TRUE(c.functions.empty());
    EXPECT_TRUE(c.warnings.empty());
}

INSTANTIATE_TEST_SUITE_P(Flavours, ClientGo, ::testing::ValuesIn(all_flavours()), param_name);
INSTANTIATE_TEST_SUITE_P(Flavours, ClientGoTls, ::testing::ValuesIn(all_flavours()), param_name);

}  // namespace
