// SPDX-License-Identifier: GPL-2.0-only
// The agent's /metrics page (agent/metrics.h): the exact exposition text of
// two servers with fixed statement classes (tests/unit/expected/
// agent_metrics.prom), which Prometheus's own promtool accepts; label
// escaping and UTF-8; a cap's worth of classes rendered (its time printed);
// /proc/self/stat; and the HTTP server (agent/metrics_server.h) on a real
// loopback socket.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "agent/metrics.h"
#include "agent/metrics_server.h"
#include "mysqltrace/version.h"

namespace mysqltrace::agent {
namespace {

server::Statement statement(std::string text, uint64_t ns, std::string db, bool failed = false) {
    server::Statement st;
    st.command = 3;  // COM_QUERY
    st.text = std::move(text);
    st.db = std::move(db);
    st.start_ns = 1'000'000;
    st.end_ns = st.start_ns + ns;
    st.rows_sent = 1;
    st.rows_examined = 4;
    if (failed) {
        st.da_status = MT_DA_ERROR;
        st.error = 1054;
        st.rows_sent = 0;
    }
    return st;
}

ServerLabels labels(pid_t pid, std::string flavour, std::vector<uint16_t> ports,
                    std::string socket) {
    ServerLabels l;
    l.process.id.pid = pid;
    l.process.exe = "/usr/sbin/mariadbd";
    l.process.ports = std::move(ports);
    l.process.sockets = {std::move(socket)};
    l.process.cgroup.path = "/system.slice/mariadb.service";
    l.process.cgroup.unit = "mariadb.service";
    l.version = flavour == "mysql" ? "9.7.0" : "10.11.6-MariaDB-0+deb12u1";
    l.flavour = std::move(flavour);
    return l;
}

std::string read_text(const std::string &path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Two servers: a MariaDB one with a cap of 2 classes (a select run 3 times,
// one failing, with sampled stages; a digest that needs escaping; a third
// class counted in other), and a MySQL one listening on a socket alone
// that has traced nothing.
struct Fixture {
    ServerLabels maria = labels(4242, "mariadb", {3306, 3307}, "/run/mysqld/mysqld.sock");
    ServerLabels mysql = labels(77, "mysql", {}, "/tmp/s\"q\\l.sock");
    output::StatementStats maria_stats{2, [](uint64_t addr) {
                                           return addr == 1   ? std::string("Sending data")
                                                  : addr == 2 ? std::string("optimizing")
                                                              : std::string();
                                       }};
    output::StatementStats mysql_stats{500, nullptr};
    std::vector<ServerSample> samples;
    AgentSample agent;

    Fixture() {
        mysql.process.cgroup = {};
        for (int i = 0; i < 3; i++) {
            auto st = statement("SELECT * FROM t WHERE id = " + std::to_string(i),
                                i == 2 ? 3'000'000 : 200'000, "shop", i == 1);
            st.lock_ns = 1500;
            st.sample_period_us = 1000;
            st.samples.push_back({.stage = 1, .on_cpu = 2, .switches = 1, .off_cpu_ns = 500});
            st.samples.push_back({.stage = 2, .on_cpu = 1, .switches = 0, .off_cpu_ns = 0});
            maria_stats.add(st, "app");
        }
        // Quotes, a backslash and a newline to escape; a byte that is not
        // UTF-8; a schema that is.
        auto odd = statement("SELECT x FROM `t\\\xff`\nWHERE y = 'z'", 50'000'000, "sh\xc3\xb6p");
        maria_stats.add(odd, "rep\"o\\rt\n");
        maria_stats.add(statement("DELETE FROM t WHERE id = 9", 20'000'000'000, "shop"), "app");
        ServerSample a;
        a.labels = &maria;
        a.stats = &maria_stats;
        a.rings.produced = 12;
        a.rings.dropped = 3;
        a.rings.busy_drops = 1;
        a.rings.dropped_per_cpu = {1, 2};
        a.rings.malformed = 0;
        a.rings.late = 0;
        a.undecodable = 2;
        a.probes = 9;
        a.outputs_failed = 1;  // its slow.log hit a full disk
        ServerSample b;
        b.labels = &mysql;
        b.stats = &mysql_stats;
        b.rings.dropped_per_cpu = {0, 0};
        b.probes = 3;
        samples = {a, b};
        agent.attaches = 3;
        agent.detaches = 1;
        agent.refused_analysis = 1;
        agent.refused_attach = 0;
        agent.refused_now = 1;
        agent.last_render_seconds = 0.00125;
        agent.process = ProcessSample{1.5, 20 << 20, 300 << 20, 1700000000.25, 31, 1024};
    }
};

TEST(AgentMetrics, ExactExpositionOfTwoServers) {
    Fixture f;
    const std::string page = render_metrics(f.samples, f.agent);
    std::string want = read_text(MYSQLTRACE_SOURCE_DIR "/tests/unit/expected/agent_metrics.prom");
    const std::string version = "@VERSION@";
    if (const size_t at = want.find(version); at != std::string::npos) {
        want.replace(at, version.size(), MYSQLTRACE_VERSION);
    }
    if (page != want) {
        const std::string path = ::testing::TempDir() + "agent_metrics.prom";
        std::ofstream(path) << page;
        ADD_FAILURE() << "the page differs from tests/unit/expected/agent_metrics.prom: "
                      << "diff it with " << path;
    }
}

// Prometheus's own parser and linter: `promtool check metrics` (Debian's
// prometheus package, scripts/install-deps.sh) reads the page from stdin and
// prints nothing for a page it accepts without remarks.
TEST(AgentMetrics, PromtoolAcceptsThePage) {
    Fixture f;
    const std::string path = ::testing::TempDir() + "agent_metrics_promtool.prom";
    std::ofstream(path) << render_metrics(f.samples, f.agent);
    const std::string cmd = "promtool check metrics < " + path + " 2>&1";
    FILE *p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string said;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) {
        said.append(buf, n);
    }
    const int status = ::pclose(p);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "promtool (Debian's prometheus package): " << said;
    EXPECT_EQ(said, "");
}

TEST(AgentMetrics, LabelValuesAreEscapedAndUtf8) {
    auto esc = [](std::string_view v) {
        std::string out;
        append_label_value(out, v);
        return out;
    };
    EXPECT_EQ(esc("a\\b\"c\nd\te"), "a\\\\b\\\"c\\nd\te");
    EXPECT_EQ(esc("sch\xc3\xb6n \xe2\x82\xac \xf0\x9f\x98\x80"),
              "sch\xc3\xb6n \xe2\x82\xac \xf0\x9f\x98\x80");
    // A lone byte, a truncated sequence, an overlong form, a surrogate and a
    // code point past U+10FFFF: each bad byte becomes U+FFFD.
    EXPECT_EQ(esc("a\xff"
                  "b"),
              "a\xef\xbf\xbd"
              "b");
    EXPECT_EQ(esc("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");
    EXPECT_EQ(esc("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");
    EXPECT_EQ(esc("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    EXPECT_EQ(esc("\xf4\x90\x80\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

// A server at its cap of 500 classes: the page's size and how long it
// takes (printed; docs/agent.md quotes it).
TEST(AgentMetrics, FiveHundredClasses) {
    ServerLabels l = labels(1, "mariadb", {3306}, "/run/mysqld/mysqld.sock");
    output::StatementStats stats(500, [](uint64_t) { return std::string("Sending data"); });
    for (int i = 0; i < 600; i++) {
        auto st = statement("SELECT c" + std::to_string(i) +
                                ", d, e FROM orders JOIN items USING (id) "
                                "WHERE customer = 42 AND state = 'open'",
                            1'000'000 + static_cast<uint64_t>(i) * 1000, "shop");
        st.sample_period_us = 1000;
        st.samples.push_back({.stage = 1, .on_cpu = 1, .switches = 0, .off_cpu_ns = 0});
        stats.add(st, "app");
    }
    ServerSample s;
    s.labels = &l;
    s.stats = &stats;
    s.rings.dropped_per_cpu = {0, 0};
    const auto t0 = std::chrono::steady_clock::now();
    constexpr int kRounds = 20;
    size_t size = 0;
    for (int i = 0; i < kRounds; i++) {
        size = render_metrics({s}, {}).size();
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
        kRounds;
    std::printf("500 classes + other: %zu bytes rendered in %.2f ms\n", size, ms);
    EXPECT_EQ(stats.classes().size(), 500u);
    EXPECT_EQ(stats.other().calls, 100u);
}

TEST(AgentMetrics, ProcessStat) {
    // A command name with spaces and a parenthesis, as proc(5) allows.
    const std::string stat =
        "1234 (my (odd) agent) S 1 1234 1234 0 -1 4194560 900 0 0 0 250 125 0 0 20 0 3 0 "
        "5000 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
    auto p = parse_process_stat(stat, 100, 4096, 1'700'000'000);
    ASSERT_TRUE(p);
    EXPECT_DOUBLE_EQ(p->cpu_seconds, 3.75);
    EXPECT_DOUBLE_EQ(p->start_time_seconds, 1'700'000'050.0);
    EXPECT_EQ(p->virtual_bytes, 104857600u);
    EXPECT_EQ(p->resident_bytes, 2560u * 4096);
    EXPECT_FALSE(parse_process_stat("1234 (x) S 1 2 3", 100, 4096, 0));
    auto self = read_process_sample();
    ASSERT_TRUE(self);
    EXPECT_GT(self->resident_bytes, 0u);
    EXPECT_GT(self->open_fds, 2u);  // stdin, stdout, stderr at least
}

TEST(AgentMetrics, ListenAddresses) {
    auto a = parse_listen_address("127.0.0.1:9104");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->host, "127.0.0.1");
    EXPECT_EQ(a->port, 9104);
    a = parse_listen_address("[::1]:0");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->host, "::1");
    EXPECT_EQ(a->port, 0);
    a = parse_listen_address(":9104");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->host, "0.0.0.0");
    for (const char *bad : {"9104", "::1:9104", "host:", "host:65536", "host:91x"}) {
        EXPECT_FALSE(parse_listen_address(bad)) << bad;
    }
}

// One HTTP/1.1 GET over a loopback socket; the whole answer.
std::string http_get(uint16_t port, const std::string &path) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) != 0) {
        ::close(fd);
        return "";
    }
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
    if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
        ::close(fd);
        return "";
    }
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) {
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
}

TEST(MetricsServer, ServesTheRenderedPage) {
    std::atomic<int> renders{0};
    auto s = MetricsServer::start("127.0.0.1:0", [&] {
        renders++;
        return std::string("up 1\n");
    });
    ASSERT_TRUE(s) << s.error().message;
    const uint16_t port = (*s)->port();
    ASSERT_NE(port, 0);
    EXPECT_EQ((*s)->url(), "http://127.0.0.1:" + std::to_string(port) + "/metrics");
    const std::string got = http_get(port, "/metrics");
    EXPECT_TRUE(got.starts_with("HTTP/1.1 200 OK\r\n")) << got;
    EXPECT_NE(got.find("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
              std::string::npos)
        << got;
    EXPECT_TRUE(got.ends_with("\r\n\r\nup 1\n")) << got;
    EXPECT_EQ(renders, 1);
    EXPECT_TRUE(http_get(port, "/nothing").starts_with("HTTP/1.1 404 ")) << got;
    EXPECT_EQ(renders, 1);

    // The same address again: refused, naming it and why.
    auto again = MetricsServer::start("127.0.0.1:" + std::to_string(port), [] { return ""; });
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().message, "cannot listen on 127.0.0.1:" + std::to_string(port) +
                                         " (--metrics-listen): Address already in use");
    const auto t0 = std::chrono::steady_clock::now();
    s->reset();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    EXPECT_EQ(http_get(port, "/metrics"), "");
}

}  // namespace
}  // namespace mysqltrace::agent
