// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace agent --metrics-listen` scraped by a real Prometheus (Debian's
// prometheus package, an instance of the test's own with a 1 s scrape
// interval), with MariaDB and MySQL 9.7 traced: a known workload on each
// (N selects by primary key, M selects that fail), and what Prometheus
// stored compared with it and with the server's own Questions counter.
// Meanwhile, and for a second before and after, four threads scrape
// /metrics as fast as they can: tracing loses nothing to a scrape storm.
//
// Exactness: Prometheus's increase() is not exact (it extrapolates to the
// range's edges, and a series that appears with a non-zero value loses its
// first sample's value). So every class the workload uses is made before it
// (one statement of each), and the test reads each counter's raw value at
// two instants: t0, after Prometheus has scraped a page that holds every
// statement run before the workload, and t1, after it has scraped one that
// holds the workload. Nothing runs on the servers between the first of
// those scrapes and the workload, so the difference is the workload's.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/priv.h"
#include "priv/server_session.h"
#include "priv/tmpdir_test.h"

namespace mysqltrace::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kSelects = 200, kFailures = 30;

// One HTTP/1.0 GET on 127.0.0.1:port (the server closes the connection
// after its answer: no chunks); the body, "" on any failure or a status
// other than 200.
std::string http_get(uint16_t port, const std::string &target) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::string out;
    const std::string req = "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) == 0 &&
        ::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
        char buf[65536];
        for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) {
            out.append(buf, static_cast<size_t>(n));
        }
    }
    if (fd >= 0) {
        ::close(fd);
    }
    const size_t body = out.find("\r\n\r\n");
    if (!out.starts_with("HTTP/1.") || out.find(" 200 ") != 8 || body == std::string::npos) {
        return "";
    }
    return out.substr(body + 4);
}

std::string url_encode(const std::string &s) {
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(static_cast<char>(c));
        } else {
            char hex[4];
            std::snprintf(hex, sizeof(hex), "%%%02X", c);
            out += hex;
        }
    }
    return out;
}

uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    uint16_t port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&sa), &len) == 0) {
        port = ntohs(sa.sin_port);
    }
    ::close(fd);
    return port;
}

double wall_now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Prometheus's HTTP API: an instant query at `time` (seconds; 0: now), its
// result vector.
nlohmann::json prom_query(uint16_t port, const std::string &q, double time = 0) {
    std::string target = "/api/v1/query?query=" + url_encode(q);
    if (time > 0) {
        char t[32];
        std::snprintf(t, sizeof(t), "%.3f", time);
        target += "&time=" + std::string(t);
    }
    auto j = nlohmann::json::parse(http_get(port, target), nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") {
        ADD_FAILURE() << "query " << q << " failed: " << j.dump();
        return nlohmann::json::array();
    }
    return j["data"]["result"];
}

// The one value of a query that selects a single series (a failure, and
// -1, otherwise).
double prom_value(uint16_t port, const std::string &q, double time = 0) {
    auto r = prom_query(port, q, time);
    if (r.size() != 1) {
        ADD_FAILURE() << q << " at " << time << ": " << r.size() << " series: " << r.dump();
        return -1;
    }
    return std::stod(r[0]["value"][1].get<std::string>());
}

// Questions of SHOW GLOBAL STATUS, read on connection `m` (the statement
// itself is a question: what it counts of itself is the same in both reads).
uint64_t questions(MYSQL *m) {
    if (mysql_query(m, "SHOW GLOBAL STATUS LIKE 'Questions'") != 0) {
        ADD_FAILURE() << mysql_error(m);
        return 0;
    }
    MYSQL_RES *res = mysql_store_result(m);
    MYSQL_ROW row = res ? mysql_fetch_row(res) : nullptr;
    const uint64_t q = row && row[1] ? std::stoull(row[1]) : 0;
    mysql_free_result(res);
    return q;
}

struct Traced {
    std::unique_ptr<MariadbServer> server;
    MYSQL *conn = nullptr;
    std::string labels;  // server="...",pid="..."
    uint64_t q1 = 0, q2 = 0;
};

class AgentPrometheusTest : public TmpdirTest {
  protected:
    AgentPrometheusTest() : TmpdirTest("mtmetrics") {}
    void TearDown() override {
        for (auto &t : servers_) {
            if (t.conn) {
                mysql_close(t.conn);
            }
        }
        servers_.clear();  // each stopped
        prometheus_.reset();
        agent_.reset();
        TmpdirTest::TearDown();
    }

    std::vector<Traced> servers_;
    std::unique_ptr<BackgroundCommand> agent_, prometheus_;
};

TEST_F(AgentPrometheusTest, PrometheusStoresExactlyTheWorkload) {
    for (auto flavour : {ServerFlavour::mariadb, ServerFlavour::mysql}) {
        ServerOptions opts;
        opts.flavour = flavour;
        if (flavour == ServerFlavour::mysql) {
            opts.extra_args = {"--performance-schema=OFF"};
        }
        auto s = MariadbServer::start(opts);
        ASSERT_TRUE(s) << s.error().message;
        Traced t;
        t.server = std::move(s).value();
        std::string rows;
        for (int i = 1; i <= kSelects; i++) {
            rows +=
                (i > 1 ? "," : "") + ("(" + std::to_string(i) + "," + std::to_string(i * 2) + ")");
        }
        ASSERT_TRUE(
            t.server->query("CREATE DATABASE mt_db; CREATE TABLE mt_db.t (id INT PRIMARY "
                            "KEY, v INT); INSERT INTO mt_db.t VALUES " +
                            rows))
            << flavour;
        servers_.push_back(std::move(t));
    }

    agent_ = std::make_unique<BackgroundCommand>(std::vector<std::string>{
        MYSQLTRACE_BINARY, "agent", "--output-dir", base_ + "/out", "--socket-prefix", base_ + "/",
        "--control-socket", "", "--rescan-ms", "300", "--metrics-listen", "127.0.0.1:0"});
    auto &agent = *agent_;
    ASSERT_TRUE(agent.wait_for_stderr("agent watching")) << agent.stderr_so_far();
    const std::string &log = agent.stderr_so_far();
    const std::string url = "metrics at http://127.0.0.1:";
    ASSERT_NE(log.find(url), std::string::npos) << log;
    const uint16_t metrics_port =
        static_cast<uint16_t>(std::stoi(log.substr(log.find(url) + url.size())));
    for (auto &t : servers_) {
        ASSERT_TRUE(
            agent.wait_for_stderr("attached pid=" + std::to_string(t.server->pid()) + " ", 60000))
            << agent.stderr_so_far();
        t.labels = "server=\"" + flavour_name(t.server->flavour()) + "-" +
                   std::to_string(t.server->port()) + "\",pid=\"" +
                   std::to_string(t.server->pid()) + "\"";
    }

    // Prometheus, scraping the agent every second.
    const uint16_t prom_port = free_port();
    ASSERT_NE(prom_port, 0);
    const std::string config = base_ + "/prometheus.yml";
    std::ofstream(config) << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                          << "scrape_configs:\n  - job_name: mysqltrace\n"
                          << "    static_configs:\n      - targets: ['127.0.0.1:" << metrics_port
                          << "']\n";
    prometheus_ = std::make_unique<BackgroundCommand>(std::vector<std::string>{
        "/usr/bin/prometheus", "--config.file=" + config, "--storage.tsdb.path=" + base_ + "/tsdb",
        "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"});
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (http_get(prom_port, "/-/ready").empty() && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ASSERT_FALSE(http_get(prom_port, "/-/ready").empty())
        << "Prometheus not ready: " << prometheus_->stderr_so_far();

    const std::string select = "command=\"statement/sql/select\",schema=\"mt_db\",user=\"mt\"";
    const std::string ok_class = select + ",digest=\"SELECT v FROM t WHERE id = ?\"";
    const std::string bad_class = select + ",digest=\"SELECT nosuch FROM t WHERE id = ?\"";
    // Each class the workload uses, once, before it; the connection stays
    // open until the end (MySQL reports its COM_QUIT too).
    for (auto &t : servers_) {
        t.conn = connect_to(*t.server, 0, "mt_db");
        ASSERT_EQ(run_query(t.conn, "SELECT v FROM t WHERE id = 1"), 0u);
        ASSERT_EQ(run_query(t.conn, "SELECT nosuch FROM t WHERE id = 1"), 1054u);
        questions(t.conn);
    }
    // Waits until Prometheus holds a scrape made `after` (wall clock) or
    // later, the agent having drained its rings by then; returns now.
    auto scraped_after = [&](double after) {
        const auto until = Clock::now() + std::chrono::seconds(30);
        while (Clock::now() < until) {
            auto r = prom_query(prom_port, "timestamp(mysqltrace_agent_servers_attached)");
            if (r.size() == 1 && std::stod(r[0]["value"][1].get<std::string>()) >= after) {
                return wall_now();
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
        }
        ADD_FAILURE() << "Prometheus scraped nothing after " << after;
        return wall_now();
    };
    const double t0 = scraped_after(wall_now() + 1.0);

    // The workload, with four threads scraping /metrics meanwhile.
    std::atomic<bool> storm{true};
    std::atomic<int> scrapes{0}, failed_scrapes{0};
    std::vector<std::thread> scrapers;
    for (int i = 0; i < 4; i++) {
        scrapers.emplace_back([&] {
            while (storm) {
                (http_get(metrics_port, "/metrics").empty() ? failed_scrapes : scrapes)++;
            }
        });
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto w0 = Clock::now();
    for (auto &t : servers_) {
        t.q1 = questions(t.conn);
        for (int i = 1; i <= kSelects; i++) {
            EXPECT_EQ(run_query(t.conn, "SELECT v FROM t WHERE id = " + std::to_string(i)), 0u);
        }
        for (int i = 1; i <= kFailures; i++) {
            EXPECT_EQ(run_query(t.conn, "SELECT nosuch FROM t WHERE id = " + std::to_string(i)),
                      1054u);
        }
        t.q2 = questions(t.conn);
    }
    const double workload_s = std::chrono::duration<double>(Clock::now() - w0).count();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    storm = false;
    for (auto &th : scrapers) {
        th.join();
    }
    std::printf("workload: %.2f s, in 2 s more of %d scrapes of /metrics (%d failed)\n", workload_s,
                scrapes.load(), failed_scrapes.load());
    EXPECT_GT(scrapes.load(), 0);
    const double t1 = scraped_after(wall_now() + 1.0);

    auto delta = [&](const std::string &q) {
        return prom_value(prom_port, q, t1) - prom_value(prom_port, q, t0);
    };
    EXPECT_EQ(prom_value(prom_port, "up{job=\"mysqltrace\"}", t1), 1);
    EXPECT_EQ(prom_value(prom_port, "mysqltrace_agent_servers_attached", t1), 2);
    for (auto &t : servers_) {
        SCOPED_TRACE(flavour_name(t.server->flavour()));
        const std::string s = t.labels;
        EXPECT_EQ(delta("mysqltrace_statements_total{" + s + "," + ok_class + "}"), kSelects);
        EXPECT_EQ(delta("mysqltrace_statement_errors_total{" + s + "," + ok_class + "}"), 0);
        EXPECT_EQ(delta("mysqltrace_statement_rows_sent_total{" + s + "," + ok_class + "}"),
                  kSelects);
        EXPECT_EQ(delta("mysqltrace_statement_latency_seconds_count{" + s + "," + ok_class + "}"),
                  kSelects);
        EXPECT_EQ(delta("mysqltrace_statement_latency_seconds_bucket{" + s + "," + ok_class +
                        ",le=\"+Inf\"}"),
                  kSelects);
        EXPECT_EQ(delta("mysqltrace_statements_total{" + s + "," + bad_class + "}"), kFailures);
        EXPECT_EQ(delta("mysqltrace_statement_errors_total{" + s + "," + bad_class + "}"),
                  kFailures);
        EXPECT_EQ(delta("mysqltrace_statement_latency_seconds_count{" + s + "," + bad_class + "}"),
                  kFailures);
        // Every statement of the server against its own count. Between its
        // two readings Questions moved by the workload and one SHOW STATUS
        // (whether a SHOW counts itself or not, it does the same in both
        // readings); the agent, between t0 and t1, saw both SHOW STATUS.
        const double all = delta("sum(mysqltrace_statements_total{" + s + "})");
        EXPECT_EQ(all, kSelects + kFailures + 2);
        EXPECT_EQ(t.q2 - t.q1, static_cast<uint64_t>(kSelects + kFailures + 1));
        EXPECT_EQ(all, static_cast<double>(t.q2 - t.q1) + 1);
        EXPECT_EQ(delta("mysqltrace_tracer_statements_total{" + s + "}"), all);
        // Nothing lost or unreadable.
        EXPECT_EQ(
            prom_value(prom_port, "sum(mysqltrace_tracer_records_dropped_total{" + s + "})", t1),
            0);
        EXPECT_EQ(
            prom_value(prom_port, "mysqltrace_tracer_records_undecodable_total{" + s + "}", t1), 0);
        // Its labels.
        auto info = prom_query(prom_port, "mysqltrace_server_info{" + s + "}", t1);
        ASSERT_EQ(info.size(), 1u);
        const auto &m = info[0]["metric"];
        EXPECT_EQ(m.value("flavour", ""), flavour_name(t.server->flavour()));
        EXPECT_TRUE(t.server->version().starts_with(m.value("version", "?")))
            << m.value("version", "") << " vs " << t.server->version();
        EXPECT_EQ(m.value("port", ""), std::to_string(t.server->port()));
        EXPECT_EQ(m.value("sockets", ""), t.server->socket_path());
    }
    // Every query of the Grafana dashboard the package ships has data:
    // the names it uses are the agent's, and its PromQL works on them.
    std::ifstream dash_file(MYSQLTRACE_SOURCE_DIR "/packaging/grafana/mysqltrace-dashboard.json");
    const auto dash = nlohmann::json::parse(dash_file, nullptr, false);
    ASSERT_TRUE(dash.is_object());
    size_t queries = 0;
    for (const auto &p : dash["panels"]) {
        for (const auto &target : p.value("targets", nlohmann::json::array())) {
            std::string q = target["expr"];
            for (const auto &[var, value] :
                 {std::pair<std::string, std::string>{"$__rate_interval", "1m"},
                  {"$server", ".*"}}) {
                for (size_t at; (at = q.find(var)) != std::string::npos;) {
                    q.replace(at, var.size(), value);
                }
            }
            // Stage time comes from a CPU timer's samples and off-CPU
            // time: whether the setup's and the workload's short
            // statements got any is chance (printed, not checked).
            if (q.find("stage_seconds") != std::string::npos) {
                std::printf("dashboard: %s: %zu series\n", p.value("title", "").c_str(),
                            prom_query(prom_port, q, t1).size());
                continue;
            }
            EXPECT_FALSE(prom_query(prom_port, q, t1).empty()) << p.value("title", "") << ": " << q;
            queries++;
        }
    }
    EXPECT_GE(queries, 10u);
    // A live page, with real servers' labels and digests, passes
    // Prometheus's linter too.
    const std::string page = http_get(metrics_port, "/metrics");
    EXPECT_NE(page.find("digest=\"SELECT v FROM t WHERE id = ?\""), std::string::npos) << page;
    std::ofstream(base_ + "/page.prom") << page;
    auto lint = run_command({"/bin/sh", "-c", "promtool check metrics < " + base_ + "/page.prom"});
    EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
    EXPECT_EQ(lint.out + lint.err, "");
    std::printf("live page: %zu bytes\n", page.size());
    const double rss = prom_value(prom_port, "process_resident_memory_bytes", t1);
    const double cpu = prom_value(prom_port, "process_cpu_seconds_total", t1);
    const double render = prom_value(prom_port, "mysqltrace_agent_metrics_render_seconds", t1);
    std::printf("agent with 2 servers: RSS %.1f MiB, CPU %.2f s, last render %.3f ms\n",
                rss / (1 << 20), cpu, render * 1e3);
    EXPECT_GT(rss, 0);

    // A second agent on the same address: a clear error before it traces
    // anything.
    const std::string taken = "127.0.0.1:" + std::to_string(metrics_port);
    auto second =
        run_command({MYSQLTRACE_BINARY, "agent", "--output-dir", base_ + "/out2", "--socket-prefix",
                     base_ + "/", "--control-socket", "", "--metrics-listen", taken});
    EXPECT_EQ(second.exit_code, 1);
    EXPECT_EQ(second.err, "mysqltrace: cannot listen on " + taken +
                              " (--metrics-listen): Address already in use\n");

    auto stopped = agent_->stop(SIGTERM);
    EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
}

}  // namespace
}  // namespace mysqltrace::test
