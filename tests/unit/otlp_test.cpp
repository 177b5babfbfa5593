// SPDX-License-Identifier: GPL-2.0-only
// `server --format otlp` / `--otlp`: the span JSON of fixed statements, byte
// for byte; the sqlcommenter traceparent reader; operation names and query
// summaries; the export queue's drop accounting; the exporter against a
// closed port and a collector that answers 503 first.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "output/otlp.h"
#include "output/otlp_export.h"
#include "util/hex.h"

namespace {

using mysqltrace::to_hex;
using mysqltrace::output::BatchQueue;
using mysqltrace::output::NamedWait;
using mysqltrace::output::operation_name;
using mysqltrace::output::OtlpExporter;
using mysqltrace::output::OtlpExportOptions;
using mysqltrace::output::OtlpResource;
using mysqltrace::output::OtlpSampledStage;
using mysqltrace::output::OtlpSpans;
using mysqltrace::output::OtlpStage;
using mysqltrace::output::query_summary;
using mysqltrace::output::sqlcommenter_traceparent;
using mysqltrace::server::Statement;

OtlpResource resource() {
    OtlpResource r;
    r.db_system = "mariadb";
    r.service_name = "mariadb";
    r.pid = 4242;
    r.executable = "mariadbd";
    r.host_name = "db1";
    r.port = 3306;
    r.version = "0.1.0";
    return r;
}

Statement query(std::string text) {
    Statement st;
    st.tid = 77;
    st.thread_id = 12;
    st.command = 3;  // COM_QUERY
    st.start_ns = 1'000'000;
    st.end_ns = 1'250'000;
    st.text = std::move(text);
    st.text_len = static_cast<uint32_t>(st.text.size());
    st.db = "sbtest";
    return st;
}

constexpr uint64_t kOffset = 1'700'000'000'000'000'000ull;

const std::string kHead =
    R"({"resourceSpans":[{"resource":{"attributes":[)"
    R"({"key":"service.name","value":{"stringValue":"mariadb"}},)"
    R"({"key":"db.system.name","value":{"stringValue":"mariadb"}},)"
    R"({"key":"process.pid","value":{"intValue":"4242"}},)"
    R"({"key":"process.executable.name","value":{"stringValue":"mariadbd"}},)"
    R"({"key":"host.name","value":{"stringValue":"db1"}}]},)"
    R"("scopeSpans":[{"scope":{"name":"mysqltrace","version":"0.1.0"},"spans":[)";

TEST(OtlpSpans, SelectOfOneTable) {
    OtlpSpans spans(resource(), 1);
    spans.set_realtime_offset(kOffset);
    auto st = query("select c from sbtest1 where id = 1");
    st.rows_sent = 1;
    st.rows_examined = 1;
    st.lock_ns = 1500;
    spans.add(st, "statement/sql/select", {}, {}, {});
    EXPECT_EQ(spans.spans(), 1u);
    std::string out;
    spans.take(out);
    EXPECT_EQ(spans.spans(), 0u);
    EXPECT_EQ(
        out,
        kHead +
            R"({"traceId":"686f68bb5fbd45224efa18235092eb22","spanId":"9a45e67ae7d18273",)"
            R"("flags":257,"name":"SELECT sbtest1","kind":2,)"
            R"("startTimeUnixNano":"1700000000001000000",)"
            R"("endTimeUnixNano":"1700000000001250000","attributes":[)"
            R"({"key":"db.system.name","value":{"stringValue":"mariadb"}},)"
            R"({"key":"db.namespace","value":{"stringValue":"sbtest"}},)"
            R"({"key":"db.query.text","value":{"stringValue":"select c from sbtest1 where id = 1"}},)"
            R"({"key":"db.query.summary","value":{"stringValue":"SELECT sbtest1"}},)"
            R"({"key":"db.operation.name","value":{"stringValue":"SELECT"}},)"
            R"({"key":"db.collection.name","value":{"stringValue":"sbtest1"}},)"
            R"({"key":"db.response.returned_rows","value":{"intValue":"1"}},)"
            R"({"key":"server.address","value":{"stringValue":"db1"}},)"
            R"({"key":"server.port","value":{"intValue":"3306"}},)"
            R"({"key":"mysqltrace.connection.id","value":{"intValue":"12"}},)"
            R"({"key":"thread.id","value":{"intValue":"77"}},)"
            R"({"key":"mysqltrace.event_name","value":{"stringValue":"statement/sql/select"}},)"
            R"({"key":"mysqltrace.rows_examined","value":{"intValue":"1"}},)"
            R"({"key":"mysqltrace.rows_affected","value":{"intValue":"0"}},)"
            R"({"key":"mysqltrace.lock_time_ns","value":{"intValue":"1500"}}]}]}]}]})");
}

TEST(OtlpSpans, FailedStatementInAnApplicationsTraceWithStages) {
    OtlpSpans spans(resource(), 2);
    spans.set_realtime_offset(kOffset);
    auto st = query(
        "select nosuch from t1 join s.t2 "
        "/*app='x%2Fy',traceparent='00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',"
        "tracestate='rojo%3D00f067aa0ba902b7'*/");
    st.da_status = MT_DA_ERROR;
    st.error = 1054;
    st.sqlstate = "42S22";
    st.message = "Unknown column 'nosuch' in 'field list'";
    NamedWait w;
    w.wait.start_ns = 1'100'000;
    w.wait.end_ns = 1'100'500;
    w.name.event_name = "wait/io/file/innodb/innodb_data_file";
    w.name.operation = "read";
    w.name.object_name = "/var/lib/mysql/ibdata1";
    spans.add(st, "statement/sql/select",
              {{"starting", 1'000'000, 1'200'000}, {"end", 1'200'000, 1'250'000}},
              {{"Sending data", 3, 1, 20'000}}, {w});
    EXPECT_EQ(spans.spans(), 3u);
    std::string out;
    spans.take(out);
    const std::string trace = R"("traceId":"0af7651916cd43dd8448eb211c80319c",)";
    const std::string state = R"("traceState":"rojo=00f067aa0ba902b7",)";
    EXPECT_EQ(
        out,
        kHead + "{" + trace + R"("spanId":"4c8a8109ed9752e7",)" + state +
            R"("parentSpanId":"b7ad6b7169203331","flags":769,"name":"SELECT t1 s.t2","kind":2,)"
            R"("startTimeUnixNano":"1700000000001000000",)"
            R"("endTimeUnixNano":"1700000000001250000","attributes":[)"
            R"({"key":"db.system.name","value":{"stringValue":"mariadb"}},)"
            R"({"key":"db.namespace","value":{"stringValue":"sbtest"}},)"
            R"({"key":"db.query.text","value":{"stringValue":"select nosuch from t1 join s.t2 /*app='x%2Fy',traceparent='00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',tracestate='rojo%3D00f067aa0ba902b7'*/"}},)"
            R"({"key":"db.query.summary","value":{"stringValue":"SELECT t1 s.t2"}},)"
            R"({"key":"db.operation.name","value":{"stringValue":"SELECT"}},)"
            R"({"key":"db.response.status_code","value":{"stringValue":"1054"}},)"
            R"({"key":"error.type","value":{"stringValue":"1054"}},)"
            R"({"key":"mysqltrace.sqlstate","value":{"stringValue":"42S22"}},)"
            R"({"key":"db.response.returned_rows","value":{"intValue":"0"}},)"
            R"({"key":"server.address","value":{"stringValue":"db1"}},)"
            R"({"key":"server.port","value":{"intValue":"3306"}},)"
            R"({"key":"mysqltrace.connection.id","value":{"intValue":"12"}},)"
            R"({"key":"thread.id","value":{"intValue":"77"}},)"
            R"({"key":"mysqltrace.event_name","value":{"stringValue":"statement/sql/select"}},)"
            R"({"key":"mysqltrace.rows_examined","value":{"intValue":"0"}},)"
            R"({"key":"mysqltrace.rows_affected","value":{"intValue":"0"}},)"
            R"({"key":"mysqltrace.lock_time_ns","value":{"intValue":"0"}}],)"
            R"("events":[{"timeUnixNano":"1700000000001250000","name":"stage/sql/Sending data","attributes":[)"
            R"({"key":"mysqltrace.stage.on_cpu_samples","value":{"intValue":"3"}},)"
            R"({"key":"mysqltrace.stage.off_cpu_ns","value":{"intValue":"20000"}},)"
            R"({"key":"mysqltrace.stage.switches","value":{"intValue":"1"}},)"
            R"({"key":"mysqltrace.stage.sample_period_us","value":{"intValue":"0"}}]},)"
            R"({"timeUnixNano":"1700000000001100000","name":"wait/io/file/innodb/innodb_data_file","attributes":[)"
            R"({"key":"mysqltrace.wait.duration_ns","value":{"intValue":"500"}},)"
            R"({"key":"mysqltrace.wait.operation","value":{"stringValue":"read"}},)"
            R"({"key":"mysqltrace.wait.object","value":{"stringValue":"/var/lib/mysql/ibdata1"}}]}],)"
            R"("status":{"message":"Unknown column 'nosuch' in 'field list'","code":2}},)"
            "{" +
            trace + R"("spanId":"592ffb5a5d13a9d9",)" + state +
            R"("parentSpanId":"4c8a8109ed9752e7","flags":257,"name":"starting","kind":1,)"
            R"("startTimeUnixNano":"1700000000001000000","endTimeUnixNano":"1700000000001200000",)"
            R"("attributes":[{"key":"mysqltrace.event_name","value":{"stringValue":"stage/sql/starting"}}]},)"
            "{" +
            trace + R"("spanId":"253275d64075a8c8",)" + state +
            R"("parentSpanId":"4c8a8109ed9752e7","flags":257,"name":"end","kind":1,)"
            R"("startTimeUnixNano":"1700000000001200000","endTimeUnixNano":"1700000000001250000",)"
            R"("attributes":[{"key":"mysqltrace.event_name","value":{"stringValue":"stage/sql/end"}}]})"
            "]}]}]}");
}

TEST(OtlpSpans, BatchesAreCommaSeparatedAndEmptiedByTake) {
    OtlpSpans spans(resource(), 3);
    spans.add(query("select 1"), "statement/sql/select", {}, {}, {});
    spans.add(query("select 2"), "statement/sql/select", {}, {}, {});
    std::string out;
    spans.take(out);
    EXPECT_NE(out.find(R"(}]},{"traceId")"), std::string::npos) << out;
    EXPECT_EQ(out.substr(out.size() - 6), "]}]}]}");
    spans.take(out);
    EXPECT_EQ(out, kHead + "]}]}]}");
}

TEST(OtlpSpans, KeepsTheFirst128EventsAndCountsTheRest) {
    OtlpSpans spans(resource(), 4);
    std::vector<NamedWait> waits(200);
    for (size_t i = 0; i < waits.size(); i++) {
        waits[i].wait.start_ns = 1'000'000 + i;
        waits[i].wait.end_ns = 1'000'001 + i;
        waits[i].name.event_name = "wait/io/table/sql/handler";
    }
    spans.add(query("select 1"), "statement/sql/select", {}, {{"executing", 1, 0, 0}}, waits);
    std::string out;
    spans.take(out);
    size_t events = 0;
    for (size_t at = out.find("\"timeUnixNano\""); at != std::string::npos;
         at = out.find("\"timeUnixNano\"", at + 1)) {
        events++;
    }
    EXPECT_EQ(events, 128u);
    EXPECT_NE(out.find(R"(],"droppedEventsCount":73}]}]}]})"), std::string::npos) << out;
}

std::string parent_of(std::string_view sql) {
    auto tp = sqlcommenter_traceparent(sql);
    if (!tp) {
        return "none";
    }
    return to_hex(tp->trace_id) + " " + to_hex(tp->parent_id) + " " + std::to_string(tp->flags) +
           (tp->trace_state.empty() ? "" : " " + tp->trace_state);
}

TEST(Sqlcommenter, Traceparent) {
    const std::string id = "0af7651916cd43dd8448eb211c80319c b7ad6b7169203331";
    EXPECT_EQ(parent_of("select 1 /*traceparent='00-0af7651916cd43dd8448eb211c80319c-"
                        "b7ad6b7169203331-01'*/"),
              id + " 1");
    // Among other pairs, URL-encoded, with blanks; flags 00.
    EXPECT_EQ(parent_of("/* action='%2Fparam*d',  controller='index' , "
                        "traceparent='00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00',"
                        "tracestate='congo%3Dt61rcWkgMzE%2Crojo%3D00f067aa0ba902b7' */ select 1"),
              id + " 0 congo=t61rcWkgMzE,rojo=00f067aa0ba902b7");
    // URL-encoded traceparent; an escaped quote in another value.
    EXPECT_EQ(parent_of("select 1 /*a='it\\'s',traceparent='00%2D0af7651916cd43dd8448eb211c80319c"
                        "%2Db7ad6b7169203331%2D01'*/"),
              id + " 1");
    // A later version may carry more fields.
    EXPECT_EQ(parent_of("select 1 /*traceparent='01-0af7651916cd43dd8448eb211c80319c-"
                        "b7ad6b7169203331-03-xyz'*/"),
              id + " 3");
    // A comment that is not sqlcommenter's comes first.
    EXPECT_EQ(parent_of("select /* hint */ 1 /*traceparent='00-0af7651916cd43dd8448eb211c80319c-"
                        "b7ad6b7169203331-01'*/"),
              id + " 1");
}

TEST(Sqlcommenter, MalformedIsIgnored) {
    const std::string tid = "0af7651916cd43dd8448eb211c80319c";
    const std::string pid = "b7ad6b7169203331";
    for (const std::string &sql : std::vector<std::string>{
             std::string("select 1"),
             "select 1 /*traceparent='00-" + tid + "-" + pid + "-01'",   // unterminated
             "select 1 /*traceparent='00-" + tid + "-" + pid + "-01*/",  // no closing quote
             "select 1 /*traceparent=00-" + tid + "-" + pid + "-01*/",   // not quoted
             "select 1 /*traceparent='00-0AF7651916CD43DD8448EB211C80319C-" + pid + "-01'*/",
             "select 1 /*traceparent='00-" + tid + "-" + pid + "-1'*/",     // short flags
             "select 1 /*traceparent='00-" + tid + "-" + pid + "-01-x'*/",  // 00 has 4 fields
             "select 1 /*traceparent='ff-" + tid + "-" + pid + "-01'*/",    // version ff
             "select 1 /*traceparent='00-00000000000000000000000000000000-" + pid + "-01'*/",
             "select 1 /*traceparent='00-" + tid + "-0000000000000000-01'*/",
             "select 1 /*traceparent='00-" + tid.substr(1) + "-" + pid + "-01'*/",
             "select 1 /*traceparent='00_" + tid + "-" + pid + "-01'*/",
             "select 1 /*traceparent='00-" + tid + "-" + pid + "-0g'*/",
             "select 1 /*traceparent='%zz-" + tid + "-" + pid + "-01'*/",  // bad escape
             "select 1 /*traceparent='00-" + tid + "-" + pid + "-01' junk*/",
             // In a string literal, not a comment.
             "select '/*traceparent=''00-" + tid + "-" + pid + "-01''*/'",
             "select \"/*traceparent='00-" + tid + "-" + pid + "-01'*/\"",
         }) {
        EXPECT_EQ(parent_of(sql), "none") << sql;
    }
}

TEST(OtlpNames, OperationAndSummary) {
    auto op = [](const std::string &sql) { return operation_name(query(sql)); };
    auto summary = [](const std::string &sql) {
        const auto st = query(sql);
        return query_summary(st, operation_name(st));
    };
    EXPECT_EQ(op("SELECT 1"), "SELECT");
    EXPECT_EQ(summary("select 1"), "SELECT");
    EXPECT_EQ(summary("insert into t (a) select a from u"), "INSERT t u");
    EXPECT_EQ(summary("update t set a = 1 where b in (select b from t)"), "UPDATE t");
    EXPECT_EQ(summary("create table x.t (a int)"), "CREATE TABLE");
    EXPECT_EQ(op("set autocommit = 0"), "SET");
    EXPECT_EQ(op("start transaction"), "BEGIN");
    EXPECT_EQ(op("use d"), "USE");
    EXPECT_EQ(op("frobnicate now"), "FROBNICATE");
    Statement ping;
    ping.command = 14;  // COM_PING
    EXPECT_EQ(operation_name(ping), "COM_PING");
    EXPECT_EQ(query_summary(ping, "COM_PING"), "COM_PING");
}

TEST(BatchQueue, DropsAndCountsWhenFull) {
    BatchQueue q(2);
    EXPECT_TRUE(q.push("a", 10));
    EXPECT_TRUE(q.push("b", 20));
    EXPECT_FALSE(q.push("c", 30));
    EXPECT_FALSE(q.push("d", 5));
    EXPECT_EQ(q.dropped(), 35u);
    EXPECT_EQ(q.queued_spans(), 30u);
    BatchQueue::Batch b;
    ASSERT_TRUE(q.pop(&b, std::chrono::steady_clock::now()));
    EXPECT_EQ(b.body, "a");
    EXPECT_EQ(b.spans, 10u);
    EXPECT_TRUE(q.push("e", 1));
    q.close();
    EXPECT_FALSE(q.push("f", 7));
    EXPECT_EQ(q.dropped(), 42u);
    // What was queued before close still comes out, then nothing.
    ASSERT_TRUE(q.pop(&b, std::chrono::steady_clock::now()));
    EXPECT_EQ(b.body, "b");
    ASSERT_TRUE(q.pop(&b, std::chrono::steady_clock::now()));
    EXPECT_EQ(b.body, "e");
    EXPECT_FALSE(q.pop(&b, std::chrono::steady_clock::time_point::max()));
}

OtlpExportOptions quick() {
    OtlpExportOptions o;
    o.tries = 3;
    o.first_backoff = std::chrono::milliseconds(20);
    o.max_backoff = std::chrono::milliseconds(100);
    o.connect_timeout = std::chrono::milliseconds(500);
    o.io_timeout = std::chrono::milliseconds(500);
    return o;
}

TEST(OtlpExporter, RefusesAUrlWithoutScheme) {
    auto e = OtlpExporter::start("localhost:4318");
    ASSERT_FALSE(e);
    EXPECT_NE(e.error().message.find("http://HOST:PORT"), std::string::npos);
}

TEST(OtlpExporter, ClosedPortFailsAfterItsTries) {
    // A port nothing listens on: bound, never listened to.
    httplib::Server probe;
    const int port = probe.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    probe.stop();
    auto e = OtlpExporter::start("http://127.0.0.1:" + std::to_string(port), quick());
    ASSERT_TRUE(e) << e.error().message;
    const auto t0 = std::chrono::steady_clock::now();
    (*e)->send("{}", 5);
    (*e)->stop(std::chrono::seconds(5));
    const auto s = (*e)->stats();
    EXPECT_EQ(s.sent, 0u);
    EXPECT_EQ(s.failed, 5u);
    EXPECT_EQ(s.dropped, 0u);
    EXPECT_EQ(s.retries, 2u);
    EXPECT_NE(
        s.last_error.find("cannot reach http://127.0.0.1:" + std::to_string(port) + "/v1/traces"),
        std::string::npos)
        << s.last_error;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

TEST(OtlpExporter, RetriesA503ThenSends) {
    httplib::Server server;
    std::atomic<int> posts{0};
    std::string body, type, path;
    server.Post("/base/v1/traces", [&](const httplib::Request &req, httplib::Response &res) {
        if (posts++ == 0) {
            res.status = 503;
            res.set_header("Retry-After", "0");
            return;
        }
        body = req.body;
        type = req.get_header_value("Content-Type");
        res.set_content("{}", "application/json");
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    std::thread t([&] { server.listen_after_bind(); });
    while (!server.is_running()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    auto e = OtlpExporter::start("http://127.0.0.1:" + std::to_string(port) + "/base/", quick());
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_EQ((*e)->endpoint(), "http://127.0.0.1:" + std::to_string(port) + "/base/v1/traces");
    (*e)->send(R"({"resourceSpans":[]})", 7);
    (*e)->stop(std::chrono::seconds(5));
    server.stop();
    t.join();
    const auto s = (*e)->stats();
    EXPECT_EQ(s.sent, 7u);
    EXPECT_EQ(s.failed, 0u);
    EXPECT_EQ(s.retries, 1u);
    EXPECT_EQ(posts.load(), 2);
    EXPECT_EQ(body, R"({"resourceSpans":[]})");
    EXPECT_EQ(type, "application/json");
}

TEST(OtlpExporter, A400IsNotRetried) {
    httplib::Server server;
    std::atomic<int> posts{0};
    server.Post("/v1/traces", [&](const httplib::Request &, httplib::Response &res) {
        posts++;
        res.status = 400;
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    std::thread t([&] { server.listen_after_bind(); });
    while (!server.is_running()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    auto e = OtlpExporter::start("http://127.0.0.1:" + std::to_string(port), quick());
    ASSERT_TRUE(e);
    (*e)->send("{}", 3);
    (*e)->stop(std::chrono::seconds(5));
    server.stop();
    t.join();
    const auto s = (*e)->stats();
    EXPECT_EQ(s.failed, 3u);
    EXPECT_EQ(s.retries, 0u);
    EXPECT_EQ(posts.load(), 1);
    EXPECT_EQ(s.last_error, "http://127.0.0.1:" + std::to_string(port) + "/v1/traces answered 400");
}

}  // namespace
