// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server --otlp URL --format otlp` on both flavours, received by
// tests/testprogs/otlp_receiver.js, which decodes strictly with the protobuf
// classes generated from the official OTLP .proto files (not mysqltrace's
// code): a mixed workload (selects, an insert, a failing statement, a
// statement carrying a sqlcommenter traceparent) gives exactly those
// statement spans with their attributes and a child span per exact stage;
// the --format otlp file decodes to the same spans. A collector that is
// down or slow never stalls the trace: every statement is traced, and the
// spans not sent are counted as dropped or failed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/otlp_receiver.h"
#include "priv/priv.h"
#include "priv/server_session.h"

namespace {

using mysqltrace::test::BackgroundCommand;
using mysqltrace::test::connect_to;
using mysqltrace::test::create_table_t;
using mysqltrace::test::flavour_name;
using mysqltrace::test::int_attr;
using mysqltrace::test::json_lines;
using mysqltrace::test::read_file;
using mysqltrace::test::run_command;
using mysqltrace::test::run_query;
using mysqltrace::test::server_tracer_argv;
using mysqltrace::test::ServerTraceTest;
using mysqltrace::test::start_receiver;
using mysqltrace::test::str_attr;
using mysqltrace::test::unix_ns;
using mysqltrace::test::wait_gone;
using nlohmann::json;

const std::string &kReceiver = mysqltrace::test::kOtlpReceiver;
const std::string kTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string kParentId = "00f067aa0ba902b7";

class ServerOtlp : public ServerTraceTest {};

TEST_P(ServerOtlp, MixedWorkloadDecodedByTheOtlpSchema) {
    create_table_t(*server_);
    const std::string received = server_->root_dir() + "/received.jsonl";
    const std::string file = server_->root_dir() + "/spans.otlp.jsonl";
    int port = 0;
    auto receiver = start_receiver(received, &port);
    ASSERT_GT(port, 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    auto tracer = std::make_unique<BackgroundCommand>(server_tracer_argv(
        *server_, {"--stages", "exact", "--otlp", url, "--format", "otlp", "--output", file}));
    ASSERT_TRUE(tracer->wait_for_stderr("Ctrl-C to stop")) << tracer->stop(SIGKILL).err;
    EXPECT_NE(tracer->stderr_so_far().find("mysqltrace: exporting spans to " + url +
                                           "/v1/traces (OTLP/HTTP JSON)\n"),
              std::string::npos)
        << tracer->stderr_so_far();

    const uint64_t before = unix_ns();
    MYSQL *m = connect_to(*server_, 0, "mt_db");
    const unsigned long id = mysql_thread_id(m);
    const std::vector<std::string> sql = {
        "select a, b from t where a >= 2",
        "insert into t values (4, 'w')",
        "select nosuch from t",
        "select b from t where a = 1 /*application='mt%20test',traceparent='00-" + kTraceId + "-" +
            kParentId + "-01'*/",
    };
    EXPECT_EQ(run_query(m, sql[0]), 0u);
    EXPECT_EQ(run_query(m, sql[1]), 0u);
    EXPECT_EQ(run_query(m, sql[2]), 1054u);
    EXPECT_EQ(run_query(m, sql[3]), 0u);
    mysql_close(m);
    wait_gone(*server_, id);
    const uint64_t after = unix_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto rr = receiver->stop(SIGTERM);

    // Every span the tracer made reached the collector.
    std::smatch sm;
    ASSERT_TRUE(std::regex_search(r.err, sm,
                                  std::regex(", ([0-9]+) spans \\(OTLP ([^ ]+): ([0-9]+) "
                                             "sent, 0 dropped \\(queue full\\), 0 failed\\)")))
        << r.err;
    EXPECT_EQ(sm[1], sm[3]) << r.err;
    EXPECT_EQ(sm[2], url + "/v1/traces");
    EXPECT_NE(r.err.find(" 0 records dropped; interrupted\n"), std::string::npos) << r.err;

    const auto spans = json_lines(read_file(received));
    for (const auto &s : spans) {
        ASSERT_FALSE(s.contains("error")) << s.dump();
    }
    EXPECT_EQ(std::to_string(spans.size()), sm[1].str());
    // The file holds the same spans, decoded the same way.
    auto decoded = run_command({"/usr/bin/env", "node", kReceiver, "--decode", file});
    ASSERT_EQ(decoded.exit_code, 0) << decoded.err;
    auto from_file = json_lines(decoded.out);
    auto by_id = [](std::vector<json> v) {
        std::sort(v.begin(), v.end(), [](const json &a, const json &b) {
            return a["spanId"].get<std::string>() < b["spanId"].get<std::string>();
        });
        return v;
    };
    EXPECT_EQ(by_id(from_file), by_id(spans));

    // The statement spans of the test's connection, in order.
    std::vector<json> statements;
    for (const auto &s : spans) {
        if (s["kind"] == 2 && int_attr(s, "mysqltrace.connection.id") == std::to_string(id)) {
            statements.push_back(s);
        }
    }
    std::sort(statements.begin(), statements.end(), [](const json &a, const json &b) {
        return std::stoull(a["start"].get<std::string>()) <
               std::stoull(b["start"].get<std::string>());
    });
    std::string seen;
    for (const auto &s : statements) {
        seen += s["name"].get<std::string>() + "; ";
    }
    // With exact stages the tracer sees every command: the connection's
    // COM_QUIT too.
    ASSERT_EQ(statements.size(), sql.size() + 1) << seen;
    const auto &quit = statements.back();
    EXPECT_EQ(quit["name"], "COM_QUIT");
    EXPECT_EQ(str_attr(quit, "db.operation.name"), "COM_QUIT");
    EXPECT_EQ(str_attr(quit, "db.query.text"), "(none)");
    EXPECT_EQ(str_attr(quit, "mysqltrace.event_name"), "statement/com/Quit");
    EXPECT_EQ(quit["parentSpanId"], "");
    const std::string system = flavour_name(flavour());
    const std::vector<std::string> names = {"SELECT t", "INSERT t", "SELECT t", "SELECT t"};
    const std::vector<std::string> operations = {"SELECT", "INSERT", "SELECT", "SELECT"};
    const std::vector<std::string> returned = {"2", "0", "0", "1"};
    const std::vector<std::string> affected = {"0", "1", "0", "0"};
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    for (size_t i = 0; i < sql.size(); i++) {
        const auto &s = statements[i];
        SCOPED_TRACE(sql[i]);
        EXPECT_EQ(s["resource"]["service.name"], system);
        EXPECT_EQ(s["resource"]["db.system.name"], system);
        EXPECT_EQ(s["resource"]["process.pid"]["int"], std::to_string(server_->pid()));
        EXPECT_EQ(s["resource"]["host.name"], host);
        EXPECT_EQ(s["scope"]["name"], "mysqltrace");
        EXPECT_EQ(s["name"], names[i]);
        EXPECT_EQ(str_attr(s, "db.system.name"), system);
        EXPECT_EQ(str_attr(s, "db.namespace"), "mt_db");
        EXPECT_EQ(str_attr(s, "db.query.text"), sql[i]);
        EXPECT_EQ(str_attr(s, "db.query.summary"), names[i]);
        EXPECT_EQ(str_attr(s, "db.operation.name"), operations[i]);
        EXPECT_EQ(str_attr(s, "db.collection.name"), "t");
        EXPECT_EQ(int_attr(s, "db.response.returned_rows"), returned[i]);
        EXPECT_EQ(int_attr(s, "mysqltrace.rows_affected"), affected[i]);
        EXPECT_EQ(str_attr(s, "server.address"), host);
        EXPECT_EQ(int_attr(s, "server.port"), std::to_string(server_->port()));
        EXPECT_EQ(str_attr(s, "mysqltrace.event_name"),
                  i == 1 ? "statement/sql/insert" : "statement/sql/select");
        const uint64_t start = std::stoull(s["start"].get<std::string>());
        const uint64_t end = std::stoull(s["end"].get<std::string>());
        EXPECT_LE(before, start);
        EXPECT_LE(start, end);
        EXPECT_LE(end, after);
        if (i == 2) {
            EXPECT_EQ(str_attr(s, "db.response.status_code"), "1054");
            EXPECT_EQ(str_attr(s, "error.type"), "1054");
            EXPECT_EQ(str_attr(s, "mysqltrace.sqlstate"), "42S22");
            EXPECT_EQ(
                s["status"],
                (json{{"code", 2},
                      {"message", "Unknown column 'nosuch' in " + want().unknown_column_clause}}));
        } else {
            EXPECT_EQ(str_attr(s, "db.response.status_code"), "(none)");
            EXPECT_EQ(str_attr(s, "error.type"), "(none)");
            EXPECT_EQ(s["status"], json::object());
        }
        if (i == 3) {
            // The application's trace, its span the parent (remote).
            EXPECT_EQ(s["traceId"], kTraceId);
            EXPECT_EQ(s["parentSpanId"], kParentId);
            EXPECT_EQ(s["flags"], 0x301);
        } else {
            EXPECT_NE(s["traceId"], kTraceId);
            EXPECT_EQ(s["parentSpanId"], "");
            EXPECT_EQ(s["flags"], 0x101);
        }
        // A child span per stage, in the statement's trace and time.
        std::vector<json> stages;
        for (const auto &c : spans) {
            if (c["parentSpanId"] == s["spanId"]) {
                stages.push_back(c);
            }
        }
        std::sort(stages.begin(), stages.end(), [](const json &a, const json &b) {
            return std::stoull(a["start"].get<std::string>()) <
                   std::stoull(b["start"].get<std::string>());
        });
        ASSERT_FALSE(stages.empty());
        uint64_t at = start;
        std::vector<std::string> stage_names;
        for (const auto &c : stages) {
            EXPECT_EQ(c["kind"], 1);
            EXPECT_EQ(c["traceId"], s["traceId"]);
            EXPECT_EQ(c["flags"], 0x101);
            EXPECT_EQ(str_attr(c, "mysqltrace.event_name"),
                      "stage/sql/" + c["name"].get<std::string>());
            EXPECT_EQ(std::stoull(c["start"].get<std::string>()), at);
            at = std::stoull(c["end"].get<std::string>());
            stage_names.push_back(c["name"]);
        }
        EXPECT_EQ(at, end);
        if (i == 0) {
            EXPECT_EQ(stage_names, want().select_stages);
        }
    }
    // Each statement not in the application's trace has one of its own.
    EXPECT_NE(statements[0]["traceId"], statements[1]["traceId"]);
    EXPECT_NE(statements[1]["traceId"], statements[2]["traceId"]);
    (void)rr;
}

TEST_P(ServerOtlp, CollectorDownOrSlowNeverStallsTracing) {
    // Down: a port nothing listens on. Slow: a receiver that answers after
    // 2 s, with room for one waiting batch.
    int closed_port = 0;
    {
        auto probe = start_receiver(server_->root_dir() + "/unused.jsonl", &closed_port);
        probe->stop(SIGTERM);
    }
    ASSERT_GT(closed_port, 0);
    int slow_port = 0;
    auto slow =
        start_receiver(server_->root_dir() + "/slow.jsonl", &slow_port, {"--sleep-ms", "2000"});
    ASSERT_GT(slow_port, 0);
    for (const auto &[what, port, queue] : std::vector<std::tuple<std::string, int, std::string>>{
             {"down", closed_port, "64"}, {"slow", slow_port, "1"}}) {
        SCOPED_TRACE(what);
        const std::string url = "http://127.0.0.1:" + std::to_string(port);
        const std::string json_out = server_->root_dir() + "/" + what + ".json";
        auto tracer = std::make_unique<BackgroundCommand>(
            server_tracer_argv(*server_, {"--stages", "off", "--otlp", url, "--otlp-queue", queue,
                                          "--format", "json", "--output", json_out}));
        ASSERT_TRUE(tracer->wait_for_stderr("Ctrl-C to stop")) << tracer->stop(SIGKILL).err;
        MYSQL *m = connect_to(*server_);
        const unsigned long id = mysql_thread_id(m);
        // Six batches of 512 spans and more, as fast as the client goes: the
        // slow collector takes one every 2 s and has room for one more.
        const int n = 3200;
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; i++) {
            ASSERT_EQ(run_query(m, "select " + std::to_string(i)), 0u);
        }
        const double took =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        mysql_close(m);
        wait_gone(*server_, id);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const auto stop_at = std::chrono::steady_clock::now();
        auto r = tracer->stop(SIGINT);
        const double stopping =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - stop_at).count();
        EXPECT_EQ(r.exit_code, 0) << r.err;
        // The statements ran at their own pace and every one was traced;
        // the end waits for the collector for at most its 3 s grace.
        EXPECT_LT(took, 10.0);
        EXPECT_LT(stopping, 8.0) << r.err;
        size_t traced = 0;
        for (const auto &j : mysqltrace::test::read_json_lines(json_out)) {
            const bool mine =
                j["kind"] == "statement" && j["THREAD_ID"] == id && j["SQL_TEXT"].is_string() &&
                std::regex_match(j["SQL_TEXT"].get<std::string>(), std::regex("select [0-9]+"));
            traced += mine ? 1 : 0;
        }
        EXPECT_EQ(traced, static_cast<size_t>(n));
        EXPECT_NE(r.err.find(" 0 records dropped; interrupted\n"), std::string::npos) << r.err;
        std::smatch sm;
        ASSERT_TRUE(std::regex_search(
            r.err, sm,
            std::regex(", ([0-9]+) spans \\(OTLP [^ ]+: ([0-9]+) sent, ([0-9]+) dropped \\(queue "
                       "full\\), ([0-9]+) failed")))
            << r.err;
        std::cerr << "collector " << what << ": " << sm[0] << "\n";
        const uint64_t total = std::stoull(sm[1]), sent = std::stoull(sm[2]),
                       dropped = std::stoull(sm[3]), failed = std::stoull(sm[4]);
        EXPECT_GE(total, static_cast<uint64_t>(n));
        EXPECT_EQ(sent + dropped + failed, total) << r.err;
        if (what == "down") {
            EXPECT_EQ(sent, 0u) << r.err;
            EXPECT_EQ(failed, total) << r.err;
            EXPECT_NE(r.err.find("last error: cannot reach " + url + "/v1/traces"),
                      std::string::npos)
                << r.err;
        } else {
            EXPECT_GE(sent, 512u) << r.err;
            EXPECT_GE(dropped, 512u) << r.err;
        }
    }
    slow->stop(SIGTERM);
    // What the slow receiver got decoded.
    for (const auto &s : json_lines(read_file(server_->root_dir() + "/slow.jsonl"))) {
        EXPECT_FALSE(s.contains("error")) << s.dump();
    }
}

TEST_P(ServerOtlp, UsageErrorsSayWhatToDo) {
    auto r = run_command(server_tracer_argv(*server_, {"--otlp", "localhost:4318"}));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err,
              "mysqltrace: --otlp localhost:4318: give the collector's base URL, "
              "http://HOST:PORT or https://HOST:PORT (4318 is OTLP/HTTP's port)\n");
    r = run_command(server_tracer_argv(*server_, {"--format", "otlp", "--locks"}));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err,
              "mysqltrace: --locks writes its waits and blocking tree with --format text, "
              "json, profile and pfs-sql; --format otlp has no place for them\n");
    r = run_command(
        server_tracer_argv(*server_, {"--format", "digests", "--otlp", "http://127.0.0.1:1"}));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err,
              "mysqltrace: --otlp exports every statement as a span; --duty and the "
              "digest formats see only part of them\n");
}

INSTANTIATE_TEST_SUITE_P(Flavours, ServerOtlp,
                         ::testing::ValuesIn(mysqltrace::test::all_flavours()),
                         mysqltrace::test::flavour_param_name);

}  // namespace
