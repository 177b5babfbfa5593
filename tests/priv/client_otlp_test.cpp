// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace run --otlp URL --format otlp` on a scripted C client of both
// flavours, received by tests/testprogs/otlp_receiver.js (the official OTLP
// protobuf classes, not mysqltrace's code): one CLIENT span per command with
// the database semantic conventions' attributes, the statement redacted, a
// sqlcommenter traceparent joining the application's trace; the
// --format otlp file decodes to the same spans.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/client_session.h"
#include "priv/otlp_receiver.h"
#include "priv/priv.h"
#include "priv/server_session.h"

namespace {

using namespace mysqltrace::test;
using nlohmann::json;

const std::string kTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string kParentId = "00f067aa0ba902b7";

class ClientOtlp : public ServerTraceTest {};

std::vector<json> sorted_by_start(std::vector<json> v) {
    std::stable_sort(v.begin(), v.end(), [](const json &a, const json &b) {
        return std::stoull(a["start"].get<std::string>()) <
               std::stoull(b["start"].get<std::string>());
    });
    return v;
}

TEST_P(ClientOtlp, RunExportsOneClientSpanPerCommand) {
    create_table_t(*server_);
    const std::string received = server_->root_dir() + "/received.jsonl";
    const std::string file = server_->root_dir() + "/client.otlp.jsonl";
    int port = 0;
    auto receiver = start_receiver(received, &port);
    ASSERT_GT(port, 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    const std::string traced =
        "select b from t where a = 1 /*traceparent='00-" + kTraceId + "-" + kParentId + "-01'*/";
    const uint64_t before = unix_ns();
    auto s = run_under_run(
        {testprog("mt_client"), "--host", "127.0.0.1", "--port", std::to_string(server_->port()),
         "--user", server_->user(), "--password", server_->password()},
        {{"connect", "ok"},
         {"initdb mt_db", "ok"},
         {"query select a, b from t where a >= 2", "ok 1 2"},
         {"query insert into t values (4, 'w')", "ok 0 0"},
         {"query select nosuch from t", ""},
         {"query " + traced, "ok 1 1"},
         {"prepare select b from mt_db.t where a = ?", "ok"},
         {"execute 2", "ok 1"},
         {"close_stmt", "ok"},
         {"query create user if not exists mt_x identified by 'secretpw'", "ok 0 0"},
         {"quit", "ok"}},
        {"--format", "otlp", "--otlp", url}, file);
    const uint64_t after = unix_ns();
    EXPECT_EQ(s.tracer_exit, 0) << s.tracer_stderr;
    ASSERT_EQ(s.answers.size(), 11u);
    EXPECT_EQ(s.answers[4].rfind("error 1054 ", 0), 0u) << s.answers[4];
    auto rr = receiver->stop(SIGTERM);
    EXPECT_NE(s.tracer_stderr.find("mysqltrace: exporting spans to " + url +
                                   "/v1/traces (OTLP/HTTP JSON)\n"),
              std::string::npos)
        << s.tracer_stderr;
    EXPECT_NE(s.tracer_stderr.find(", 10 spans (OTLP " + url +
                                   "/v1/traces: 10 sent, 0 dropped (queue full), 0 failed), "),
              std::string::npos)
        << s.tracer_stderr;

    const auto spans = sorted_by_start(json_lines(read_file(received)));
    for (const auto &sp : spans) {
        ASSERT_FALSE(sp.contains("error")) << sp.dump();
    }
    auto decoded = run_command({"/usr/bin/env", "node", kOtlpReceiver, "--decode", file});
    ASSERT_EQ(decoded.exit_code, 0) << decoded.err;
    EXPECT_EQ(sorted_by_start(json_lines(decoded.out)), spans);

    struct Want {
        std::string name, operation, text, collection, result, rows, ns;
    };
    const std::string none = "(none)";
    const std::vector<Want> want = {
        {"COM_INIT_DB", "COM_INIT_DB", none, none, "OK", none, none},
        {"SELECT t", "SELECT", "select a, b from t where a >= 2", "t", "ROWS", "2", "mt_db"},
        {"INSERT t", "INSERT", "insert into t values (4, 'w')", "t", "OK", none, "mt_db"},
        {"SELECT t", "SELECT", "select nosuch from t", "t", "ERR", none, "mt_db"},
        {"SELECT t", "SELECT", traced, "t", "ROWS", "1", "mt_db"},
        {"SELECT mt_db.t", "SELECT", "select b from mt_db.t where a = ?", "mt_db.t", "OK", none,
         "mt_db"},
        {"SELECT mt_db.t", "SELECT", "select b from mt_db.t where a = ?", "mt_db.t", "ROWS", "1",
         "mt_db"},
        {"COM_STMT_CLOSE", "COM_STMT_CLOSE", "select b from mt_db.t where a = ?", none, "NO_REPLY",
         none, "mt_db"},
        {"CREATE USER", "CREATE USER", "create user if not exists mt_x identified by '<redacted>'",
         none, "OK", none, "mt_db"},
        {"COM_QUIT", "COM_QUIT", none, none, "NO_REPLY", none, "mt_db"},
    };
    std::string names;
    for (const auto &sp : spans) {
        names += sp["name"].get<std::string>() + "; ";
    }
    ASSERT_EQ(spans.size(), want.size()) << names;
    const std::string system = flavour_name(flavour());
    const std::string conn_id = int_attr(spans[0], "mysqltrace.connection.id");
    EXPECT_NE(conn_id, "(none)");
    EXPECT_NE(conn_id, "0");
    for (size_t i = 0; i < want.size(); i++) {
        const auto &sp = spans[i];
        SCOPED_TRACE(want[i].name + " #" + std::to_string(i));
        EXPECT_EQ(sp["kind"], 3);
        EXPECT_EQ(sp["name"], want[i].name);
        EXPECT_EQ(sp["resource"]["service.name"], "mt_client");
        EXPECT_EQ(sp["resource"]["process.executable.name"], "mt_client");
        EXPECT_EQ(sp["scope"]["name"], "mysqltrace");
        EXPECT_EQ(str_attr(sp, "db.system.name"), system);
        EXPECT_EQ(str_attr(sp, "db.namespace"), want[i].ns);
        EXPECT_EQ(str_attr(sp, "db.operation.name"), want[i].operation);
        EXPECT_EQ(str_attr(sp, "db.query.summary"), want[i].name);
        EXPECT_EQ(str_attr(sp, "db.query.text"), want[i].text);
        EXPECT_EQ(str_attr(sp, "db.collection.name"), want[i].collection);
        EXPECT_EQ(str_attr(sp, "mysqltrace.result"), want[i].result);
        EXPECT_EQ(int_attr(sp, "db.response.returned_rows"), want[i].rows);
        EXPECT_EQ(str_attr(sp, "server.address"), "127.0.0.1");
        EXPECT_EQ(int_attr(sp, "server.port"), std::to_string(server_->port()));
        EXPECT_EQ(str_attr(sp, "network.peer.address"), "127.0.0.1");
        EXPECT_EQ(int_attr(sp, "network.peer.port"), std::to_string(server_->port()));
        EXPECT_EQ(str_attr(sp, "network.transport"), "tcp");
        EXPECT_EQ(int_attr(sp, "mysqltrace.connection.id"), conn_id);
        EXPECT_EQ(sp["resource"]["process.pid"]["int"], int_attr(sp, "thread.id"));
        const uint64_t start = std::stoull(sp["start"].get<std::string>());
        const uint64_t end = std::stoull(sp["end"].get<std::string>());
        EXPECT_LE(before, start);
        EXPECT_LE(start, end);
        EXPECT_LE(end, after);
        if (i == 3) {
            EXPECT_EQ(str_attr(sp, "db.response.status_code"), "1054");
            EXPECT_EQ(str_attr(sp, "error.type"), "1054");
            EXPECT_EQ(sp["status"]["code"], 2);
            EXPECT_EQ(
                sp["status"]["message"].get<std::string>().rfind("Unknown column 'nosuch'", 0), 0u)
                << sp["status"];
        } else {
            EXPECT_EQ(str_attr(sp, "error.type"), none);
            EXPECT_EQ(sp["status"], json::object());
        }
        if (i == 4) {
            // The sqlcommenter traceparent: the application's trace.
            EXPECT_EQ(sp["traceId"], kTraceId);
            EXPECT_EQ(sp["parentSpanId"], kParentId);
            EXPECT_EQ(sp["flags"], 0x301);
        } else {
            EXPECT_NE(sp["traceId"], kTraceId);
            EXPECT_EQ(sp["parentSpanId"], "");
            EXPECT_EQ(sp["flags"], 0x101);
        }
    }
    // Each command is its own trace.
    std::vector<std::string> traces;
    for (const auto &sp : spans) {
        traces.push_back(sp["traceId"]);
    }
    std::sort(traces.begin(), traces.end());
    EXPECT_EQ(std::unique(traces.begin(), traces.end()), traces.end());
}

// One statement, one trace: `run --server-pid` traces the server's
// statements in the same process and makes each the child of the client
// command's span that it served.
TEST_P(ClientOtlp, ServerPidMakesTheServerSpanAChildOfTheClientSpan) {
    create_table_t(*server_);
    const std::string received = server_->root_dir() + "/received.jsonl";
    int port = 0;
    auto receiver = start_receiver(received, &port);
    ASSERT_GT(port, 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    const std::string traced =
        "select b from t where a = 1 /*traceparent='00-" + kTraceId + "-" + kParentId + "-01'*/";
    auto s = run_under_run(
        {testprog("mt_client"), "--host", "127.0.0.1", "--port", std::to_string(server_->port()),
         "--user", server_->user(), "--password", server_->password(), "--multi"},
        {{"connect", "ok"},
         {"initdb mt_db", "ok"},
         {"query select a, b from t where a >= 2", "ok 1 2"},
         {"query insert into t values (4, 'w')", "ok 0 0"},
         {"query select nosuch from t", ""},
         {"query " + traced, "ok 1 1"},
         {"query select 1; select 2", "ok 2 2"},
         {"prepare select b from t where a = ?", "ok"},
         {"execute 2", "ok 1"},
         {"close_stmt", "ok"},
         {"quit", "ok"}},
        {"--otlp", url, "--server-pid", std::to_string(server_->pid()), "--format", "json"},
        server_->root_dir() + "/trace.jsonl");
    EXPECT_EQ(s.tracer_exit, 0) << s.tracer_stderr;
    auto rr = receiver->stop(SIGTERM);
    EXPECT_NE(s.tracer_stderr.find("mysqltrace: with server pid " + std::to_string(server_->pid()) +
                                   " ("),
              std::string::npos)
        << s.tracer_stderr;

    const auto spans = sorted_by_start(json_lines(read_file(received)));
    std::map<std::string, json> clients;
    std::string conn_id;
    for (const auto &sp : spans) {
        ASSERT_FALSE(sp.contains("error")) << sp.dump();
        if (sp["kind"] == 3) {
            clients[sp["spanId"]] = sp;
            conn_id = int_attr(sp, "mysqltrace.connection.id");
        }
    }
    ASSERT_EQ(clients.size(), 10u);
    // The server spans of the client's connection, each under its command.
    std::vector<std::string> seen;
    for (const auto &sp : spans) {
        if (sp["kind"] != 2 || int_attr(sp, "mysqltrace.connection.id") != conn_id) {
            continue;
        }
        const std::string text = str_attr(sp, "db.query.text");
        SCOPED_TRACE(text);
        ASSERT_TRUE(clients.count(sp["parentSpanId"])) << sp.dump();
        const auto &parent = clients[sp["parentSpanId"]];
        EXPECT_EQ(sp["traceId"], parent["traceId"]);
        // A parent in this process: not remote.
        EXPECT_EQ(sp["flags"], 0x101);
        EXPECT_EQ(sp["resource"]["service.name"], flavour_name(flavour()));
        EXPECT_EQ(sp["resource"]["process.pid"]["int"], std::to_string(server_->pid()));
        EXPECT_LE(std::stoull(parent["start"].get<std::string>()),
                  std::stoull(sp["start"].get<std::string>()));
        seen.push_back(str_attr(parent, "mysqltrace.command") + " " +
                       str_attr(parent, "db.query.text") + " > " + sp["name"].get<std::string>() +
                       " " + text);
    }
    const bool mysql = flavour() == ServerFlavour::mysql;
    std::vector<std::string> want = {
        "COM_QUERY select a, b from t where a >= 2 > SELECT t select a, b from t where a >= 2",
        "COM_QUERY insert into t values (4, 'w') > INSERT t insert into t values (4, 'w')",
        "COM_QUERY select nosuch from t > SELECT t select nosuch from t",
        "COM_QUERY " + traced + " > SELECT t " + traced,
        "COM_QUERY select 1; select 2 > SELECT select 1",
        "COM_QUERY select 1; select 2 > SELECT select 2",
        "COM_STMT_EXECUTE select b from t where a = ? > SELECT t select b from t where a = ?",
    };
    if (mysql) {
        // MySQL's log_slow_statement sees every command, MariaDB's only
        // statements.
        want.insert(want.begin(), "COM_INIT_DB (none) > COM_INIT_DB mt_db");
        want.insert(want.end() - 1,
                    "COM_STMT_PREPARE select b from t where a = ? > COM_STMT_PREPARE ");
        want.push_back("COM_STMT_CLOSE select b from t where a = ? > COM_STMT_CLOSE (none)");
        want.push_back("COM_QUIT (none) > COM_QUIT (none)");
    }
    EXPECT_EQ(seen, want);
    // The sqlcommenter-carried trace: application span > client span >
    // server span.
    for (const auto &[id, c] : clients) {
        if (str_attr(c, "db.query.text") == traced) {
            EXPECT_EQ(c["traceId"], kTraceId);
            EXPECT_EQ(c["parentSpanId"], kParentId);
        }
    }
    const std::string n = std::to_string(want.size());
    EXPECT_NE(s.tracer_stderr.find(", " + n + " server statements (" + n +
                                   " joined to their client span), "),
              std::string::npos)
        << s.tracer_stderr;
}

// Metrics: db.client.operation.duration from the client's commands and the
// server's statement durations with the same dimensions, cumulative
// histograms received and decoded as ExportMetricsServiceRequest.
TEST_P(ClientOtlp, DurationHistogramsOfClientAndServer) {
    create_table_t(*server_);
    const std::string received = server_->root_dir() + "/received.jsonl";
    const std::string metrics = server_->root_dir() + "/metrics.jsonl";
    int port = 0;
    auto receiver = start_receiver(received, &port, {"--metrics-out", metrics});
    ASSERT_GT(port, 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    auto s = run_under_run(
        {testprog("mt_client"), "--host", "127.0.0.1", "--port", std::to_string(server_->port()),
         "--user", server_->user(), "--password", server_->password()},
        {{"connect", "ok"},
         {"initdb mt_db", "ok"},
         {"query select a, b from t where a >= 2", "ok 1 2"},
         {"query select a, b from t where a >= 1", "ok 1 3"},
         {"query select b from t where a = 3", "ok 1 1"},
         {"query select nosuch from t", ""},
         {"quit", "ok"}},
        {"--otlp", url, "--server-pid", std::to_string(server_->pid())},
        server_->root_dir() + "/trace.txt");
    EXPECT_EQ(s.tracer_exit, 0) << s.tracer_stderr;
    auto rr = receiver->stop(SIGTERM);
    EXPECT_NE(s.tracer_stderr.find("mysqltrace: exporting operation duration histograms to " + url +
                                   "/v1/metrics every 60000 ms"),
              std::string::npos)
        << s.tracer_stderr;
    EXPECT_NE(s.tracer_stderr.find(" metric exports (OTLP " + url + "/v1/metrics: "),
              std::string::npos)
        << s.tracer_stderr;

    // The client spans' durations, by operation and error.
    std::map<std::string, std::vector<double>> client_durations;
    for (const auto &sp : json_lines(read_file(received))) {
        ASSERT_FALSE(sp.contains("error")) << sp.dump();
        if (sp["kind"] != 3) {
            continue;
        }
        const double d = static_cast<double>(std::stoull(sp["end"].get<std::string>()) -
                                             std::stoull(sp["start"].get<std::string>())) /
                         1e9;
        client_durations[sp["name"].get<std::string>() + "/" +
                         str_attr(sp, "db.response.status_code")]
            .push_back(d);
    }
    // The last export of each series: cumulative, it holds them all.
    std::map<std::string, json> last;
    for (const auto &p : json_lines(read_file(metrics))) {
        ASSERT_FALSE(p.contains("error") || p.contains("refused")) << p.dump();
        const std::string key = p["metric"].get<std::string>() + " " + p["attributes"].dump();
        if (!last.count(key) || std::stoull(last[key]["time"].get<std::string>()) <=
                                    std::stoull(p["time"].get<std::string>())) {
            last[key] = p;
        }
    }
    const std::string system = flavour_name(flavour());
    const json bounds = json::parse("[0.001,0.005,0.01,0.05,0.1,0.5,1,5,10]");
    auto find = [&](const std::string &metric, const std::string &status) -> const json * {
        for (const auto &[k, p] : last) {
            const auto &a = p["attributes"];
            if (p["metric"] == metric && a.value("db.query.summary", "") == "SELECT t" &&
                a.value("db.response.status_code", "") == status) {
                return &p;
            }
        }
        return nullptr;
    };
    for (const std::string metric :
         {"db.client.operation.duration", "mysqltrace.server.operation.duration"}) {
        for (const std::string status : {"", "1054"}) {
            SCOPED_TRACE(metric + " " + status);
            const json *p = find(metric, status);
            ASSERT_NE(p, nullptr);
            const uint64_t n = status.empty() ? 3 : 1;
            EXPECT_EQ((*p)["unit"], "s");
            EXPECT_EQ((*p)["temporality"], 2);
            EXPECT_EQ((*p)["count"], std::to_string(n));
            EXPECT_EQ((*p)["explicitBounds"], bounds);
            uint64_t in_buckets = 0;
            for (const auto &c : (*p)["bucketCounts"]) {
                in_buckets += std::stoull(c.get<std::string>());
            }
            EXPECT_EQ((*p)["bucketCounts"].size(), 10u);
            EXPECT_EQ(in_buckets, n);
            EXPECT_LE((*p)["min"].get<double>(), (*p)["max"].get<double>());
            // The same dimensions on both sides, with the values each sees.
            const auto &a = (*p)["attributes"];
            EXPECT_EQ(a["db.system.name"], system);
            EXPECT_EQ(a["db.namespace"], "mt_db");
            EXPECT_EQ(a["db.operation.name"], "SELECT");
            EXPECT_EQ(a["db.collection.name"], "t");
            EXPECT_EQ(a.value("error.type", ""), status);
            EXPECT_EQ(a["server.port"]["int"], std::to_string(server_->port()));
            EXPECT_TRUE(a.contains("server.address"));
            if (metric == "db.client.operation.duration") {
                EXPECT_EQ((*p)["resource"]["service.name"], "mt_client");
                // The histogram holds exactly the client spans' durations.
                const auto &d =
                    client_durations["SELECT t/" + (status.empty() ? "(none)" : status)];
                ASSERT_EQ(d.size(), n);
                double sum = 0;
                for (double x : d) {
                    sum += x;
                }
                EXPECT_NEAR((*p)["sum"].get<double>(), sum, 1e-9);
                EXPECT_NEAR((*p)["min"].get<double>(), *std::min_element(d.begin(), d.end()), 1e-9);
                EXPECT_NEAR((*p)["max"].get<double>(), *std::max_element(d.begin(), d.end()), 1e-9);
            } else {
                EXPECT_EQ((*p)["resource"]["service.name"], system);
                EXPECT_EQ((*p)["resource"]["process.pid"]["int"], std::to_string(server_->pid()));
            }
        }
    }
}

TEST_P(ClientOtlp, UsageErrorsSayWhatToDo) {
    auto r = run_command({MYSQLTRACE_BINARY, "client", "--pid", "1", "--otlp", "localhost:4318"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err,
              "mysqltrace: --otlp localhost:4318: give the collector's base URL, "
              "http://HOST:PORT or https://HOST:PORT (4318 is OTLP/HTTP's port)\n");
    r = run_command({MYSQLTRACE_BINARY, "run", "--format", "otlp", "--dump", "--", "true"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err,
              "mysqltrace: --dump adds hex dumps to --format text and json; --format otlp has "
              "no place for them\n");
    r = run_command({MYSQLTRACE_BINARY, "run", "--server-pid", "1", "--", "true"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err,
              "mysqltrace: --server-pid joins the server's statement spans to the client spans: "
              "use it with --otlp URL or --format otlp\n");
}

INSTANTIATE_TEST_SUITE_P(Flavours, ClientOtlp, ::testing::ValuesIn(all_flavours()),
                         flavour_param_name);

}  // namespace
