// SPDX-License-Identifier: GPL-2.0-only
// `client`/`run --otlp`'s CLIENT spans: what a connection's events tell them
// (server, connection id, default schema), the span's JSON for a query, an
// error and a sqlcommenter-carried trace, one ResourceSpans per process.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "output/otlp_client.h"

namespace {

using namespace mysqltrace;
using nlohmann::json;
using protocol::TraceEvent;

protocol::ProtocolEvent event(TraceEvent e) {
    protocol::ProtocolEvent ev;
    ev.conn = 1;
    ev.event = e;
    return ev;
}

protocol::CommandSummary summary(uint8_t command, const char *sql, protocol::CommandResult r) {
    protocol::CommandSummary s;
    s.conn = 1;
    s.pid = s.tid = 77;
    s.command = command;
    s.command_name = command == 3 ? "COM_QUERY" : command == 2 ? "COM_INIT_DB" : "COM_OTHER";
    if (sql != nullptr) {
        s.sql = sql;
    }
    s.result = r;
    s.ts_start_ns = 1000;
    s.ts_end_ns = 5000;
    return s;
}

TEST(ClientConnectionState, FollowsTheSchemaTheServerAccepted) {
    output::ClientConnectionState c;
    auto init = event(TraceEvent::init_packet_received);
    init.server_version = "11.8.3-MariaDB";
    init.server_connection_id = 42;
    c.on_event(init);
    EXPECT_EQ(c.conn.server_version, "11.8.3-MariaDB");
    EXPECT_EQ(c.conn.connection_id, 42u);
    auto login = event(TraceEvent::send_auth_response);
    login.database = "shop";
    c.on_event(login);
    EXPECT_EQ(c.conn.db, "");  // not until the server accepts it
    c.on_event(event(TraceEvent::authenticated));
    EXPECT_EQ(c.conn.db, "shop");
    // COM_INIT_DB refused: the schema stays.
    auto initdb = event(TraceEvent::send_command);
    initdb.command = 2;
    initdb.details = {"INIT_DB: nosuch"};
    c.on_event(initdb);
    c.on_summary(summary(2, nullptr, protocol::CommandResult::error));
    EXPECT_EQ(c.conn.db, "shop");
    initdb.details = {"INIT_DB: stock"};
    c.on_event(initdb);
    c.on_summary(summary(2, nullptr, protocol::CommandResult::ok));
    EXPECT_EQ(c.conn.db, "stock");
    c.on_summary(summary(3, "use `a b`", protocol::CommandResult::ok));
    EXPECT_EQ(c.conn.db, "a b");
    c.on_summary(summary(3, "USE\tsales;", protocol::CommandResult::ok));
    EXPECT_EQ(c.conn.db, "sales");
    c.on_summary(summary(3, "use nosuch", protocol::CommandResult::error));
    EXPECT_EQ(c.conn.db, "sales");
    c.on_summary(summary(3, "user_defined()", protocol::CommandResult::ok));
    EXPECT_EQ(c.conn.db, "sales");
}

TEST(ClientSpans, DbSystemFromTheGreeting) {
    EXPECT_EQ(output::db_system_of("10.11.6-MariaDB-0+deb12u1"), "mariadb");
    EXPECT_EQ(output::db_system_of("5.5.5-10.11.6-MariaDB"), "mariadb");
    EXPECT_EQ(output::db_system_of("9.7.0"), "mysql");
    EXPECT_EQ(output::db_system_of(""), "other_sql");
}

json attrs_of(const json &span) {
    json out = json::object();
    for (const auto &kv : span["attributes"]) {
        const auto &v = kv["value"];
        out[kv["key"].get<std::string>()] =
            v.contains("stringValue") ? v["stringValue"] : v["intValue"];
    }
    return out;
}

TEST(ClientSpans, QueryErrorAndTraceparent) {
    output::OtlpClientSpans spans("host1", "1.0", 7);
    spans.set_realtime_offset(1'000'000);
    output::ClientConnection conn;
    conn.peer = "[::1]:3307";
    conn.server_version = "9.7.0";
    conn.connection_id = 9;
    conn.db = "d";
    output::ClientProcess app{77, "app"}, other{78, ""};
    auto ok = summary(3, "select * from t where id = 1", protocol::CommandResult::rows);
    ok.rows = 1;
    const auto ctx = spans.add(ok, conn, app);
    auto err = summary(3, "select nosuch from t", protocol::CommandResult::error);
    err.error_code = 1054;
    err.error_message = "Unknown column";
    spans.add(err, conn, other);
    auto traced = summary(3,
                          "select 1 /*traceparent='00-4bf92f3577b34da6a3ce929d0e0e4736-"
                          "00f067aa0ba902b7-01'*/",
                          protocol::CommandResult::rows);
    spans.add(traced, conn, app);
    EXPECT_EQ(spans.spans(), 3u);
    std::string out;
    spans.take(out);
    EXPECT_EQ(spans.spans(), 0u);
    const json j = json::parse(out);
    ASSERT_EQ(j["resourceSpans"].size(), 2u);
    const auto &r0 = j["resourceSpans"][0];
    EXPECT_EQ(r0["resource"]["attributes"],
              json::parse(R"([{"key":"service.name","value":{"stringValue":"app"}},
                 {"key":"process.pid","value":{"intValue":"77"}},
                 {"key":"process.executable.name","value":{"stringValue":"app"}},
                 {"key":"host.name","value":{"stringValue":"host1"}}])"));
    const auto &s0 = r0["scopeSpans"][0]["spans"];
    ASSERT_EQ(s0.size(), 2u);
    EXPECT_EQ(s0[0]["kind"], 3);
    EXPECT_EQ(s0[0]["name"], "SELECT t");
    EXPECT_EQ(s0[0]["startTimeUnixNano"], "1001000");
    EXPECT_EQ(s0[0]["endTimeUnixNano"], "1005000");
    EXPECT_EQ(s0[0]["flags"], 0x101);
    EXPECT_FALSE(s0[0].contains("parentSpanId"));
    char id[17];
    for (size_t i = 0; i < 8; i++) {
        std::snprintf(id + 2 * i, 3, "%02x", ctx.span_id[i]);
    }
    EXPECT_EQ(s0[0]["spanId"], std::string(id, 16));
    const json a = attrs_of(s0[0]);
    EXPECT_EQ(a["db.system.name"], "mysql");
    EXPECT_EQ(a["db.namespace"], "d");
    EXPECT_EQ(a["db.collection.name"], "t");
    EXPECT_EQ(a["db.response.returned_rows"], "1");
    EXPECT_EQ(a["server.address"], "::1");
    EXPECT_EQ(a["server.port"], "3307");
    EXPECT_EQ(a["network.peer.address"], "::1");
    EXPECT_EQ(a["network.transport"], "tcp");
    EXPECT_EQ(a["mysqltrace.connection.id"], "9");
    EXPECT_EQ(s0[1]["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
    EXPECT_EQ(s0[1]["parentSpanId"], "00f067aa0ba902b7");
    EXPECT_EQ(s0[1]["flags"], 0x301);
    const auto &r1 = j["resourceSpans"][1];
    EXPECT_EQ(r1["resource"]["attributes"][0]["value"]["stringValue"], "unknown_service");
    const auto &e = r1["scopeSpans"][0]["spans"][0];
    EXPECT_EQ(e["status"], json::parse(R"({"message":"Unknown column","code":2})"));
    EXPECT_EQ(attrs_of(e)["error.type"], "1054");
    EXPECT_EQ(attrs_of(e)["db.response.status_code"], "1054");
    // A socket peer.
    conn.peer = "/run/mysqld/mysqld.sock";
    spans.add(ok, conn, app);
    spans.take(out);
    const json u = attrs_of(json::parse(out)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]);
    EXPECT_EQ(u["server.address"], "/run/mysqld/mysqld.sock");
    EXPECT_EQ(u["network.transport"], "unix");
    EXPECT_FALSE(u.contains("server.port"));
}

}  // namespace
