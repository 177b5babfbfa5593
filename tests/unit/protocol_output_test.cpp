// SPDX-License-Identifier: GPL-2.0-only
// Text and JSON renderings of protocol events and command summaries.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "output/protocol_json.h"
#include "output/protocol_text.h"
#include "protocol/wl6226.h"
#include "unit/protocol_fixture.h"

namespace mysqltrace::output {
namespace {

using protocol::CommandResult;
using protocol::CommandSummary;
using protocol::ProtocolEvent;
using protocol::Stage;
using protocol::TraceEvent;

ProtocolEvent error_event() {
    ProtocolEvent ev;
    ev.conn = 12;
    ev.ts_ns = 1'500'000'123'456ULL;
    ev.pid = 100;
    ev.tid = 101;
    ev.stage = Stage::wait_for_result;
    ev.event = TraceEvent::packet_received;
    ev.command = 3;
    ev.command_name = "COM_QUERY";
    ev.bytes = 40;
    ev.seq = 1;
    ev.error_code = 1146;
    ev.sqlstate = "42S02";
    ev.error_message = "Table 'x.y' doesn't exist";
    ev.details = {"Server error 1146 (42S02): Table 'x.y' doesn't exist"};
    return ev;
}

TEST(ProtocolText, EventLineAndDetails) {
    EXPECT_EQ(render_protocol_text(error_event()),
              "mysqltrace: 12: stage: WAIT_FOR_RESULT, event: PACKET_RECEIVED\n"
              "    Server error 1146 (42S02): Table 'x.y' doesn't exist\n");
    ProtocolTextOptions o;
    o.timestamps = true;
    EXPECT_EQ(render_protocol_text(error_event(), o),
              "1500.000123 100/101 mysqltrace: 12: stage: WAIT_FOR_RESULT, event: PACKET_RECEIVED\n"
              "    Server error 1146 (42S02): Table 'x.y' doesn't exist\n");
}

// The prefix is kept from the last line: lines of two connections and
// threads interleaved, as `client` on a two-thread application writes them,
// each keep their own, with and without process ids.
TEST(ProtocolText, InterleavedConnectionsKeepTheirPrefixes) {
    ProtocolEvent a = error_event();
    a.details.clear();
    ProtocolEvent b = a;
    b.conn = 123456789012ULL;
    b.pid = 4294967295u;
    b.tid = 7;
    ProtocolTextOptions ids;
    ids.timestamps = true;
    Clock clock;
    ProtocolTextOptions wall = ids;
    wall.clock = &clock;
    const std::string tail = "stage: WAIT_FOR_RESULT, event: PACKET_RECEIVED\n";
    for (int i = 0; i < 3; i++) {
        EXPECT_EQ(render_protocol_text(a, ids), "1500.000123 100/101 mysqltrace: 12: " + tail);
        EXPECT_EQ(render_protocol_text(b, ids),
                  "1500.000123 4294967295/7 mysqltrace: 123456789012: " + tail);
        EXPECT_EQ(render_protocol_text(b), "mysqltrace: 123456789012: " + tail);
        EXPECT_EQ(render_protocol_text(a), "mysqltrace: 12: " + tail);
        // After "HH:MM:SS.uuuuuu".
        EXPECT_EQ(render_protocol_text(a, wall).substr(Clock::kWallChars),
                  " 100/101 mysqltrace: 12: " + tail);
        EXPECT_EQ(render_protocol_text(b, wall).substr(Clock::kWallChars),
                  " 4294967295/7 mysqltrace: 123456789012: " + tail);
    }
}

TEST(ProtocolText, ControlCharactersAreEscaped) {
    ProtocolEvent ev;
    ev.conn = 1;
    ev.stage = Stage::ready_for_command;
    ev.event = TraceEvent::send_command;
    ev.details = {"QUERY: SELECT 1\n  FROM dual\t-- x\x01"};
    EXPECT_EQ(render_protocol_text(ev),
              "mysqltrace: 1: stage: READY_FOR_COMMAND, event: SEND_COMMAND\n"
              "    QUERY: SELECT 1\\n  FROM dual\\t-- x\\x01\n");
}

// escape_text scans 8 bytes at a time: every byte that needs escaping, at
// every offset of a longer line, is still found; bytes of 0x80 and up stay.
TEST(ProtocolText, EscapesEveryControlByteAtEveryOffset) {
    for (int c : {0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F, 0x7F}) {
        for (size_t at = 0; at < 20; ++at) {
            std::string s(20, 'a');
            s[5] = static_cast<char>(0xE9);
            s[at] = static_cast<char>(c);
            std::string want;
            for (char b : s) {
                const auto u = static_cast<unsigned char>(b);
                if (u == '\n') {
                    want += "\\n";
                } else if (u == '\r') {
                    want += "\\r";
                } else if (u == '\t') {
                    want += "\\t";
                } else if (u < 0x20 || u == 0x7F) {
                    static constexpr char kHex[] = "0123456789abcdef";
                    want += {'\\', 'x', kHex[u >> 4], kHex[u & 15]};
                } else {
                    want += b;
                }
            }
            EXPECT_EQ(escape_text(s), want) << "byte " << c << " at " << at;
        }
    }
    EXPECT_EQ(escape_text(std::string(19, ' ') + "\x80\xff~ "),
              std::string(19, ' ') + "\x80\xff~ ");
}

// Detail lines are escaped on two paths (short lines straight into the
// line's buffer, long ones appended): both write what escape_text() does.
TEST(ProtocolText, DetailLinesAreEscapedAsEscapeTextDoes) {
    std::vector<std::string> lines;
    for (size_t len : {0, 1, 7, 8, 9, 15, 16, 17, 23, 200, 201, 300}) {
        lines.push_back(std::string(len, 'x'));
        for (size_t at = 0; at < len && at < 24; ++at) {
            for (char c : {'\x01', '\n', '\x7f'}) {
                std::string l(len, 'y');
                l[at] = c;
                lines.push_back(l);
                l[len - 1 - at] = '\t';
                lines.push_back(l);
            }
        }
    }
    for (const std::string &l : lines) {
        ProtocolEvent ev;
        ev.conn = 1;
        ev.details = {l, "x"};
        EXPECT_EQ(render_protocol_text(ev), "mysqltrace: 1: stage: CONNECTING, event: ERROR\n    " +
                                                escape_text(l) + "\n    x\n")
            << escape_text(l);
    }
}

TEST(ProtocolText, LongValuesAreCutWithTheirTrueLength) {
    EXPECT_EQ(cut_text("abcdef", 10), "abcdef");
    EXPECT_EQ(cut_text("abcdef", 4), "abcd... (6 bytes)");
    // Only the start of a longer value: say so even when it fits.
    EXPECT_EQ(cut_text("abc", 10, 41), "abc... (41 bytes)");
    EXPECT_EQ(cut_text("abc", 10, 3), "abc");
    // Never inside a UTF-8 sequence; escaping applies to what is kept.
    EXPECT_EQ(cut_text("ab\xc3\xa9"
                       "cd",
                       3),
              "ab... (6 bytes)");
    EXPECT_EQ(cut_text("a\nbcdef", 3), "a\\nb... (7 bytes)");

    // A statement cut by the capture: the SQL in its detail line is cut at
    // a fixed length whatever was captured, and its true length is said.
    ProtocolEvent ev;
    ev.conn = 1;
    ev.stage = Stage::ready_for_command;
    ev.event = TraceEvent::send_command;
    ev.sql = "select '" + std::string(3000, 'x');
    ev.sql_bytes = 17825809;
    ev.details = {"QUERY: " + *ev.sql,
                  "statement cut by the capture; its length is 17825809 bytes"};
    const std::string want =
        "mysqltrace: 1: stage: READY_FOR_COMMAND, event: SEND_COMMAND\n"
        "    QUERY: select '" +
        std::string(1016, 'x') +
        "... (17825809 bytes)\n"
        "    statement cut by the capture; its length is 17825809 bytes\n";
    EXPECT_EQ(render_protocol_text(ev), want);
    // Less captured, same text.
    ev.sql->resize(1500);
    ev.details[0] = "QUERY: " + *ev.sql;
    EXPECT_EQ(render_protocol_text(ev), want);
    // Other long detail lines are cut as a whole.
    ProtocolTextOptions o;
    o.max_value_chars = 8;
    ev.sql.reset();
    ev.sql_bytes.reset();
    ev.details = {"Statement: select 1 from dual"};
    EXPECT_EQ(render_protocol_text(ev, o),
              "mysqltrace: 1: stage: READY_FOR_COMMAND, event: SEND_COMMAND\n"
              "    Statemen... (29 bytes)\n");
}

TEST(ProtocolText, HexDumpOfPackets) {
    ProtocolEvent ev;
    ev.conn = 3;
    ev.stage = Stage::wait_for_field_def;
    ev.event = TraceEvent::packet_received;
    ev.packet = {0x03, 'd', 'e', 'f', 0x00, 0x00, 0x00, 0x06, 'u', 's',
                 'e',  'r', '(', ')', 0x00, 0x0C, 0x08, 0x00, 'M', 0x00};
    ev.bytes = 40;
    ProtocolTextOptions o;
    o.dump = true;
    EXPECT_EQ(render_protocol_text(ev, o),
              "mysqltrace: 3: stage: WAIT_FOR_FIELD_DEF, event: PACKET_RECEIVED\n"
              "    packet: 40 bytes, first 20 shown\n"
              "      03 64 65 66 00 00 00 06  75 73 65 72 28 29 00 0C   .def....user()..\n"
              "      08 00 4D 00                                        ..M.\n");
    ev.packet.clear();
    ev.packet_redacted = true;
    EXPECT_EQ(render_protocol_text(ev, o),
              "mysqltrace: 3: stage: WAIT_FOR_FIELD_DEF, event: PACKET_RECEIVED\n"
              "    (packet withheld: it carries secrets; --show-secrets shows it)\n");
}

TEST(ProtocolText, CommandSummaryLine) {
    CommandSummary s;
    s.conn = 12;
    s.command_name = "COM_QUERY";
    s.sql = "SELECT * FROM t";
    s.result = CommandResult::rows;
    s.result_sets = 1;
    s.rows = 3;
    s.bytes_sent = 20;
    s.bytes_received = 188;
    s.server_wait_ns = 473'000;
    s.ts_start_ns = 1'000;
    s.ts_end_ns = 1'001'000;
    EXPECT_EQ(render_command_summary_text(s),
              "mysqltrace: 12: summary: COM_QUERY -> ROWS; result sets: 1; rows: 3; bytes sent: "
              "20; bytes received: 188; server wait: 473.0 us; total: 1000.0 us; SQL: SELECT * "
              "FROM t\n");
    s.result = CommandResult::error;
    s.error_code = 1146;
    s.error_message = "no";
    s.result_sets = 0;
    s.rows = 0;
    s.server_wait_ns = 900;
    s.ts_end_ns = 1'000 + 25'000'000;
    EXPECT_EQ(render_command_summary_text(s),
              "mysqltrace: 12: summary: COM_QUERY -> ERR 1146 (no); rows: 0; bytes sent: 20; "
              "bytes received: 188; server wait: 900 ns; total: 25.000 ms; SQL: SELECT * FROM t\n");
    // A statement of which only the start was captured.
    s.sql = "SELECT '" + std::string(2000, 'x');
    s.sql_bytes = 40000;
    ProtocolTextOptions o;
    o.max_value_chars = 10;
    EXPECT_EQ(render_command_summary_text(s, o),
              "mysqltrace: 12: summary: COM_QUERY -> ERR 1146 (no); rows: 0; bytes sent: 20; "
              "bytes received: 188; server wait: 900 ns; total: 25.000 ms; SQL: SELECT 'xx... "
              "(40000 bytes)\n");
}

TEST(ProtocolJson, EventKeys) {
    auto j = nlohmann::json::parse(render_protocol_json(error_event()));
    EXPECT_EQ(j["kind"], "protocol");
    EXPECT_EQ(j["conn"], 12);
    EXPECT_EQ(j["pid"], 100);
    EXPECT_EQ(j["tid"], 101);
    EXPECT_EQ(j["ts_ns"], 1'500'000'123'456ULL);
    EXPECT_EQ(j["stage"], "WAIT_FOR_RESULT");
    EXPECT_EQ(j["event"], "PACKET_RECEIVED");
    EXPECT_EQ(j["command"], "COM_QUERY");
    EXPECT_EQ(j["bytes"], 40);
    EXPECT_EQ(j["seq"], 1);
    EXPECT_EQ(j["error_code"], 1146);
    EXPECT_EQ(j["sqlstate"], "42S02");
    EXPECT_EQ(j["error_message"], "Table 'x.y' doesn't exist");
    EXPECT_EQ(j["details"],
              nlohmann::json::array({"Server error 1146 (42S02): Table 'x.y' doesn't exist"}));
    EXPECT_FALSE(j.contains("sql"));
    EXPECT_FALSE(j.contains("packet_hex"));
    // One object per line.
    std::string line = render_protocol_json(error_event());
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1);
}

TEST(ProtocolJson, MinimalEventAndDump) {
    ProtocolEvent ev;
    ev.conn = 5;
    ev.ts_ns = 7;
    ev.stage = Stage::connecting;
    ev.event = TraceEvent::connecting;
    EXPECT_EQ(render_protocol_json(ev),
              "{\"conn\":5,\"event\":\"CONNECTING\",\"kind\":\"protocol\",\"pid\":0,\"stage\":"
              "\"CONNECTING\",\"tid\":0,\"ts_ns\":7}\n");
    ev.event = TraceEvent::send_command;
    ev.sql = "SELECT 1";
    ev.bytes = 9;
    ev.packet = {0x03, 'S'};
    ProtocolJsonOptions o;
    o.dump = true;
    auto j = nlohmann::json::parse(render_protocol_json(ev, o));
    EXPECT_EQ(j["sql"], "SELECT 1");
    EXPECT_FALSE(j.contains("sql_bytes"));
    EXPECT_EQ(j["packet_hex"], "0353");
    // JSON keeps all that was captured of a cut statement, and its length.
    ev.sql = "SELECT '" + std::string(5000, 'x');
    ev.sql_bytes = 17825809;
    j = nlohmann::json::parse(render_protocol_json(ev, o));
    EXPECT_EQ(j["sql"], *ev.sql);
    EXPECT_EQ(j["sql_bytes"], 17825809);
}

TEST(ProtocolJson, InvalidUtf8IsReplacedNotFatal) {
    ProtocolEvent ev = error_event();
    ev.sql = std::string("SELECT '\xff\xfe'");
    ev.details.push_back("Row: '\xc3'");
    std::string line;
    ASSERT_NO_THROW(line = render_protocol_json(ev));
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["sql"], "SELECT '\xEF\xBF\xBD\xEF\xBF\xBD'");
}

TEST(ProtocolJson, CommandSummaryKeys) {
    CommandSummary s;
    s.conn = 2;
    s.pid = 3;
    s.tid = 4;
    s.command_name = "COM_STMT_EXECUTE";
    s.statement_id = 7;
    s.sql = "SELECT ?";
    s.result = CommandResult::rows;
    s.rows = 1;
    s.result_sets = 1;
    s.bytes_sent = 22;
    s.bytes_received = 33;
    s.server_wait_ns = 141'000;
    s.ts_start_ns = 10;
    s.ts_end_ns = 141'010;
    auto j = nlohmann::json::parse(render_command_summary_json(s));
    EXPECT_EQ(j, nlohmann::json::parse(R"({"kind":"protocol_command","conn":2,"pid":3,"tid":4,
        "ts_start_ns":10,"ts_end_ns":141010,"command":"COM_STMT_EXECUTE","sql":"SELECT ?",
        "statement_id":7,"result":"ROWS","rows":1,"result_sets":1,"bytes_sent":22,
        "bytes_received":33,"server_wait_ns":141000,"duration_ns":141000})"));
    s.sql_bytes = 90000;
    j = nlohmann::json::parse(render_command_summary_json(s));
    EXPECT_EQ(j["sql"], "SELECT ?");
    EXPECT_EQ(j["sql_bytes"], 90000);
}

TEST(ProtocolOutput, BindParamCallShowsItsAttributeNames) {
    protocol::ApiCall call;
    call.conn = 1;
    call.pid = 3;
    call.tid = 4;
    call.func = "mysql_bind_param";
    call.handle = 0x10;
    call.ts_begin_ns = 10;
    call.ts_end_ns = 1'010;
    call.arg = "trace_id, n2";
    ProtocolTextOptions options;
    options.timestamps = false;
    EXPECT_EQ(render_api_call_text(call, options),
              "mysqltrace: 1: api: mysql_bind_param(0x10) -> OK; time: 1000 ns; attributes: "
              "trace_id, n2\n");
    auto j = nlohmann::json::parse(render_api_call_json(call));
    EXPECT_EQ(j["attributes"], "trace_id, n2");
    EXPECT_FALSE(j.contains("sql"));
}

// The renderers write keys in the order nlohmann's ordered-by-key objects
// dumped them in before: each line must be what parsing it and dumping it
// again gives, byte for byte.
std::string canonical(const std::string &line) {
    return nlohmann::json::parse(line).dump(-1, ' ', false,
                                            nlohmann::json::error_handler_t::replace) +
           "\n";
}

TEST(ProtocolJson, EveryKeyInNlohmannsOrder) {
    ProtocolEvent ev = error_event();
    ev.sql = "SELECT \"x\"\n\x01 /* \xff */";
    ev.sql_bytes = 90;
    ev.statement_id = 4;
    ev.query_attributes = {{"trace_id", "'a'"}, {"n", "NULL"}};
    ev.truncated = true;
    ev.affected_rows = 1;
    ev.last_insert_id = 2;
    ev.warnings = 3;
    ev.status_flags = 0x22;
    ev.column_count = 5;
    ev.row_count = 6;
    ev.auth_plugin = "caching_sha2_password";
    ev.user = "u";
    ev.database = "d";
    ev.server_version = "9.7.0";
    ev.server_connection_id = 77;
    ev.details.push_back("second line");
    ev.from_library = true;
    ev.packet = {0x00, 0xff};
    for (bool redacted : {false, true}) {
        ev.packet_redacted = redacted;
        const std::string line = render_protocol_json(ev, {true});
        EXPECT_EQ(line, canonical(line));
        EXPECT_EQ(nlohmann::json::parse(line).size(), 32u);
    }
    CommandSummary s;
    s.command_name = "COM_QUERY";
    s.sql = "SELECT 1";
    s.sql_bytes = 9;
    s.statement_id = 1;
    s.query_attributes = ev.query_attributes;
    s.affected_rows = 2;
    s.error_code = 1062;
    s.error_message = "Duplicate";
    s.ts_start_ns = 5;
    s.ts_end_ns = 9;
    std::string line = render_command_summary_json(s);
    EXPECT_EQ(line, canonical(line));
    EXPECT_EQ(nlohmann::json::parse(line).size(), 21u);
    protocol::ApiCall call;
    call.error_code = 2013;
    call.sqlstate = "HY000";
    call.error_message = "Lost connection";
    call.server_thread_id = 8;
    call.arg = "x";
    call.arg_bytes = 100;
    for (const char *func : {"mysql_real_query", "mysql_select_db", "mysql_bind_param"}) {
        call.func = func;
        line = render_api_call_json(call);
        EXPECT_EQ(line, canonical(line)) << func;
        EXPECT_EQ(nlohmann::json::parse(line).size(), 18u) << func;
    }
}

// Every line of every recorded session, with packet dumps.
TEST(ProtocolJson, RecordedSessionsInNlohmannsOrder) {
    size_t lines = 0;
    for (const char *name :
         {"admin_commands", "auth_switch_ed25519", "bulk_direct_cursor", "change_user",
          "compressed_c", "compressed_cli", "connect_query", "deprecate_eof_raw", "local_infile",
          "multi_statements", "mysql97_c_api", "mysql97_cli_attrs", "mysql97_sha2_rsa",
          "mysql97_zlib", "mysql97_zstd", "prepared", "pymysql"}) {
        protocol::TracerOptions opt;
        opt.keep_packets = true;
        std::string out;
        protocol::ConnectionTracer t(
            1, opt, [&](const ProtocolEvent &ev) { append_protocol_json(out, ev, {true}); },
            [&](const CommandSummary &sum) { append_command_summary_json(out, sum); });
        protocol::fixture::replay(t, protocol::fixture::load_fixture(name));
        std::istringstream in(out);
        std::string line;
        while (std::getline(in, line)) {
            line += '\n';
            ASSERT_EQ(line, canonical(line)) << name;
            ++lines;
        }
    }
    EXPECT_GT(lines, 1000u);
}

// A recorded session rendered end to end: every event is one line plus its
// details, and every JSON line parses.
TEST(ProtocolOutput, RecordedSessionRendersCompletely) {
    std::ostringstream text;
    std::ostringstream json;
    size_t events = 0;
    size_t detail_lines = 0;
    protocol::TracerOptions opt;
    opt.keep_packets = true;
    protocol::ConnectionTracer t(
        4, opt,
        [&](const ProtocolEvent &ev) {
            ++events;
            detail_lines += ev.details.size();
            text << render_protocol_text(ev);
            json << render_protocol_json(ev, {true});
        },
        [&](const CommandSummary &s) {
            text << render_command_summary_text(s);
            json << render_command_summary_json(s);
        });
    protocol::fixture::replay(t, protocol::fixture::load_fixture("prepared"));
    std::istringstream lines(json.str());
    std::string line;
    size_t protocol_lines = 0, command_lines = 0;
    while (std::getline(lines, line)) {
        auto j = nlohmann::json::parse(line);
        if (j["kind"] == "protocol") {
            ++protocol_lines;
        } else if (j["kind"] == "protocol_command") {
            ++command_lines;
        }
    }
    EXPECT_EQ(protocol_lines, events);
    EXPECT_EQ(command_lines, 12u);
    const std::string rendered = text.str();
    size_t text_lines = std::count(rendered.begin(), rendered.end(), '\n');
    EXPECT_EQ(text_lines, events + detail_lines + 12);
    EXPECT_NE(rendered.find("mysqltrace: 4: stage: WAIT_FOR_ROW, event: PACKET_RECEIVED\n"
                            "    Row: 1, 'apple', 1.25, '2024-01-02 03:04:05', 0.5\n"),
              std::string::npos);
}

}  // namespace
}  // namespace mysqltrace::output
