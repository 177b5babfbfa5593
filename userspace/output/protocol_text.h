// SPDX-License-Identifier: GPL-2.0-only
// Text rendering of client protocol events, in the style of MySQL's WL#6226
// test trace plugin: one line per event,
//   mysqltrace: <conn>: stage: WAIT_FOR_RESULT, event: PACKET_RECEIVED
// then the event's detail lines indented by four spaces, then (with dump) a
// hex dump of the packet. Control characters in SQL, messages and values are
// escaped so an event never spills into lines of its own.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "protocol/event.h"

namespace mysqltrace::output {

struct ProtocolTextOptions {
    bool dump = false;        // hex dumps of packets the events carry
    bool timestamps = false;  // prefix "<seconds>.<microseconds> pid/tid " to event lines
};

// The event's lines, each ending with '\n'.
std::string render_protocol_text(const protocol::ProtocolEvent &ev,
                                 const ProtocolTextOptions &options = {});
// One line, ending with '\n':
//   mysqltrace: <conn>: summary: COM_QUERY -> ROWS; rows: 3; ...; SQL: select 1
std::string render_command_summary_text(const protocol::CommandSummary &s,
                                        const ProtocolTextOptions &options = {});
// 16 bytes a line: offset-free hex in two groups of 8, then printable ASCII.
std::string hex_dump(std::span<const uint8_t> bytes, const std::string &indent);
// Printable ASCII kept; \n, \t, \r, \\ and other bytes < 0x20 or 0x7F escaped.
std::string escape_text(std::string_view s);

}  // namespace mysqltrace::output
