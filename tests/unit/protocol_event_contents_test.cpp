// SPDX-License-Identifier: GPL-2.0-only
// TracerOptions::event_contents off (`mysqltrace client --summary-only`):
// the same events in the same order and at the same times, the same command
// summaries and stats, only without what the events say. And tracers that
// share a thread (whose event objects they reuse) do not disturb each other.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "unit/protocol_fixture.h"

namespace mysqltrace::protocol {
namespace {

using fixture::Collector;

std::vector<std::string> fixture_names() {
    std::vector<std::string> out;
    const std::filesystem::path dir = std::string(MYSQLTRACE_SOURCE_DIR) + "/tests/data/protocol";
    for (const auto &e : std::filesystem::directory_iterator(dir)) {
        out.push_back(e.path().stem().string());
    }
    return out;
}

Collector run(const std::string &name, TracerOptions opt, ConnectionStats *stats) {
    Collector c;
    ConnectionTracer t(1, opt, c.on_event(), c.on_summary());
    fixture::replay(t, fixture::load_fixture(name));
    *stats = t.stats();
    return c;
}

bool same_summary(const CommandSummary &a, const CommandSummary &b) {
    return a.conn == b.conn && a.pid == b.pid && a.tid == b.tid && a.ts_start_ns == b.ts_start_ns &&
           a.ts_end_ns == b.ts_end_ns && a.command == b.command &&
           a.command_name == b.command_name && a.sql == b.sql && a.sql_bytes == b.sql_bytes &&
           a.statement_id == b.statement_id && a.query_attributes == b.query_attributes &&
           a.result == b.result && a.rows == b.rows && a.result_sets == b.result_sets &&
           a.affected_rows == b.affected_rows && a.error_code == b.error_code &&
           a.error_message == b.error_message && a.bytes_sent == b.bytes_sent &&
           a.bytes_received == b.bytes_received && a.server_wait_ns == b.server_wait_ns;
}

TEST(EventContents, OffKeepsEventsSummariesAndStats) {
    const std::vector<std::string> names = fixture_names();
    ASSERT_EQ(names.size(), 19u);
    for (const std::string &name : names) {
        SCOPED_TRACE(name);
        TracerOptions off;
        off.event_contents = false;
        ConnectionStats full_stats, bare_stats;
        const Collector full = run(name, {}, &full_stats);
        const Collector bare = run(name, off, &bare_stats);
        ASSERT_FALSE(full.events.empty());
        EXPECT_EQ(bare.sequence(), full.sequence());
        ASSERT_EQ(bare.events.size(), full.events.size());
        size_t with_details = 0;
        for (size_t i = 0; i < full.events.size(); ++i) {
            EXPECT_EQ(bare.events[i].ts_ns, full.events[i].ts_ns) << i;
            EXPECT_EQ(bare.events[i].conn, full.events[i].conn) << i;
            EXPECT_EQ(bare.events[i].pid, full.events[i].pid) << i;
            EXPECT_TRUE(bare.events[i].details.empty()) << i;
            with_details += full.events[i].details.empty() ? 0 : 1;
        }
        EXPECT_GT(with_details, 0u);
        ASSERT_EQ(bare.summaries.size(), full.summaries.size());
        for (size_t i = 0; i < full.summaries.size(); ++i) {
            EXPECT_TRUE(same_summary(bare.summaries[i], full.summaries[i])) << i;
        }
        EXPECT_EQ(bare_stats.events, full_stats.events);
        EXPECT_EQ(bare_stats.commands, full_stats.commands);
        EXPECT_EQ(bare_stats.packets_client, full_stats.packets_client);
        EXPECT_EQ(bare_stats.packets_server, full_stats.packets_server);
        EXPECT_EQ(bare_stats.skipped_bytes, full_stats.skipped_bytes);
        EXPECT_EQ(bare_stats.sync_losses, full_stats.sync_losses);
    }
}

// Two connections fed in turn, record by record, on one thread: each gets
// exactly the events it gets alone.
TEST(EventContents, TracersOnOneThreadInterleaved) {
    const auto a_recs = fixture::load_fixture("connect_query");
    const auto b_recs = fixture::load_fixture("compressed_cli");
    ConnectionStats unused;
    const Collector a_alone = run("connect_query", {}, &unused);
    const Collector b_alone = run("compressed_cli", {}, &unused);
    Collector a, b;
    ConnectionTracer ta(1, {}, a.on_event(), a.on_summary());
    ConnectionTracer tb(1, {}, b.on_event(), b.on_summary());
    for (size_t i = 0; i < std::max(a_recs.size(), b_recs.size()); ++i) {
        fixture::replay(ta, a_recs, i, i + 1);
        fixture::replay(tb, b_recs, i, i + 1);
    }
    ASSERT_EQ(a.events.size(), a_alone.events.size());
    ASSERT_EQ(b.events.size(), b_alone.events.size());
    for (size_t i = 0; i < a.events.size(); ++i) {
        EXPECT_EQ(a.events[i].details, a_alone.events[i].details) << i;
        EXPECT_EQ(a.events[i].command_name, a_alone.events[i].command_name) << i;
        EXPECT_EQ(a.events[i].sql, a_alone.events[i].sql) << i;
    }
    for (size_t i = 0; i < b.events.size(); ++i) {
        EXPECT_EQ(b.events[i].details, b_alone.events[i].details) << i;
        EXPECT_EQ(b.events[i].command_name, b_alone.events[i].command_name) << i;
        EXPECT_EQ(b.events[i].sql, b_alone.events[i].sql) << i;
    }
}

}  // namespace
}  // namespace mysqltrace::protocol
