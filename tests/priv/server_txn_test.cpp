// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server --transactions` on both flavours, started with
// performance_schema ON (every instrument and consumer): a scripted workload
// (BEGIN..COMMIT with 3 statements, BEGIN..ROLLBACK, autocommit statements,
// SET TRANSACTION ISOLATION LEVEL SERIALIZABLE + START TRANSACTION READ ONLY,
// an XA transaction committed after XA PREPARE and one rolled back)
// gives the exact sequence of transaction events, the statements inside
// name them, and the events equal events_transactions_history_long's rows.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/priv.h"
#include "priv/server_session.h"

namespace {

using namespace mysqltrace::test;
using nlohmann::json;

const std::vector<std::string> kWorkload = {
    "BEGIN",
    "insert into mt_db.t values (1)",
    "insert into mt_db.t values (2)",
    "update mt_db.t set a = 3 where a = 2",
    "COMMIT",
    "BEGIN",
    "insert into mt_db.t values (10)",
    "ROLLBACK",
    "insert into mt_db.t values (20)",
    "select a from mt_db.t where a = 1",
    "select 1",
    "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
    "START TRANSACTION READ ONLY",
    "select count(*) from mt_db.t",
    "COMMIT",
    "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
    "XA START 'g1','b1',7",
    "insert into mt_db.t values (30)",
    "XA END 'g1','b1',7",
    "XA PREPARE 'g1','b1',7",
    "XA COMMIT 'g1','b1',7",
    "XA BEGIN 'g2'",
    "insert into mt_db.t values (31)",
    "XA END 'g2'",
    "XA ROLLBACK 'g2'",
};

struct WantTxn {
    std::string state, autocommit, access, isolation;
    uint64_t statements;
    // XA: XA_STATE, XID_GTRID, XID_BQUAL, XID_FORMAT_ID ("": none)
    std::string xa_state = "", gtrid = "", bqual = "";
    int64_t format_id = 0;
};

const std::vector<WantTxn> kWant = {
    {"COMMITTED", "NO", "READ WRITE", "REPEATABLE READ", 3},
    {"ROLLED BACK", "NO", "READ WRITE", "REPEATABLE READ", 1},
    {"COMMITTED", "YES", "READ WRITE", "REPEATABLE READ", 1},
    {"COMMITTED", "YES", "READ WRITE", "REPEATABLE READ", 1},
    {"COMMITTED", "NO", "READ ONLY", "SERIALIZABLE", 1},
    {"COMMITTED", "NO", "READ WRITE", "REPEATABLE READ", 3, "COMMITTED", "g1", "b1", 7},
    {"ROLLED BACK", "NO", "READ WRITE", "REPEATABLE READ", 2, "ROLLBACK ONLY", "g2", "", 1},
};

class ServerTxn : public ServerTraceTest {
  protected:
    ServerOptions options() const override {
        ServerOptions opts;
        opts.flavour = flavour();
        opts.performance_schema = true;
        return opts;
    }
};

TEST_P(ServerTxn, SequenceNestingAndPerformanceSchema) {
    ASSERT_TRUE(server_
                    ->query("CREATE DATABASE IF NOT EXISTS mt_db; CREATE TABLE mt_db.t (a int "
                            "primary key) ENGINE=InnoDB")
                    .ok());
    MYSQL *m = connect(0);
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    auto pfs = server_->query(
        "SELECT THREAD_ID FROM performance_schema.threads WHERE "
        "PROCESSLIST_ID = " +
        std::to_string(id));
    ASSERT_TRUE(pfs.ok() && pfs->size() == 1);
    const std::string pfs_id = (*pfs)[0][0];
    ASSERT_TRUE(
        server_->query("TRUNCATE performance_schema.events_transactions_history_long").ok());
    auto tracer = start_server_tracer(
        *server_, {"--transactions", "--stages", "off", "--format", "json", "--output", out_path_});
    for (const auto &sql : kWorkload) {
        EXPECT_EQ(run_query(m, sql), 0u) << sql << ": " << mysql_error(m);
    }
    auto oracle = server_->query(
        "SELECT STATE, AUTOCOMMIT, ACCESS_MODE, ISOLATION_LEVEL, TIMER_WAIT, "
        "IFNULL(XA_STATE, ''), IFNULL(XID_GTRID, ''), IFNULL(XID_BQUAL, ''), "
        "IFNULL(XID_FORMAT_ID, '') FROM "
        "performance_schema.events_transactions_history_long WHERE THREAD_ID = " +
        pfs_id + " ORDER BY EVENT_ID");
    ASSERT_TRUE(oracle.ok()) << oracle.error().message;
    mysql_close(m);
    wait_gone(*server_, id);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; interrupted\n"), std::string::npos) << r.err;

    const auto txns = rows("transaction", id);
    ASSERT_EQ(txns.size(), kWant.size());
    for (size_t i = 0; i < kWant.size(); i++) {
        SCOPED_TRACE(txns[i].dump());
        EXPECT_EQ(txns[i]["STATE"], kWant[i].state);
        EXPECT_EQ(txns[i]["AUTOCOMMIT"], kWant[i].autocommit);
        EXPECT_EQ(txns[i]["ACCESS_MODE"], kWant[i].access);
        EXPECT_EQ(txns[i]["ISOLATION_LEVEL"], kWant[i].isolation);
        EXPECT_EQ(txns[i]["statements"], kWant[i].statements);
        if (kWant[i].xa_state.empty()) {
            EXPECT_TRUE(txns[i]["XA_STATE"].is_null());
            EXPECT_TRUE(txns[i]["XID_GTRID"].is_null());
        } else {
            EXPECT_EQ(txns[i]["XA_STATE"], kWant[i].xa_state);
            EXPECT_EQ(txns[i]["XID_GTRID"], kWant[i].gtrid);
            EXPECT_EQ(txns[i]["XID_BQUAL"], kWant[i].bqual);
            EXPECT_EQ(txns[i]["XID_FORMAT_ID"], kWant[i].format_id);
        }
    }
    // performance_schema's own rows, one for one.
    // MySQL detaches an XA transaction from its session at XA PREPARE: its
    // performance_schema keeps no row of g1 in the session's history.
    std::vector<json> comparable;
    for (const auto &t : txns) {
        if (!(flavour() == ServerFlavour::mysql && t["XID_GTRID"] == "g1")) {
            comparable.push_back(t);
        }
    }
    ASSERT_EQ(oracle->size(), comparable.size());
    for (size_t i = 0; i < comparable.size(); i++) {
        const auto &o = (*oracle)[i];
        const json &t = comparable[i];
        SCOPED_TRACE("performance_schema row " + std::to_string(i));
        EXPECT_EQ(t["STATE"], o[0]);
        EXPECT_EQ(t["AUTOCOMMIT"], o[1]);
        EXPECT_EQ(t["ACCESS_MODE"], o[2]);
        EXPECT_EQ(t["ISOLATION_LEVEL"], o[3]);
        auto text = [](const json &v) {
            return v.is_null() ? "" : v.is_string() ? v.get<std::string>() : v.dump();
        };
        EXPECT_EQ(text(t["XA_STATE"]), o[5]);
        EXPECT_EQ(text(t["XID_GTRID"]), o[6]);
        EXPECT_EQ(text(t["XID_BQUAL"]), o[7]);
        EXPECT_EQ(text(t["XID_FORMAT_ID"]), o[8]);
    }
    // The statements inside name their transaction; BEGIN and the
    // autocommit ones do not.
    std::vector<std::string> nested;
    for (const auto &s : rows("statement", id)) {
        if (s.contains("NESTING_EVENT_ID")) {
            EXPECT_EQ(s["NESTING_EVENT_TYPE"], "TRANSACTION");
            nested.push_back(s["SQL_TEXT"].get<std::string>() + " @" +
                             std::to_string(s["NESTING_EVENT_ID"].get<uint64_t>()));
        }
    }
    auto at = [&](size_t i) { return " @" + std::to_string(txns[i]["EVENT_ID"].get<uint64_t>()); };
    const std::vector<std::string> want_nested = {"insert into mt_db.t values (1)" + at(0),
                                                  "insert into mt_db.t values (2)" + at(0),
                                                  "update mt_db.t set a = 3 where a = 2" + at(0),
                                                  "COMMIT" + at(0),
                                                  "insert into mt_db.t values (10)" + at(1),
                                                  "ROLLBACK" + at(1),
                                                  "select count(*) from mt_db.t" + at(4),
                                                  "COMMIT" + at(4),
                                                  "insert into mt_db.t values (30)" + at(5),
                                                  "XA END 'g1','b1',7" + at(5),
                                                  "XA PREPARE 'g1','b1',7" + at(5),
                                                  "XA COMMIT 'g1','b1',7" + at(5),
                                                  "insert into mt_db.t values (31)" + at(6),
                                                  "XA END 'g2'" + at(6),
                                                  "XA ROLLBACK 'g2'" + at(6)};
    EXPECT_EQ(nested, want_nested);
    // A transaction is numbered when it begins (an autocommit one as its
    // statement commits), from the connection's EVENT_ID sequence; it
    // spans the statements inside it.
    for (size_t i = 1; i < txns.size(); i++) {
        EXPECT_GT(txns[i]["EVENT_ID"].get<uint64_t>(), txns[i - 1]["EVENT_ID"].get<uint64_t>());
        EXPECT_GE(txns[i]["TIMER_START"].get<uint64_t>(), txns[i - 1]["TIMER_END"].get<uint64_t>());
    }
}

INSTANTIATE_TEST_SUITE_P(Flavours, ServerTxn, ::testing::ValuesIn(all_flavours()),
                         flavour_param_name);

}  // namespace
