// SPDX-License-Identifier: GPL-2.0-only
// What the `mysqltrace server` tests do to a throwaway server of the harness:
// connect, run statements and read all they return, wait until a connection
// is gone, and start the tracer on the server; the fixture that runs each
// test on every flavour, and what the flavours do differently, as data.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"

namespace mysqltrace::test {

// A connection over `server`'s socket to `db` (nullptr: none), as the
// harness's user unless `user` is given. A refused connection fails the test
// (not fatally) and is returned anyway, as mysql_init made it.
MYSQL *connect_to(const MariadbServer &server, unsigned long flags = 0, const char *db = nullptr,
                  const std::string &user = "", const std::string &password = "");

// Runs `sql` and reads every result it produces; returns the error number.
unsigned run_query(MYSQL *m, const std::string &sql);

// Prepares `sql`, executes it with one int parameter, closes it.
void run_prepared(MYSQL *m, const std::string &sql, int v);

// Returns once `server` has finished with connection `id` (its COM_QUIT has
// been dispatched), so a trace holds everything it did.
void wait_gone(MariadbServer &server, unsigned long id);

// `mysqltrace server --pid <server's pid>` followed by `extra`.
std::vector<std::string> server_tracer_argv(const MariadbServer &server,
                                            const std::vector<std::string> &extra);

// That command in the background, once it says it is tracing (a test
// failure if it does not).
std::unique_ptr<BackgroundCommand> start_server_tracer(const MariadbServer &server,
                                                       const std::vector<std::string> &extra);

// Where the servers genuinely differ, for the same workload: stage names and
// sources, message texts, files, probe counts. One table per flavour.
struct ServerExpectations {
    // The stage a CPU-bound expression runs in.
    std::string executing_stage;
    // The clause an unknown column of a select list is reported in.
    std::string unknown_column_clause;
    // SHOW PROFILE's name for a statement's first stage ("starting"), and
    // the width it cuts stage names to (0: none).
    std::string profile_first_state;
    size_t profile_state_width = 0;
    // ROWS_EXAMINED of a select without a table, and of one that reads 2 of
    // t's 3 rows by a primary key range.
    uint64_t examined_without_table = 0, examined_by_range = 0;
    // The stages of "select a, b from t where a >= 2" and of
    // "select nosuch from t" (t of create_table_t()), as the server names
    // them.
    std::vector<std::string> select_stages, failed_stages;
    // The first stage of a command, and of a further statement of a
    // multi-statement query ("name@file:line"); the last stage of a
    // statement that another of its query follows.
    std::string command_start, next_statement_start, next_statement_follows;
    // The last stage of a command.
    std::string command_end;
    // Stages the server enters that its performance_schema does not list
    // (MariaDB: not registered with it), and stages it lists in COM_QUIT
    // that belong to the disconnect after it (MariaDB: its rollback).
    std::vector<std::string> pfs_unregistered_stages, pfs_quit_extra;
    // Part of the redo log file's name, and the least the commit of a
    // 5000-byte row writes to it in its own thread.
    std::string redo_log_name;
    uint64_t redo_log_min_write = 0;
    // What the tracer says once --max-statements detached the stage probes.
    std::string statements_only;
    // doctor --pid: the server's name, and lines of its report that only
    // this flavour has.
    std::string doctor_server;
    std::vector<std::string> doctor_lines;
};

const ServerExpectations &expectations(ServerFlavour flavour);

// A statement of a JSON trace with its stages, by name and as
// "name@file:line".
struct StagedStatement {
    std::string sql;
    std::vector<std::string> names, with_source;
};
// gtest's name for a flavour parameter.
std::string flavour_param_name(const ::testing::TestParamInfo<ServerFlavour> &info);

// One throwaway server of the parameter's flavour per test, with
// performance_schema OFF on both (MySQL's default is ON; a server without it
// is the one the tracer is for); the trace goes to out_path_.
class ServerTraceTest : public ::testing::TestWithParam<ServerFlavour> {
  protected:
    void SetUp() override;
    virtual ServerOptions options() const;

    ServerFlavour flavour() const { return GetParam(); }
    const ServerExpectations &want() const { return expectations(flavour()); }
    MYSQL *connect(unsigned long flags = 0) { return connect_to(*server_, flags); }
    // The JSON rows of the trace of `kind`, of one connection (0: all).
    std::vector<nlohmann::json> rows(const std::string &kind, unsigned long thread_id = 0) const;
    // Runs `workload` on a new connection (CLIENT_MULTI_STATEMENTS, to `db`
    // if given) under `mysqltrace server --stages <stages> --format json`,
    // until the connection is gone and the tracer ended cleanly; *id gets
    // the connection's id, which `connected` sees first.
    void traced_connection(const std::string &stages, void (*workload)(MYSQL *), unsigned long *id,
                           const char *db = nullptr,
                           const std::function<void(unsigned long)> &connected = {});
    // Checks the stages of stage_workload()'s commands: of a select, of a
    // failing one, and where each command starts and ends.
    void expect_command_stages(const std::vector<StagedStatement> &traced) const;

    std::unique_ptr<MariadbServer> server_;
    std::string out_path_;
};

// The wait events of the statement whose text is `sql` (nested in it or in
// its stages); *stmt gets the statement (null if there is none).
std::vector<nlohmann::json> waits_of(const std::vector<nlohmann::json> &all, const std::string &sql,
                                     nlohmann::json *stmt);

// One statement of statement_workload() as the tracer must report it;
// "NULL" for null.
struct ExpectedStatement {
    std::string event_name, sql, schema;
    unsigned err = 0;
    std::string sqlstate, message;
    uint64_t rows_sent = 0, rows_examined = 0, rows_affected = 0;
};

// Commands and statements of every kind on one connection (made with
// CLIENT_MULTI_STATEMENTS, no schema): plain, multi-statement with an error,
// DDL, DML, a failing select, prepared statements, ping, init db.
void statement_workload(MYSQL *m);
// What the tracer reports for it, in order, on `flavour`.
std::vector<ExpectedStatement> expected_statements(ServerFlavour flavour);
// Checks the statements traced for one connection against `want`, field by
// field, with the event ids and times of a connection's statements.
void expect_statements(const std::vector<nlohmann::json> &traced,
                       const std::vector<ExpectedStatement> &want, pid_t server_pid);
// A JSON value as the expectations spell it: "NULL", a string, or its dump.
std::string str(const nlohmann::json &v);

// Every kind of command on a connection to mt_db (create_table_t(), made
// with CLIENT_MULTI_STATEMENTS): select, insert, update, delete, a failing
// select, a query of two statements, a prepared statement.
void stage_workload(MYSQL *m);

// The statements of connection `id` in `all`, each with its stages.
std::vector<StagedStatement> statements_with_stages(const std::vector<nlohmann::json> &all,
                                                    unsigned long id);

// Statements on mt_db.t (create_table_t()), each with the handler calls
// it makes, in order: "op", or "op:handler_error" for a call that found no
// row (137: end of the table or range, 120: no such key).
using TableIoWorkload = std::vector<std::pair<std::string, std::vector<std::string>>>;
const TableIoWorkload &table_io_workload();
// A --table-io wait as table_io_workload() spells its call.
std::string table_io_call(const nlohmann::json &w);

// The last component of a path.
std::string base_name(const std::string &path);

// Creates mt_db.t (a INT PRIMARY KEY, b VARCHAR(20), KEY (b)) holding
// (1, 'x'), (2, 'y'), (3, 'z').
void create_table_t(MariadbServer &server);

}  // namespace mysqltrace::test
