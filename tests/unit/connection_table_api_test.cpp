// SPDX-License-Identifier: GPL-2.0-only
// ConnectionTable fed with the shim's records: API calls and failed connects.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "bpf/reorder.h"
#include "client/connection_table.h"

namespace mysqltrace::client {
namespace {

struct Collected {
    std::vector<protocol::ProtocolEvent> events;
    std::vector<protocol::ApiCall> calls;
    ConnectionTable::Callbacks callbacks() {
        ConnectionTable::Callbacks cb;
        cb.on_event = [this](const protocol::ProtocolEvent &e) { events.push_back(e); };
        cb.on_api_call = [this](const protocol::ApiCall &c) { calls.push_back(c); };
        return cb;
    }
    std::vector<std::string> sequence() const {
        std::vector<std::string> out;
        for (const auto &e : events) {
            out.push_back(std::to_string(e.conn) + " " + protocol::stage_name(e.stage) + " " +
                          protocol::event_name(e.event) + " @" + std::to_string(e.ts_ns));
        }
        return out;
    }
};

constexpr uint32_t kPid = 100, kTid = 101;

std::vector<uint8_t> loopback(uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::vector<uint8_t> b(sizeof(a));
    std::memcpy(b.data(), &a, sizeof(a));
    return b;
}

SockRecord connect_record(uint64_t ts, uint32_t conn, int64_t ret,
                          const std::vector<uint8_t> &addr) {
    SockRecord r;
    r.ts_ns = ts;
    r.pid = kPid;
    r.tid = kTid;
    r.sock = MT_SHIM_SOCK(kPid, conn);
    r.fd = 5;
    r.op = MT_SOCK_CONNECT;
    r.family = AF_INET;
    r.ret = ret;
    r.data = addr;
    return r;
}

ApiRecord api(uint64_t ts, mt_api_phase phase, uint32_t func) {
    ApiRecord a;
    a.ts_ns = ts;
    a.pid = kPid;
    a.tid = kTid;
    a.phase = phase;
    a.func = func;
    a.handle = 0x1000;
    return a;
}

std::span<const uint8_t> bytes(const std::string &s) {
    return {reinterpret_cast<const uint8_t *>(s.data()), s.size()};
}

TEST(ConnectionTableApi, RefusedConnectOutsideTheApiUsesTheErrno) {
    Collected c;
    ConnectionTable t({}, c.callbacks());
    auto addr = loopback(1);
    t.on_record(connect_record(10, 1, -ECONNREFUSED, addr));
    EXPECT_EQ(c.sequence(),
              (std::vector<std::string>{"1 CONNECTING CONNECTING @10", "1 CONNECTING ERROR @10",
                                        "1 CONNECTING DISCONNECTED @10"}));
    ASSERT_EQ(c.events.size(), 3u);
    EXPECT_FALSE(c.events[1].error_code.has_value());
    EXPECT_EQ(c.events[1].error_message,
              "connect() to 127.0.0.1:1 failed: " + std::string(std::strerror(ECONNREFUSED)));
    EXPECT_EQ(t.stats().connections, 1u);
    EXPECT_EQ(t.open_connections(), 0u);
}

TEST(ConnectionTableApi, FailedRealConnectReportsTheLibrarysErrorOnce) {
    Collected c;
    ConnectionTable t({}, c.callbacks());
    auto addr = loopback(1);
    t.on_api(api(5, MT_API_BEGIN, MT_API_REAL_CONNECT));
    // The library tries twice; neither attempt is a connection of its own.
    t.on_record(connect_record(10, 1, -ECONNREFUSED, addr));
    t.on_record(connect_record(20, 2, -ECONNREFUSED, addr));
    ApiRecord end = api(30, MT_API_END, MT_API_REAL_CONNECT);
    end.ret = 1;
    end.error_code = 2003;
    end.sqlstate = "HY000";
    std::string msg = "Can't connect to server on '127.0.0.1' (111)";
    end.text = std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(msg.data()), msg.size());
    end.text_len = static_cast<uint32_t>(msg.size());
    t.on_api(end);
    EXPECT_EQ(c.sequence(),
              (std::vector<std::string>{"1 CONNECTING CONNECTING @5", "1 CONNECTING ERROR @30",
                                        "1 CONNECTING DISCONNECTED @30"}));
    ASSERT_EQ(c.events.size(), 3u);
    EXPECT_EQ(c.events[1].error_code, 2003);
    EXPECT_EQ(c.events[1].sqlstate, "HY000");
    EXPECT_EQ(c.events[1].error_message, msg);
    ASSERT_EQ(c.calls.size(), 1u);
    EXPECT_EQ(c.calls[0].func, "mysql_real_connect");
    EXPECT_TRUE(c.calls[0].failed);
    EXPECT_EQ(c.calls[0].error_code, 2003);
    EXPECT_EQ(c.calls[0].ts_begin_ns, 5u);
    EXPECT_EQ(c.calls[0].ts_end_ns, 30u);
    EXPECT_EQ(c.calls[0].conn, 1u);  // the connection that never was
}

TEST(ConnectionTableApi, ConnectInsideRealConnectStartsAtTheCallsEntry) {
    Collected c;
    ConnectionTable t({}, c.callbacks());
    auto addr = loopback(3306);
    t.on_api(api(5, MT_API_BEGIN, MT_API_REAL_CONNECT));
    t.on_record(connect_record(10, 1, 0, addr));
    // The start of a server greeting: length, seq 0, protocol 10, version.
    std::vector<uint8_t> greeting = {40, 0, 0, 0, 10, '1', '1', '.', '0', 0};
    greeting.resize(44, 0);
    SockRecord r = connect_record(12, 1, static_cast<int64_t>(greeting.size()), addr);
    r.op = MT_SOCK_RECV;
    r.data = greeting;
    t.on_record(r);
    ASSERT_FALSE(c.events.empty());
    EXPECT_EQ(c.sequence().front(), "1 CONNECTING CONNECTING @5");
    // A statement call with no connection of its own is tied to the
    // connection its thread talked on.
    t.on_api(api(40, MT_API_BEGIN, MT_API_STMT_EXECUTE));
    SockRecord send = connect_record(41, 1, 3, addr);
    send.op = MT_SOCK_SEND;
    std::vector<uint8_t> bytes = {1, 2, 3};
    send.data = bytes;
    t.on_record(send);
    t.on_api(api(50, MT_API_END, MT_API_STMT_EXECUTE));
    ASSERT_EQ(c.calls.size(), 1u);
    EXPECT_EQ(c.calls[0].conn, 1u);
    EXPECT_FALSE(c.calls[0].failed);
}

TEST(ConnectionTableApi, LibraryTraceEventsAreReportedVerbatim) {
    Collected c;
    ConnectionTable t({}, c.callbacks());
    auto addr = loopback(3306);
    t.on_api(api(5, MT_API_BEGIN, MT_API_REAL_CONNECT));
    t.on_record(connect_record(10, 1, 0, addr));
    std::vector<uint8_t> greeting = {40, 0, 0, 0, 10, '8', '.', '4', 0};
    greeting.resize(44, 0);
    SockRecord r = connect_record(12, 1, static_cast<int64_t>(greeting.size()), addr);
    r.op = MT_SOCK_RECV;
    r.data = greeting;
    t.on_record(r);
    c.events.clear();
    // Oracle's PROTOCOL_STAGE_WAIT_FOR_INIT_PACKET (1), TRACE_EVENT_PACKET_RECEIVED (15).
    ApiRecord lib = api(13, MT_API_TRACE, 1);
    lib.error_code = 15;
    t.on_api(lib);
    ApiRecord bad = api(14, MT_API_TRACE, 99);
    t.on_api(bad);
    ASSERT_EQ(c.events.size(), 1u);
    EXPECT_EQ(c.sequence(), std::vector<std::string>{"1 WAIT_FOR_INIT_PACKET PACKET_RECEIVED @13"});
    EXPECT_TRUE(c.events[0].from_library);
    EXPECT_EQ(
        c.events[0].details,
        std::vector<std::string>{"reported by the client library's trace plugin (MYSQL 0x1000)"});
    EXPECT_EQ(t.stats().library_events_unknown, 1u);
}

TEST(ConnectionTableApi, UnmatchedEndIsIgnored) {
    Collected c;
    ConnectionTable t({}, c.callbacks());
    t.on_api(api(50, MT_API_END, MT_API_REAL_QUERY));
    EXPECT_TRUE(c.calls.empty());
    EXPECT_TRUE(c.events.empty());
}

TEST(ConnectionTableApi, NonBlockingCallsOfTwoHandlesOnOneThreadEndInAnyOrder) {
    // An event loop starts a query on each of two handles, and the second
    // completes first: each end goes with its own handle's begin.
    Collected c;
    ConnectionTable t({}, c.callbacks());
    ApiRecord a = api(10, MT_API_BEGIN, MT_API_REAL_QUERY);
    const std::string qa = "select 'a'";
    a.text = bytes(qa);
    a.text_len = qa.size();
    ApiRecord b = api(20, MT_API_BEGIN, MT_API_REAL_QUERY);
    b.handle = 0x2000;
    const std::string qb = "select 'b'";
    b.text = bytes(qb);
    b.text_len = qb.size();
    t.on_api(a);
    t.on_api(b);
    ApiRecord end_a = api(30, MT_API_END, MT_API_REAL_QUERY);
    ApiRecord end_b = api(40, MT_API_END, MT_API_REAL_QUERY);
    end_b.handle = 0x2000;
    t.on_api(end_a);
    t.on_api(end_b);
    ASSERT_EQ(c.calls.size(), 2u);
    EXPECT_EQ(c.calls[0].handle, 0x1000u);
    EXPECT_EQ(c.calls[0].arg, "select 'a'");
    EXPECT_EQ(c.calls[0].ts_begin_ns, 10u);
    EXPECT_EQ(c.calls[1].handle, 0x2000u);
    EXPECT_EQ(c.calls[1].arg, "select 'b'");
    EXPECT_EQ(c.calls[1].ts_begin_ns, 20u);
}

TEST(ConnectionTableApi, BindParamShowsAttributeNamesUnredacted) {
    // The shim passes names only; they are not SQL, so the redaction of
    // statement texts does not apply to them.
    Collected c;
    ConnectionTable t({}, c.callbacks());
    ApiRecord b = api(10, MT_API_BEGIN, MT_API_BIND_PARAM);
    const std::string names = "trace_id, password";
    b.text = bytes(names);
    b.text_len = names.size();
    t.on_api(b);
    t.on_api(api(11, MT_API_END, MT_API_BIND_PARAM));
    ASSERT_EQ(c.calls.size(), 1u);
    EXPECT_EQ(c.calls[0].func, "mysql_bind_param");
    EXPECT_EQ(c.calls[0].arg, "trace_id, password");
    EXPECT_FALSE(c.calls[0].failed);
}

// The records of a call whose begin the shim deferred (usdt.h,
// mt_api_begin_info) reach the rings in another order than api_begin's: the
// begin is written by the call's first io hit, or by its api_end when the
// call moved no bytes, stamped with the call's begin time. Through the merge
// of the rings (bpf/reorder.h) the table sees them in time order, and the
// calls come out as they did with api_begin.
using Item = std::variant<ApiRecord, SockRecord>;

uint64_t ts_of(const Item &i) {
    return std::visit([](const auto &r) { return r.ts_ns; }, i);
}

void feed(ConnectionTable &t, const Item &i) {
    if (const auto *a = std::get_if<ApiRecord>(&i)) {
        t.on_api(*a);
    } else {
        t.on_record(std::get<SockRecord>(i));
    }
}

// Pushes items into the merge in arrival order, each on its CPU's lane,
// and feeds the table what comes out. After the first `early` arrivals the
// reader hands out what is stamped up to `early_to` (the reorder window
// passed it); returns the count of late records.
uint64_t feed_merged(ConnectionTable &t, const std::vector<Item> &items,
                     const std::vector<std::pair<size_t, size_t>> &arrival, size_t early = 0,
                     uint64_t early_to = 0) {
    bpf::ReorderBuffer rb(2);
    auto sink = [&](std::span<const uint8_t> r) {
        uint32_t i;
        std::memcpy(&i, r.data(), sizeof(i));
        feed(t, items[i]);
    };
    for (size_t n = 0; n < arrival.size(); n++) {
        if (early != 0 && n == early) {
            rb.release(early_to, SIZE_MAX, sink);
        }
        auto [idx, lane] = arrival[n];
        uint32_t i = static_cast<uint32_t>(idx);
        rb.push(lane, ts_of(items[idx]),
                std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(&i), sizeof(i)));
    }
    rb.release(UINT64_MAX, SIZE_MAX, sink);
    return rb.late();
}

std::vector<std::string> lines(const std::vector<protocol::ApiCall> &calls) {
    std::vector<std::string> out;
    for (const auto &c : calls) {
        out.push_back(std::string(c.func) + " tid " + std::to_string(c.tid) + " conn " +
                      std::to_string(c.conn) + " " + std::to_string(c.ts_begin_ns) + ".." +
                      std::to_string(c.ts_end_ns) + " arg " + c.arg.value_or("-") + " failed " +
                      std::to_string(c.failed) + " wait " + std::to_string(c.server_wait_ns));
    }
    return out;
}

TEST(ConnectionTableApi, DeferredBeginsGiveTheSameCallsAsApiBegin) {
    auto addr = loopback(3306);
    std::vector<uint8_t> greeting = {40, 0, 0, 0, 10, '1', '1', '.', '0', 0};
    greeting.resize(44, 0);
    SockRecord greet = connect_record(12, 1, static_cast<int64_t>(greeting.size()), addr);
    greet.op = MT_SOCK_RECV;
    greet.data = greeting;
    const std::string q = "select 1";
    ApiRecord query = api(40, MT_API_BEGIN, MT_API_REAL_QUERY);
    query.sock = MT_SHIM_SOCK(kPid, 1);
    query.text = bytes(q);
    query.text_len = q.size();
    SockRecord send = connect_record(41, 1, 3, addr);
    send.op = MT_SOCK_SEND;
    std::vector<uint8_t> sent = {1, 2, 3};
    send.data = sent;
    ApiRecord query_end = api(50, MT_API_END, MT_API_REAL_QUERY);
    query_end.sock = query.sock;
    // A statement call that moved no bytes, its begin and end both written
    // at its end, after a record of another thread stamped inside it.
    ApiRecord exec = api(60, MT_API_BEGIN, MT_API_STMT_EXECUTE);
    exec.handle = 0x3000;
    ApiRecord other = api(65, MT_API_BEGIN, MT_API_PING);
    other.tid = kTid + 1;
    ApiRecord exec_end = api(70, MT_API_END, MT_API_STMT_EXECUTE);
    exec_end.handle = 0x3000;
    exec_end.ret = 1;
    exec_end.error_code = 1062;
    ApiRecord other_end = api(75, MT_API_END, MT_API_PING);
    other_end.tid = kTid + 1;
    const std::vector<Item> items = {api(5, MT_API_BEGIN, MT_API_REAL_CONNECT),
                                     connect_record(10, 1, 0, addr),
                                     greet,
                                     api(20, MT_API_END, MT_API_REAL_CONNECT),
                                     query,
                                     send,
                                     query_end,
                                     exec,
                                     other,
                                     exec_end,
                                     other_end};

    Collected before;
    ConnectionTable t1({}, before.callbacks());
    for (const auto &i : items) {
        feed(t1, i);
    }
    Collected after;
    ConnectionTable t2({}, after.callbacks());
    // Arrival: the query's begin with its first io (written just before
    // it), the end on the other CPU; the statement's begin with its end,
    // after the other thread's record.
    const std::vector<std::pair<size_t, size_t>> arrival = {
        {0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}, {6, 1}, {8, 1}, {7, 1}, {9, 1}, {10, 0}};
    EXPECT_EQ(feed_merged(t2, items, arrival), 0u);
    ASSERT_EQ(before.calls.size(), 4u);
    EXPECT_EQ(lines(after.calls), lines(before.calls));
    EXPECT_EQ(lines(after.calls)[1],
              "mysql_real_query tid 101 conn 1 40..50 arg select 1 failed 0 wait 0");
    EXPECT_EQ(lines(after.calls)[2],
              "mysql_stmt_execute tid 101 conn 0 60..70 arg - failed 1 wait 0");
    EXPECT_EQ(after.sequence(), before.sequence());

    // The statement's begin written after the reader passed the other
    // thread's record stamped after it: a late record, the same calls.
    Collected late;
    ConnectionTable t3({}, late.callbacks());
    EXPECT_EQ(feed_merged(t3, items, arrival, 8, 66), 1u);
    EXPECT_EQ(lines(late.calls), lines(before.calls));
    EXPECT_EQ(late.sequence(), before.sequence());
}

}  // namespace
}  // namespace mysqltrace::client
