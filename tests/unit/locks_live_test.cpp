// SPDX-License-Identifier: GPL-2.0-only
// server/locks.h, LockTracker::live(): the waits open now (their
// MT_LOCK_OPEN records) with their blockers, as `mysqltrace top` shows them:
// MDL's search, MySQL's fast-path holders from the connections' open
// transactions, InnoDB's edges, MariaDB's possible blockers; gone at the
// wait's end record or its statement's end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "mysqltrace/abi/event.h"
#include "server/locks.h"

namespace {

using namespace mysqltrace::server;

// An MDL_key of MySQL's layout: lengths, the name's length, then
// namespace, schema, NUL, name, NUL.
std::vector<uint8_t> mysql_key(int ns, const std::string &db, const std::string &name) {
    std::vector<uint8_t> k(MT_MAX_MDL_KEY, 0xee);
    const size_t length = db.size() + name.size() + 3;
    k[0] = length & 0xff;
    k[1] = 0;
    k[2] = db.size() & 0xff;
    k[3] = 0;
    k[4] = name.size() & 0xff;
    k[5] = 0;
    k[6] = static_cast<uint8_t>(ns);
    std::memcpy(&k[7], db.data(), db.size());
    k[7 + db.size()] = 0;
    std::memcpy(&k[8 + db.size()], name.data(), name.size());
    k[8 + db.size() + name.size()] = 0;
    return k;
}

std::vector<uint8_t> record(bool open, uint32_t tid, uint64_t start, uint64_t end,
                            uint64_t thread_id, uint32_t kind, std::vector<uint64_t> blockers = {},
                            std::vector<uint8_t> k = {}, int32_t type = -1,
                            const std::string &query = "") {
    mt_server_lock_wait_event ev{};
    ev.hdr.type = MT_EV_SERVER_LOCK_WAIT;
    ev.hdr.size = sizeof(ev);
    ev.hdr.tid = tid;
    ev.hdr.ts_ns = end;
    ev.start_ns = start;
    ev.thread_id = thread_id;
    ev.kind = kind;
    ev.status = open ? 0 : MT_LOCK_GRANTED;
    ev.lock_type = type;
    ev.lock_duration = -1;
    ev.flags = (open ? MT_LOCK_OPEN : 0) | (kind == MT_LOCK_METADATA ? MT_LOCK_SEARCHED : 0);
    ev.n_blockers = static_cast<uint16_t>(blockers.size());
    for (size_t i = 0; i < blockers.size(); i++) {
        ev.blockers[i] = blockers[i];
    }
    ev.key_len = static_cast<uint16_t>(k.size());
    std::memcpy(ev.key, k.data(), k.size());
    // As the probe copies it: at most MT_MAX_LOCK_QUERY - 1 bytes.
    ev.query_len = static_cast<uint16_t>(std::min<size_t>(query.size(), MT_MAX_LOCK_QUERY - 1));
    std::memcpy(ev.query, query.data(), ev.query_len);
    std::vector<uint8_t> out(sizeof(ev));
    std::memcpy(out.data(), &ev, sizeof(ev));
    return out;
}

std::vector<uint8_t> edge(uint64_t ts, uint64_t waiter, uint64_t blocker) {
    mt_server_lock_edge_event ev{};
    ev.hdr.type = MT_EV_SERVER_LOCK_EDGE;
    ev.hdr.size = sizeof(ev);
    ev.hdr.ts_ns = ts;
    ev.thread_id = waiter;
    ev.blocker = blocker;
    std::vector<uint8_t> out(sizeof(ev));
    std::memcpy(out.data(), &ev, sizeof(ev));
    return out;
}

Statement stmt(uint64_t id, uint64_t start, std::string text, std::string db = "") {
    Statement s;
    s.tid = static_cast<uint32_t>(100 + id);
    s.thread_id = id;
    s.start_ns = start;
    s.end_ns = start + 10;
    s.text = std::move(text);
    s.db = std::move(db);
    return s;
}

TEST(LockTrackerLive, MysqlFastPathHoldersOfAnExclusiveRequest) {
    LockTracker t(/*mysql8=*/true,
                  [](uint64_t) { return std::string("Waiting for table metadata lock"); });
    // 3 read t2 in an open transaction (its schema the default one); 5's
    // transaction read another table; 6 read t2 outside a transaction; 7
    // began its transaction after the wait did; 10's DDL committed its
    // transaction; 11's read of t2 failed.
    Statement failed = stmt(11, 230, "SELECT nosuch FROM mt_db.t2");
    failed.error = 1054;
    for (const auto &s :
         {stmt(3, 100, "BEGIN"), stmt(3, 200, "SELECT * FROM t2", "mt_db"), stmt(5, 110, "BEGIN"),
          stmt(5, 210, "SELECT * FROM mt_db.t"), stmt(6, 220, "SELECT * FROM mt_db.t2"),
          stmt(7, 600, "BEGIN"), stmt(7, 700, "SELECT * FROM mt_db.t2"), stmt(10, 120, "BEGIN"),
          stmt(10, 130, "SELECT * FROM mt_db.t2"), stmt(10, 140, "CREATE TABLE mt_db.t9 (a INT)"),
          stmt(11, 125, "BEGIN"), failed}) {
        t.on_statement(s);
    }
    // 4's EXCLUSIVE request (MySQL's 10) on TABLE (4) mt_db.t2 since 500;
    // its deadlock search found 8 (a granted ticket).
    t.on_record(
        record(true, 104, 500, 500, 4, MT_LOCK_METADATA, {8}, mysql_key(4, "mt_db", "t2"), 10));
    auto live = t.live();
    ASSERT_EQ(live.size(), 2u);
    EXPECT_EQ(live[0].waiter, 4u);
    EXPECT_EQ(live[0].object, "TABLE mt_db.t2");
    EXPECT_EQ(live[0].lock_type, "EXCLUSIVE");
    EXPECT_EQ(live[0].stage, "");  // no stage address in the record
    EXPECT_EQ(live[0].blocker.thread_id, 3u);
    EXPECT_EQ(live[0].blocker.sql, "SELECT * FROM t2");
    EXPECT_EQ(live[0].blocker.trx_start_ns, 100u);
    EXPECT_FALSE(live[0].possible);
    EXPECT_EQ(live[1].blocker.thread_id, 8u);
    EXPECT_EQ(live[1].blocker.sql, "");
    // A SHARED_NO_WRITE request (8) conflicts only with writes: 3 read.
    t.on_record(
        record(true, 109, 510, 510, 9, MT_LOCK_METADATA, {}, mysql_key(4, "mt_db", "t2"), 8));
    live = t.live();
    ASSERT_EQ(live.size(), 3u);
    EXPECT_EQ(live[2].waiter, 9u);
    EXPECT_EQ(live[2].blocker.thread_id, 0u);  // none known
    // The end record closes 4's wait; 9's statement ending closes 9's.
    t.on_record(
        record(false, 104, 500, 900, 4, MT_LOCK_METADATA, {8}, mysql_key(4, "mt_db", "t2"), 10));
    live = t.live();
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].waiter, 9u);
    t.on_statement(stmt(9, 505, "ALTER TABLE mt_db.t2 FORCE"));
    EXPECT_TRUE(t.live().empty());
}

TEST(LockTrackerLive, InnodbEdgesOrPossibleBlockers) {
    LockTracker t(/*mysql8=*/false, {});
    for (const auto &s : {stmt(1, 100, "BEGIN"), stmt(1, 200, "UPDATE t SET v = 1 WHERE id = 1"),
                          stmt(3, 110, "BEGIN"), stmt(3, 210, "SELECT * FROM t")}) {
        t.on_statement(s);
    }
    // MariaDB, binary log closed: no edge. 1 took row locks in its open
    // transaction; 3 only read. The waiting statement names one table, its
    // schema the connection's last one seen.
    t.on_statement(stmt(2, 250, "SELECT 1", "shop"));
    t.on_record(record(true, 102, 300, 300, 2, MT_LOCK_ROW, {}, {}, -1, "UPDATE t SET v = 2"));
    auto live = t.live();
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].waiter, 2u);
    EXPECT_EQ(live[0].object, "TABLE shop.t");
    EXPECT_EQ(live[0].waiter_sql, "UPDATE t SET v = 2");
    EXPECT_EQ(live[0].blocker.thread_id, 1u);
    EXPECT_EQ(live[0].blocker.sql, "UPDATE t SET v = 1 WHERE id = 1");
    EXPECT_TRUE(live[0].possible);
    // With the binary log open InnoDB reports the edge: certain.
    t.on_record(edge(310, 2, 1));
    live = t.live();
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].blocker.thread_id, 1u);
    EXPECT_FALSE(live[0].possible);
    // The wait's end (MariaDB: thd_storage_lock_wait's record, no open flag).
    t.on_record(record(false, 102, 300, 400, 2, MT_LOCK_ROW));
    EXPECT_TRUE(t.live().empty());
    // MySQL: the edges InnoDB reported for the waiter, nothing possible.
    LockTracker m(/*mysql8=*/true, {});
    m.set_row_blockers(true);
    m.on_statement(stmt(1, 100, "BEGIN"));
    m.on_statement(stmt(1, 200, "UPDATE t SET v = 1 WHERE id = 1"));
    // Its text cut (255 bytes): the table is not told.
    m.on_record(record(true, 102, 300, 300, 2, MT_LOCK_ROW, {}, {}, -1,
                       "UPDATE mt.t SET v = '" + std::string(240, 'x') + "' WHERE id = 1"));
    live = m.live();
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].blocker.thread_id, 0u);  // not reported yet
    EXPECT_EQ(live[0].object, "");
    m.on_record(edge(290, 2, 1));  // reported as it was queued, before the wait
    live = m.live();
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].blocker.thread_id, 1u);
    EXPECT_EQ(live[0].blocker.trx_start_ns, 100u);
}

TEST(LockTrackerLive, PruneForgetsIdleConnections) {
    LockTracker t(/*mysql8=*/false, {});
    t.on_statement(stmt(1, 100, "BEGIN"));
    t.on_statement(stmt(1, 200, "UPDATE t SET v = 1"));
    t.on_statement(stmt(3, 150, "UPDATE t SET v = 2"));  // autocommit: no transaction
    t.prune(1000);
    // 1's open transaction is kept; 3 is forgotten.
    t.on_record(record(true, 102, 2000, 2000, 2, MT_LOCK_ROW));
    auto live = t.live();
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].blocker.thread_id, 1u);
}

}  // namespace
