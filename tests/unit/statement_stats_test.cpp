// SPDX-License-Identifier: GPL-2.0-only
// Per-class running totals (output/statement_stats.h): classes by schema,
// account and digest; histogram buckets on their bounds; the class cap that
// sends later classes to other(); the last statements kept per class.
#include <gtest/gtest.h>

#include "output/statement_stats.h"

namespace mysqltrace::output {
namespace {

server::Statement query(std::string text, uint64_t ns, std::string db = "shop") {
    server::Statement st;
    st.command = 3;  // COM_QUERY
    st.text = std::move(text);
    st.db = std::move(db);
    st.start_ns = 1'000'000;
    st.end_ns = st.start_ns + ns;
    st.rows_sent = 1;
    st.rows_examined = 3;
    return st;
}

TEST(StatementStats, ClassesBySchemaAccountAndDigest) {
    StatementStats s(10, nullptr);
    s.add(query("SELECT * FROM t WHERE id = 1", 100'000), "app");
    s.add(query("SELECT * FROM t WHERE id = 2", 300'000), "app");
    s.add(query("SELECT * FROM t WHERE id = 3", 300'000), "report");
    s.add(query("SELECT * FROM t WHERE id = 4", 300'000, "other_db"), "app");
    ASSERT_EQ(s.classes().size(), 3u);
    const auto &c = *s.classes()[0];
    EXPECT_EQ(c.event_name, "statement/sql/select");
    EXPECT_EQ(c.digest, "SELECT * FROM t WHERE id = ?");
    EXPECT_EQ(c.schema, "shop");
    EXPECT_EQ(c.user, "app");
    EXPECT_EQ(c.calls, 2u);
    EXPECT_EQ(c.time_ns, 400'000u);
    EXPECT_EQ(c.max_ns, 300'000u);
    EXPECT_EQ(c.rows_sent, 2u);
    EXPECT_EQ(c.rows_examined, 6u);
    EXPECT_EQ(s.classes()[1]->user, "report");
    EXPECT_EQ(s.classes()[2]->schema, "other_db");
    EXPECT_EQ(s.statements(), 4u);
}

TEST(StatementStats, BucketsTakeTheirUpperBound) {
    StatementStats s(10, nullptr);
    s.add(query("SELECT 1", 100'000), "");         // exactly 0.0001 s: first bucket
    s.add(query("SELECT 1", 100'001), "");         // just above: second
    s.add(query("SELECT 1", 20'000'000'000), "");  // 20 s: +Inf
    const auto &c = *s.classes()[0];
    EXPECT_EQ(c.buckets[0], 1u);
    EXPECT_EQ(c.buckets[1], 1u);
    EXPECT_EQ(c.buckets.back(), 1u);
    EXPECT_EQ(c.calls, 3u);
}

TEST(StatementStats, ClassesPastTheCapGoToOther) {
    StatementStats s(2, nullptr);
    s.add(query("SELECT a FROM t", 1000), "");
    s.add(query("SELECT b FROM t", 1000), "");
    s.add(query("SELECT c FROM t", 1000), "");
    s.add(query("SELECT d FROM t", 1000), "");
    s.add(query("SELECT a FROM t", 1000), "");  // an admitted class stays its own
    ASSERT_EQ(s.classes().size(), 2u);
    EXPECT_EQ(s.classes()[0]->calls, 2u);
    EXPECT_EQ(s.other().calls, 2u);
    EXPECT_EQ(s.other().event_name, "other");
}

TEST(StatementStats, ErrorsStageTimeAndRecentStatements) {
    StatementStats s(10,
                     [](uint64_t addr) { return addr == 7 ? std::string("Sending data") : ""; });
    for (int i = 0; i < 20; i++) {
        auto st = query("UPDATE t SET v = " + std::to_string(i), 5000);
        st.thread_id = 40 + static_cast<uint64_t>(i);
        if (i == 19) {
            st.da_status = MT_DA_ERROR;
            st.error = 1213;
        }
        st.sample_period_us = 100;
        st.samples.push_back({.stage = 7, .on_cpu = 2, .switches = 0, .off_cpu_ns = 50});
        st.samples.push_back({.stage = 9, .on_cpu = 1, .switches = 0, .off_cpu_ns = 0});
        s.add(st, "app");
    }
    const auto &c = *s.classes()[0];
    EXPECT_EQ(c.errors, 1u);
    EXPECT_EQ(s.errors(), 1u);
    ASSERT_EQ(c.stage_ns.size(), 1u);  // the unnamed stage is left out
    EXPECT_EQ(c.stage_ns.at("Sending data"), 20u * (2 * 100'000 + 50));
    ASSERT_EQ(c.recent.size(), StatementStats::kRecent);
    EXPECT_EQ(c.recent.back().text, "UPDATE t SET v = 19");
    EXPECT_EQ(c.recent.back().error, 1213u);
    EXPECT_EQ(c.recent.back().thread_id, 59u);
    EXPECT_EQ(c.recent.front().text, "UPDATE t SET v = 4");
}

}  // namespace
}  // namespace mysqltrace::output
