// SPDX-License-Identifier: GPL-2.0-only
// Transactions from the records of bpf/server_txn.bpf.h (server/transactions.h).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "mysqltrace/abi/event.h"
#include "server/thd_layout.h"
#include "server/transactions.h"

namespace {

using mysqltrace::server::Statement;
using mysqltrace::server::ThdLayout;
using mysqltrace::server::Transaction;
using mysqltrace::server::Transactions;

constexpr uint64_t kBegin = 0x100000, kNotAutocommit = 0x80000, kTableLock = 0x200000;

std::vector<uint8_t> record(uint32_t op, uint64_t ts, uint64_t bits, uint64_t stmt_start_us = 0,
                            uint32_t isolation = 2, uint32_t read_only = 0) {
    mt_server_txn_event ev{};
    ev.hdr.type = MT_EV_SERVER_TXN;
    ev.hdr.size = sizeof(ev);
    ev.hdr.tid = 99;
    ev.hdr.ts_ns = ts;
    ev.thread_id = 7;
    ev.op = op;
    ev.option_bits = bits;
    ev.stmt_start_us = stmt_start_us;
    ev.isolation = isolation;
    ev.read_only = read_only;
    std::vector<uint8_t> r(sizeof(ev));
    std::memcpy(r.data(), &ev, sizeof(ev));
    return r;
}

Statement statement(uint64_t start_ns, std::string text = "", uint64_t end_ns = 0) {
    Statement s;
    s.thread_id = 7;
    s.start_ns = start_ns;
    s.end_ns = end_ns ? end_ns : start_ns + 10;
    s.text = std::move(text);
    return s;
}

class TransactionsTest : public ::testing::Test {
  protected:
    TransactionsTest() : txns_(layout(), 0, [this](uint64_t) { return next_id_++; }) {}
    static ThdLayout layout() {
        ThdLayout l;
        l.option_begin = kBegin;
        l.multi_statement_mask = kBegin | kNotAutocommit | kTableLock;
        return l;
    }
    void feed(const std::vector<uint8_t> &r) {
        ASSERT_TRUE(txns_.decode(r, [this](const Transaction &t) { ended_.push_back(t); }));
    }
    uint64_t nest(const Statement &st) {
        return txns_.nest(st, [this](const Transaction &t) { ended_.push_back(t); });
    }
    uint64_t next_id_ = 1;
    Transactions txns_;
    std::vector<Transaction> ended_;
};

TEST_F(TransactionsTest, ExplicitTransactionCountsAndNestsItsStatements) {
    EXPECT_EQ(nest(statement(1000)), 0u);  // nothing open
    feed(record(MT_TXN_BEGIN, 2000, 0));
    EXPECT_EQ(nest(statement(1500)), 0u);       // BEGIN began before its transaction
    feed(record(MT_TXN_COMMIT, 3500, kBegin));  // a statement's commit: not the end
    EXPECT_EQ(nest(statement(3000)), 1u);
    EXPECT_EQ(nest(statement(4000)), 1u);
    feed(record(MT_TXN_END_COMMIT, 6000, kBegin, 0, 3, 1));
    ASSERT_EQ(ended_.size(), 1u);
    const Transaction &t = ended_[0];
    EXPECT_EQ(t.event_id, 1u);
    EXPECT_TRUE(t.committed);
    EXPECT_FALSE(t.autocommit);
    EXPECT_TRUE(t.read_only);
    EXPECT_STREQ(t.isolation_name(), "SERIALIZABLE");
    EXPECT_EQ(t.start_ns, 2000u);
    EXPECT_EQ(t.end_ns, 6000u);
    EXPECT_EQ(t.statements, 2u);
    // COMMIT began inside the transaction it ended; the next statement not.
    EXPECT_EQ(nest(statement(5500)), 1u);
    EXPECT_EQ(nest(statement(7000)), 0u);
}

TEST_F(TransactionsTest, AutocommitStatementIsOneTransaction) {
    // A statement's commit with no BEGIN, autocommit on: its transaction,
    // from the statement's start (microseconds of THD::start_utime).
    feed(record(MT_TXN_ROLLBACK, 9000, 0, 5));
    ASSERT_EQ(ended_.size(), 1u);
    EXPECT_FALSE(ended_[0].committed);
    EXPECT_TRUE(ended_[0].autocommit);
    EXPECT_EQ(ended_[0].start_ns, 5000u);
    EXPECT_EQ(ended_[0].statements, 1u);
    EXPECT_EQ(nest(statement(5000)), 0u);
    // COMMIT with nothing open is no transaction.
    feed(record(MT_TXN_END_COMMIT, 9500, 0));
    EXPECT_EQ(ended_.size(), 1u);
}

TEST_F(TransactionsTest, AutocommitOffOpensAtTheFirstStatementCommit) {
    feed(record(MT_TXN_COMMIT, 3000, kNotAutocommit, 2));
    feed(record(MT_TXN_COMMIT, 5000, kNotAutocommit, 4));
    EXPECT_TRUE(ended_.empty());
    feed(record(MT_TXN_END_ROLLBACK, 7000, kNotAutocommit));
    ASSERT_EQ(ended_.size(), 1u);
    EXPECT_FALSE(ended_[0].autocommit);
    EXPECT_FALSE(ended_[0].committed);
    EXPECT_EQ(ended_[0].start_ns, 2000u);
}

TEST_F(TransactionsTest, BeginCommitsTheOpenTransaction) {
    feed(record(MT_TXN_BEGIN, 1000, 0));
    feed(record(MT_TXN_BEGIN, 2000, kBegin));
    ASSERT_EQ(ended_.size(), 1u);
    EXPECT_TRUE(ended_[0].committed);
    EXPECT_EQ(ended_[0].end_ns, 2000u);
}

TEST_F(TransactionsTest, XaStatementsCarryTheXidAndEndTheTransaction) {
    // XA START calls trans_begin; XA COMMIT and XA ROLLBACK end it with no
    // trans_commit/trans_rollback of their own.
    feed(record(MT_TXN_BEGIN, 1005, 0, 0, 1));
    EXPECT_EQ(nest(statement(1000, "XA START 'g1','b1',7", 1010)), 0u);
    EXPECT_EQ(nest(statement(2000, "INSERT INTO t VALUES (1)")), 1u);
    EXPECT_EQ(nest(statement(3000, "xa end 'g1','b1',7")), 1u);
    EXPECT_EQ(nest(statement(4000, "XA PREPARE 'g1','b1',7")), 1u);
    EXPECT_TRUE(ended_.empty());
    EXPECT_EQ(nest(statement(5000, "XA ROLLBACK 'g1','b1',7", 5100)), 1u);
    ASSERT_EQ(ended_.size(), 1u);
    EXPECT_FALSE(ended_[0].committed);
    EXPECT_EQ(ended_[0].xa_state, "ROLLBACK ONLY");
    EXPECT_EQ(ended_[0].xid_gtrid, "g1");
    EXPECT_EQ(ended_[0].xid_bqual, "b1");
    EXPECT_EQ(ended_[0].xid_format_id, 7);
    EXPECT_EQ(ended_[0].end_ns, 5100u);
    EXPECT_EQ(ended_[0].start_ns, 1005u);
    EXPECT_EQ(ended_[0].isolation, 1u);
    EXPECT_EQ(ended_[0].statements, 3u);
    // The next XA START's trans_begin finds nothing open: no second end.
    feed(record(MT_TXN_BEGIN, 6005, 0));
    EXPECT_EQ(ended_.size(), 1u);
    EXPECT_EQ(nest(statement(6000, "XA BEGIN 'g2'", 6010)), 0u);
    EXPECT_EQ(nest(statement(6100, "XA END 'g2'")), 2u);
    EXPECT_EQ(nest(statement(6200, "XA COMMIT 'g2' ONE PHASE", 6300)), 2u);
    ASSERT_EQ(ended_.size(), 2u);
    EXPECT_TRUE(ended_[1].committed);
    EXPECT_EQ(ended_[1].xa_state, "COMMITTED");
    EXPECT_EQ(ended_[1].xid_gtrid, "g2");
    EXPECT_EQ(ended_[1].xid_bqual, "");
    EXPECT_EQ(ended_[1].xid_format_id, 1);
}

TEST(ParseXa, VerbsAndXids) {
    mysqltrace::server::XaStatement x;
    ASSERT_TRUE(mysqltrace::server::parse_xa("  xa start X'0a0b', 'q''s', 0x10 JOIN", &x));
    EXPECT_EQ(x.verb, "START");
    EXPECT_EQ(x.gtrid, "X'0a0b'");
    EXPECT_EQ(x.bqual, "q's");
    EXPECT_EQ(x.format_id, 16);
    ASSERT_TRUE(mysqltrace::server::parse_xa("XA RECOVER", &x));
    EXPECT_EQ(x.verb, "RECOVER");
    EXPECT_FALSE(x.has_xid);
    EXPECT_FALSE(mysqltrace::server::parse_xa("XA", &x));
    EXPECT_FALSE(mysqltrace::server::parse_xa("XAB START 'x'", &x));
    EXPECT_FALSE(mysqltrace::server::parse_xa("SELECT 1", &x));
    ASSERT_TRUE(mysqltrace::server::parse_xa("XA END 'unterminated", &x));
    EXPECT_FALSE(x.has_xid);
}

TEST_F(TransactionsTest, OtherRecordsAreRefused) {
    auto r = record(MT_TXN_BEGIN, 1, 0);
    r.pop_back();
    EXPECT_FALSE(txns_.decode(r, [](const Transaction &) {}));
    EXPECT_FALSE(txns_.decode(record(9, 1, 0), [](const Transaction &) {}));
}

}  // namespace
