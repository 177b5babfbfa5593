// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server`'s waits and outputs on both flavours (MariaDB 10.11,
// MySQL 9.7; performance_schema OFF): lock, file, socket and idle waits,
// --table-io rows as handler waits (also under load), WL#4878 trace files
// loaded into a database, and a full filesystem.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/priv.h"
#include "priv/server_session.h"
#include "priv/tracefs_util.h"

namespace {

using namespace mysqltrace::test;
using nlohmann::json;

class ServerTrace : public ServerTraceTest {};

// Events in the order they began.
bool by_start(const json &a, const json &b) {
    return a["TIMER_START"].get<uint64_t>() < b["TIMER_START"].get<uint64_t>();
}

TEST_P(ServerTrace, WaitsOfLocksFilesSocketsAndIdleTime) {
    ASSERT_TRUE(server_
                    ->query("create database mt_db; create table mt_db.t (a int primary key, "
                            "b text) engine=InnoDB; insert into mt_db.t values (1, 'x')")
                    .ok());
    MYSQL *holder = connect();
    MYSQL *waiter = connect();
    ASSERT_NE(holder, nullptr);
    ASSERT_NE(waiter, nullptr);
    auto tracer = start_server_tracer(
        *server_, {"--waits", "--stages", "exact", "--format", "json", "--output", out_path_});
    // Uncontended statements: no synchronisation waits.
    for (int i = 0; i < 20; i++) {
        ASSERT_EQ(run_query(waiter, "select b from mt_db.t where a = 1"), 0u);
    }
    // A table lock held for 300 ms: the other connection's select waits.
    ASSERT_EQ(run_query(holder, "lock tables mt_db.t write"), 0u);
    std::thread blocked([&] { EXPECT_EQ(run_query(waiter, "select count(*) from mt_db.t"), 0u); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_EQ(run_query(holder, "unlock tables"), 0u);
    blocked.join();
    // Commits: InnoDB writes and syncs its log in the committing thread,
    // unless a background flush got there first (on a loaded machine it
    // can): three of them, one of which must show it.
    for (int row = 2; row <= 4; row++) {
        ASSERT_EQ(run_query(waiter, "insert into mt_db.t values (" + std::to_string(row) +
                                        ", repeat('y', 5000))"),
                  0u);
    }
    // 200 ms of the client thinking: the server thread is idle.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(run_query(waiter, "select 'after idle'"), 0u);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped;"), std::string::npos) << r.err;

    const std::vector<json> all = read_json_lines(out_path_);
    json st;
    for (const auto &w : waits_of(all, "select b from mt_db.t where a = 1", &st)) {
        EXPECT_NE(w["EVENT_NAME"].get<std::string>().rfind("wait/synch/", 0), 0u) << w.dump();
    }
    ASSERT_FALSE(st.is_null());

    json blocked_st;
    auto lock_waits = waits_of(all, "select count(*) from mt_db.t", &blocked_st);
    ASSERT_FALSE(blocked_st.is_null());
    const json *lock = nullptr;
    for (const auto &w : lock_waits) {
        if (w["TIMER_WAIT"].get<uint64_t>() > 200'000'000'000ull) {
            lock = &w;
        }
    }
    ASSERT_NE(lock, nullptr) << blocked_st.dump();
    // Named by the server function that waited.
    EXPECT_EQ((*lock)["EVENT_NAME"], "wait/synch/cond/sql/MDL_wait::timed_wait");
    EXPECT_EQ((*lock)["OPERATION"], "timed_wait");
    EXPECT_LE((*lock)["TIMER_WAIT"].get<uint64_t>(), blocked_st["TIMER_WAIT"].get<uint64_t>());
    EXPECT_GT((*lock)["OBJECT_INSTANCE_BEGIN"].get<uint64_t>(), 0u);
    // It nests in the stage the statement was waiting in.
    EXPECT_EQ((*lock)["NESTING_EVENT_TYPE"], "STAGE");
    bool in_mdl_stage = false;
    for (const auto &e : all) {
        if (e["kind"] == "stage" && e["EVENT_ID"] == (*lock)["NESTING_EVENT_ID"] &&
            e["THREAD_ID"] == blocked_st["THREAD_ID"]) {
            in_mdl_stage = e["EVENT_NAME"] == "stage/sql/Waiting for table metadata lock";
        }
    }
    EXPECT_TRUE(in_mdl_stage);

    // The row's redo, in one write or in several, and its sync.
    bool committed_in_thread = false;
    for (int row = 2; row <= 4; row++) {
        json insert_st;
        bool log_sync = false;
        uint64_t log_written = 0;
        for (const auto &w : waits_of(
                 all, "insert into mt_db.t values (" + std::to_string(row) + ", repeat('y', 5000))",
                 &insert_st)) {
            if (w["EVENT_NAME"] == "wait/io/file/innodb/innodb_log_file") {
                EXPECT_NE(w["OBJECT_NAME"].get<std::string>().find(want().redo_log_name),
                          std::string::npos)
                    << w.dump();
                EXPECT_EQ(w["OBJECT_TYPE"], "FILE");
                log_sync |= w["OPERATION"] == "sync";
                if (w["OPERATION"] == "write") {
                    log_written += w["NUMBER_OF_BYTES"].get<uint64_t>();
                }
            }
        }
        ASSERT_FALSE(insert_st.is_null()) << row;
        committed_in_thread |= log_sync && log_written >= want().redo_log_min_write;
    }
    EXPECT_TRUE(committed_in_thread);

    // The reply of a statement goes out in it; the time before the next
    // command is idle, outside any statement.
    json last;
    bool sent = false;
    for (const auto &w : waits_of(all, "select 'after idle'", &last)) {
        if (w["EVENT_NAME"] == "wait/io/socket/sql/client_connection" && w["OPERATION"] == "send") {
            sent = true;
            EXPECT_GT(w["NUMBER_OF_BYTES"].get<uint64_t>(), 0u);
        }
    }
    EXPECT_TRUE(sent) << last.dump();
    bool idle = false;
    for (const auto &e : all) {
        if (e["kind"] == "wait" && e["EVENT_NAME"] == "idle" &&
            e["THREAD_ID"] == last["THREAD_ID"] && e["NESTING_EVENT_ID"].is_null() &&
            e["TIMER_WAIT"].get<uint64_t>() > 150'000'000'000ull &&
            e["TIMER_END"].get<uint64_t>() <= last["TIMER_START"].get<uint64_t>()) {
            idle = true;
        }
    }
    EXPECT_TRUE(idle);
    // One idle wait per gap between the waiter's commands, from the end of
    // one to the start of the next: 25 commands, none before the first.
    std::vector<json> commands;
    std::vector<json> idles;
    for (const auto &e : all) {
        if (e["THREAD_ID"] != last["THREAD_ID"]) {
            continue;
        }
        if (e["kind"] == "statement") {
            commands.push_back(e);
        } else if (e["kind"] == "wait" && e["EVENT_NAME"] == "idle") {
            idles.push_back(e);
        }
    }
    ASSERT_EQ(commands.size(), 25u);
    ASSERT_EQ(idles.size(), 24u);
    std::sort(commands.begin(), commands.end(), by_start);
    std::sort(idles.begin(), idles.end(), by_start);
    for (size_t i = 0; i < idles.size(); i++) {
        EXPECT_GE(idles[i]["TIMER_START"].get<uint64_t>(), commands[i]["TIMER_END"].get<uint64_t>())
            << i << ": " << idles[i].dump() << "\n"
            << commands[i].dump();
        EXPECT_LE(idles[i]["TIMER_END"].get<uint64_t>(),
                  commands[i + 1]["TIMER_START"].get<uint64_t>())
            << i << ": " << idles[i].dump() << "\n"
            << commands[i + 1].dump();
    }
    // The summary: one row per event name.
    std::map<std::string, uint64_t> counted;
    for (const auto &e : all) {
        if (e["kind"] == "wait") {
            counted[e["EVENT_NAME"]]++;
        }
    }
    size_t summaries = 0;
    for (const auto &e : all) {
        if (e["kind"] == "wait_summary") {
            summaries++;
            EXPECT_EQ(e["COUNT_STAR"], counted[e["EVENT_NAME"]]) << e.dump();
        }
    }
    EXPECT_EQ(summaries, counted.size());
    mysql_close(holder);
    mysql_close(waiter);
}

// --waits takes each syscall it records from that syscall's own tracepoint
// (sys_enter_futex, ...), which runs for nothing else; with tracefs out of
// reach (their ids are read there), from the two raw syscall tracepoints,
// which run for every syscall on the machine and see the same waits.
TEST_P(ServerTrace, WaitsFromPerSyscallTracepointsOrTheRawOnes) {
    ASSERT_TRUE(server_
                    ->query("create database mt_db; create table mt_db.t (a int primary key) "
                            "engine=InnoDB; insert into mt_db.t values (1)")
                    .ok());
    std::set<std::string> per_syscall = {"raw_tracepoint sched_process_exit"};
    for (const char *call : {"read", "write", "close", "pread64", "pwrite64", "readv", "writev",
                             "sendto", "sendmsg", "fsync", "fdatasync", "futex", "openat"}) {
        per_syscall.insert(std::string("tracepoint sys_enter_") + call);
        per_syscall.insert(std::string("tracepoint sys_exit_") + call);
    }
    const std::set<std::string> raw = {"raw_tracepoint sys_enter", "raw_tracepoint sys_exit",
                                       "raw_tracepoint sched_process_exit"};
    for (bool hide_tracefs : {false, true}) {
        SCOPED_TRACE(hide_tracefs ? "tracefs out of reach" : "tracefs");
        std::remove(out_path_.c_str());
        std::vector<std::string> argv;
        if (hide_tracefs) {
            argv = in_namespace(std::string(kUnmountTracefs) + kNoTracefsMountPoint);
        }
        for (const auto &a : server_tracer_argv(*server_, {"--waits", "--stages", "off", "--format",
                                                           "json", "--output", out_path_})) {
            argv.push_back(a);
        }
        MYSQL *holder = connect();
        MYSQL *waiter = connect();
        ASSERT_NE(holder, nullptr);
        ASSERT_NE(waiter, nullptr);
        BackgroundCommand tracer(argv);
        ASSERT_TRUE(tracer.wait_for_stderr("Ctrl-C to stop")) << tracer.stderr_so_far();
        EXPECT_EQ(tracepoints_of(tracer.pid()), hide_tracefs ? raw : per_syscall);
        ASSERT_EQ(run_query(holder, "lock tables mt_db.t write"), 0u);
        std::thread blocked(
            [&] { EXPECT_EQ(run_query(waiter, "select count(*) from mt_db.t"), 0u); });
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ASSERT_EQ(run_query(holder, "unlock tables"), 0u);
        blocked.join();
        mysql_close(holder);
        mysql_close(waiter);
        auto r = tracer.stop(SIGINT);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.err.find(" 0 records dropped;"), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find("using the raw syscall tracepoints instead") != std::string::npos,
                  hide_tracefs)
            << r.err;
        // The metadata lock wait, named by the server function that waited
        // (its caller found on the user stack the futex left).
        json st;
        bool lock = false;
        for (const auto &w :
             waits_of(read_json_lines(out_path_), "select count(*) from mt_db.t", &st)) {
            lock |= w["EVENT_NAME"] == "wait/synch/cond/sql/MDL_wait::timed_wait" &&
                    w["TIMER_WAIT"].get<uint64_t>() > 200'000'000'000ull;
        }
        EXPECT_TRUE(lock) << st.dump();
    }
}

// --waits with sampled or no stages keeps one probe per statement: a wait is
// in a statement when the THD its thread runs (found from the thread
// pointer) runs a statement's command, and is placed in it by time; the
// idle waits are made from the statements' times. A connection's first
// statement has its waits too.
TEST_P(ServerTrace, WaitsOnTheOneProbePath) {
    ASSERT_TRUE(server_
                    ->query("create database mt_db; create table mt_db.t (a int primary key, "
                            "b int) engine=InnoDB; insert into mt_db.t values (1, 2)")
                    .ok());
    BackgroundCommand tracer(server_tracer_argv(
        *server_, {"--waits", "--stages", "off", "--format", "json", "--output", out_path_}));
    ASSERT_TRUE(tracer.wait_for_stderr("Ctrl-C to stop")) << tracer.stderr_so_far();
    EXPECT_NE(tracer.stderr_so_far().find("one probe per statement (log_slow_statement)"),
              std::string::npos)
        << tracer.stderr_so_far();
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(run_query(m, "select sleep(0.2)"), 0u);
    for (int i = 0; i < 10; i++) {
        ASSERT_EQ(run_query(m, "select b from mt_db.t where a = 1"), 0u);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_EQ(run_query(m, "select 'after idle'"), 0u);
    auto r = tracer.stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped;"), std::string::npos) << r.err;
    mysql_close(m);

    const std::vector<json> all = read_json_lines(out_path_);
    json first;
    bool slept = false;
    for (const auto &w : waits_of(all, "select sleep(0.2)", &first)) {
        slept |= w["EVENT_NAME"] == "wait/synch/cond/sql/Interruptible_wait::wait" &&
                 w["TIMER_WAIT"].get<uint64_t>() > 150'000'000'000ull;
    }
    ASSERT_FALSE(first.is_null());
    EXPECT_TRUE(slept) << first.dump();
    // The connection's statements, and its waits: each statement's reply
    // nested in it, and one idle wait between each two statements.
    std::vector<json> statements, idles;
    std::map<uint64_t, size_t> sends;  // by the statement's EVENT_ID
    for (const auto &e : all) {
        if (e["THREAD_ID"] != first["THREAD_ID"]) {
            continue;
        }
        if (e["kind"] == "statement") {
            statements.push_back(e);
        } else if (e["kind"] == "wait" && e["EVENT_NAME"] == "idle") {
            EXPECT_TRUE(e["NESTING_EVENT_ID"].is_null()) << e.dump();
            idles.push_back(e);
        } else if (e["kind"] == "wait" && e["OPERATION"] == "send" &&
                   !e["NESTING_EVENT_ID"].is_null()) {
            sends[e["NESTING_EVENT_ID"].get<uint64_t>()]++;
        }
    }
    std::sort(statements.begin(), statements.end(), by_start);
    std::sort(idles.begin(), idles.end(), by_start);
    ASSERT_GE(statements.size(), 12u);
    ASSERT_EQ(idles.size(), statements.size() - 1);
    for (size_t i = 0; i < idles.size(); i++) {
        EXPECT_EQ(idles[i]["TIMER_START"], statements[i]["TIMER_END"]) << i;
        EXPECT_EQ(idles[i]["TIMER_END"], statements[i + 1]["TIMER_START"]) << i;
    }
    size_t long_idle = 0;
    for (const auto &w : idles) {
        long_idle += w["TIMER_WAIT"].get<uint64_t>() > 90'000'000'000ull ? 1 : 0;
    }
    EXPECT_GE(long_idle, 1u);
    for (const auto &st : statements) {
        if (st["SQL_TEXT"] == "select sleep(0.2)" || st["SQL_TEXT"] == "select 'after idle'" ||
            st["SQL_TEXT"] == "select b from mt_db.t where a = 1") {
            EXPECT_GE(sends[st["EVENT_ID"].get<uint64_t>()], 1u) << st.dump();
        }
    }
}

// --table-io: each row a statement reads or writes through the handler is
// one wait/io/table/sql/handler wait, nested in its statement.
TEST_P(ServerTrace, TableIoRowsAsHandlerWaits) {
    create_table_t(*server_);
    MYSQL *m = connect_to(*server_, 0, "mt_db");
    ASSERT_NE(m, nullptr);
    auto tracer = start_server_tracer(
        *server_, {"--table-io", "--stages", "off", "--format", "json", "--output", out_path_});
    const auto &expected = table_io_workload();
    size_t calls = 0;
    for (const auto &[sql, ops] : expected) {
        ASSERT_EQ(run_query(m, sql), 0u) << sql;
        calls += ops.size();
    }
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" " + std::to_string(calls) + " waits, 0 records dropped;"),
              std::string::npos)
        << r.err;
    mysql_close(m);

    const std::vector<json> all = read_json_lines(out_path_);
    size_t rows = 0;
    for (const auto &[sql, ops] : expected) {
        json st;
        std::vector<std::string> seen;
        uint64_t waited = 0;
        for (const auto &w : waits_of(all, sql, &st)) {
            EXPECT_EQ(w["EVENT_NAME"], "wait/io/table/sql/handler") << w.dump();
            EXPECT_EQ(w["OBJECT_SCHEMA"], "mt_db") << w.dump();
            EXPECT_EQ(w["OBJECT_NAME"], "t") << w.dump();
            EXPECT_EQ(w["OBJECT_TYPE"], "TABLE") << w.dump();
            EXPECT_GT(w["OBJECT_INSTANCE_BEGIN"].get<uint64_t>(), 0u) << w.dump();
            EXPECT_EQ(w["NESTING_EVENT_TYPE"], "STATEMENT") << w.dump();
            EXPECT_TRUE(w["NUMBER_OF_BYTES"].is_null()) << w.dump();
            EXPECT_GE(w["TIMER_START"].get<uint64_t>(), st["TIMER_START"].get<uint64_t>());
            EXPECT_LE(w["TIMER_END"].get<uint64_t>(), st["TIMER_END"].get<uint64_t>());
            waited += w["TIMER_WAIT"].get<uint64_t>();
            seen.push_back(table_io_call(w));
        }
        ASSERT_FALSE(st.is_null()) << sql;
        EXPECT_EQ(seen, ops) << sql;
        EXPECT_LE(waited, st["TIMER_WAIT"].get<uint64_t>()) << sql;
        rows += ops.size();
    }
    EXPECT_EQ(rows, calls);
    bool summarised = false;
    for (const auto &e : all) {
        if (e["kind"] == "wait_summary" && e["EVENT_NAME"] == "wait/io/table/sql/handler") {
            EXPECT_EQ(e["COUNT_STAR"], rows);
            summarised = true;
        }
    }
    EXPECT_TRUE(summarised);
}

// Under load, two records per statement of mixed sizes (the statement and its
// row): the rings must wake the reader in time, so nothing is dropped and
// every row is there.
TEST_P(ServerTrace, TableIoUnderLoadLosesNothing) {
    auto prepared = server_->prepare_sysbench_point_select(1000);
    ASSERT_TRUE(prepared.ok()) << prepared.error().message;
    const std::vector<std::string> common = prepared.value();
    auto tracer = start_server_tracer(
        *server_, {"--table-io", "--stages", "off", "--format", "json", "--output", out_path_});
    constexpr int kEvents = 20000;
    auto run = common;
    for (const char *a : {"--threads=2", "--events=20000", "--time=0", "run"}) {
        run.push_back(a);
    }
    auto sb = run_command(run);
    ASSERT_EQ(sb.exit_code, 0) << sb.err;
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped;"), std::string::npos) << r.err;
    long fetches = 0, selects = 0;
    for (const auto &e : rows("wait")) {
        if (e["OBJECT_NAME"] == "sbtest1" && e["OPERATION"] == "fetch") {
            fetches++;
        }
    }
    for (const auto &e : rows("statement")) {
        // The prepared text, with its `?`.
        static const std::regex point_select(R"(SELECT c FROM sbtest1 WHERE id=\?)");
        if (e["EVENT_NAME"] == "statement/com/Execute" &&
            std::regex_match(str(e["SQL_TEXT"]), point_select)) {
            selects++;
        }
    }
    // One primary key lookup per point select.
    EXPECT_EQ(selects, kEvents);
    EXPECT_EQ(fetches, kEvents);
}

// WL#4878 trace files, merged and loaded into an ordinary database with
// share/schema.sql, agree with mysqltrace's own summary.
TEST_P(ServerTrace, TraceFilesLoadAndMatchTheSummary) {
    const std::string dir = server_->root_dir() + "/tracefiles";
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    auto tracer = start_server_tracer(
        *server_, {"--waits", "--stages", "exact", "--format", "pfs-sql", "--output", dir});
    ASSERT_EQ(run_query(m, "create database mt_db"), 0u);
    ASSERT_EQ(run_query(m, "create table mt_db.t (a int primary key, b text) engine=InnoDB"), 0u);
    ASSERT_EQ(run_query(m, "insert into mt_db.t values (1, 'it''s \\\\ a \"test\"')"), 0u);
    ASSERT_EQ(run_query(m, "select * from mt_db.t"), 0u);
    EXPECT_EQ(run_query(m, "select * from mt_db.nosuch"), 1146u);
    auto r = tracer->stop(SIGINT);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    mysql_close(m);
    // WL#4878 names each file by the connection's account; the header says it too.
    const std::string actor = server_->user() + "@localhost";
    std::ifstream own(dir + "/thread." + actor + "." + std::to_string(id));
    std::string first;
    ASSERT_TRUE(std::getline(own, first)) << "no trace file thread." << actor << "." << id;
    EXPECT_EQ(first.rfind("/* MySQL Trace File for " + actor + " on ", 0), 0u) << first;

    const std::string merged = server_->root_dir() + "/merged.sql";
    auto files = run_command({"/bin/sh", "-c", "ls " + dir + "/thread.*"});
    std::vector<std::string> argv = {MYSQLTRACE_BINARY, "merge", "--output", merged};
    std::istringstream names(files.out);
    for (std::string f; names >> f;) {
        argv.push_back(f);
    }
    ASSERT_GT(argv.size(), 4u);
    auto mr = run_command(argv);
    ASSERT_EQ(mr.exit_code, 0) << mr.err;

    ASSERT_TRUE(server_->query("create database mt_trace").ok());
    // The flavour's own command-line client.
    std::string client;
    for (const auto &arg : server_->cli_command()) {
        client += "'" + arg + "' ";
    }
    client += "mt_trace";
    auto load = run_command(
        {"/bin/sh", "-c",
         client + " < " MYSQLTRACE_SOURCE_DIR "/share/schema.sql && " + client + " < " + merged});
    ASSERT_EQ(load.exit_code, 0) << load.err;

    // The summary printed at the end: "EVENT_NAME COUNT_STAR ..." rows.
    std::map<std::string, uint64_t> summary;
    std::istringstream out(r.out);
    bool in_waits = false;
    for (std::string line; std::getline(out, line);) {
        if (line.rfind("---- waits by event name", 0) == 0) {
            in_waits = true;
            std::getline(out, line);  // column titles
            continue;
        }
        if (in_waits && line.rfind("----", 0) == 0) {
            in_waits = false;
        }
        if (in_waits && !line.empty()) {
            std::istringstream f(line);
            std::string name;
            uint64_t n = 0;
            f >> name >> n;
            summary[name] = n;
        }
    }
    ASSERT_FALSE(summary.empty()) << r.out;
    auto loaded = server_->query(
        "select EVENT_NAME, COUNT(*) from mt_trace.events_waits_current "
        "where TIMER_END is not null group by EVENT_NAME");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    std::map<std::string, uint64_t> from_db;
    for (const auto &row : *loaded) {
        from_db[row[0]] = std::stoull(row[1]);
    }
    EXPECT_EQ(from_db, summary);
    auto err = server_->query(
        "select MYSQL_ERRNO, RETURNED_SQLSTATE from mt_trace.events_statements_current "
        "where SQL_TEXT = 'select * from mt_db.nosuch' and TIMER_END is not null");
    ASSERT_TRUE(err.ok());
    ASSERT_EQ(err->size(), 1u);
    EXPECT_EQ((*err)[0][0], "1146");
    EXPECT_EQ((*err)[0][1], "42S02");
    auto text = server_->query(
        "select count(*) from mt_trace.events_statements_current where SQL_TEXT = "
        "'insert into mt_db.t values (1, ''it''''s \\\\\\\\ a \"test\"'')'");
    ASSERT_TRUE(text.ok());
    EXPECT_EQ((*text)[0][0], "2");  // its start row and its end row, text intact
}

// WL#4878: a full disk stops the output that cannot be written, with one
// message naming it; the trace, its other outputs and the server go on.
TEST_P(ServerTrace, FullFilesystemStopsOnlyThatOutput) {
    const std::string dir = server_->root_dir() + "/full";
    ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
    auto mounted = run_command({"/bin/mount", "-t", "tmpfs", "-o", "size=16k", "mt-full", dir});
    ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
    struct Unmount {
        std::string dir;
        ~Unmount() { run_command({"/bin/umount", "-l", dir}); }
    } unmount{dir};
    MYSQL *m = connect();
    ASSERT_NE(m, nullptr);
    const unsigned long id = mysql_thread_id(m);
    const std::string text_file = dir + "/trace.txt";
    auto files = start_server_tracer(*server_, {"--format", "pfs-sql", "--output", dir + "/files"});
    auto text =
        start_server_tracer(*server_, {"--thread-id", std::to_string(id), "--output", text_file});
    constexpr int kStatements = 400;  // ~100 KiB of trace file rows, ~40 KiB of text
    for (int i = 0; i < kStatements; i++) {
        ASSERT_EQ(run_query(m, "select repeat('x', 60), " + std::to_string(i)), 0u);
    }
    auto rf = files->stop(SIGINT);
    auto rt = text->stop(SIGINT);
    EXPECT_EQ(rf.exit_code, 0) << rf.err;
    EXPECT_EQ(rt.exit_code, 0) << rt.err;
    const std::string own =
        dir + "/files/thread." + server_->user() + "@localhost." + std::to_string(id);
    EXPECT_NE(rf.err.find("mysqltrace: " + own +
                          ": No space left on device: trace of this thread stopped"),
              std::string::npos)
        << rf.err;
    EXPECT_NE(rt.err.find("mysqltrace: writing " + text_file +
                          " failed: No space left on device; this output is disabled"),
              std::string::npos)
        << rt.err;
    // Every statement was still traced, and the summary on stdout is whole.
    EXPECT_NE(rf.out.find("# statement/sql/select x" + std::to_string(kStatements) + ","),
              std::string::npos)
        << rf.out;
    EXPECT_NE(rt.err.find("mysqltrace: " + std::to_string(kStatements) + " statements"),
              std::string::npos)
        << rt.err;
    // The server never noticed.
    EXPECT_EQ(run_query(m, "select 1"), 0u);
    mysql_close(m);
}

INSTANTIATE_TEST_SUITE_P(Flavours, ServerTrace, ::testing::ValuesIn(all_flavours()),
                         flavour_param_name);

}  // namespace
