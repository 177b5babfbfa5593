// SPDX-License-Identifier: GPL-2.0-only
// Connect attributes and connection records (server/threads.h).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "mysqltrace/abi/event.h"
#include "server/threads.h"

namespace {

using mysqltrace::server::ConnectAttrs;
using mysqltrace::server::Connection;
using mysqltrace::server::Connections;
using mysqltrace::server::parse_connect_attrs;

void put(std::vector<uint8_t> &b, const std::string &s) {
    if (s.size() < 0xfb) {
        b.push_back(static_cast<uint8_t>(s.size()));
    } else {
        b.push_back(0xfc);
        b.push_back(static_cast<uint8_t>(s.size() & 0xff));
        b.push_back(static_cast<uint8_t>(s.size() >> 8));
    }
    b.insert(b.end(), s.begin(), s.end());
}

TEST(ConnectAttrs, LengthEncodedPairsInOrder) {
    std::vector<uint8_t> b;
    const std::string long_value(300, 'v');
    for (const std::string &s :
         std::vector<std::string>{"_client_name", "libmariadb", "program_name", "mysql", "_long",
                                  long_value, "empty", ""}) {
        put(b, s);
    }
    const ConnectAttrs want = {{"_client_name", "libmariadb"},
                               {"program_name", "mysql"},
                               {"_long", long_value},
                               {"empty", ""}};
    EXPECT_EQ(parse_connect_attrs(b), want);
}

TEST(ConnectAttrs, CutBlockKeepsWholePairs) {
    std::vector<uint8_t> b;
    put(b, "_os");
    put(b, "Linux");
    put(b, "program_name");
    put(b, "mysql");
    b.resize(b.size() - 2);  // the last value cut
    EXPECT_EQ(parse_connect_attrs(b), (ConnectAttrs{{"_os", "Linux"}}));
    // A key whose length runs past the end, a NULL (0xfb) or 0xff length.
    EXPECT_TRUE(parse_connect_attrs(std::vector<uint8_t>{0x05, 'a', 'b'}).empty());
    EXPECT_TRUE(parse_connect_attrs(std::vector<uint8_t>{0xfb, 0x00}).empty());
    EXPECT_TRUE(parse_connect_attrs(std::vector<uint8_t>{0xff, 0x01, 0x00}).empty());
    EXPECT_TRUE(parse_connect_attrs(std::vector<uint8_t>{0xfe, 0x01}).empty());
}

std::vector<uint8_t> record(uint32_t op, uint32_t tid, uint64_t id, uint64_t ts,
                            const std::vector<uint8_t> &attrs = {}) {
    mt_server_thread_event ev{};
    ev.hdr.type = MT_EV_SERVER_THREAD;
    ev.hdr.size = sizeof(ev);
    ev.hdr.tid = tid;
    ev.hdr.ts_ns = ts;
    ev.thread_id = id;
    ev.op = op;
    std::strcpy(ev.user, "app");
    std::strcpy(ev.host, "localhost");
    std::strcpy(ev.db, "shop");
    std::memcpy(ev.attrs, attrs.data(), attrs.size());
    ev.attrs_len = static_cast<uint32_t>(attrs.size());
    ev.attrs_total = ev.attrs_len;
    std::vector<uint8_t> r(sizeof(ev));
    std::memcpy(r.data(), &ev, sizeof(ev));
    return r;
}

TEST(Connections, AttributesGoWithTheThreadsNextConnect) {
    std::vector<uint8_t> attrs;
    put(attrs, "program_name");
    put(attrs, "mysql");
    Connections cs;
    Connection c;
    bool ready = true;
    ASSERT_TRUE(cs.decode(record(MT_THREAD_ATTRS, 7, 0, 100, attrs), &c, &ready));
    EXPECT_FALSE(ready);
    // Another thread's connect does not take them.
    ASSERT_TRUE(cs.decode(record(MT_THREAD_CONNECT, 8, 41, 150), &c, &ready));
    EXPECT_TRUE(ready);
    EXPECT_TRUE(c.attrs.empty());
    ASSERT_TRUE(cs.decode(record(MT_THREAD_CONNECT, 7, 42, 200), &c, &ready));
    EXPECT_TRUE(ready);
    EXPECT_EQ(c.op, Connection::Op::connect);
    EXPECT_EQ(c.thread_id, 42u);
    EXPECT_EQ(c.user, "app");
    EXPECT_EQ(c.host, "localhost");
    EXPECT_EQ(c.db, "shop");
    EXPECT_STREQ(c.connection_type(), "Socket");
    EXPECT_EQ(c.attrs, (ConnectAttrs{{"program_name", "mysql"}}));
    ASSERT_TRUE(cs.decode(record(MT_THREAD_DISCONNECT, 7, 42, 900), &c, &ready));
    EXPECT_EQ(c.op, Connection::Op::disconnect);
    EXPECT_EQ(c.connected_ns, 200u);
    EXPECT_TRUE(c.attrs.empty());
    // A disconnect whose connect came before the trace.
    ASSERT_TRUE(cs.decode(record(MT_THREAD_DISCONNECT, 9, 3, 950), &c, &ready));
    EXPECT_EQ(c.connected_ns, 0u);
    EXPECT_EQ(cs.connects(), 2u);
    EXPECT_EQ(cs.disconnects(), 2u);
}

TEST(Connections, MalformedRecordsAreRefused) {
    Connections cs;
    Connection c;
    bool ready = false;
    auto r = record(MT_THREAD_CONNECT, 1, 1, 1);
    r.pop_back();
    EXPECT_FALSE(cs.decode(r, &c, &ready));
    EXPECT_FALSE(cs.decode(record(9, 1, 1, 1), &c, &ready));
    auto bad = record(MT_THREAD_ATTRS, 1, 0, 1);
    mt_server_thread_event ev;
    std::memcpy(&ev, bad.data(), sizeof(ev));
    ev.attrs_len = MT_MAX_THREAD_ATTRS + 1;
    ev.attrs_total = ev.attrs_len;
    std::memcpy(bad.data(), &ev, sizeof(ev));
    EXPECT_FALSE(cs.decode(bad, &c, &ready));
}

}  // namespace
