// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server --locks` on both flavours against a scripted incident
// whose every wait the test causes itself, with the connection ids it got
// from the server: A holds a row lock that B waits for until A commits; C
// holds a transaction that read t2 while D's ALTER TABLE waits for its
// metadata lock until C commits; F waits for E's row lock until it times
// out (innodb_lock_wait_timeout=1); G and H deadlock. Each wait must come
// out with its object, lock type, waiter and blockers (and nothing else as
// a blocker; on MariaDB too, with its binary log closed: InnoDB's
// trx->lock.wait_trx), at least as long as the test kept it waiting; the deadlock and
// the timeout as their own events; the blocking tree naming the blockers.
// On MySQL 9.7 (performance_schema ON, its default) data_lock_waits and
// metadata_locks, read while the waits are in progress, must agree.
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/priv.h"
#include "priv/server_session.h"

namespace {

using mysqltrace::test::all_flavours;
using mysqltrace::test::connect_to;
using mysqltrace::test::flavour_param_name;
using mysqltrace::test::read_json_lines;
using mysqltrace::test::run_query;
using mysqltrace::test::ServerFlavour;
using mysqltrace::test::ServerOptions;
using mysqltrace::test::start_server_tracer;
using mysqltrace::test::wait_gone;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

class ServerLocks : public mysqltrace::test::ServerTraceTest {
  protected:
    // MySQL keeps its default performance_schema (ON): the oracle.
    ServerOptions options() const override {
        ServerOptions o;
        o.flavour = flavour();
        return o;
    }
    bool mysql() const { return flavour() == ServerFlavour::mysql; }

    // The rows `sql` returns, as strings.
    std::vector<std::vector<std::string>> query(const std::string &sql) {
        auto r = server_->query(sql);
        EXPECT_TRUE(r.ok()) << sql << ": " << r.error().message;
        return r.ok() ? *r : std::vector<std::vector<std::string>>{};
    }
    // Polls until `sql` returns a row; the time it first did.
    Clock::time_point until_row(const std::string &sql) {
        for (int i = 0; i < 500; i++) {
            if (!query(sql).empty()) {
                return Clock::now();
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        ADD_FAILURE() << "never true: " << sql;
        return Clock::now();
    }
    Clock::time_point until_row_lock_wait(unsigned long id) {
        // A wait begins within a few ms of the statement being sent: the
        // 50 ms let it begin well before the test starts counting.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return until_row(
            "SELECT 1 FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT' AND "
            "trx_mysql_thread_id = " +
            std::to_string(id));
    }
};

// A statement run on its own thread (it blocks); join() returns its error.
class Async {
  public:
    Async(MYSQL *m, std::string sql)
        : t_([this, m, sql = std::move(sql)] { err_ = run_query(m, sql); }) {}
    unsigned join() {
        t_.join();
        return err_;
    }

  private:
    unsigned err_ = 0;
    std::thread t_;
};

uint64_t ms_ps(Clock::duration d) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count()) *
           1'000'000;
}

// The THREAD_IDs of a wait's BLOCKERS (or another list of blockers).
std::vector<uint64_t> blocker_ids(const json &w, const char *list = "BLOCKERS") {
    std::vector<uint64_t> v;
    for (const auto &b : w[list]) {
        v.push_back(b["THREAD_ID"].get<uint64_t>());
    }
    return v;
}

std::vector<uint64_t> possible_ids(const json &w) {
    return blocker_ids(w, "POSSIBLE_BLOCKERS");
}

TEST_P(ServerLocks, ScriptedIncident) {
    mysqltrace::test::create_table_t(*server_);
    ASSERT_TRUE(server_
                    ->query("CREATE TABLE mt_db.t2 (a INT PRIMARY KEY); "
                            "INSERT INTO mt_db.t2 VALUES (1)")
                    .ok());
    MYSQL *c[8];
    unsigned long id[8];
    for (int i = 0; i < 8; i++) {
        c[i] = connect_to(*server_);
        ASSERT_NE(c[i], nullptr);
        id[i] = mysql_thread_id(c[i]);
    }
    enum { A, B, C, D, E, F, G, H };
    auto tracer = start_server_tracer(
        *server_, {"--locks", "--stages", "off", "--format", "json", "--output", out_path_});

    // A holds a row lock; B waits for it until A commits.
    ASSERT_EQ(run_query(c[A], "BEGIN"), 0u);
    const std::string a_update = "UPDATE mt_db.t SET b = 'a' WHERE a = 1";
    ASSERT_EQ(run_query(c[A], a_update), 0u);
    const std::string b_update = "UPDATE mt_db.t SET b = 'b' WHERE a = 1";
    Async b(c[B], b_update);
    const auto b_seen = until_row_lock_wait(id[B]);
    // The locked table (performance_schema's, on MySQL).
    std::string b_schema = "mt_db", b_table = "t";
    if (mysql()) {
        // performance_schema's own view of the same wait.
        auto rows = query(
            "SELECT r.PROCESSLIST_ID, h.PROCESSLIST_ID, l.OBJECT_SCHEMA, l.OBJECT_NAME FROM "
            "performance_schema.data_lock_waits w "
            "JOIN performance_schema.threads r ON r.THREAD_ID = w.REQUESTING_THREAD_ID JOIN "
            "performance_schema.threads h ON h.THREAD_ID = w.BLOCKING_THREAD_ID JOIN "
            "performance_schema.data_locks l ON l.ENGINE_LOCK_ID = w.REQUESTING_ENGINE_LOCK_ID");
        ASSERT_EQ(rows.size(), 1u);
        EXPECT_EQ(rows[0][0], std::to_string(id[B]));
        EXPECT_EQ(rows[0][1], std::to_string(id[A]));
        b_schema = rows[0][2];
        b_table = rows[0][3];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto b_kept = ms_ps(Clock::now() - b_seen);
    ASSERT_EQ(run_query(c[A], "COMMIT"), 0u);
    ASSERT_EQ(b.join(), 0u);

    // C read t2 in an open transaction; D's ALTER waits for its metadata lock.
    ASSERT_EQ(run_query(c[C], "BEGIN"), 0u);
    const std::string c_select = "SELECT * FROM mt_db.t2";
    ASSERT_EQ(run_query(c[C], c_select), 0u);
    const std::string d_alter = "ALTER TABLE mt_db.t2 ADD COLUMN c INT";
    Async d(c[D], d_alter);
    const auto d_seen = until_row(
        "SELECT 1 FROM information_schema.PROCESSLIST WHERE STATE = 'Waiting for table "
        "metadata lock' AND ID = " +
        std::to_string(id[D]));
    std::string pfs_lock_type, pfs_lock_duration;
    if (mysql()) {
        auto pending = query(
            "SELECT t.PROCESSLIST_ID, m.LOCK_TYPE, m.LOCK_DURATION FROM "
            "performance_schema.metadata_locks m JOIN "
            "performance_schema.threads t ON t.THREAD_ID = m.OWNER_THREAD_ID WHERE "
            "m.OBJECT_SCHEMA = 'mt_db' AND m.OBJECT_NAME = 't2' AND m.LOCK_STATUS = 'PENDING'");
        ASSERT_EQ(pending.size(), 1u);
        EXPECT_EQ(pending[0][0], std::to_string(id[D]));
        pfs_lock_type = pending[0][1];
        pfs_lock_duration = pending[0][2];
        auto granted = query(
            "SELECT DISTINCT t.PROCESSLIST_ID FROM performance_schema.metadata_locks m JOIN "
            "performance_schema.threads t ON t.THREAD_ID = m.OWNER_THREAD_ID WHERE "
            "m.OBJECT_SCHEMA = 'mt_db' AND m.OBJECT_NAME = 't2' AND m.LOCK_STATUS = 'GRANTED' "
            "AND t.PROCESSLIST_ID <> " +
            std::to_string(id[D]));
        ASSERT_EQ(granted.size(), 1u);
        EXPECT_EQ(granted[0][0], std::to_string(id[C]));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto d_kept = ms_ps(Clock::now() - d_seen);
    ASSERT_EQ(run_query(c[C], "COMMIT"), 0u);
    ASSERT_EQ(d.join(), 0u);

    // F waits for E's row lock until it times out.
    ASSERT_EQ(run_query(c[E], "BEGIN"), 0u);
    const std::string e_update = "UPDATE mt_db.t SET b = 'e' WHERE a = 2";
    ASSERT_EQ(run_query(c[E], e_update), 0u);
    ASSERT_EQ(run_query(c[F], "SET SESSION innodb_lock_wait_timeout = 1"), 0u);
    const std::string f_update = "UPDATE mt_db.t SET b = 'f' WHERE a = 2";
    EXPECT_EQ(run_query(c[F], f_update), 1205u);  // ER_LOCK_WAIT_TIMEOUT
    ASSERT_EQ(run_query(c[E], "ROLLBACK"), 0u);

    // G and H each hold a row the other then asks for: a deadlock.
    ASSERT_EQ(run_query(c[G], "BEGIN"), 0u);
    ASSERT_EQ(run_query(c[H], "BEGIN"), 0u);
    ASSERT_EQ(run_query(c[G], "UPDATE mt_db.t SET b = 'g' WHERE a = 1"), 0u);
    ASSERT_EQ(run_query(c[H], "UPDATE mt_db.t SET b = 'h' WHERE a = 3"), 0u);
    Async g(c[G], "UPDATE mt_db.t SET b = 'g' WHERE a = 3");
    until_row_lock_wait(id[G]);
    const unsigned h_err = run_query(c[H], "UPDATE mt_db.t SET b = 'h' WHERE a = 1");
    const unsigned g_err = g.join();
    // InnoDB rolls one of them back.
    ASSERT_TRUE((h_err == 1213u) != (g_err == 1213u)) << h_err << " " << g_err;
    const unsigned long victim = h_err == 1213u ? id[H] : id[G];
    run_query(c[G], "ROLLBACK");
    run_query(c[H], "ROLLBACK");

    for (int i = 0; i < 8; i++) {
        mysql_close(c[i]);
        wait_gone(*server_, id[i]);
    }
    auto r = tracer->stop(SIGINT);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; interrupted\n"), std::string::npos) << r.err;

    std::vector<json> waits, incidents, trees;
    for (auto &j : read_json_lines(out_path_)) {
        if (j["kind"] == "lock_wait") {
            waits.push_back(j);
        } else if (j["kind"] == "lock_incident") {
            incidents.push_back(j);
        } else if (j["kind"] == "blocking_tree") {
            trees.push_back(j);
        }
    }
    auto waits_of = [&](unsigned long who) {
        std::vector<json> v;
        for (const auto &w : waits) {
            if (w["THREAD_ID"] == who) {
                v.push_back(w);
            }
        }
        return v;
    };
    // Both name the transaction a row lock wait is for, granted or not:
    // MySQL's reported edges, MariaDB's trx->lock.wait_trx (no binary log
    // here).
    const std::vector<uint64_t> none;

    // B: one row lock wait, A's.
    auto bw = waits_of(id[B]);
    ASSERT_EQ(bw.size(), 1u) << json(waits).dump();
    EXPECT_EQ(bw[0]["EVENT_NAME"], "wait/lock/innodb/row_lock");
    EXPECT_EQ(bw[0]["OBJECT_TYPE"], "TABLE");
    EXPECT_EQ(bw[0]["OBJECT_SCHEMA"], b_schema);
    EXPECT_EQ(bw[0]["OBJECT_NAME"], b_table);
    EXPECT_EQ(bw[0]["LOCK_STATUS"], "GRANTED");
    EXPECT_EQ(bw[0]["SQL_TEXT"], b_update);
    EXPECT_GE(bw[0]["TIMER_WAIT"].get<uint64_t>(), b_kept);
    EXPECT_EQ(bw[0]["BLOCKERS_KNOWN"], true);
    EXPECT_EQ(blocker_ids(bw[0]), std::vector<uint64_t>{id[A]});
    EXPECT_EQ(bw[0]["BLOCKING_THREAD_ID"], id[A]);
    EXPECT_EQ(bw[0]["BLOCKERS"][0]["SQL_TEXT"], a_update);
    // Open since A's BEGIN, before the wait began.
    EXPECT_GE(bw[0]["BLOCKERS"][0]["TRX_AGE"].get<uint64_t>(), 1u);

    // D: one metadata lock wait on mt_db.t2, C's.
    auto dw = waits_of(id[D]);
    ASSERT_EQ(dw.size(), 1u) << json(waits).dump();
    EXPECT_EQ(dw[0]["EVENT_NAME"], "wait/lock/metadata/sql/mdl");
    EXPECT_EQ(dw[0]["OBJECT_TYPE"], "TABLE");
    EXPECT_EQ(dw[0]["OBJECT_SCHEMA"], "mt_db");
    EXPECT_EQ(dw[0]["OBJECT_NAME"], "t2");
    EXPECT_EQ(dw[0]["LOCK_TYPE"], "EXCLUSIVE");
    EXPECT_EQ(dw[0]["LOCK_DURATION"], "TRANSACTION");
    if (mysql()) {
        EXPECT_EQ(dw[0]["LOCK_TYPE"], pfs_lock_type);
        EXPECT_EQ(dw[0]["LOCK_DURATION"], pfs_lock_duration);
    }
    EXPECT_EQ(dw[0]["LOCK_STATUS"], "GRANTED");
    EXPECT_EQ(dw[0]["WAIT_STAGE"], "Waiting for table metadata lock");
    EXPECT_EQ(dw[0]["SQL_TEXT"], d_alter);
    EXPECT_GE(dw[0]["TIMER_WAIT"].get<uint64_t>(), d_kept);
    EXPECT_EQ(blocker_ids(dw[0]), std::vector<uint64_t>{id[C]});
    EXPECT_EQ(dw[0]["BLOCKERS"][0]["SQL_TEXT"], c_select);

    // F: one row lock wait that timed out, E's; the timeout as an incident.
    auto fw = waits_of(id[F]);
    ASSERT_EQ(fw.size(), 1u) << json(waits).dump();
    EXPECT_EQ(fw[0]["LOCK_STATUS"], "TIMEOUT");
    EXPECT_EQ(fw[0]["OBJECT_SCHEMA"], "mt_db");
    EXPECT_EQ(fw[0]["OBJECT_NAME"], "t");
    EXPECT_EQ(fw[0]["SQL_TEXT"], f_update);
    EXPECT_GE(fw[0]["TIMER_WAIT"].get<uint64_t>(), 900'000'000'000u);  // ~1 s, coarse clock
    EXPECT_EQ(fw[0]["BLOCKERS_KNOWN"], true);
    EXPECT_EQ(blocker_ids(fw[0]), std::vector<uint64_t>{id[E]});
    EXPECT_EQ(fw[0]["BLOCKERS"][0]["SQL_TEXT"], e_update);
    EXPECT_EQ(possible_ids(fw[0]), none);

    // Exactly the two incidents, in order.
    ASSERT_EQ(incidents.size(), 2u) << json(incidents).dump();
    EXPECT_EQ(incidents[0]["EVENT"], "lock_wait_timeout");
    EXPECT_EQ(incidents[0]["THREAD_ID"], id[F]);
    EXPECT_EQ(incidents[0]["MYSQL_ERRNO"], 1205);
    EXPECT_EQ(incidents[1]["EVENT"], "deadlock");
    EXPECT_EQ(incidents[1]["THREAD_ID"], victim);
    EXPECT_EQ(incidents[1]["MYSQL_ERRNO"], 1213);

    // G waited for H (and H for G, if it got to wait).
    auto gw = waits_of(id[G]);
    ASSERT_GE(gw.size(), 1u) << json(waits).dump();
    EXPECT_EQ(blocker_ids(gw[0]), std::vector<uint64_t>{id[H]});
    EXPECT_EQ(possible_ids(gw[0]), none);

    // No false blockers: each waiter's blockers are the ones the script made.
    const std::map<uint64_t, uint64_t> holder = {
        {id[B], id[A]}, {id[D], id[C]}, {id[F], id[E]}, {id[G], id[H]}, {id[H], id[G]}};
    for (const auto &w : waits) {
        auto it = holder.find(w["THREAD_ID"].get<uint64_t>());
        ASSERT_NE(it, holder.end()) << w.dump();
        for (uint64_t b : blocker_ids(w)) {
            EXPECT_EQ(b, it->second) << w.dump();
        }
    }

    // The tree names the blockers, as roots.
    ASSERT_EQ(trees.size(), 1u);
    std::set<std::pair<uint64_t, uint64_t>> edges;
    for (const auto &e : trees[0]["edges"]) {
        edges.insert({e["blocking_pid"].get<uint64_t>(), e["waiting_pid"].get<uint64_t>()});
        if (e["blocking_pid"] == id[C]) {
            EXPECT_EQ(e["root"], true);
            EXPECT_EQ(e["locked_object"], "TABLE mt_db.t2");
            EXPECT_EQ(e["blocking_query"], c_select);
        }
        if (e["blocking_pid"] == id[A]) {
            EXPECT_EQ(e["locked_object"], "TABLE mt_db.t");
        }
    }
    EXPECT_TRUE(edges.contains({id[C], id[D]}));
    EXPECT_TRUE(edges.contains({id[A], id[B]}));
}

INSTANTIATE_TEST_SUITE_P(Flavours, ServerLocks, ::testing::ValuesIn(all_flavours()),
                         flavour_param_name);

}  // namespace
