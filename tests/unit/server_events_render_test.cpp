// SPDX-License-Identifier: GPL-2.0-only
// Text and JSON of connections and transactions (output/server_threads.h,
// output/server_txn.h).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "output/server_threads.h"
#include "output/server_txn.h"

namespace {

using mysqltrace::server::Connection;
using mysqltrace::server::Transaction;

// The line without its wall-clock time (local time: not for a test).
std::string after_time(const std::string &line) {
    return line.substr(15);
}

TEST(ServerEventsRender, ConnectionText) {
    mysqltrace::output::Clock clock;
    Connection c;
    c.thread_id = 11;
    c.user = "app";
    c.host = "localhost";
    c.db = "shop";
    c.attrs = {{"program_name", "mysql"}, {"_pid", "42"}};
    std::string out;
    mysqltrace::output::connection_text(out, clock, c);
    EXPECT_EQ(after_time(out),
              "        11 connect    app@localhost type=Socket db=shop program_name=mysql "
              "_pid=42\n");
    c.op = Connection::Op::disconnect;
    c.ip = "10.0.0.5";
    c.host.clear();
    c.attrs.clear();
    c.connected_ns = 1'000'000;
    c.ts_ns = 3'500'000;
    out.clear();
    mysqltrace::output::connection_text(out, clock, c);
    EXPECT_EQ(after_time(out),
              "        11 disconnect app@10.0.0.5 type=TCP/IP db=shop after 2500.0 us\n");
}

TEST(ServerEventsRender, ConnectionJson) {
    Connection c;
    c.thread_id = 11;
    c.tid = 300;
    c.ts_ns = 5;
    c.user = "app";
    c.ip = "10.0.0.5";
    c.attrs = {{"program_name", "my\"app"}};
    std::string out;
    mysqltrace::output::connection_json(out, 77, c);
    ASSERT_EQ(out.back(), '\n');
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["kind"], "thread");
    EXPECT_EQ(j["EVENT"], "connect");
    EXPECT_EQ(j["PROCESSLIST_ID"], 11);
    EXPECT_EQ(j["THREAD_OS_ID"], 300);
    EXPECT_EQ(j["PROCESSLIST_HOST"], "10.0.0.5");
    EXPECT_TRUE(j["PROCESSLIST_DB"].is_null());
    EXPECT_EQ(j["CONNECTION_TYPE"], "TCP/IP");
    EXPECT_EQ(j["TIMER"], 5000);
    EXPECT_EQ(j["connect_attrs"]["program_name"], "my\"app");
    EXPECT_FALSE(j.contains("duration_ps"));
}

TEST(ServerEventsRender, TransactionTextAndJson) {
    Transaction t;
    t.thread_id = 5;
    t.event_id = 17;
    t.start_ns = 1'000;
    t.end_ns = 101'000;
    t.autocommit = false;
    t.read_only = true;
    t.isolation = 3;
    t.statements = 1;
    mysqltrace::output::Clock clock;
    std::string out;
    mysqltrace::output::transaction_text(out, clock, t);
    EXPECT_EQ(after_time(out),
              "         5   100.0 us transaction COMMITTED autocommit=NO READ "
              "ONLY SERIALIZABLE statements=1\n");
    out.clear();
    t.committed = false;
    mysqltrace::output::transaction_json(out, 77, t);
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["kind"], "transaction");
    EXPECT_EQ(j["EVENT_ID"], 17);
    EXPECT_EQ(j["STATE"], "ROLLED BACK");
    EXPECT_EQ(j["AUTOCOMMIT"], "NO");
    EXPECT_EQ(j["ACCESS_MODE"], "READ ONLY");
    EXPECT_EQ(j["ISOLATION_LEVEL"], "SERIALIZABLE");
    EXPECT_EQ(j["TIMER_WAIT"], 100'000'000);
    EXPECT_EQ(j["statements"], 1);
    EXPECT_TRUE(j["XA_STATE"].is_null());
}

}  // namespace
