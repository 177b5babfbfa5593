// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace top` without a terminal: the snapshot's JSON for fixed
// totals (top/snapshot.h), and the model (top/top_model.h): rates from two
// snapshots, every sort order, the filters, texts cut to a width and the
// lines of the table and of a class's details.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "top/lock_view.h"
#include "top/snapshot.h"
#include "top/top_model.h"

namespace mysqltrace::top {
namespace {

server::Statement query(std::string text, uint64_t ns, std::string db, uint64_t end_ns) {
    server::Statement st;
    st.command = 3;  // COM_QUERY
    st.text = std::move(text);
    st.db = std::move(db);
    st.end_ns = end_ns;
    st.start_ns = end_ns - ns;
    st.rows_sent = 1;
    st.rows_examined = 4;
    st.thread_id = 7;
    return st;
}

TEST(TopSnapshot, ExactJsonOfFixedTotals) {
    output::StatementStats stats(1, [](uint64_t addr) {
        return addr == 0x10 ? std::string("Sending data") : std::string("starting");
    });
    auto a = query("SELECT * FROM t WHERE id = 1", 2'000'000, "shop", 5'000'000);
    a.sample_period_us = 1000;
    a.samples = {{0x10, 1, 0, 500'000}, {0x20, 0, 0, 100'000}};
    stats.add(a, "app");
    auto b = query("SELECT * FROM t WHERE id = 2", 4'000'000, "shop", 9'000'000);
    b.da_status = MT_DA_ERROR;
    b.error = 1146;
    stats.add(b, "app");
    // Over the cap of one class: other().
    stats.add(query("DELETE FROM u", 1'000'000, "shop", 10'000'000), "app");

    Snapshot s;
    s.now_ns = 12'000'000;
    ServerSnapshot sv;
    sv.name = "mariadb-3306";
    sv.pid = 42;
    sv.flavour = "mariadb";
    sv.version = "10.11.11-MariaDB";
    sv.statements = stats.statements();
    sv.errors = stats.errors();
    sv.dropped = 3;
    sv.undecodable = 1;
    sv.classes = snapshot_classes(stats);
    sv.locks = true;
    sv.lock_waits.push_back({9, 8, "metadata", "TABLE shop.t", "EXCLUSIVE",
                             "Waiting for table metadata lock", 3000, "SELECT 1", 5000, false,
                             "ALTER TABLE t FORCE"});
    s.servers.push_back(sv);
    const std::string want =
        R"({"now_ns":12000000,"servers":[{"classes":[)"
        R"({"calls":2,"digest":"SELECT * FROM t WHERE id = ?","errors":1,)"
        R"("event_name":"statement/sql/select","max_ns":4000000,)"
        R"("p50_ns":1965207,"p99_ns":3930414,)"
        R"("recent":[{"duration_ns":4000000,"end_ns":9000000,"error":1146,)"
        R"("rows_examined":4,"rows_sent":1,)"
        R"("text":"SELECT * FROM t WHERE id = 2","thread_id":7},)"
        R"({"duration_ns":2000000,"end_ns":5000000,"error":0,)"
        R"("rows_examined":4,"rows_sent":1,)"
        R"("text":"SELECT * FROM t WHERE id = 1","thread_id":7}],)"
        R"("rows_affected":0,"rows_examined":8,"rows_sent":2,"schema":"shop",)"
        R"("stages":[{"name":"Sending data","ns":1500000},)"
        R"({"name":"starting","ns":100000}],"time_ns":6000000,"user":"app"},)"
        R"({"calls":1,"digest":"","errors":0,"event_name":"other",)"
        R"("max_ns":1000000,"p50_ns":982603,"p99_ns":982603,)"
        R"("recent":[{"duration_ns":1000000,"end_ns":10000000,"error":0,)"
        R"("rows_examined":4,"rows_sent":1,"text":"DELETE FROM u",)"
        R"("thread_id":7}],"rows_affected":0,"rows_examined":4,)"
        R"("rows_sent":1,"schema":"","stages":[],"time_ns":1000000,)"
        R"("user":""}],"dropped":3,"errors":1,"flavour":"mariadb",)"
        R"("lock_waits":[{"blocking_pid":8,"blocking_query":"SELECT 1",)"
        R"("blocking_trx_age_ns":5000,"lock_kind":"metadata",)"
        R"("lock_type":"EXCLUSIVE","locked_object":"TABLE shop.t",)"
        R"("possible":false,"wait_ns":3000,)"
        R"("wait_stage":"Waiting for table metadata lock",)"
        R"("waiting_pid":9,"waiting_query":"ALTER TABLE t FORCE"}],"locks":true,)"
        R"("name":"mariadb-3306","pid":42,"statements":3,"undecodable":1,)"
        R"("version":"10.11.11-MariaDB"}]})";
    // The percentiles are the histogram buckets' middles (2 ms and 4 ms,
    // 1 ms), never above the class's slowest statement.
    EXPECT_EQ(to_json_text(s), want);
    // And back.
    auto parsed = parse_snapshot(want);
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(to_json_text(*parsed), want);
    EXPECT_FALSE(parse_snapshot("{\"error\":\"unknown request\"}"));
    EXPECT_FALSE(parse_snapshot(R"({"now_ns":1,"servers":[{"name":"x"}]})"));
}

ClassSnapshot cls(std::string digest, std::string schema, std::string user, uint64_t calls,
                  uint64_t time_ns, uint64_t errors = 0, uint64_t p99 = 0, uint64_t sent = 0,
                  uint64_t examined = 0) {
    ClassSnapshot c;
    c.event_name = "statement/sql/select";
    c.digest = std::move(digest);
    c.schema = std::move(schema);
    c.user = std::move(user);
    c.calls = calls;
    c.time_ns = time_ns;
    c.errors = errors;
    c.p99_ns = p99;
    c.rows_sent = sent;
    c.rows_examined = examined;
    return c;
}

Snapshot one_server(uint64_t now_ns, std::vector<ClassSnapshot> classes) {
    Snapshot s;
    s.now_ns = now_ns;
    ServerSnapshot sv;
    sv.name = "mariadb-3306";
    sv.pid = 42;
    for (const auto &c : classes) {
        sv.statements += c.calls;
        sv.errors += c.errors;
    }
    sv.classes = std::move(classes);
    s.servers.push_back(std::move(sv));
    return s;
}

std::vector<std::string> digests(const Model &m) {
    std::vector<std::string> out;
    for (const auto &r : m.rows()) {
        out.push_back(r.cls->digest);
    }
    return out;
}

// Two snapshots 2 s apart. Over the interval: A 100 calls 1 s, B 300
// calls 0.1 s, C 2 calls 0.4 s with 2 errors, D nothing (but the largest
// totals: it ran before).
Model two_snapshots() {
    Model m;
    m.update(
        one_server(1'000'000'000, {cls("A", "shop", "app", 0, 0), cls("B", "shop", "app", 0, 0),
                                   cls("D", "crm", "batch", 10, 9'000'000'000, 0, 0, 1, 1000)}));
    m.update(one_server(3'000'000'000,
                        {cls("A", "shop", "app", 100, 1'000'000'000, 0, 20'000'000, 100, 100),
                         cls("B", "shop", "app", 300, 100'000'000, 0, 1'000'000, 300, 3000),
                         cls("C", "crm", "app", 2, 400'000'000, 2, 300'000'000, 0, 50),
                         cls("D", "crm", "batch", 10, 9'000'000'000, 0, 900'000'000, 1, 1000)}));
    return m;
}

TEST(TopModel, RatesFromTwoSnapshots) {
    Model m = two_snapshots();
    EXPECT_DOUBLE_EQ(m.interval_s(), 2.0);
    auto rows = m.rows();
    ASSERT_EQ(rows.size(), 4u);
    const Row &a = rows[0];
    EXPECT_EQ(a.cls->digest, "A");
    EXPECT_EQ(a.d_calls, 100u);
    EXPECT_DOUBLE_EQ(a.calls_s, 50.0);
    EXPECT_EQ(a.mean_ns, 10'000'000u);
    EXPECT_DOUBLE_EQ(a.time_share, 1.0 / 1.5);
    EXPECT_DOUBLE_EQ(a.examined_per_sent, 1.0);
    const Row &c = rows[1];
    EXPECT_EQ(c.cls->digest, "C");
    EXPECT_DOUBLE_EQ(c.errors_s, 1.0);
    EXPECT_DOUBLE_EQ(c.examined_per_sent, 25.0);  // none sent: per call
    // D ran before the interval: no rate, its mean over every call.
    const Row &d = rows[3];
    EXPECT_EQ(d.cls->digest, "D");
    EXPECT_EQ(d.d_calls, 0u);
    EXPECT_DOUBLE_EQ(d.calls_s, 0.0);
    EXPECT_EQ(d.mean_ns, 900'000'000u);
    const Totals t = m.totals();
    EXPECT_EQ(t.statements, 412u);
    EXPECT_DOUBLE_EQ(t.statements_s, 201.0);
    EXPECT_DOUBLE_EQ(t.errors_s, 1.0);
}

TEST(TopModel, FirstSnapshotHasNoRates) {
    Model m;
    m.update(one_server(5, {cls("A", "shop", "app", 10, 1000)}));
    EXPECT_FALSE(m.has_rates());
    auto rows = m.rows();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_DOUBLE_EQ(rows[0].calls_s, 0.0);
    EXPECT_EQ(rows[0].mean_ns, 100u);
}

TEST(TopModel, EverySortOrder) {
    Model m = two_snapshots();
    m.sort = SortKey::time;  // the interval's time, then the total's
    EXPECT_EQ(digests(m), (std::vector<std::string>{"A", "C", "B", "D"}));
    m.sort = SortKey::calls;
    EXPECT_EQ(digests(m), (std::vector<std::string>{"B", "A", "C", "D"}));
    m.sort = SortKey::mean;
    EXPECT_EQ(digests(m), (std::vector<std::string>{"D", "C", "A", "B"}));
    m.sort = SortKey::p99;
    EXPECT_EQ(digests(m), (std::vector<std::string>{"D", "C", "A", "B"}));
    m.sort = SortKey::errors;
    EXPECT_EQ(digests(m), (std::vector<std::string>{"C", "D", "A", "B"}));
    m.sort = SortKey::rows;
    EXPECT_EQ(digests(m), (std::vector<std::string>{"D", "C", "B", "A"}));
    EXPECT_EQ(sort_key_named("p99"), SortKey::p99);
    EXPECT_EQ(sort_key_named("nope"), std::nullopt);
}

TEST(TopModel, Filters) {
    Model m = two_snapshots();
    m.filter.schema = "crm";
    EXPECT_EQ(digests(m), (std::vector<std::string>{"C", "D"}));
    m.filter.user = "app";
    EXPECT_EQ(digests(m), (std::vector<std::string>{"C"}));
    m.filter = {};
    m.filter.text = "b";  // case-insensitive
    EXPECT_EQ(digests(m), (std::vector<std::string>{"B"}));
    // A filtered-out class is still found for its details.
    ASSERT_TRUE(m.find(m.rows()[0].key));
    m.filter.text = "none";
    EXPECT_TRUE(m.rows().empty());
}

TEST(TopModel, CountersThatWentDownStartOver) {
    Model m;
    m.update(one_server(1'000'000'000, {cls("A", "shop", "app", 50, 500)}));
    m.update(one_server(2'000'000'000, {cls("A", "shop", "app", 5, 50)}));
    EXPECT_EQ(m.rows()[0].d_calls, 5u);
}

TEST(TopModel, CutToWidth) {
    EXPECT_EQ(cut("SELECT a FROM t", 20), "SELECT a FROM t");
    EXPECT_EQ(cut("SELECT a FROM t", 15), "SELECT a FROM t");
    EXPECT_EQ(cut("SELECT a FROM t", 10), "SELECT a ~");
    EXPECT_EQ(cut("SELECT\na\tFROM t", 10), "SELECT a ~");
    EXPECT_EQ(cut("abc", 0), "");
    // "é" is two bytes, one column: never cut in half.
    EXPECT_EQ(cut("caf\xc3\xa9 cr\xc3\xa8me", 6), "caf\xc3\xa9 ~");
    EXPECT_EQ(cut("caf\xc3\xa9", 4), "caf\xc3\xa9");
}

TEST(TopModel, ShortDurations) {
    EXPECT_EQ(short_duration(850), "850ns");
    EXPECT_EQ(short_duration(12'345), "12.3us");
    EXPECT_EQ(short_duration(450'000), "450us");
    EXPECT_EQ(short_duration(45'600'000), "45.6ms");
    EXPECT_EQ(short_duration(1'234'000'000), "1.23s");
    EXPECT_EQ(short_duration(123'000'000'000), "2m03s");
}

TEST(TopModel, TableAndDetailLines) {
    Model m = two_snapshots();
    m.filter.schema = "shop";
    EXPECT_EQ(header_lines(m, "pid 42", 200),
              (std::vector<std::string>{"mysqltrace top - 1 server (pid 42), sorted by total time, "
                                        "only db=shop",
                                        "statements: 201.0/s, 412 total   errors: 1.0/s, 2 total "
                                        "  lost records: 0   undecodable: 0"}));
    EXPECT_FALSE(m.server_column());
    EXPECT_EQ(table_title(false, 200),
              " CALLS/S  TIME%     CALLS    TOTAL    MEAN     P99 EXAM/ROW  ERRORS SCHEMA       "
              "USER         DIGEST");
    const auto rows = m.rows();
    EXPECT_EQ(table_line(rows[0], false, 200),
              "    50.0   66.7       100    1.00s  10.0ms  20.0ms      1.0       0 shop         "
              "app          A");
    // Cut to the width, the digest first.
    EXPECT_EQ(table_line(rows[0], false, 50), "    50.0   66.7       100    1.00s  10.0ms  20.0m~");
    const auto detail = detail_lines(rows[1], 100);
    ASSERT_GE(detail.size(), 4u);
    EXPECT_EQ(detail[0],
              "server mariadb-3306 (pid 42)   schema shop   user app   "
              "statement/sql/select");
    EXPECT_EQ(detail[1], "B");
    EXPECT_EQ(detail[2],
              "calls 300 (150.0/s)   errors 0   total 100ms   mean 333us   p50 0ns   "
              "p99 1.0ms   max 0ns");
}

TEST(TopLocks, BlockingTreeLines) {
    Snapshot s;
    ServerSnapshot sv;
    sv.name = "mysql-3307";
    sv.pid = 7;
    EXPECT_EQ(lock_lines(s, 200), std::vector<std::string>{"lock waits: not traced (the agent's "
                                                           "`locks = yes`, or top --pid --locks)"});
    sv.locks = true;
    s.servers.push_back(sv);
    EXPECT_EQ(lock_lines(s, 200), std::vector<std::string>{"lock waits: none now"});
    auto &w = s.servers[0].lock_waits;
    // 11 waits for 10, which waits for 12; 13 and 14 wait for a metadata
    // lock 12 holds; 15 has a possible blocker; 16 none known.
    w.push_back({10, 12, "row", "TABLE shop.t", "", "", 2'500'000'000, "UPDATE t SET v = 1",
                 9'000'000'000, false, "UPDATE t SET v = 3"});
    w.push_back({11, 10, "row", "", "", "", 1'000'000, "UPDATE t SET v = 2", 0, false, ""});
    w.push_back({13, 12, "metadata", "TABLE shop.t2", "EXCLUSIVE", "", 50'000, "SELECT 1", 1000,
                 false, "ALTER TABLE t2 FORCE"});
    w.push_back({15, 17, "row", "", "", "", 2000, "DELETE FROM u", 3000, true, ""});
    w.push_back({16, 0, "metadata", "TABLE shop.t3", "SHARED_WRITE",
                 "Waiting for table metadata lock", 7000, "", 0, false, ""});
    const std::vector<std::string> want = {
        "lock waits of mysql-3307 (pid 7): 5 waiting",
        "blocking thread 12, transaction open 9.00s: UPDATE t SET v = 1",
        "  -> thread 10 waits 2.50s for an InnoDB row lock on TABLE shop.t: UPDATE t SET v = 3",
        "    -> thread 11 waits 1.0ms for an InnoDB row lock",
        "  -> thread 13 waits 50.0us for metadata lock EXCLUSIVE on TABLE shop.t2: ALTER TABLE t2 "
        "FORCE",
        "possibly blocking thread 17, transaction open 3.0us: DELETE FROM u",
        "  -> thread 15 waits 2.0us for an InnoDB row lock (possible blocker)",
        "no blocker known: thread 16 waits 7.0us for metadata lock SHARED_WRITE on TABLE shop.t3 "
        "(Waiting for table metadata lock)"};
    EXPECT_EQ(lock_lines(s, 200), want);
    EXPECT_EQ(lock_waiters(s), 5u);
    // A cycle (a deadlock until it is broken): 10 and 11 wait for each other.
    w.clear();
    w.push_back({10, 11, "row", "", "", "", 1000, "UPDATE a", 2000, false, ""});
    w.push_back({11, 10, "row", "", "", "", 1000, "UPDATE b", 2000, false, ""});
    const std::vector<std::string> cycle = {"lock waits of mysql-3307 (pid 7): 2 waiting",
                                            "blocking thread 10, transaction open 2.0us: UPDATE b",
                                            "  -> thread 11 waits 1.0us for an InnoDB row lock",
                                            "    -> thread 10 waits 1.0us for an InnoDB row lock",
                                            "      (a cycle: a deadlock)"};
    EXPECT_EQ(lock_lines(s, 200), cycle);
}

}  // namespace
}  // namespace mysqltrace::top
