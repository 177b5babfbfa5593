// SPDX-License-Identifier: GPL-2.0-only
// The WL#6226 stage machine on recorded sessions (tests/data/protocol, made
// by scripts/record-protocol.py against MariaDB 10.11) and on hand-built
// streams for what a recording cannot show: TLS cleartext, >16 MiB packets,
// capture gaps, attaching mid-stream.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "output/protocol_text.h"
#include "protocol/constants.h"
#include "protocol/wl6226.h"
#include "unit/protocol_fixture.h"

namespace mysqltrace::protocol {
namespace {

using fixture::Collector;
using fixture::FixtureRecord;
using Seq = std::vector<std::string>;
using Vec = std::vector<uint8_t>;

// --- expected sequences, built from the protocol's steps -------------------

// In place, for sequences built in loops (hundreds of commands).
Seq &operator+=(Seq &a, const Seq &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}
Seq operator+(Seq a, const Seq &b) {
    a += b;
    return a;
}
Seq ev(const std::string &stage, const std::string &event) {
    return {stage + " " + event};
}
// n server packets: READ_PACKET + PACKET_RECEIVED each.
Seq rx(const std::string &stage, int n = 1) {
    Seq s;
    for (int i = 0; i < n; ++i) {
        s.push_back(stage + " READ_PACKET");
        s.push_back(stage + " PACKET_RECEIVED");
    }
    return s;
}
Seq command() {
    return {"READY_FOR_COMMAND SEND_COMMAND", "READY_FOR_COMMAND PACKET_SENT"};
}
Seq greeting() {
    return ev("CONNECTING", "CONNECTING") + ev("CONNECTING", "CONNECTED") +
           rx("WAIT_FOR_INIT_PACKET") + ev("WAIT_FOR_INIT_PACKET", "INIT_PACKET_RECEIVED");
}
// Greeting, handshake response, OK.
Seq login() {
    return greeting() + ev("AUTHENTICATE", "AUTH_PLUGIN") +
           ev("AUTHENTICATE", "SEND_AUTH_RESPONSE") + ev("AUTHENTICATE", "PACKET_SENT") +
           rx("AUTHENTICATE") + ev("AUTHENTICATE", "AUTHENTICATED");
}
// Column count, definitions and their EOF, rows and their EOF.
Seq result_set(int columns, int rows) {
    return rx("WAIT_FOR_RESULT") + rx("WAIT_FOR_FIELD_DEF", columns + 1) +
           rx("WAIT_FOR_ROW", rows + 1);
}
// An auth switch answered with one data packet.
Seq auth_switch(const Seq &reply) {
    return rx("AUTHENTICATE") + ev("AUTHENTICATE", "AUTH_PLUGIN") +
           ev("AUTHENTICATE", "SEND_AUTH_DATA") + ev("AUTHENTICATE", "PACKET_SENT") + reply;
}
Seq quit() {
    return command() + ev("READY_FOR_COMMAND", "DISCONNECTED");
}

struct Outcome {
    std::string command;
    CommandResult result;
    uint64_t rows;
};
std::vector<Outcome> outcomes(const Collector &c) {
    std::vector<Outcome> out;
    for (const auto &s : c.summaries) {
        out.push_back({std::string(s.command_name), s.result, s.rows});
    }
    return out;
}
bool operator==(const Outcome &a, const Outcome &b) {
    return a.command == b.command && a.result == b.result && a.rows == b.rows;
}
std::ostream &operator<<(std::ostream &os, const Outcome &o) {
    return os << o.command << "/" << command_result_name(o.result) << "/" << o.rows;
}

constexpr auto OK = CommandResult::ok;
constexpr auto ERR = CommandResult::error;
constexpr auto ROWS = CommandResult::rows;
constexpr auto NONE = CommandResult::no_reply;
constexpr auto REPLY = CommandResult::reply;
constexpr auto INCOMPLETE = CommandResult::incomplete;

Collector run(const std::vector<FixtureRecord> &recs, TracerOptions opt = {}, size_t from = 0,
              bool skip_connect = false, ConnectionStats *stats = nullptr) {
    Collector c;
    ConnectionTracer t(1, opt, c.on_event(), c.on_summary());
    fixture::replay(t, recs, from, SIZE_MAX, skip_connect);
    if (stats != nullptr) {
        *stats = t.stats();
    }
    return c;
}
Collector run(const std::string &name, TracerOptions opt = {}) {
    return run(fixture::load_fixture(name), opt);
}

const ProtocolEvent *find_event(const Collector &c, TraceEvent kind, const std::string &detail) {
    for (const auto &e : c.events) {
        if (e.event != kind) {
            continue;
        }
        for (const auto &d : e.details) {
            if (d == detail) {
                return &e;
            }
        }
    }
    return nullptr;
}

// Index of the first data record of dir whose bytes contain text.
size_t find_record(const std::vector<FixtureRecord> &recs, Direction dir, const std::string &text) {
    for (size_t i = 0; i < recs.size(); ++i) {
        const auto &r = recs[i];
        if (r.kind == FixtureRecord::Kind::data && r.dir == dir &&
            std::search(r.bytes.begin(), r.bytes.end(), text.begin(), text.end()) !=
                r.bytes.end()) {
            return i;
        }
    }
    ADD_FAILURE() << "no record with " << text;
    return 0;
}

// --- every recorded session: the exact event sequence and command outcomes --

struct Case {
    std::string fixture;
    Seq events;
    std::vector<Outcome> commands;
};

// sysbench's prepared statements: a prepare with its parameter and column
// definitions, each list ended by an EOF.
Seq prepare(int params, int columns) {
    Seq s = command() + rx("WAIT_FOR_PS_DESCRIPTION");
    if (params > 0) {
        s = s + rx("WAIT_FOR_PARAM_DEF", params + 1);
    }
    if (columns > 0) {
        s = s + rx("WAIT_FOR_FIELD_DEF", columns + 1);
    }
    return s;
}
// An execute answered by rows of one column: MariaDB skips the column
// definition the prepare sent and sends only its EOF.
Seq execute_rows(int rows) {
    return command() + rx("WAIT_FOR_RESULT") + rx("WAIT_FOR_FIELD_DEF") +
           rx("WAIT_FOR_ROW", rows + 1);
}

// sysbench oltp_point_select, one thread, 400 events: one prepare, 400
// executes of one row each, close, quit.
Case sysbench_point_select() {
    Case c{"sysbench_point_select", login() + prepare(1, 1), {{"COM_STMT_PREPARE", OK, 0}}};
    for (int i = 0; i < 400; ++i) {
        c.events += execute_rows(1);
        c.commands.push_back({"COM_STMT_EXECUTE", ROWS, 1});
    }
    c.events += command() + quit();
    c.commands.push_back({"COM_STMT_CLOSE", NONE, 0});
    c.commands.push_back({"COM_QUIT", NONE, 0});
    return c;
}

// sysbench oltp_read_only, one thread, 4 transactions: seven prepares, then
// per transaction BEGIN, 10 point selects, a range of 100 rows, a SUM, the
// range ORDER BY c and DISTINCT c (100 rows each), COMMIT; seven closes.
Case sysbench_read_only() {
    Case c{"sysbench_read_only",
           login() + prepare(1, 1) + prepare(0, 0) + prepare(0, 0) + prepare(2, 1) + prepare(2, 1) +
               prepare(2, 1) + prepare(2, 1),
           {}};
    for (int i = 0; i < 7; ++i) {
        c.commands.push_back({"COM_STMT_PREPARE", OK, 0});
    }
    const Seq ok = command() + rx("WAIT_FOR_RESULT");
    for (int t = 0; t < 4; ++t) {
        c.events += ok;
        c.commands.push_back({"COM_STMT_EXECUTE", OK, 0});
        for (int i = 0; i < 10; ++i) {
            c.events += execute_rows(1);
            c.commands.push_back({"COM_STMT_EXECUTE", ROWS, 1});
        }
        for (int rows : {100, 1, 100, 100}) {
            c.events += execute_rows(rows);
            c.commands.push_back({"COM_STMT_EXECUTE", ROWS, static_cast<uint64_t>(rows)});
        }
        c.events += ok;
        c.commands.push_back({"COM_STMT_EXECUTE", OK, 0});
    }
    for (int i = 0; i < 7; ++i) {
        c.events += command();
        c.commands.push_back({"COM_STMT_CLOSE", NONE, 0});
    }
    c.events += quit();
    c.commands.push_back({"COM_QUIT", NONE, 0});
    return c;
}

std::vector<Case> cases() {
    return {
        {"connect_query",
         login() + command() + result_set(3, 1) + command() + result_set(3, 3) + command() +
             result_set(6, 0) + command() + rx("WAIT_FOR_RESULT") + command() +
             rx("WAIT_FOR_RESULT") + command() + rx("WAIT_FOR_RESULT") + command() +
             rx("WAIT_FOR_RESULT") + quit(),
         {{"COM_QUERY", ROWS, 1},
          {"COM_QUERY", ROWS, 3},
          {"COM_QUERY", ROWS, 0},
          {"COM_QUERY", ERR, 0},
          {"COM_QUERY", OK, 0},
          {"COM_QUERY", OK, 0},
          {"COM_QUERY", OK, 0},
          {"COM_QUIT", NONE, 0}}},
        {"auth_switch_ed25519",
         greeting() + ev("AUTHENTICATE", "AUTH_PLUGIN") + ev("AUTHENTICATE", "SEND_AUTH_RESPONSE") +
             ev("AUTHENTICATE", "PACKET_SENT") +
             auth_switch(rx("AUTHENTICATE") + ev("AUTHENTICATE", "AUTHENTICATED")) + command() +
             result_set(1, 1) + quit(),
         {{"COM_QUERY", ROWS, 1}, {"COM_QUIT", NONE, 0}}},
        {"multi_statements",
         login() + command() + result_set(1, 1) + result_set(2, 1) + rx("WAIT_FOR_RESULT") +
             command() + result_set(1, 1) + rx("WAIT_FOR_RESULT") + quit(),
         {{"COM_QUERY", ROWS, 2}, {"COM_QUERY", ERR, 1}, {"COM_QUIT", NONE, 0}}},
        {"prepared",
         login() +
             // prepare: 2 parameters, 5 columns, each list ended by EOF
             command() + rx("WAIT_FOR_PS_DESCRIPTION") + rx("WAIT_FOR_PARAM_DEF", 3) +
             rx("WAIT_FOR_FIELD_DEF", 6) +
             // two executes: MariaDB skips the cached column definitions
             command() + rx("WAIT_FOR_RESULT") + rx("WAIT_FOR_FIELD_DEF") + rx("WAIT_FOR_ROW", 4) +
             command() + rx("WAIT_FOR_RESULT") + rx("WAIT_FOR_FIELD_DEF") + rx("WAIT_FOR_ROW", 3) +
             // reset, close (no reply)
             command() + rx("WAIT_FOR_RESULT") + command() +
             // prepare an UPDATE, two long data packets, execute, close
             command() + rx("WAIT_FOR_PS_DESCRIPTION") + rx("WAIT_FOR_PARAM_DEF", 3) + command() +
             command() + command() + rx("WAIT_FOR_RESULT") + command() +
             // a prepare that fails
             command() + rx("WAIT_FOR_PS_DESCRIPTION") + quit(),
         {{"COM_STMT_PREPARE", OK, 0},
          {"COM_STMT_EXECUTE", ROWS, 3},
          {"COM_STMT_EXECUTE", ROWS, 2},
          {"COM_STMT_RESET", OK, 0},
          {"COM_STMT_CLOSE", NONE, 0},
          {"COM_STMT_PREPARE", OK, 0},
          {"COM_STMT_SEND_LONG_DATA", NONE, 0},
          {"COM_STMT_SEND_LONG_DATA", NONE, 0},
          {"COM_STMT_EXECUTE", OK, 0},
          {"COM_STMT_CLOSE", NONE, 0},
          {"COM_STMT_PREPARE", ERR, 0},
          {"COM_QUIT", NONE, 0}}},
        {"bulk_direct_cursor",
         login() + command() + rx("WAIT_FOR_PS_DESCRIPTION") + rx("WAIT_FOR_PARAM_DEF", 3) +
             command() + rx("WAIT_FOR_RESULT") + command() +
             // prepare and execute sent together, replies read in order
             command() + command() + rx("WAIT_FOR_PS_DESCRIPTION") + rx("WAIT_FOR_PARAM_DEF", 2) +
             rx("WAIT_FOR_FIELD_DEF", 2) + rx("WAIT_FOR_RESULT") + rx("WAIT_FOR_FIELD_DEF") +
             rx("WAIT_FOR_ROW", 2) + command() +
             // a read-only cursor: execute returns metadata only, rows by fetch
             command() + rx("WAIT_FOR_PS_DESCRIPTION") + rx("WAIT_FOR_FIELD_DEF", 3) + command() +
             rx("WAIT_FOR_RESULT") + rx("WAIT_FOR_FIELD_DEF", 3) + command() +
             rx("WAIT_FOR_ROW", 3) + command() + rx("WAIT_FOR_ROW", 2) + command() + quit(),
         {{"COM_STMT_PREPARE", OK, 0},
          {"COM_STMT_BULK_EXECUTE", OK, 0},
          {"COM_STMT_CLOSE", NONE, 0},
          {"COM_STMT_PREPARE", OK, 0},
          {"COM_STMT_EXECUTE", ROWS, 1},
          {"COM_STMT_CLOSE", NONE, 0},
          {"COM_STMT_PREPARE", OK, 0},
          {"COM_STMT_EXECUTE", ROWS, 0},
          {"COM_STMT_FETCH", ROWS, 2},
          {"COM_STMT_FETCH", ROWS, 1},
          {"COM_STMT_CLOSE", NONE, 0},
          {"COM_QUIT", NONE, 0}}},
        {"local_infile",
         login() + command() + rx("WAIT_FOR_RESULT") + ev("FILE_REQUEST", "SEND_FILE") +
             ev("FILE_REQUEST", "PACKET_SENT") + ev("FILE_REQUEST", "SEND_FILE") +
             ev("FILE_REQUEST", "PACKET_SENT") + rx("WAIT_FOR_RESULT", 2) + command() +
             rx("WAIT_FOR_RESULT") + ev("FILE_REQUEST", "SEND_FILE") +
             ev("FILE_REQUEST", "PACKET_SENT") + rx("WAIT_FOR_RESULT", 2) + quit(),
         {{"COM_QUERY", OK, 0}, {"COM_QUERY", OK, 0}, {"COM_QUIT", NONE, 0}}},
        {"change_user",
         login() + command() + result_set(1, 1) +
             // to a native-password user: the server still switches (new scramble)
             ev("READY_FOR_COMMAND", "AUTH_PLUGIN") + command() +
             auth_switch(rx("AUTHENTICATE") + ev("AUTHENTICATE", "AUTHENTICATED")) + command() +
             result_set(1, 1) +
             // to an ed25519 user
             ev("READY_FOR_COMMAND", "AUTH_PLUGIN") + command() +
             auth_switch(rx("AUTHENTICATE") + ev("AUTHENTICATE", "AUTHENTICATED")) +
             // with a wrong password: ERR, and the session goes on
             ev("READY_FOR_COMMAND", "AUTH_PLUGIN") + command() + auth_switch(rx("AUTHENTICATE")) +
             quit(),
         {{"COM_QUERY", ROWS, 1},
          {"COM_CHANGE_USER", OK, 0},
          {"COM_QUERY", ROWS, 1},
          {"COM_CHANGE_USER", OK, 0},
          {"COM_CHANGE_USER", ERR, 0},
          {"COM_QUIT", NONE, 0}}},
        {"admin_commands",
         login() + command() + rx("WAIT_FOR_RESULT") + command() + rx("WAIT_FOR_RESULT") +
             command() + rx("WAIT_FOR_RESULT") + command() + rx("WAIT_FOR_PACKET") + command() +
             rx("WAIT_FOR_FIELD_DEF", 7) + command() + result_set(9, 1) + command() +
             rx("WAIT_FOR_RESULT") + command() + rx("WAIT_FOR_RESULT") + quit(),
         {{"COM_PING", OK, 0},
          {"COM_INIT_DB", OK, 0},
          {"COM_INIT_DB", ERR, 0},
          {"COM_STATISTICS", REPLY, 0},
          {"COM_FIELD_LIST", OK, 0},
          {"COM_PROCESS_INFO", ROWS, 1},
          {"COM_SET_OPTION", OK, 0},
          {"COM_RESET_CONNECTION", OK, 0},
          {"COM_QUIT", NONE, 0}}},
        {"compressed_cli",
         login() + command() + result_set(1, 1) + command() + result_set(2, 9) + quit(),
         {{"COM_QUERY", ROWS, 1}, {"COM_QUERY", ROWS, 9}, {"COM_QUIT", NONE, 0}}},
        {"compressed_c",
         login() + command() + result_set(2, 1) + command() + result_set(2, 9) + quit(),
         {{"COM_QUERY", ROWS, 1}, {"COM_QUERY", ROWS, 9}, {"COM_QUIT", NONE, 0}}},
        {"pymysql",
         login() + command() + result_set(3, 9) + command() + rx("WAIT_FOR_RESULT") + command() +
             rx("WAIT_FOR_RESULT") + quit(),
         {{"COM_QUERY", ROWS, 9},
          {"COM_QUERY", OK, 0},
          {"COM_QUERY", ERR, 0},
          {"COM_QUIT", NONE, 0}}},
        {"deprecate_eof_raw",
         // No EOF after definitions; rows end with a 0xFE-led OK.
         login() + command() + rx("WAIT_FOR_RESULT") + rx("WAIT_FOR_FIELD_DEF", 2) +
             rx("WAIT_FOR_ROW", 10) + command() + rx("WAIT_FOR_RESULT") +
             rx("WAIT_FOR_FIELD_DEF", 6) + rx("WAIT_FOR_ROW", 1) + command() +
             rx("WAIT_FOR_RESULT") + rx("WAIT_FOR_FIELD_DEF", 1) + rx("WAIT_FOR_ROW", 2) +
             rx("WAIT_FOR_RESULT") + rx("WAIT_FOR_FIELD_DEF", 1) + rx("WAIT_FOR_ROW", 2) +
             // prepare: no EOFs; executes skip cached metadata and go straight to rows
             command() + rx("WAIT_FOR_PS_DESCRIPTION") + rx("WAIT_FOR_PARAM_DEF") +
             rx("WAIT_FOR_FIELD_DEF", 2) + command() + rx("WAIT_FOR_RESULT") +
             rx("WAIT_FOR_ROW", 2) + command() + rx("WAIT_FOR_RESULT") + rx("WAIT_FOR_ROW", 2) +
             command() + quit(),
         {{"COM_QUERY", ROWS, 9},
          {"COM_QUERY", ROWS, 0},
          {"COM_QUERY", ROWS, 2},
          {"COM_STMT_PREPARE", OK, 0},
          {"COM_STMT_EXECUTE", ROWS, 1},
          {"COM_STMT_EXECUTE", ROWS, 1},
          {"COM_STMT_CLOSE", NONE, 0},
          {"COM_QUIT", NONE, 0}}},
        sysbench_point_select(),
        sysbench_read_only(),
    };
}

class Recorded : public ::testing::TestWithParam<Case> {};

TEST_P(Recorded, ExactEventSequenceAndOutcomes) {
    const Case &c = GetParam();
    ConnectionStats stats;
    Collector got = run(fixture::load_fixture(c.fixture), {}, 0, false, &stats);
    EXPECT_EQ(got.sequence(), c.events);
    EXPECT_EQ(outcomes(got), c.commands);
    EXPECT_EQ(stats.skipped_bytes, 0u);
    EXPECT_EQ(stats.sync_losses, 0u);
    // Timestamps never go backwards and every event names the connection.
    for (size_t i = 0; i < got.events.size(); ++i) {
        EXPECT_EQ(got.events[i].conn, 1u);
        EXPECT_EQ(got.events[i].pid, fixture::kPid);
        if (i > 0) {
            EXPECT_GE(got.events[i].ts_ns, got.events[i - 1].ts_ns);
        }
    }
}

// The capture may cut the stream anywhere: one byte per read, or odd sizes.
TEST_P(Recorded, ChunkingDoesNotChangeTheTrace) {
    const Case &c = GetParam();
    auto recs = fixture::load_fixture(c.fixture);
    Collector whole = run(recs);
    for (size_t n : {1, 3, 64}) {
        Collector pieces = run(fixture::rechunk(recs, n));
        EXPECT_EQ(pieces.sequence(), whole.sequence()) << "chunks of " << n;
        ASSERT_EQ(pieces.events.size(), whole.events.size());
        for (size_t i = 0; i < whole.events.size(); ++i) {
            EXPECT_EQ(pieces.events[i].details, whole.events[i].details) << "event " << i;
        }
        EXPECT_EQ(outcomes(pieces), outcomes(whole));
    }
}

INSTANTIATE_TEST_SUITE_P(Protocol, Recorded, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.fixture; });

// --- decoded fields ------------------------------------------------------------

TEST(Wl6226, ConnectQueryFields) {
    Collector c = run("connect_query");
    auto init = c.of(TraceEvent::init_packet_received);
    ASSERT_EQ(init.size(), 1u);
    EXPECT_EQ(init[0]->server_version, "5.5.5-10.11.19-MariaDB-0+deb12u1");
    EXPECT_EQ(init[0]->server_connection_id, 6u);
    EXPECT_EQ(init[0]->auth_plugin, "mysql_native_password");

    auto plugin = c.of(TraceEvent::auth_plugin);
    ASSERT_EQ(plugin.size(), 1u);
    EXPECT_EQ(plugin[0]->details, Seq{"Using authentication plugin: mysql_native_password"});

    auto resp = c.of(TraceEvent::send_auth_response);
    ASSERT_EQ(resp.size(), 1u);
    EXPECT_EQ(resp[0]->user, "mt");
    EXPECT_EQ(resp[0]->database, "mt");
    EXPECT_EQ(resp[0]->bytes, 190u);
    EXPECT_EQ(resp[0]->seq, 1);
    EXPECT_EQ(resp[0]->details[2], "Auth response: 20 bytes");

    auto cmds = c.of(TraceEvent::send_command);
    ASSERT_EQ(cmds.size(), 8u);
    EXPECT_EQ(cmds[0]->command_name, "COM_QUERY");
    EXPECT_EQ(cmds[0]->command, com::query);
    EXPECT_EQ(cmds[0]->sql, "SELECT 1, 'abc', NULL");
    EXPECT_EQ(cmds[0]->details, Seq{"QUERY: SELECT 1, 'abc', NULL"});
    EXPECT_EQ(cmds[0]->bytes, 22u);
    EXPECT_EQ(cmds[0]->seq, 0);
    EXPECT_EQ(cmds[7]->details, Seq{"QUIT"});

    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Expecting result set with 3 columns"),
              nullptr);
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Field: t.price NEWDECIMAL"), nullptr);
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 1, 'abc', NULL"), nullptr);
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 2, 'pear', 2.50"), nullptr);
    const ProtocolEvent *end = find_event(c, TraceEvent::packet_received, "End of data; 3 rows");
    ASSERT_NE(end, nullptr);
    EXPECT_EQ(end->row_count, 3u);
    EXPECT_EQ(end->stage, Stage::wait_for_row);

    const ProtocolEvent *err =
        find_event(c, TraceEvent::packet_received,
                   "Server error 1146 (42S02): Table 'mt.nosuch' doesn't exist");
    ASSERT_NE(err, nullptr);
    EXPECT_EQ(err->error_code, 1146);
    EXPECT_EQ(err->sqlstate, "42S02");
    EXPECT_EQ(err->error_message, "Table 'mt.nosuch' doesn't exist");
    EXPECT_EQ(err->command_name, "COM_QUERY");

    const ProtocolEvent *ok =
        find_event(c, TraceEvent::packet_received, "OK from server; affected rows: 1");
    ASSERT_NE(ok, nullptr);
    EXPECT_EQ(ok->affected_rows, 1u);
    EXPECT_EQ(ok->last_insert_id, 4u);
    EXPECT_EQ(ok->status_flags, status::autocommit);
    EXPECT_EQ(ok->details[1], "last insert id: 4; warnings: 0");

    // The password in CREATE USER never reaches an event or a summary.
    EXPECT_EQ(cmds[5]->sql,
              "CREATE USER IF NOT EXISTS 'tmp'@'localhost' IDENTIFIED BY '<redacted>'");
    for (const auto &e : c.events) {
        for (const auto &d : e.details) {
            EXPECT_EQ(d.find("s3cret"), std::string::npos);
        }
    }
    EXPECT_EQ(c.summaries[5].sql, cmds[5]->sql);
}

TEST(Wl6226, SummaryCountsBytesAndServerWait) {
    auto recs = fixture::load_fixture("connect_query");
    Collector c = run(recs);
    ASSERT_GE(c.summaries.size(), 2u);
    const CommandSummary &s = c.summaries[0];
    EXPECT_EQ(s.command_name, "COM_QUERY");
    EXPECT_EQ(s.sql, "SELECT 1, 'abc', NULL");
    EXPECT_EQ(s.result_sets, 1u);
    EXPECT_EQ(s.bytes_sent, recs[4].bytes.size());
    EXPECT_EQ(s.bytes_received, recs[5].bytes.size());
    EXPECT_EQ(s.server_wait_ns, (recs[5].t_us - recs[4].t_us) * 1000);
    EXPECT_EQ(s.ts_start_ns, 1'000'000'000ULL + recs[4].t_us * 1000);
    EXPECT_EQ(s.ts_end_ns, 1'000'000'000ULL + recs[5].t_us * 1000);
    EXPECT_EQ(s.pid, fixture::kPid);
    EXPECT_EQ(c.summaries[4].affected_rows, 1u);
    EXPECT_EQ(c.summaries[3].error_code, 1146);
}

TEST(Wl6226, AuthSwitchToEd25519) {
    Collector c = run("auth_switch_ed25519");
    auto plugins = c.of(TraceEvent::auth_plugin);
    ASSERT_EQ(plugins.size(), 2u);
    EXPECT_EQ(plugins[0]->auth_plugin, "mysql_native_password");
    EXPECT_EQ(plugins[1]->auth_plugin, "client_ed25519");
    EXPECT_NE(find_event(c, TraceEvent::packet_received,
                         "Auth switch request: plugin client_ed25519, 32 bytes of data"),
              nullptr);
    auto data = c.of(TraceEvent::send_auth_data);
    ASSERT_EQ(data.size(), 1u);
    EXPECT_EQ(data[0]->details, Seq{"Auth data: 64 bytes"});
    EXPECT_EQ(data[0]->bytes, 64u);
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 'mted@127.0.0.1'"), nullptr);
}

TEST(Wl6226, MultiStatementResultSets) {
    Collector c = run("multi_statements");
    auto more = c.details(TraceEvent::packet_received);
    EXPECT_EQ(std::count(more.begin(), more.end(), "Expecting next result set"), 3);
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 'x', 2"), nullptr);
    EXPECT_EQ(c.summaries[0].result_sets, 2u);
    EXPECT_EQ(c.summaries[1].result_sets, 1u);
    EXPECT_EQ(c.summaries[1].error_code, 1146);
}

TEST(Wl6226, PreparedStatementsDecodeBinaryRowsAndParameters) {
    Collector c = run("prepared");
    const ProtocolEvent *prep =
        find_event(c, TraceEvent::packet_received, "Prepared statement 1; params: 2, cols: 5");
    ASSERT_NE(prep, nullptr);
    EXPECT_EQ(prep->statement_id, 1u);
    EXPECT_EQ(prep->column_count, 5u);
    auto cmds = c.of(TraceEvent::send_command);
    EXPECT_EQ(cmds[0]->details,
              Seq{"STMT_PREPARE: SELECT id, name, price, created, ratio FROM t WHERE id > ? AND "
                  "name <> ?"});
    EXPECT_EQ(cmds[1]->statement_id, 1u);
    EXPECT_EQ(cmds[1]->details,
              (Seq{"STMT_EXECUTE: 1",
                   "Statement: SELECT id, name, price, created, ratio FROM t WHERE id > ? AND "
                   "name <> ?",
                   "Parameters: 0, 'pear'"}));
    // The second execute does not resend parameter types.
    EXPECT_EQ(cmds[2]->details.back(), "Parameters: 1, 'pear'");
    // Binary rows: a row starting with 0x00 is a row here, not an OK packet.
    EXPECT_NE(find_event(c, TraceEvent::packet_received,
                         "Row: 1, 'apple', 1.25, '2024-01-02 03:04:05', 0.5"),
              nullptr);
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 3, 'plum', 0.75, NULL, 0.001"),
              nullptr);
    EXPECT_NE(find_event(c, TraceEvent::packet_received,
                         "column definitions skipped (client caches them)"),
              nullptr);
    EXPECT_EQ(cmds[6]->details[0], "STMT_SEND_LONG_DATA: 2, parameter 0, 10 bytes");
    EXPECT_EQ(cmds[8]->details.back(), "Parameters: <long data>, 2");
    EXPECT_NE(find_event(c, TraceEvent::packet_received,
                         "info: Rows matched: 1  Changed: 1  Warnings: 0"),
              nullptr);
    EXPECT_EQ(c.summaries[1].sql,
              "SELECT id, name, price, created, ratio FROM t WHERE id > ? AND name <> ?");
    EXPECT_EQ(c.summaries[1].statement_id, 1u);
}

TEST(Wl6226, BulkExecuteDirectAndCursor) {
    Collector c = run("bulk_direct_cursor");
    auto cmds = c.of(TraceEvent::send_command);
    EXPECT_EQ(cmds[1]->command_name, "COM_STMT_BULK_EXECUTE");
    EXPECT_EQ(cmds[1]->command, com::stmt_bulk_execute);
    EXPECT_EQ(cmds[1]->details, (Seq{"STMT_BULK_EXECUTE: 4, rows: 3",
                                     "Statement: INSERT INTO t (name, price) VALUES (?, ?)",
                                     "Parameters: 'kiwi', 1.5"}));
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "OK from server; affected rows: 3"),
              nullptr);
    EXPECT_EQ(cmds[4]->details, Seq{"STMT_EXECUTE: -1 (the statement prepared just before)"});
    // Its reply is matched after the prepare's, and the id resolved.
    EXPECT_EQ(c.summaries[4].statement_id, 5u);
    EXPECT_EQ(c.summaries[4].sql, "SELECT name FROM t WHERE id = ?");
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 'pear'"), nullptr);
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Cursor opened"), nullptr);
    EXPECT_EQ(cmds[8]->details[0], "STMT_FETCH: 6, rows: 2");
    // Fetched rows are binary and typed by the prepare's column definitions.
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 1, 'apple'"), nullptr);
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 3, 'plum'"), nullptr);
}

TEST(Wl6226, LocalInfileAndProgressReports) {
    Collector c = run("local_infile");
    EXPECT_NE(find_event(c, TraceEvent::packet_received,
                         "Server requests file: /tmp/mysqltrace-infile.csv"),
              nullptr);
    auto files = c.of(TraceEvent::send_file);
    ASSERT_EQ(files.size(), 3u);
    EXPECT_EQ(files[0]->bytes, 24u);
    EXPECT_EQ(files[1]->bytes, 0u);
    EXPECT_NE(find_event(c, TraceEvent::packet_sent, "File transfer done"), nullptr);
    // MariaDB's progress report is an ERR packet that ends nothing.
    const ProtocolEvent *progress = find_event(c, TraceEvent::packet_received,
                                               "Progress: stage 2 of 2 'End bulk insert' 0.000%");
    ASSERT_NE(progress, nullptr);
    EXPECT_EQ(progress->stage, Stage::wait_for_result);
    EXPECT_FALSE(progress->error_code);
    EXPECT_EQ(c.summaries[0].affected_rows, 2u);
    EXPECT_FALSE(c.summaries[0].error_code);
}

TEST(Wl6226, ChangeUserAuthenticatesAgain) {
    Collector c = run("change_user");
    auto cmds = c.of(TraceEvent::send_command);
    EXPECT_EQ(cmds[1]->details,
              (Seq{"CHANGE_USER: mt2", "Database: mt", "Auth response: 20 bytes"}));
    EXPECT_EQ(cmds[1]->user, "mt2");
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 'mt2@127.0.0.1'"), nullptr);
    const ProtocolEvent *denied = find_event(c, TraceEvent::packet_received,
                                             "Server error 1045 (28000): Access denied for user "
                                             "'mt2'@'127.0.0.1' (using password: YES)");
    ASSERT_NE(denied, nullptr);
    EXPECT_EQ(denied->stage, Stage::authenticate);
}

TEST(Wl6226, AdminCommands) {
    Collector c = run("admin_commands");
    auto cmds = c.of(TraceEvent::send_command);
    Seq first;
    for (const auto *e : cmds) {
        first.push_back(e->details.at(0));
    }
    EXPECT_EQ(first,
              (Seq{"PING", "INIT_DB: mt", "INIT_DB: nosuchdb", "STATISTICS", "FIELD_LIST: t",
                   "PROCESS_INFO", "SET_OPTION: MULTI_STATEMENTS_ON", "RESET_CONNECTION", "QUIT"}));
    auto stat = c.of(TraceEvent::packet_received);
    bool saw_uptime = false;
    for (const auto *e : stat) {
        if (e->stage == Stage::wait_for_packet) {
            saw_uptime = e->details.at(0).rfind("Uptime: ", 0) == 0;
        }
    }
    EXPECT_TRUE(saw_uptime);
    EXPECT_NE(find_event(c, TraceEvent::packet_received,
                         "Server error 1049 (42000): Unknown database 'nosuchdb'"),
              nullptr);
}

TEST(Wl6226, CompressedProtocolIsDecompressed) {
    ConnectionStats stats;
    Collector c = run(fixture::load_fixture("compressed_cli"), {}, 0, false, &stats);
    EXPECT_GT(stats.compressed_frames, 0u);
    EXPECT_EQ(stats.inflate_errors, 0u);
    auto cmds = c.of(TraceEvent::send_command);
    EXPECT_EQ(cmds[0]->sql, "SELECT REPEAT('xyz', 500) AS big");
    const ProtocolEvent *row = nullptr;
    for (const auto &e : c.events) {
        if (e.stage == Stage::wait_for_row && e.bytes && *e.bytes > 1500) {
            row = &e;
        }
    }
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(*row->bytes, 3u + 1500u);  // 0xFC + 2-byte length, then the value
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 9, 'cherry'"), nullptr);
}

TEST(Wl6226, DeprecateEofAndCachedMetadata) {
    Collector c = run("deprecate_eof_raw");
    const ProtocolEvent *end = find_event(c, TraceEvent::packet_received, "End of data; 9 rows");
    ASSERT_NE(end, nullptr);
    // autocommit + SERVER_QUERY_NO_INDEX_USED (the ORDER BY scanned the table)
    EXPECT_EQ(end->status_flags, 0x22);
    EXPECT_EQ(c.summaries[2].result_sets, 2u);
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 2, 'pear'"), nullptr);
}

// --- secrets ----------------------------------------------------------------

TEST(Wl6226, SecretsStayOutUnlessAskedFor) {
    TracerOptions hidden;
    hidden.keep_packets = true;
    Collector c = run("connect_query", hidden);
    auto resp = c.of(TraceEvent::send_auth_response);
    EXPECT_TRUE(resp[0]->packet_redacted);
    EXPECT_TRUE(resp[0]->packet.empty());
    auto cmds = c.of(TraceEvent::send_command);
    EXPECT_FALSE(cmds[0]->packet_redacted);
    EXPECT_EQ(cmds[0]->packet.size(), 22u);
    EXPECT_TRUE(cmds[5]->packet_redacted);  // CREATE USER ... IDENTIFIED BY

    TracerOptions shown = hidden;
    shown.show_secrets = true;
    c = run("connect_query", shown);
    cmds = c.of(TraceEvent::send_command);
    EXPECT_EQ(cmds[5]->sql, "CREATE USER IF NOT EXISTS 'tmp'@'localhost' IDENTIFIED BY 's3cret'");
    EXPECT_FALSE(cmds[5]->packet_redacted);
    resp = c.of(TraceEvent::send_auth_response);
    EXPECT_FALSE(resp[0]->packet_redacted);
    EXPECT_EQ(resp[0]->details[2].rfind("Auth response: 09f047eb", 0), 0u);

    Collector cu = run("change_user", hidden);
    for (const auto *e : cu.of(TraceEvent::send_auth_data)) {
        EXPECT_TRUE(e->packet_redacted);
    }
    EXPECT_TRUE(cu.of(TraceEvent::send_command)[1]->packet_redacted);
}

// --- attaching mid-stream -----------------------------------------------------

Seq tail_from_command(const Seq &full, size_t nth_command) {
    size_t seen = 0;
    for (size_t i = 0; i < full.size(); ++i) {
        if (full[i] == "READY_FOR_COMMAND SEND_COMMAND" && seen++ == nth_command) {
            return Seq(full.begin() + static_cast<ptrdiff_t>(i), full.end());
        }
    }
    return {};
}

TEST(Wl6226, AttachMidStreamResynchronisesAtNextCommand) {
    auto recs = fixture::load_fixture("connect_query");
    Collector full = run(recs);
    // Attach while the first query's result is on its way.
    size_t from = find_record(recs, Direction::server_to_client, "abc");
    ConnectionStats stats;
    Collector c = run(recs, {}, from, true, &stats);
    ASSERT_FALSE(c.events.empty());
    EXPECT_EQ(c.sequence(), tail_from_command(full.sequence(), 1));
    EXPECT_EQ(c.events[0].details.at(0),
              "connection first seen mid-stream; resynchronised at this command (" +
                  std::to_string(recs[from].bytes.size()) + " bytes skipped)");
    EXPECT_EQ(c.events[0].sql, "SELECT id, name, price FROM t ORDER BY id");
    EXPECT_EQ(stats.skipped_bytes, recs[from].bytes.size());
    EXPECT_EQ(stats.resyncs, 1u);
    // Rows are decoded as well as with the handshake seen.
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 2, 'pear', 2.50"), nullptr);
    EXPECT_EQ(outcomes(c).front(), (Outcome{"COM_QUERY", ROWS, 3}));
}

TEST(Wl6226, AttachAtTheGreetingWithoutConnect) {
    auto recs = fixture::load_fixture("connect_query");
    Collector full = run(recs);
    Collector c = run(recs, {}, 0, true);
    Seq fs = full.sequence();
    Seq expected(fs.begin() + 2, fs.end());
    EXPECT_EQ(c.sequence(), expected);
    EXPECT_EQ(c.events[0].details.at(0), "connection first seen at the server greeting");
}

TEST(Wl6226, AttachMidStreamToCompressedConnection) {
    auto recs = fixture::load_fixture("compressed_c");
    Collector full = run(recs);
    // Records: connect, greeting, response, OK, query 1, its result, query 2.
    const size_t from = 6;
    ASSERT_EQ(recs[from].dir, Direction::client_to_server);
    ConnectionStats stats;
    Collector c = run(recs, {}, from, true, &stats);
    EXPECT_EQ(c.sequence(), tail_from_command(full.sequence(), 1));
    EXPECT_GT(stats.compressed_frames, 0u);
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 9, 'cherry'"), nullptr);
}

TEST(Wl6226, AttachMidStreamInfersDeprecatedEof) {
    // Without the handshake the tracer cannot know CLIENT_DEPRECATE_EOF was
    // negotiated; the replies themselves tell.
    auto recs = fixture::load_fixture("deprecate_eof_raw");
    Collector full = run(recs);
    size_t from = find_record(recs, Direction::client_to_server, "SELECT id, name FROM t ORDER");
    Collector c = run(recs, {}, from, true);
    EXPECT_EQ(c.sequence(), tail_from_command(full.sequence(), 0));
    EXPECT_EQ(outcomes(c), outcomes(full));
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 1, 'apple'"), nullptr);
}

TEST(Wl6226, AttachAfterThePrepareSaysWhatItCannotShow) {
    // sysbench's executes after the prepare: MariaDB skips the column
    // definitions the client caches, so a trace that begins here never sees
    // the row's column types, and says so instead of an empty "Row: "; nor
    // the statement's text, and says that too.
    auto recs = fixture::load_fixture("sysbench_point_select");
    Collector full = run(recs);
    size_t from = 0;
    int executes = 0;
    for (size_t i = 0; i < recs.size() && from == 0; ++i) {
        const auto &r = recs[i];
        if (r.kind == FixtureRecord::Kind::data && r.dir == Direction::client_to_server &&
            r.bytes.size() > 4 && r.bytes[4] == com::stmt_execute && ++executes == 2) {
            from = i;
        }
    }
    ASSERT_GT(from, 0u);
    Collector c = run(recs, {}, from, true);
    EXPECT_EQ(c.sequence(), tail_from_command(full.sequence(), 2));
    auto rows = c.of(TraceEvent::packet_received);
    const std::string why =
        " bytes; column types unknown: the statement was prepared before the trace began)";
    size_t unknown = 0;
    for (const auto *e : rows) {
        for (const auto &d : e->details) {
            EXPECT_NE(d, "Row: ");
            if (d.starts_with("Received next row (") && d.ends_with(why)) {
                EXPECT_EQ(d, "Received next row (" + std::to_string(*e->bytes) + why);
                ++unknown;
            }
        }
    }
    // One row for each of the 399 executes the trace saw.
    EXPECT_EQ(unknown, 399u);
    // Each execute says its statement's text went by before the trace.
    size_t executes_seen = 0;
    for (const auto *e : c.of(TraceEvent::send_command)) {
        if (e->command != com::stmt_execute) {
            continue;
        }
        ++executes_seen;
        ASSERT_GE(e->details.size(), 2u);
        EXPECT_EQ(e->details.back(), "Statement: unknown (prepared before the trace began)");
        EXPECT_EQ(e->details[e->details.size() - 2], "STMT_EXECUTE: 1");
    }
    EXPECT_EQ(executes_seen, 399u);
    // From the start, the prepare's column definitions type the rows.
    size_t typed = 0;
    for (const auto *e : full.of(TraceEvent::packet_received)) {
        for (const auto &d : e->details) {
            typed += d.starts_with("Row: '") ? 1 : 0;
        }
    }
    EXPECT_EQ(typed, 400u);
}

TEST(Wl6226, NonMysqlTrafficEmitsNothing) {
    Collector c;
    ConnectionTracer t(9, {}, c.on_event(), c.on_summary());
    std::string req = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    t.feed(Direction::client_to_server, Source::socket,
           reinterpret_cast<const uint8_t *>(req.data()), req.size(), req.size(), 1, 1, 1);
    t.feed(Direction::server_to_client, Source::socket,
           reinterpret_cast<const uint8_t *>(resp.data()), resp.size(), resp.size(), 2, 1, 1);
    t.on_close(3, 1, 1);
    EXPECT_TRUE(c.events.empty());
    EXPECT_TRUE(c.summaries.empty());
    EXPECT_EQ(t.stats().skipped_bytes, req.size() + resp.size());
    EXPECT_FALSE(t.synced());
}

// --- capture gaps --------------------------------------------------------------

TEST(Wl6226, GapInAResultLosesOnlyThatCommand) {
    auto recs = fixture::load_fixture("connect_query");
    Collector full = run(recs);
    size_t cut = find_record(recs, Direction::server_to_client, "apple");
    // The snap length kept 50 bytes of the read: count, one definition and
    // the start of the next.
    auto &r = recs[cut];
    r.missing = r.bytes.size() - 50;
    r.bytes.resize(50);
    ConnectionStats stats;
    Collector c = run(recs, {}, 0, false, &stats);
    Seq fs = full.sequence();
    Seq expected(fs.begin(), fs.begin() + static_cast<ptrdiff_t>(login().size()));
    expected = expected + command() + result_set(3, 1) + command() + rx("WAIT_FOR_RESULT") +
               rx("WAIT_FOR_FIELD_DEF", 2) + tail_from_command(fs, 2);
    EXPECT_EQ(c.sequence(), expected);
    // The cut definition is reported as such, never guessed at.
    const ProtocolEvent *partial =
        find_event(c, TraceEvent::packet_received, "Received next field definition");
    ASSERT_NE(partial, nullptr);
    EXPECT_TRUE(partial->truncated);
    EXPECT_EQ(partial->bytes, 35u);
    // The command whose reply was lost ends as incomplete when the client
    // moves on; only the server direction was lost, and it picks up at the
    // next reply.
    EXPECT_EQ(outcomes(c)[1], (Outcome{"COM_QUERY", INCOMPLETE, 0}));
    EXPECT_EQ(outcomes(c)[2], (Outcome{"COM_QUERY", ROWS, 0}));
    // Every byte of the lost reply is still counted.
    EXPECT_EQ(c.summaries[1].bytes_received, full.summaries[1].bytes_received);
    auto cmds = c.of(TraceEvent::send_command);
    // What was framed: the column count and the two definitions, one cut.
    uint64_t framed = 0;
    for (const auto &e : c.events) {
        if (e.event == TraceEvent::packet_received && e.command_name == "COM_QUERY" &&
            e.ts_ns >= cmds[1]->ts_ns && e.ts_ns < cmds[2]->ts_ns) {
            framed += 4 + e.bytes.value_or(0);
        }
    }
    EXPECT_EQ(framed, 5u + 36 + 39);
    const uint64_t skipped = full.summaries[1].bytes_received - framed;
    EXPECT_EQ(cmds[2]->details.at(0),
              "the capture lost the framing of the reply to COM_QUERY after 0 rows; " +
                  std::to_string(skipped) + " bytes of it were skipped");
    EXPECT_EQ(stats.sync_losses, 1u);
    EXPECT_EQ(stats.resyncs, 0u);
    EXPECT_EQ(stats.gap_bytes, r.missing);
}

TEST(Wl6226, GapInACommandKeepsItsStart) {
    auto recs = fixture::load_fixture("connect_query");
    Collector full = run(recs);
    size_t cut = find_record(recs, Direction::client_to_server, "ORDER BY");
    auto &r = recs[cut];
    r.missing = r.bytes.size() - 12;
    r.bytes.resize(12);
    Collector c = run(recs);
    EXPECT_EQ(c.sequence(), full.sequence());
    auto cmds = c.of(TraceEvent::send_command);
    EXPECT_EQ(cmds[1]->sql, "SELECT ");
    EXPECT_TRUE(cmds[1]->truncated);
    EXPECT_EQ(cmds[1]->bytes, 42u);
    // How much was kept depends on the capture's chunking: not said. The
    // statement's length does not.
    EXPECT_EQ(cmds[1]->details,
              (Seq{"QUERY: SELECT ", "statement cut by the capture; its length is 41 bytes"}));
    EXPECT_EQ(cmds[1]->sql_bytes, 41u);
    EXPECT_EQ(c.summaries[1].sql_bytes, 41u);
    EXPECT_EQ(outcomes(c), outcomes(full));
}

// --- TLS: socket bytes become records, cleartext comes from the TLS library --

std::vector<FixtureRecord> as_tls(const std::vector<FixtureRecord> &plain, uint64_t *junk_bytes) {
    std::vector<FixtureRecord> out;
    auto data = [](uint64_t t, Direction d, Source s, Vec bytes) {
        FixtureRecord r;
        r.t_us = t;
        r.dir = d;
        r.src = s;
        r.bytes = std::move(bytes);
        return r;
    };
    *junk_bytes = 0;
    auto junk = [&](uint64_t t, Direction d, size_t n) {
        Vec b = {0x17, 0x03, 0x03, static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)};
        b.resize(5 + n, 0xA5);
        *junk_bytes += b.size();
        return data(t, d, Source::socket, b);
    };
    // connect, greeting (now offering CLIENT_SSL)
    out.push_back(plain[0]);
    FixtureRecord greet = plain[1];
    size_t nul = std::find(greet.bytes.begin() + 5, greet.bytes.end(), 0) - greet.bytes.begin();
    greet.bytes[nul + 1 + 4 + 8 + 1 + 1] |= 0x08;  // CLIENT_SSL is bit 11
    out.push_back(greet);
    // SSL request: the response's first 32 bytes with CLIENT_SSL, sequence 1
    Vec resp = plain[2].bytes;
    resp[4 + 1] |= 0x08;
    Vec ssl = {32, 0, 0, 1};
    fixture::append(ssl, std::vector<uint8_t>(resp.begin() + 4, resp.begin() + 36));
    out.push_back(data(plain[2].t_us, Direction::client_to_server, Source::socket, ssl));
    out.push_back(junk(plain[2].t_us, Direction::client_to_server, 200));
    out.push_back(junk(plain[2].t_us, Direction::server_to_client, 1200));
    // Inside TLS the handshake sequence continues at 2.
    resp[3] = 2;
    out.push_back(data(plain[2].t_us, Direction::client_to_server, Source::tls_cleartext, resp));
    out.push_back(junk(plain[2].t_us, Direction::client_to_server, resp.size()));
    Vec ok = plain[3].bytes;
    ok[3] = 3;
    out.push_back(junk(plain[3].t_us, Direction::server_to_client, ok.size()));
    out.push_back(data(plain[3].t_us, Direction::server_to_client, Source::tls_cleartext, ok));
    for (size_t i = 4; i < plain.size(); ++i) {
        const auto &r = plain[i];
        if (r.kind != FixtureRecord::Kind::data) {
            out.push_back(r);
            continue;
        }
        out.push_back(junk(r.t_us, r.dir, r.bytes.size()));
        out.push_back(data(r.t_us, r.dir, Source::tls_cleartext, r.bytes));
    }
    return out;
}

TEST(Wl6226, TlsSessionFromCleartext) {
    auto plain = fixture::load_fixture("connect_query");
    Collector full = run(plain);
    uint64_t junk = 0;
    auto recs = as_tls(plain, &junk);
    Collector c;
    ConnectionTracer t(1, {}, c.on_event(), c.on_summary());
    fixture::replay(t, recs);
    Seq fs = full.sequence();
    Seq expected = greeting() + ev("AUTHENTICATE", "SEND_SSL_REQUEST") +
                   ev("SSL_NEGOTIATION", "SSL_CONNECT") + ev("SSL_NEGOTIATION", "SSL_CONNECTED") +
                   ev("AUTHENTICATE", "AUTH_PLUGIN") + ev("AUTHENTICATE", "SEND_AUTH_RESPONSE") +
                   ev("AUTHENTICATE", "PACKET_SENT") + rx("AUTHENTICATE") +
                   ev("AUTHENTICATE", "AUTHENTICATED") + tail_from_command(fs, 0);
    EXPECT_EQ(c.sequence(), expected);
    EXPECT_TRUE(t.tls());
    EXPECT_EQ(t.stats().tls_record_bytes, junk);
    EXPECT_EQ(outcomes(c), outcomes(full));
    auto ssl = c.of(TraceEvent::send_ssl_request);
    ASSERT_EQ(ssl.size(), 1u);
    EXPECT_EQ(ssl[0]->bytes, 32u);
    EXPECT_EQ(c.of(TraceEvent::send_auth_response)[0]->user, "mt");
}

TEST(Wl6226, TlsAttachMidStream) {
    auto plain = fixture::load_fixture("connect_query");
    Collector full = run(plain);
    uint64_t junk = 0;
    auto recs = as_tls(plain, &junk);
    size_t from = find_record(recs, Direction::client_to_server, "ORDER BY");
    Collector c = run(recs, {}, from, true);
    EXPECT_EQ(c.sequence(), tail_from_command(full.sequence(), 1));
}

// --- hand-built edge cases -----------------------------------------------------

using fixture::packet;

// A session logged in from the recording, ready for hand-made commands.
struct LoggedIn {
    Collector c;
    ConnectionTracer t{1, options(), c.on_event(), c.on_summary()};
    uint64_t ts = 2'000'000'000ULL;

    static TracerOptions options() {
        TracerOptions o;
        o.max_packet_keep = 1 << 20;
        return o;
    }
    LoggedIn() {
        auto recs = fixture::load_fixture("connect_query");
        fixture::replay(t, recs, 0, 4);
        c.events.clear();
    }
    void client(const Vec &b, size_t piece = SIZE_MAX) {
        send(Direction::client_to_server, b, piece);
    }
    void server(const Vec &b, size_t piece = SIZE_MAX) {
        send(Direction::server_to_client, b, piece);
    }
    void send(Direction d, const Vec &b, size_t piece) {
        for (size_t off = 0; off < b.size(); off += piece) {
            size_t n = std::min(piece, b.size() - off);
            t.feed(d, Source::socket, b.data() + off, n, n, ts += 1000, 7, 8);
        }
    }
};

Vec big_physical(uint8_t seq, uint8_t first, uint8_t fill) {
    Vec b(4 + 0xFFFFFF, fill);
    b[0] = b[1] = b[2] = 0xFF;
    b[3] = seq;
    b[4] = first;
    return b;
}

TEST(Wl6226, PacketsLargerThan16MiB) {
    LoggedIn s;
    // COM_QUERY of 16 MiB + 100 bytes: two physical packets.
    Vec q = big_physical(0, com::query, 'a');
    Vec rest(100, 'b');
    Vec second = packet(1, rest);
    q.insert(q.end(), second.begin(), second.end());
    s.client(q, 1 << 20);
    // One column, then a text row whose value is 17 MiB: its length prefix
    // is 0xFE, so the row starts like an EOF but is far longer.
    Vec def = {3, 'd',  'e',  'f',  0, 0, 0, 1, 'c',
               0, 0x0C, 0x21, 0x00, 0, 0, 0, 1, field_type::var_string,
               0, 0,    0,    0,    0};
    s.server(packet(2, {0x01}));
    s.server(packet(3, def));
    s.server(packet(4, {0xFE, 0, 0, 0x22, 0}));
    const uint64_t value = 17u << 20;
    Vec row = big_physical(5, 0xFE, 'v');
    for (int i = 0; i < 8; ++i) {
        row[5 + i] = static_cast<uint8_t>(value >> (8 * i));
    }
    uint64_t total = 9 + value;
    Vec row_rest = packet(6, Vec(total - 0xFFFFFF, 'v'));
    row.insert(row.end(), row_rest.begin(), row_rest.end());
    s.server(row, 1 << 20);
    s.server(packet(8, {0xFE, 0, 0, 0x02, 0}));

    EXPECT_EQ(s.c.sequence(), command() + result_set(1, 1));
    auto cmd = s.c.of(TraceEvent::send_command);
    ASSERT_EQ(cmd.size(), 1u);
    EXPECT_EQ(cmd[0]->bytes, 0xFFFFFFu + 100);
    EXPECT_TRUE(cmd[0]->truncated);
    EXPECT_EQ(cmd[0]->sql->size(), (1u << 20) - 1);
    EXPECT_EQ(cmd[0]->details.at(1),
              "statement longer than the keep limit: 1048575 of 16777314 "
              "bytes kept");
    const ProtocolEvent *r = find_event(s.c, TraceEvent::packet_received,
                                        "Received next row (17825801 bytes, not all kept)");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->bytes, total);
    EXPECT_EQ(r->stage, Stage::wait_for_row);
    EXPECT_EQ(s.c.summaries.at(0).rows, 1u);
    EXPECT_EQ(s.c.summaries.at(0).result, ROWS);
    EXPECT_EQ(s.c.summaries.at(0).bytes_sent, 0xFFFFFFu + 100 + 8);
}

TEST(Wl6226, UnsolicitedErrorWhenTheServerKillsTheConnection) {
    LoggedIn s;
    Vec err = {0xFF, 0x87, 0x07, '#', '7', '0', '1', '0', '0'};
    std::string msg = "Connection was killed";
    fixture::append(err, msg);
    s.server(packet(0, err));
    s.t.on_close(s.ts += 1000, 7, 8);
    EXPECT_EQ(s.c.sequence(), rx("READY_FOR_COMMAND") + ev("READY_FOR_COMMAND", "DISCONNECTED"));
    const auto &e = s.c.events[1];
    EXPECT_EQ(e.error_code, 1927);
    EXPECT_EQ(e.details, (Seq{"Server error 1927 (70100): Connection was killed",
                              "unsolicited packet from the server"}));
}

TEST(Wl6226, CloseWhileWaitingEndsTheCommandIncomplete) {
    LoggedIn s;
    Vec q = {com::query};
    std::string sql = "SELECT SLEEP(100)";
    fixture::append(q, sql);
    s.client(packet(0, q));
    s.t.on_error(s.ts += 1000, 7, 8, 2013, "HY000", "Lost connection to server during query");
    s.t.on_close(s.ts += 1000, 7, 8);
    EXPECT_EQ(s.c.sequence(),
              command() + ev("WAIT_FOR_RESULT", "ERROR") + ev("WAIT_FOR_RESULT", "DISCONNECTED"));
    EXPECT_EQ(s.c.events[2].details,
              Seq{"Client error 2013 (HY000): Lost connection to server during query"});
    EXPECT_EQ(s.c.events[2].error_code, 2013);
    ASSERT_EQ(s.c.summaries.size(), 1u);
    EXPECT_EQ(s.c.summaries[0].result, INCOMPLETE);
    EXPECT_EQ(s.t.stage(), Stage::disconnected);
}

TEST(Wl6226, ClientErrorWithoutANumberKeepsItsMessage) {
    Collector c;
    ConnectionTracer t(1, {}, c.on_event(), c.on_summary());
    t.on_connect(1, 7, 8);
    t.on_error(2, 7, 8, 0, "", "connect() to 127.0.0.1:1 failed: Connection refused");
    t.on_close(3, 7, 8);
    EXPECT_EQ(c.sequence(), ev("CONNECTING", "CONNECTING") + ev("CONNECTING", "ERROR") +
                                ev("CONNECTING", "DISCONNECTED"));
    EXPECT_EQ(c.events[1].details,
              Seq{"Client error: connect() to 127.0.0.1:1 failed: Connection refused"});
    EXPECT_FALSE(c.events[1].error_code.has_value());
}

TEST(Wl6226, RejectedLoginAndErrorGreeting) {
    auto recs = fixture::load_fixture("connect_query");
    Collector c;
    ConnectionTracer t(1, {}, c.on_event(), c.on_summary());
    fixture::replay(t, recs, 0, 3);
    Vec err = {0xFF, 0x15, 0x04, '#', '2', '8', '0', '0', '0'};
    std::string msg = "Access denied";
    fixture::append(err, msg);
    Vec p = packet(2, err);
    t.feed(Direction::server_to_client, Source::socket, p.data(), p.size(), p.size(), 5, 1, 1);
    t.on_close(6, 1, 1);
    EXPECT_EQ(c.sequence(), greeting() + ev("AUTHENTICATE", "AUTH_PLUGIN") +
                                ev("AUTHENTICATE", "SEND_AUTH_RESPONSE") +
                                ev("AUTHENTICATE", "PACKET_SENT") + rx("AUTHENTICATE") +
                                ev("DISCONNECTED", "DISCONNECTED"));
    EXPECT_EQ(c.events[c.events.size() - 2].error_code, 1045);

    // Too many connections: the server answers the connect with ERR.
    Collector c2;
    ConnectionTracer t2(2, {}, c2.on_event(), c2.on_summary());
    t2.on_connect(1, 1, 1);
    Vec busy = {0xFF, 0x10, 0x04};
    std::string m2 = "Too many connections";
    fixture::append(busy, m2);
    Vec p2 = packet(0, busy);
    t2.feed(Direction::server_to_client, Source::socket, p2.data(), p2.size(), p2.size(), 2, 1, 1);
    EXPECT_EQ(c2.sequence(), ev("CONNECTING", "CONNECTING") + ev("CONNECTING", "CONNECTED") +
                                 rx("WAIT_FOR_INIT_PACKET"));
    EXPECT_EQ(c2.events.back().details, Seq{"Server error 1040: Too many connections"});
    EXPECT_EQ(t2.stage(), Stage::disconnected);
}

TEST(Wl6226, ProgressReportDoesNotEndTheCommand) {
    LoggedIn s;
    Vec q = {com::query};
    std::string sql = "ALTER TABLE t ENGINE=Aria";
    fixture::append(q, sql);
    s.client(packet(0, q));
    Vec progress = {0xFF, 0xFF, 0xFF, 0x01, 0x01, 0x02, 0x50, 0xC3, 0x00, 0x0E, 'c', 'o',
                    'p',  'y',  ' ',  't',  'o',  ' ',  't',  'm',  'p',  ' ',  't', 'b'};
    s.server(packet(1, progress));
    s.server(packet(1, progress));
    s.server(packet(1, {0x00, 0x03, 0x00, 0x02, 0x00, 0x00, 0x00}));
    EXPECT_EQ(s.c.sequence(), command() + rx("WAIT_FOR_RESULT", 3));
    EXPECT_EQ(s.c.events[3].details, Seq{"Progress: stage 1 of 2 'copy to tmp tb' 50.000%"});
    ASSERT_EQ(s.c.summaries.size(), 1u);
    EXPECT_EQ(s.c.summaries[0].result, OK);
    EXPECT_EQ(s.c.summaries[0].affected_rows, 3u);
}

// --- a header lost in one direction costs only that direction ---------------
//
// The kernel capture copies at most --snaplen bytes of each send()/recv() and
// reports the true length. How the kernel splits a 17 MiB write decides
// whether the header of a packet's continuation falls in a copied prefix or
// in a gap; the trace must not depend on it.

constexpr size_t kSnap = 16384;

// One logical packet: physical packets of 0xFFFFFF bytes and a shorter last one.
Vec logical_packet(uint8_t seq, const Vec &payload) {
    Vec out;
    out.reserve(payload.size() + 4 * (payload.size() / 0xFFFFFF + 1));
    size_t off = 0;
    while (true) {
        size_t n = std::min<size_t>(payload.size() - off, 0xFFFFFF);
        out.push_back(static_cast<uint8_t>(n));
        out.push_back(static_cast<uint8_t>(n >> 8));
        out.push_back(static_cast<uint8_t>(n >> 16));
        out.push_back(seq++);
        out.insert(out.end(), payload.begin() + static_cast<ptrdiff_t>(off),
                   payload.begin() + static_cast<ptrdiff_t>(off + n));
        off += n;
        if (n < 0xFFFFFF) {
            return out;
        }
    }
}

// Feeds b as syscalls of the given sizes (repeated as needed), each copied up
// to kSnap bytes.
void feed_snapped(LoggedIn &s, Direction d, const Vec &b, const std::vector<size_t> &writes) {
    size_t off = 0;
    for (size_t i = 0; off < b.size(); ++i) {
        size_t n = std::min(writes[i % writes.size()], b.size() - off);
        s.t.feed(d, Source::socket, b.data() + off, std::min(n, kSnap), n, s.ts += 1000, 7, 8);
        off += n;
    }
}

// Whether the 4 bytes at `at` are all copied when fed as feed_snapped does.
bool header_copied(size_t at, const std::vector<size_t> &writes, size_t total) {
    size_t off = 0;
    for (size_t i = 0; off < total; ++i) {
        size_t n = std::min(writes[i % writes.size()], total - off);
        for (size_t b = at; b < at + 4; ++b) {
            if (b >= off && b < off + n && b - off >= kSnap) {
                return false;
            }
        }
        off += n;
    }
    return true;
}

// Text of everything a session emitted, with the times that chunking moves
// taken out.
std::string rendered(const Collector &c) {
    std::string out;
    for (const auto &e : c.events) {
        out += output::render_protocol_text(e);
    }
    for (CommandSummary s : c.summaries) {
        s.ts_start_ns = s.ts_end_ns = s.server_wait_ns = 0;
        out += output::render_command_summary_text(s);
    }
    return out;
}

Vec column_def(const std::string &name, uint8_t type) {
    Vec def = {3, 'd', 'e', 'f', 0, 0, 0};
    def.push_back(static_cast<uint8_t>(name.size()));
    fixture::append(def, name);
    // org_name, MariaDB's extended type info (empty), then the fixed part.
    Vec rest = {0, 0, 0x0C, 0x3F, 0x00, 21, 0, 0, 0, type, 0, 0, 0, 0, 0};
    fixture::append(def, rest);
    return def;
}

Vec text_row(const std::string &value) {
    Vec row = {static_cast<uint8_t>(value.size())};
    fixture::append(row, value);
    return row;
}

const Vec kEof = {0xFE, 0, 0, 0x02, 0};
const Vec kOk = {0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00};

// Writes seen in practice (212992, 131072, 4096: the kernel and libmysql's
// net buffer) and ones that put the continuation header of a 17 MiB packet
// at every kind of place: in a gap, at a write's start, astride a write
// boundary, half copied and half in a gap.
const std::vector<std::vector<size_t>> kWritePatterns = {
    {212992},
    {131072},
    {4096, 212992},
    {65536},
    {212992, 131072, 4096},
    {1 << 20},
    {100000},
    {16385},
    {4, 16777215, 1 << 20},          // the header starts a write
    {16777221, 1 << 20},             // 2 header bytes in a gap, 2 copied
    {16760837, 100000, 1 << 20},     // 2 header bytes copied, 2 in a gap
    {16777219 - 100, 102, 1 << 20},  // copied in a small write
    {4096, 4096, 4096, 300000, 131072},
};

TEST(Wl6226, HugeStatementTraceDoesNotDependOnWhereTheCaptureCutIt) {
    const std::string sql = "select length('" + std::string(17825792, 'x') + "')";
    Vec payload = {com::query};
    fixture::append(payload, sql);
    const Vec wire = logical_packet(0, payload);
    ASSERT_EQ(wire.size(), 17825818u);
    const size_t continuation = 4 + 0xFFFFFF;

    std::string first;
    bool some_lost = false;
    bool some_kept = false;
    for (const auto &writes : kWritePatterns) {
        SCOPED_TRACE(::testing::PrintToString(writes));
        const bool lost = !header_copied(continuation, writes, wire.size());
        (lost ? some_lost : some_kept) = true;
        LoggedIn s;
        feed_snapped(s, Direction::client_to_server, wire, writes);
        s.server(packet(1, {0x01}));
        s.server(packet(2, column_def("length", field_type::longlong)));
        s.server(packet(3, kEof));
        s.server(packet(4, text_row("17825792")));
        s.server(packet(5, kEof));
        s.client(packet(0, {com::quit}));
        s.t.on_close(s.ts += 1000, 7, 8);

        EXPECT_EQ(s.c.sequence(), command() + result_set(1, 1) + quit());
        auto cmd = s.c.of(TraceEvent::send_command);
        ASSERT_EQ(cmd.size(), 2u);
        EXPECT_EQ(cmd[0]->bytes, payload.size());
        EXPECT_TRUE(cmd[0]->truncated);
        EXPECT_EQ(cmd[0]->sql_bytes, sql.size());
        EXPECT_EQ(cmd[0]->details.at(1),
                  "statement cut by the capture; its length is 17825809 bytes");
        EXPECT_EQ(s.c.events[1].details, Seq{"packet sent: 17825810 bytes"});
        EXPECT_NE(find_event(s.c, TraceEvent::packet_received, "Row: 17825792"), nullptr);
        ASSERT_EQ(s.c.summaries.size(), 2u);
        EXPECT_EQ(outcomes(s.c)[0], (Outcome{"COM_QUERY", ROWS, 1}));
        EXPECT_EQ(s.c.summaries[0].bytes_sent, wire.size());
        EXPECT_EQ(s.c.summaries[0].sql_bytes, sql.size());
        EXPECT_EQ(outcomes(s.c)[1], (Outcome{"COM_QUIT", NONE, 0}));
        EXPECT_EQ(s.t.stats().sync_losses, lost ? 1u : 0u);
        EXPECT_EQ(s.t.stats().resyncs, 0u);
        // The whole trace, as text, is the same whatever the chunking.
        std::string text = rendered(s.c);
        if (first.empty()) {
            first = text;
            EXPECT_NE(text.find("    QUERY: select length('" + std::string(1009, 'x') +
                                "... (17825809 bytes)\n"),
                      std::string::npos);
        }
        EXPECT_EQ(text, first);
    }
    EXPECT_TRUE(some_lost);
    EXPECT_TRUE(some_kept);
}

TEST(Wl6226, HugeStatementCutThenClosedSaysOnlyWhatIsKnown) {
    // No reply, no next command: nothing shows the upload was over, so its
    // length is not derived from what was written.
    Vec payload = {com::query};
    payload.resize(1 + (17u << 20), 'x');
    const Vec wire = logical_packet(0, payload);
    LoggedIn s;
    feed_snapped(s, Direction::client_to_server, wire, {212992});
    EXPECT_TRUE(s.c.events.empty());
    s.t.on_close(s.ts += 1000, 7, 8);
    EXPECT_EQ(s.c.sequence(), command() + ev("WAIT_FOR_RESULT", "DISCONNECTED"));
    auto cmd = s.c.of(TraceEvent::send_command);
    ASSERT_EQ(cmd.size(), 1u);
    EXPECT_EQ(cmd[0]->details.at(1),
              "statement cut by the capture; its length is unknown (at least 16777214 bytes)");
    EXPECT_FALSE(cmd[0]->sql_bytes);
    EXPECT_EQ(s.c.events[1].details,
              Seq{"packet sent: at least 16777215 bytes (the capture lost where it ends)"});
    ASSERT_EQ(s.c.summaries.size(), 1u);
    EXPECT_EQ(s.c.summaries[0].result, INCOMPLETE);
    EXPECT_EQ(s.c.summaries[0].bytes_sent, wire.size());
}

TEST(Wl6226, LostHeaderInLongDataEndsAtTheNextCommand) {
    // COM_STMT_SEND_LONG_DATA has no reply: the next command ends it. Three
    // physical packets, of which the capture sees the first header only.
    Vec payload = {com::stmt_send_long_data, 1, 0, 0, 0, 0, 0};
    payload.resize(7 + (33u << 20), 'd');
    const Vec wire = logical_packet(0, payload);
    const Vec execute = packet(0, {com::stmt_execute, 1, 0, 0, 0, 0, 1, 0, 0, 0});
    std::string first;
    for (const auto &writes : {std::vector<size_t>{212992}, std::vector<size_t>{131072}}) {
        LoggedIn s;
        feed_snapped(s, Direction::client_to_server, wire, writes);
        s.client(execute);
        s.server(packet(1, kOk));
        EXPECT_EQ(s.c.sequence(), command() + command() + rx("WAIT_FOR_RESULT"));
        auto cmd = s.c.of(TraceEvent::send_command);
        ASSERT_EQ(cmd.size(), 2u);
        EXPECT_EQ(cmd[0]->details, Seq{"STMT_SEND_LONG_DATA: 1, parameter 0, 34603008 bytes"});
        EXPECT_EQ(cmd[0]->bytes, payload.size());
        EXPECT_EQ(outcomes(s.c), (std::vector<Outcome>{{"COM_STMT_SEND_LONG_DATA", NONE, 0},
                                                       {"COM_STMT_EXECUTE", OK, 0}}));
        EXPECT_EQ(s.c.summaries[0].bytes_sent, wire.size());
        std::string text = rendered(s.c);
        if (first.empty()) {
            first = text;
        }
        EXPECT_EQ(text, first);
    }
}

TEST(Wl6226, LostHeaderInLocalInfileDataEndsAtTheReply) {
    const std::string sql = "LOAD DATA LOCAL INFILE 'f.csv' INTO TABLE t";
    Vec q = {com::query};
    fixture::append(q, sql);
    Vec request = {0xFB};
    fixture::append(request, std::string("f.csv"));
    Vec data;
    for (uint8_t seq = 2; seq < 5; ++seq) {
        fixture::append(data, packet(seq, Vec(100000, 'a')));
    }
    const Vec done = packet(5, {});
    auto session = [&](bool snapped) {
        auto s = std::make_unique<LoggedIn>();
        s->client(packet(0, q));
        s->server(packet(1, request));
        if (snapped) {
            // One write: the second packet's header falls in the gap.
            feed_snapped(*s, Direction::client_to_server, data, {data.size()});
        } else {
            s->client(data);
        }
        s->client(done);
        s->server(packet(6, {0x00, 0x03, 0x00, 0x02, 0x00, 0x00, 0x00}));
        s->client(packet(0, {com::quit}));
        s->t.on_close(s->ts += 1000, 7, 8);
        return s;
    };
    auto full = session(false);
    auto cut = session(true);
    Seq file = ev("FILE_REQUEST", "SEND_FILE") + ev("FILE_REQUEST", "PACKET_SENT");
    EXPECT_EQ(full->c.sequence(), command() + rx("WAIT_FOR_RESULT") + file + file + file + file +
                                      rx("WAIT_FOR_RESULT") + quit());
    // The first packet, then what followed the lost header as one upload.
    EXPECT_EQ(cut->c.sequence(),
              command() + rx("WAIT_FOR_RESULT") + file + file + rx("WAIT_FOR_RESULT") + quit());
    auto files = cut->c.of(TraceEvent::send_file);
    ASSERT_EQ(files.size(), 2u);
    EXPECT_EQ(files[0]->bytes, 100000u);
    EXPECT_TRUE(files[0]->truncated);
    EXPECT_EQ(files[1]->details,
              Seq{"file data whose packet framing the capture lost: 200012 bytes, packet headers "
                  "included"});
    const ProtocolEvent *end = find_event(cut->c, TraceEvent::packet_sent, "File transfer done");
    ASSERT_NE(end, nullptr);
    EXPECT_EQ(end->details.at(0), "data sent: 200012 bytes");
    // The command's outcome and byte counts are those of the full capture.
    EXPECT_EQ(outcomes(cut->c), outcomes(full->c));
    EXPECT_EQ(outcomes(cut->c)[0], (Outcome{"COM_QUERY", OK, 0}));
    EXPECT_EQ(cut->c.summaries[0].bytes_sent, full->c.summaries[0].bytes_sent);
    EXPECT_EQ(cut->c.summaries[0].affected_rows, 3u);
    EXPECT_EQ(cut->t.stats().sync_losses, 1u);
}

TEST(Wl6226, LostHeaderInAHugeRowCostsOnlyTheRestOfThatReply) {
    // A row of 17 MiB: the header of its continuation falls in a gap. The
    // client's next command shows where the reply ended.
    const uint64_t value = 17u << 20;
    Vec row = {0xFE};
    for (int i = 0; i < 8; ++i) {
        row.push_back(static_cast<uint8_t>(value >> (8 * i)));
    }
    row.resize(9 + value, 'v');
    Vec reply = packet(1, {0x01});
    fixture::append(reply, packet(2, column_def("big", field_type::long_blob)));
    fixture::append(reply, packet(3, kEof));
    Vec row_wire = logical_packet(4, row);
    fixture::append(reply, row_wire);
    fixture::append(reply, packet(6, kEof));
    Vec q = {com::query};
    fixture::append(q, std::string("SELECT big FROM t"));
    Vec q2 = {com::query};
    fixture::append(q2, std::string("SELECT 1"));
    auto session = [&](bool snapped) {
        auto s = std::make_unique<LoggedIn>();
        s->client(packet(0, q));
        if (snapped) {
            feed_snapped(*s, Direction::server_to_client, reply, {212992});
        } else {
            s->server(reply, 1 << 20);
        }
        s->client(packet(0, q2));
        s->server(packet(1, {0x01}));
        s->server(packet(2, column_def("1", field_type::longlong)));
        s->server(packet(3, kEof));
        s->server(packet(4, text_row("1")));
        s->server(packet(5, kEof));
        return s;
    };
    auto full = session(false);
    auto cut = session(true);
    EXPECT_EQ(full->c.sequence(), command() + result_set(1, 1) + command() + result_set(1, 1));
    // Column count, definition, EOF, the row as far as it was framed; then
    // the next command and its whole reply.
    EXPECT_EQ(cut->c.sequence(), command() + rx("WAIT_FOR_RESULT") + rx("WAIT_FOR_FIELD_DEF", 2) +
                                     rx("WAIT_FOR_ROW") + command() + result_set(1, 1));
    const ProtocolEvent *partial =
        find_event(cut->c, TraceEvent::packet_received, "Received next row (cut by the capture)");
    ASSERT_NE(partial, nullptr);
    EXPECT_TRUE(partial->truncated);
    EXPECT_EQ(outcomes(cut->c),
              (std::vector<Outcome>{{"COM_QUERY", INCOMPLETE, 1}, {"COM_QUERY", ROWS, 1}}));
    // Every byte of the lost reply is counted, and the note says how many
    // were not decoded.
    EXPECT_EQ(cut->c.summaries[0].bytes_received, full->c.summaries[0].bytes_received);
    const uint64_t skipped = row_wire.size() - (4 + 0xFFFFFF) + 9;
    auto cmds = cut->c.of(TraceEvent::send_command);
    ASSERT_EQ(cmds.size(), 2u);
    EXPECT_EQ(cmds[1]->details, (Seq{"the capture lost the framing of the reply to COM_QUERY after "
                                     "1 rows; " +
                                         std::to_string(skipped) + " bytes of it were skipped",
                                     "QUERY: SELECT 1"}));
    EXPECT_NE(find_event(cut->c, TraceEvent::packet_received, "Row: 1"), nullptr);
    EXPECT_EQ(cut->c.summaries[1].bytes_received, full->c.summaries[1].bytes_received);
    EXPECT_EQ(cut->t.stats().sync_losses, 1u);
    EXPECT_TRUE(cut->t.synced());
}

TEST(Wl6226, LostHeaderBetweenCommandsStillLosesTheConnection) {
    // Outside an upload nothing says where the client's stream picks up,
    // nor what the server is answering: both directions wait for the next
    // command, as before.
    LoggedIn s;
    Vec q = {com::query};
    fixture::append(q, std::string("SELECT 1"));
    Vec two = packet(0, q);
    fixture::append(two, packet(0, q));
    s.t.feed(Direction::client_to_server, Source::socket, two.data(), 5, two.size(), s.ts += 1000,
             7, 8);
    EXPECT_FALSE(s.t.synced());
    s.client(packet(0, q));
    auto cmds = s.c.of(TraceEvent::send_command);
    ASSERT_EQ(cmds.size(), 2u);
    EXPECT_EQ(cmds[1]->details.at(0).rfind("resynchronised at this command after losing track", 0),
              0u);
    EXPECT_EQ(outcomes(s.c).at(0), (Outcome{"COM_QUERY", INCOMPLETE, 0}));
    EXPECT_EQ(s.t.stats().resyncs, 1u);
}

}  // namespace
}  // namespace mysqltrace::protocol
