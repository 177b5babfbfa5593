// SPDX-License-Identifier: GPL-2.0-only
// server/locks.h: MDL keys as each flavour lays them out, the names
// performance_schema gives namespaces and lock types, and the tracker that
// joins lock wait records with statements: the blocker's statement and
// transaction age at the time of the wait, outcomes from the statement's
// error, deadlock and timeout incidents, InnoDB edges, the blocking tree.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "mysqltrace/abi/event.h"
#include "output/lock_render.h"
#include "server/locks.h"

namespace {

using namespace mysqltrace::server;

// An MDL_key: lengths, then (at `at`) namespace, schema, NUL, name, NUL.
std::vector<uint8_t> key(size_t at, int ns, const std::string &db, const std::string &name) {
    std::vector<uint8_t> k(MT_MAX_MDL_KEY, 0xee);
    const size_t length = db.size() + name.size() + 3;
    k[0] = length & 0xff;
    k[1] = length >> 8;
    k[2] = db.size() & 0xff;
    k[3] = db.size() >> 8;
    if (at == 6) {  // MySQL: the name's length too
        k[4] = name.size() & 0xff;
        k[5] = 0;
    } else {  // MariaDB: a hash value
        k[4] = 0x11;
        k[5] = 0x22;
        k[6] = 0x33;
        k[7] = 0x44;
    }
    k[at] = static_cast<uint8_t>(ns);
    std::memcpy(&k[at + 1], db.data(), db.size());
    k[at + 1 + db.size()] = 0;
    std::memcpy(&k[at + 2 + db.size()], name.data(), name.size());
    k[at + 2 + db.size() + name.size()] = 0;
    return k;
}

TEST(MdlKey, BothLayouts) {
    int ns = -1;
    std::string db, name;
    ASSERT_TRUE(parse_mdl_key(key(8, 2, "mt_db", "t2"), &ns, &db, &name));
    EXPECT_EQ(ns, 2);
    EXPECT_EQ(db, "mt_db");
    EXPECT_EQ(name, "t2");
    EXPECT_EQ(mdl_object_type(ns, false), "TABLE");
    ASSERT_TRUE(parse_mdl_key(key(6, 4, "mt_db", "t2"), &ns, &db, &name));
    EXPECT_EQ(ns, 4);
    EXPECT_EQ(name, "t2");
    EXPECT_EQ(mdl_object_type(ns, true), "TABLE");
    // A schema lock: no name.
    ASSERT_TRUE(parse_mdl_key(key(6, 3, "mt_db", ""), &ns, &db, &name));
    EXPECT_EQ(db, "mt_db");
    EXPECT_EQ(name, "");
    EXPECT_EQ(mdl_object_type(ns, true), "SCHEMA");
    // Garbage, or too short.
    std::vector<uint8_t> bad(MT_MAX_MDL_KEY, 0xee);
    EXPECT_FALSE(parse_mdl_key(bad, &ns, &db, &name));
    EXPECT_FALSE(parse_mdl_key(std::vector<uint8_t>(4, 0), &ns, &db, &name));
}

TEST(MdlNames, TypesDifferByFlavour) {
    EXPECT_EQ(mdl_lock_type(9, false), "EXCLUSIVE");
    EXPECT_EQ(mdl_lock_type(10, true), "EXCLUSIVE");
    EXPECT_EQ(mdl_lock_type(5, true), "SHARED_WRITE_LOW_PRIO");
    EXPECT_EQ(mdl_lock_type(3, false), "SHARED_READ");
    EXPECT_EQ(mdl_lock_type(10, false), "");
    EXPECT_EQ(mdl_lock_type(-1, true), "");
}

std::vector<uint8_t> wait_record(uint32_t tid, uint64_t start, uint64_t end, uint64_t thread_id,
                                 uint32_t kind, std::vector<uint64_t> blockers,
                                 std::vector<uint8_t> k = {}, uint32_t status = 0,
                                 uint32_t granter = 0) {
    mt_server_lock_wait_event ev{};
    ev.hdr.type = MT_EV_SERVER_LOCK_WAIT;
    ev.hdr.size = sizeof(ev);
    ev.hdr.tid = tid;
    ev.hdr.ts_ns = end;
    ev.start_ns = start;
    ev.thread_id = thread_id;
    ev.kind = kind;
    ev.status = status;
    ev.lock_type = 10;
    ev.lock_duration = kind == MT_LOCK_METADATA ? 1 : -1;
    ev.flags = kind == MT_LOCK_METADATA ? MT_LOCK_SEARCHED : 0;
    ev.n_blockers = static_cast<uint16_t>(blockers.size());
    for (size_t i = 0; i < blockers.size(); i++) {
        ev.blockers[i] = blockers[i];
    }
    ev.key_len = static_cast<uint16_t>(k.size());
    std::memcpy(ev.key, k.data(), k.size());
    ev.granter_tid = granter;
    std::vector<uint8_t> out(sizeof(ev));
    std::memcpy(out.data(), &ev, sizeof(ev));
    return out;
}

std::vector<uint8_t> edge_record(uint64_t ts, uint64_t waiter, uint64_t blocker) {
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

Statement stmt(uint32_t tid, uint64_t id, uint64_t start, uint64_t end, std::string text,
               uint32_t error = 0) {
    Statement s;
    s.tid = tid;
    s.thread_id = id;
    s.start_ns = start;
    s.end_ns = end;
    s.text = std::move(text);
    s.error = error;
    return s;
}

TEST(LockTracker, JoinsWaitsWithStatementsAndBuildsTheTree) {
    LockTracker t(/*mysql8=*/true, {});
    t.set_row_blockers(true);
    // A (thread 1, tid 101) opens a transaction and updates a row; C (3) reads t2.
    t.on_statement(stmt(101, 1, 1000, 1100, "BEGIN"));
    t.on_statement(stmt(101, 1, 1200, 1300, "UPDATE t SET b = 1 WHERE a = 1"));
    t.on_statement(stmt(103, 3, 1400, 1500, "begin"));
    t.on_statement(stmt(103, 3, 1600, 1700, "SELECT * FROM t2"));
    // B (2) waits for A's row from 2000 to 5000; InnoDB reported the edge.
    t.on_record(edge_record(1990, 2, 1));
    t.on_record(wait_record(102, 2000, 5000, 2, MT_LOCK_ROW, {}));
    // A commits at 4900, before B's statement ends.
    t.on_statement(stmt(101, 1, 4900, 4950, "COMMIT"));
    EXPECT_TRUE(t.take_waits().empty());  // B's statement has not ended
    t.on_statement(stmt(102, 2, 1900, 5100, "UPDATE t SET b = 2 WHERE a = 1"));
    auto w = t.take_waits();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].outcome, "GRANTED");
    EXPECT_TRUE(w[0].blockers_known);
    ASSERT_EQ(w[0].blockers.size(), 1u);
    EXPECT_EQ(w[0].blockers[0].thread_id, 1u);
    // What A ran when the wait began, not its later COMMIT.
    EXPECT_EQ(w[0].blockers[0].sql, "UPDATE t SET b = 1 WHERE a = 1");
    EXPECT_EQ(w[0].blockers[0].trx_start_ns, 1000u);
    EXPECT_EQ(w[0].waiter_sql, "UPDATE t SET b = 2 WHERE a = 1");

    // D (4) waits for an MDL on TABLE mt_db.t2: the search found nobody (a
    // fast-path holder), C's thread granted it on release.
    t.on_record(wait_record(104, 6000, 9000, 4, MT_LOCK_METADATA, {}, key(6, 4, "mt_db", "t2"),
                            MT_LOCK_GRANTED, 103));
    t.on_statement(stmt(103, 3, 8900, 8950, "COMMIT"));
    t.on_statement(stmt(104, 4, 5900, 9100, "ALTER TABLE mt_db.t2 ADD c INT"));
    w = t.take_waits();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].object_type, "TABLE");
    EXPECT_EQ(w[0].schema, "mt_db");
    EXPECT_EQ(w[0].name, "t2");
    EXPECT_EQ(w[0].lock_type, "EXCLUSIVE");
    EXPECT_EQ(w[0].lock_duration, "TRANSACTION");
    EXPECT_EQ(w[0].outcome, "GRANTED");
    ASSERT_EQ(w[0].blockers.size(), 1u);
    EXPECT_EQ(w[0].blockers[0].thread_id, 3u);
    EXPECT_EQ(w[0].blockers[0].sql, "SELECT * FROM t2");

    // F (6) times out waiting for E (5): the wait's outcome and an incident.
    t.on_record(edge_record(9990, 6, 5));
    t.on_record(wait_record(106, 10000, 11000, 6, MT_LOCK_ROW, {}));
    t.on_statement(stmt(106, 6, 9900, 11100, "UPDATE t SET b = 6 WHERE a = 2", 1205));
    w = t.take_waits();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].outcome, "TIMEOUT");
    auto inc = t.take_incidents();
    ASSERT_EQ(inc.size(), 1u);
    EXPECT_EQ(inc[0].event, "lock_wait_timeout");
    EXPECT_EQ(inc[0].thread_id, 6u);

    // A wait whose statement never ended comes out at the end.
    t.on_record(wait_record(107, 12000, 13000, 7, MT_LOCK_ROW, {}));
    w = t.take_waits(/*all=*/true);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_TRUE(w[0].blockers.empty());

    // Roots first: A, C and E blocked without waiting themselves.
    auto tree = t.tree();
    ASSERT_EQ(tree.size(), 3u);
    EXPECT_EQ(tree[0].blocker, 1u);
    EXPECT_EQ(tree[0].waiter, 2u);
    EXPECT_EQ(tree[1].blocker, 3u);
    EXPECT_EQ(tree[1].waiter, 4u);
    EXPECT_EQ(tree[1].object, "TABLE mt_db.t2");
    EXPECT_EQ(tree[2].blocker, 5u);
    EXPECT_EQ(tree[0].waits, 1u);
    EXPECT_EQ(tree[0].wait_ns, 3000u);
    const std::string text = mysqltrace::output::blocking_tree_text(tree);
    EXPECT_EQ(text,
              "blocking tree (who blocked whom during the trace):\n"
              "thread 1: UPDATE t SET b = 1 WHERE a = 1\n"
              "  -> thread 2 waited 1 time, 3.00 us, for an InnoDB row lock: UPDATE t SET b = 2 "
              "WHERE a = 1\n"
              "thread 3: SELECT * FROM t2\n"
              "  -> thread 4 waited 1 time, 3.00 us, for a metadata lock on TABLE mt_db.t2: "
              "ALTER TABLE mt_db.t2 ADD c INT\n"
              "thread 5\n"
              "  -> thread 6 waited 1 time, 1.00 us, for an InnoDB row lock: UPDATE t SET b = 6 "
              "WHERE a = 2\n");
}

TEST(LockTracker, RowLockWaitsNameTheStatementsOneTable) {
    LockTracker t(/*mysql8=*/false, {});
    t.set_row_blockers(true);
    auto with_db = [](Statement s, std::string db) {
        s.db = std::move(db);
        return s;
    };
    // One table, unqualified: the statement's schema fills it in.
    t.on_record(edge_record(10, 2, 1));
    t.on_record(wait_record(102, 20, 30, 2, MT_LOCK_ROW, {}));
    t.on_statement(with_db(stmt(102, 2, 5, 40, "UPDATE t SET b = 2 WHERE a = 1"), "shop"));
    auto w = t.take_waits();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].object_type, "TABLE");
    EXPECT_EQ(w[0].schema, "shop");
    EXPECT_EQ(w[0].name, "t");
    EXPECT_EQ(mysqltrace::output::lock_wait_text(w[0]),
              "lock wait: thread 2 waited 0.01 us for an InnoDB row lock on TABLE shop.t: "
              "GRANTED; blocked by thread 1\n"
              "  waiting statement: UPDATE t SET b = 2 WHERE a = 1\n");
    // Two tables (INSERT ... SELECT): which one InnoDB locked is not known.
    t.on_record(edge_record(50, 3, 1));
    t.on_record(wait_record(103, 60, 70, 3, MT_LOCK_ROW, {}));
    t.on_statement(with_db(stmt(103, 3, 45, 80, "INSERT INTO a SELECT * FROM b"), "shop"));
    w = t.take_waits();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].object_type, "");
    EXPECT_EQ(w[0].name, "");
    // The tree's edge carries the object too.
    bool seen = false;
    for (const auto &e : t.tree()) {
        if (e.waiter == 2) {
            EXPECT_EQ(e.object, "TABLE shop.t");
            seen = true;
        }
    }
    EXPECT_TRUE(seen);
}

TEST(LockTracker, UnknownRowBlockersComeWithTheTransactionsThatLockedTheTable) {
    LockTracker t(/*mysql8=*/false, {});
    t.set_row_blockers(false);  // MariaDB: no InnoDB wait-for edges
    auto in = [](Statement s, std::string db) {
        s.db = std::move(db);
        return s;
    };
    // 1 updated shop.t in an open transaction; 2 only read it (a snapshot);
    // 3 updated shop.u; 4 updated shop.t but committed; 5 locked shop.t
    // with an unqualified SELECT ... FOR UPDATE.
    t.on_statement(stmt(101, 1, 10, 11, "BEGIN"));
    t.on_statement(in(stmt(101, 1, 12, 13, "UPDATE shop.t SET v = 1 WHERE id = 1"), "x"));
    t.on_statement(stmt(102, 2, 14, 15, "START TRANSACTION"));
    t.on_statement(in(stmt(102, 2, 16, 17, "SELECT * FROM t"), "shop"));
    t.on_statement(stmt(103, 3, 18, 19, "BEGIN"));
    t.on_statement(in(stmt(103, 3, 20, 21, "UPDATE u SET v = 1"), "shop"));
    t.on_statement(stmt(104, 4, 22, 23, "BEGIN"));
    t.on_statement(in(stmt(104, 4, 24, 25, "DELETE FROM t WHERE id = 9"), "shop"));
    t.on_statement(stmt(104, 4, 26, 27, "COMMIT"));
    t.on_statement(stmt(105, 5, 28, 29, "begin"));
    t.on_statement(in(stmt(105, 5, 30, 31, "select * from t where id = 2 for update"), "shop"));
    // 6 waits on shop.t from 40 and times out at 1040.
    t.on_record(wait_record(106, 40, 1040, 6, MT_LOCK_ROW, {}));
    t.on_statement(in(stmt(106, 6, 35, 1050, "UPDATE t SET v = 6 WHERE id = 1", 1205), "shop"));
    auto w = t.take_waits();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].outcome, "TIMEOUT");
    EXPECT_FALSE(w[0].blockers_known);
    EXPECT_TRUE(w[0].blockers.empty());
    ASSERT_EQ(w[0].possible_blockers.size(), 2u);
    EXPECT_EQ(w[0].possible_blockers[0].thread_id, 1u);
    EXPECT_EQ(w[0].possible_blockers[0].sql, "UPDATE shop.t SET v = 1 WHERE id = 1");
    EXPECT_EQ(w[0].possible_blockers[0].trx_start_ns, 10u);
    EXPECT_EQ(w[0].possible_blockers[1].thread_id, 5u);
    const std::string text = mysqltrace::output::lock_wait_text(w[0]);
    EXPECT_NE(text.find("; possibly thread 1 (transaction open 0.03 us when the wait began, which "
                        "ran: UPDATE shop.t SET v = 1 WHERE id = 1); possibly thread 5 "),
              std::string::npos)
        << text;
    const std::string j = mysqltrace::output::lock_wait_json(w[0]);
    EXPECT_NE(
        j.find("\"POSSIBLE_BLOCKERS\":[{\"THREAD_ID\":1,\"SQL_TEXT\":\"UPDATE shop.t SET v = 1 "
               "WHERE id = 1\",\"TRX_STARTED\":10000,\"TRX_AGE\":30000},{\"THREAD_ID\":5,"),
        std::string::npos)
        << j;
    // Nothing in the tree: possible is not known.
    EXPECT_TRUE(t.tree().empty());
}

TEST(LockTracker, ChainsNestAndCyclesStop) {
    LockTracker t(false, {});
    t.set_row_blockers(true);
    // 2 waits for 1, 3 for 2 (a chain); then 1 and 3 wait for each other.
    t.on_record(edge_record(10, 2, 1));
    t.on_record(wait_record(12, 10, 20, 2, MT_LOCK_ROW, {}));
    t.on_record(edge_record(30, 3, 2));
    t.on_record(wait_record(13, 30, 40, 3, MT_LOCK_ROW, {}));
    t.on_statement(stmt(12, 2, 5, 50, "u2"));
    t.on_statement(stmt(13, 3, 5, 50, "u3"));
    auto text = mysqltrace::output::blocking_tree_text(t.tree());
    EXPECT_EQ(text,
              "blocking tree (who blocked whom during the trace):\n"
              "thread 1\n"
              "  -> thread 2 waited 1 time, 0.01 us, for an InnoDB row lock: u2\n"
              "    -> thread 3 waited 1 time, 0.01 us, for an InnoDB row lock: u3\n");
    t.on_record(edge_record(60, 1, 3));
    t.on_record(wait_record(11, 60, 70, 1, MT_LOCK_ROW, {}));
    t.on_statement(stmt(11, 1, 55, 80, "u1", 1213));
    EXPECT_EQ(t.take_incidents().size(), 1u);
    text = mysqltrace::output::blocking_tree_text(t.tree());
    EXPECT_NE(text.find("(a cycle: a deadlock)"), std::string::npos) << text;
}

}  // namespace
