// SPDX-License-Identifier: GPL-2.0-only
// Text rendering of client protocol events, in the style of MySQL's WL#6226
// test trace plugin: one line per event,
//   mysqltrace: <conn>: stage: WAIT_FOR_RESULT, event: PACKET_RECEIVED
// then the event's detail lines indented by four spaces, then (with dump) a
// hex dump of the packet. Control characters in SQL, messages and values are
// escaped so an event never spills into lines of its own.
//
// Long values are cut to max_value_chars bytes followed by "... (N bytes)"
// with the value's true length: a 17 MiB statement takes one readable line,
// and how much of it the capture happened to copy (which depends on how the
// kernel split the client's writes) does not show. A detail line ending with
// ": " and the event's SQL is cut in its SQL, whose true length the event
// carries; any other detail line is cut as a whole. JSON keeps everything.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "output/clock.h"
#include "protocol/event.h"

namespace mysqltrace::output {

struct ProtocolTextOptions {
    bool dump = false;              // hex dumps of packets the events carry
    bool timestamps = false;        // prefix "<time> pid/tid " to event lines
    const Clock *clock = nullptr;   // with timestamps: wall time, else monotonic seconds
    size_t max_value_chars = 1024;  // SQL and detail lines longer than this are cut
};

// The event's lines, each ending with '\n'. The append_ forms add to `out`,
// so a busy trace reuses one buffer instead of building a string per event.
void append_protocol_text(std::string &out, const protocol::ProtocolEvent &ev,
                          const ProtocolTextOptions &options);
void append_command_summary_text(std::string &out, const protocol::CommandSummary &s,
                                 const ProtocolTextOptions &options);
std::string render_protocol_text(const protocol::ProtocolEvent &ev,
                                 const ProtocolTextOptions &options = {});
// One line, ending with '\n':
//   mysqltrace: <conn>: summary: COM_QUERY -> ROWS; rows: 3; ...; SQL: select 1
std::string render_command_summary_text(const protocol::CommandSummary &s,
                                        const ProtocolTextOptions &options = {});
// One line, ending with '\n', for a shim API call (`mysqltrace run`):
//   mysqltrace: <conn>: api: mysql_real_query(0x5581...) -> OK; time: 95.2 us;
//   server wait: 80.1 us; in client: 15.1 us; SQL: select 1
void append_api_call_text(std::string &out, const protocol::ApiCall &call,
                          const ProtocolTextOptions &options = {});
std::string render_api_call_text(const protocol::ApiCall &call,
                                 const ProtocolTextOptions &options = {});
// 16 bytes a line: offset-free hex in two groups of 8, then printable ASCII.
std::string hex_dump(std::span<const uint8_t> bytes, const std::string &indent);
// Printable ASCII kept; \n, \t, \r and other bytes < 0x20 or 0x7F escaped.
std::string escape_text(std::string_view s);
void append_escaped(std::string &out, std::string_view s);
// escape_text(s), cut to max bytes (never inside a UTF-8 sequence) and
// followed by "... (N bytes)" when s is longer or is only the start of a
// value of true_len bytes.
std::string cut_text(std::string_view s, size_t max, std::optional<uint64_t> true_len = {});

}  // namespace mysqltrace::output
