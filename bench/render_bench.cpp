// SPDX-License-Identifier: GPL-2.0-only
// What rendering one server statement costs the tracer, per output format:
// `server --stages off` on a point select (sysbench's text, one row), the
// case where --format json cost ~60% of the tracer's CPU when each event was
// a nlohmann tree (shared/FACTS.md section 8). "pfs-sql (lines parsed)" is
// what pfs-sql pays: the streamed lines read back as trees, and dumped as
// that old path did. "otlp span" is `server --format otlp` / `--otlp`: the
// span of the statement appended to a batch, a batch of 512 taken as one
// ExportTraceServiceRequest line (its share of that counted per span);
// "+ metrics" also records its duration in the histogram (--otlp). "otlp
// client span" is `client`/`run --otlp`'s span of the same statement as a
// COM_QUERY command summary, with the client histogram.
// A benchmark: it prints ns per statement and never asserts.
//
//   render_bench [--statements N] [--rounds R]
#include <charconv>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "output/otlp.h"
#include "output/otlp_client.h"
#include "output/otlp_metrics.h"
#include "output/server_render.h"
#include "output/slowlog.h"

namespace {

using namespace mysqltrace;

void append_decimal(std::string &s, uint64_t v) {
    char buf[24];
    s.append(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
}

double ns_per_statement(const char *label, uint64_t n, const auto &render_one) {
    size_t bytes = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; i++) {
        bytes += render_one(i);
    }
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
        static_cast<double>(n);
    std::printf("| %-26s | %8.0f | %6zu |\n", label, ns, bytes / n);
    return ns;
}

}  // namespace

int main(int argc, char **argv) {
    CLI::App app("Renders synthetic server statements in each format; prints ns per statement");
    uint64_t n = 200'000;
    int rounds = 3;
    app.add_option("--statements", n)->capture_default_str();
    app.add_option("--rounds", rounds)->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    // Sysbench point selects: a new literal each time, as on a busy server.
    std::vector<server::Statement> sts(1024);
    for (size_t i = 0; i < sts.size(); i++) {
        auto &st = sts[i];
        st.tid = 1000 + static_cast<uint32_t>(i % 2);
        st.thread_id = 10 + i % 2;
        st.query_id = i;
        st.command = 3;
        st.flags = MT_STMT_ENDED;
        st.start_ns = 1'000'000'000 + i * 20'000;
        st.end_ns = st.start_ns + 15'200;
        st.db = "sbtest";
        st.text = "SELECT c FROM sbtest1 WHERE id=" + std::to_string(4000 + i * 7);
        st.text_len = static_cast<uint32_t>(st.text.size());
        st.rows_sent = 1;
        st.rows_examined = 1;
        st.end.cpu_ns = 9'000;
        st.end.utime_ns = 6'000;
        st.end.stime_ns = 3'000;
    }
    const std::vector<server::StageSite> sites;
    auto name_at = [](uint64_t) { return std::string(); };
    server::Account account{10, "sbtest", "localhost"};
    std::printf("| format | ns/statement | bytes |\n|---|---|---|\n");
    for (int r = 0; r < rounds; r++) {
        output::ServerRenderer text(output::ServerFormat::text, 1, sites, name_at);
        output::ServerRenderer json(output::ServerFormat::json, 1, sites, name_at);
        output::ServerRenderer tree(output::ServerFormat::pfs_sql, 1, sites, name_at);
        output::SlowlogRenderer slow;
        ns_per_statement("text", n,
                         [&](uint64_t i) { return text.statement(sts[i % sts.size()]).size(); });
        ns_per_statement("pfs-sql (lines parsed)", n, [&](uint64_t i) {
            tree.statement(sts[i % sts.size()]);
            std::string out;
            for (const auto &j : tree.last_events()) {
                out += j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
                out += '\n';
            }
            return out.size();
        });
        ns_per_statement("json (streaming writer)", n,
                         [&](uint64_t i) { return json.statement(sts[i % sts.size()]).size(); });
        // The texts above repeat every 1024 statements, and the renderer
        // keeps each text's event name and digest: here none repeats (the
        // text is rewritten in place, which this row pays too).
        server::Statement fresh = sts[0];
        ns_per_statement("json, no text repeats", n, [&](uint64_t i) {
            fresh.text.resize(31);
            append_decimal(fresh.text, 1'000'000'000 + i);
            return json.statement(fresh).size();
        });
        ns_per_statement("slowlog", n, [&](uint64_t i) {
            return slow.statement(sts[i % sts.size()], account).size();
        });
        output::OtlpResource res;
        res.db_system = res.service_name = "mysql";
        res.pid = 1;
        res.host_name = "db1";
        res.port = 3306;
        output::OtlpSpans spans(res, 1);
        std::string request;
        const std::vector<output::OtlpStage> no_stages;
        const std::vector<output::OtlpSampledStage> no_samples;
        ns_per_statement("otlp span", n, [&](uint64_t i) {
            const auto &st = sts[i % sts.size()];
            spans.add(st, json.event_name(st), no_stages, no_samples, {});
            if (spans.spans() < 512) {
                return size_t{0};
            }
            spans.take(request);
            return request.size();
        });
        output::OtlpMetrics metrics("", 1);
        output::OtlpSpans measured(res, 1);
        measured.set_metrics(&metrics);
        ns_per_statement("otlp span + metrics", n, [&](uint64_t i) {
            const auto &st = sts[i % sts.size()];
            measured.add(st, json.event_name(st), no_stages, no_samples, {});
            if (measured.spans() < 512) {
                return size_t{0};
            }
            measured.take(request);
            return request.size();
        });
        output::OtlpClientSpans client("app1", "", 1);
        client.set_metrics(&metrics);
        output::ClientConnection conn;
        conn.peer = "10.0.0.5:3306";
        conn.server_version = "8.4.3";
        conn.connection_id = 10;
        conn.db = "sbtest";
        output::ClientProcess proc;
        proc.pid = 4242;
        proc.executable = "sysbench";
        std::vector<protocol::CommandSummary> sums(sts.size());
        for (size_t k = 0; k < sts.size(); k++) {
            auto &sum = sums[k];
            sum.conn = 1;
            sum.pid = sum.tid = 4242;
            sum.ts_start_ns = sts[k].start_ns;
            sum.ts_end_ns = sts[k].end_ns + 20'000;
            sum.command = 3;
            sum.command_name = "COM_QUERY";
            sum.sql = sts[k].text;
            sum.result = protocol::CommandResult::rows;
            sum.rows = 1;
            sum.result_sets = 1;
            sum.bytes_sent = 45;
            sum.bytes_received = 180;
            sum.server_wait_ns = 30'000;
        }
        ns_per_statement("otlp client span + metrics", n, [&](uint64_t i) {
            client.add(sums[i % sums.size()], conn, proc);
            if (client.spans() < 512) {
                return size_t{0};
            }
            client.take(request);
            return request.size();
        });
    }
    return 0;
}
