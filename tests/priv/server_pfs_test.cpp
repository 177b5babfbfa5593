// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server` against the server's own performance_schema, on both
// flavours (MariaDB 10.11, MySQL 9.7) started with performance_schema ON and
// every instrument and consumer enabled: the statements of one connection
// against events_statements_history_long row for row, exact stages against
// events_stages_history_long, --table-io against
// table_io_waits_summary_by_table. The same workloads with
// performance_schema OFF are the server_trace tests'.
#include <algorithm>
#include <iostream>
#include <map>
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

// What the tracer reports that performance_schema does not, by design:
// - statement/com/Init DB: SQL_TEXT is the schema given (P_S: NULL), and
//   CURRENT_SCHEMA the one the command ends in (P_S: the one it began in);
// - statement/com/Close stmt: no SQL_TEXT (P_S: the statement's);
// - a statement of a multi-statement query: SQL_TEXT is its own (P_S: its
//   own and the rest of the query; MySQL for one that fails, MariaDB for
//   every one);
// - statement/com/Prepare and Execute: SQL_TEXT is the statement prepared,
//   with its `?` (MariaDB's P_S: NULL; MySQL's P_S: the same text).
ExpectedStatement as_traced(ExpectedStatement p) {
    if (p.event_name == "statement/com/Init DB") {
        p.sql = "mt_db";
        p.schema = "mt_db";
    } else if (p.event_name == "statement/com/Close stmt") {
        p.sql = "NULL";
    } else if ((p.event_name == "statement/com/Prepare" ||
                p.event_name == "statement/com/Execute") &&
               p.sql == "NULL") {
        p.sql = "EXPANDED";  // compared against the expected list instead
    } else if (p.sql.find(';') != std::string::npos) {
        p.sql = p.sql.substr(0, p.sql.find(';'));
    }
    if (p.err == 0) {
        p.sqlstate = "NULL";  // P_S says 00000 after an OK, nothing after a result set
    }
    return p;
}

bool listed(const std::vector<std::string> &names, const std::string &name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

class ServerPfs : public ServerTraceTest {
  protected:
    ServerOptions options() const override {
        ServerOptions opts;
        opts.flavour = flavour();
        opts.performance_schema = true;
        return opts;
    }

    // performance_schema's THREAD_ID of connection `id`.
    std::string pfs_thread(unsigned long id) {
        auto t = server_->query(
            "SELECT THREAD_ID FROM performance_schema.threads WHERE PROCESSLIST_ID = " +
            std::to_string(id));
        EXPECT_TRUE(t.ok() && t->size() == 1);
        return t.ok() && t->size() == 1 ? (*t)[0][0] : "0";
    }

    // Empties the history tables (the harness's own statements are there).
    void truncate_history() {
        ASSERT_TRUE(server_
                        ->query("TRUNCATE performance_schema.events_stages_history_long; TRUNCATE "
                                "performance_schema.events_statements_history_long")
                        .ok());
    }
};

TEST_P(ServerPfs, StatementsEqualPerformanceSchema) {
    truncate_history();
    unsigned long id = 0;
    std::string pfs_id;
    ASSERT_NO_FATAL_FAILURE(traced_connection("off", statement_workload, &id, nullptr,
                                              [&](unsigned long c) { pfs_id = pfs_thread(c); }));
    const auto traced = rows("statement", id);
    expect_statements(traced, expected_statements(flavour()), server_->pid());

    // THD::query_id, in order (MariaDB 10.11 gave `select * from
    // no_such_table` the id of the statement before it).
    for (size_t i = 1; i < traced.size(); i++) {
        EXPECT_GE(traced[i]["query_id"].get<uint64_t>(), traced[i - 1]["query_id"].get<uint64_t>())
            << traced[i]["SQL_TEXT"];
    }
    // performance_schema's STATEMENT_ID is the THD's query id, where it has
    // that column (MySQL).
    auto has_id = server_->query(
        "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = "
        "'performance_schema' AND table_name = 'events_statements_history_long' AND column_name "
        "= 'STATEMENT_ID'");
    ASSERT_TRUE(has_id.ok()) << has_id.error().message;
    const bool statement_id = (*has_id)[0][0] == "1";
    // The oracle: the server's own rows for the same connection.
    auto rows = server_->query(
        "SELECT EVENT_NAME, IFNULL(SQL_TEXT, 'NULL'), IFNULL(CURRENT_SCHEMA, 'NULL'), "
        "MYSQL_ERRNO, IFNULL(RETURNED_SQLSTATE, 'NULL'), IFNULL(MESSAGE_TEXT, 'NULL'), ROWS_SENT, "
        "ROWS_EXAMINED, ROWS_AFFECTED, " +
        std::string(statement_id ? "STATEMENT_ID" : "0") +
        " FROM performance_schema.events_statements_history_long WHERE THREAD_ID = " + pfs_id +
        " AND NESTING_EVENT_LEVEL = 0 ORDER BY EVENT_ID");
    ASSERT_TRUE(rows.ok()) << rows.error().message;
    ASSERT_EQ(rows->size(), traced.size());
    for (size_t i = 0; i < rows->size(); i++) {
        const auto &c = (*rows)[i];
        ExpectedStatement p{c[0],
                            c[1],
                            c[2],
                            static_cast<unsigned>(std::stoul(c[3])),
                            c[4],
                            c[5],
                            std::stoull(c[6]),
                            std::stoull(c[7]),
                            std::stoull(c[8])};
        const ExpectedStatement t = as_traced(p);
        const auto &e = traced[i];
        SCOPED_TRACE("performance_schema row " + std::to_string(i) + ": " + c[0] + " " + c[1]);
        EXPECT_EQ(e["EVENT_NAME"], t.event_name);
        if (t.sql != "EXPANDED") {
            EXPECT_EQ(str(e["SQL_TEXT"]), t.sql);
        }
        if (statement_id) {
            EXPECT_EQ(e["query_id"].get<uint64_t>(), std::stoull(c[9]));
        }
        EXPECT_EQ(str(e["CURRENT_SCHEMA"]), t.schema);
        EXPECT_EQ(e["MYSQL_ERRNO"], t.err);
        if (t.err != 0) {
            EXPECT_EQ(str(e["RETURNED_SQLSTATE"]), t.sqlstate);
            EXPECT_EQ(str(e["MESSAGE_TEXT"]), t.message);
        }
        EXPECT_EQ(e["ROWS_SENT"], t.rows_sent);
        EXPECT_EQ(e["ROWS_EXAMINED"], t.rows_examined);
        EXPECT_EQ(e["ROWS_AFFECTED"], t.rows_affected);
    }
}

TEST_P(ServerPfs, ExactStagesFollowPerformanceSchema) {
    create_table_t(*server_);
    truncate_history();
    unsigned long id = 0;
    std::string pfs_id;
    ASSERT_NO_FATAL_FAILURE(traced_connection("exact", stage_workload, &id, "mt_db",
                                              [&](unsigned long c) { pfs_id = pfs_thread(c); }));
    const auto traced = statements_with_stages(read_json_lines(out_path_), id);
    expect_command_stages(traced);

    // The oracle: the server's own stages of the same statements, in order.
    auto stmts = server_->query(
        "SELECT EVENT_ID, IFNULL(SQL_TEXT, '') FROM "
        "performance_schema.events_statements_history_long WHERE THREAD_ID = " +
        pfs_id + " AND NESTING_EVENT_LEVEL = 0 ORDER BY EVENT_ID");
    ASSERT_TRUE(stmts.ok()) << stmts.error().message;
    ASSERT_EQ(stmts->size(), traced.size());
    size_t total = 0, matched = 0;
    for (size_t i = 0; i < stmts->size(); i++) {
        auto stages = server_->query(
            "SELECT SUBSTRING(EVENT_NAME, 11), SOURCE FROM "
            "performance_schema.events_stages_history_long WHERE THREAD_ID = " +
            pfs_id + " AND NESTING_EVENT_ID = " + (*stmts)[i][0] + " ORDER BY EVENT_ID");
        ASSERT_TRUE(stages.ok()) << stages.error().message;
        // MariaDB's performance_schema leaves SOURCE empty: names only there.
        // The listed differences are left out on each side.
        const bool quit = i + 1 == stmts->size();
        bool sources = false;
        for (const auto &row : *stages) {
            sources |= !row[1].empty() && row[1] != "NULL";
        }
        std::vector<std::string> own, mine;
        for (const auto &row : *stages) {
            if (!(quit && listed(want().pfs_quit_extra, row[0]))) {
                own.push_back(sources ? row[0] + "@" + base_name(row[1]) : row[0]);
            }
        }
        for (size_t k = 0; k < traced[i].names.size(); k++) {
            if (!listed(want().pfs_unregistered_stages, traced[i].names[k])) {
                mine.push_back(sources ? traced[i].with_source[k] : traced[i].names[k]);
            }
        }
        SCOPED_TRACE("statement " + std::to_string(i) + " " + (*stmts)[i][1]);
        ASSERT_FALSE(own.empty());
        // performance_schema's stages, in its order, with their source lines
        // where it has them.
        EXPECT_EQ(mine, own);
        total += own.size();
        matched += mine == own ? own.size() : 0;
    }
    std::cout << "exact stages: " << matched << " of " << total
              << " performance_schema stages matched exactly, in order\n";
}

// Every handler row call, with its result; performance_schema counts the
// same calls, except in its batch mode (the scan of a SELECT's table), where
// the read that finds no more rows is not counted.
TEST_P(ServerPfs, TableIoEqualsPerformanceSchemaCounts) {
    create_table_t(*server_);
    MYSQL *m = connect_to(*server_, 0, "mt_db");
    ASSERT_NE(m, nullptr);
    ASSERT_TRUE(server_->query("TRUNCATE performance_schema.table_io_waits_summary_by_table").ok());
    auto tracer = start_server_tracer(
        *server_, {"--table-io", "--stages", "off", "--format", "json", "--output", out_path_});
    const auto &expected = table_io_workload();
    for (const auto &[sql, ops] : expected) {
        ASSERT_EQ(run_query(m, sql), 0u) << sql;
    }
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped;"), std::string::npos) << r.err;
    mysql_close(m);
    const std::vector<json> all = read_json_lines(out_path_);
    std::map<std::string, uint64_t> counted;
    for (const auto &[sql, ops] : expected) {
        json st;
        std::vector<std::string> seen;
        for (const auto &w : waits_of(all, sql, &st)) {
            EXPECT_EQ(w["EVENT_NAME"], "wait/io/table/sql/handler") << w.dump();
            EXPECT_EQ(w["OBJECT_SCHEMA"], "mt_db") << w.dump();
            EXPECT_EQ(w["OBJECT_NAME"], "t") << w.dump();
            EXPECT_EQ(w["NESTING_EVENT_TYPE"], "STATEMENT") << w.dump();
            const std::string op = w["OPERATION"];
            seen.push_back(table_io_call(w));
            // performance_schema's batch mode: a SELECT's scan that ends.
            const bool batched_end =
                sql.rfind("select", 0) == 0 && w.value("handler_error", 0) == 137;
            counted[op] += batched_end ? 0 : 1;
        }
        ASSERT_FALSE(st.is_null()) << sql;
        EXPECT_EQ(seen, ops) << sql;
    }
    auto rows = server_->query(
        "SELECT COUNT_FETCH, COUNT_INSERT, COUNT_UPDATE, COUNT_DELETE FROM "
        "performance_schema.table_io_waits_summary_by_table WHERE OBJECT_SCHEMA = 'mt_db' AND "
        "OBJECT_NAME = 't'");
    ASSERT_TRUE(rows.ok() && rows->size() == 1);
    EXPECT_EQ(std::to_string(counted["fetch"]), (*rows)[0][0]);
    EXPECT_EQ(std::to_string(counted["insert"]), (*rows)[0][1]);
    EXPECT_EQ(std::to_string(counted["update"]), (*rows)[0][2]);
    EXPECT_EQ(std::to_string(counted["delete"]), (*rows)[0][3]);
}

INSTANTIATE_TEST_SUITE_P(Flavours, ServerPfs, ::testing::ValuesIn(all_flavours()),
                         flavour_param_name);

}  // namespace
