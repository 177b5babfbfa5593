// SPDX-License-Identifier: GPL-2.0-only
// JSON rendering of client protocol events: one object per line.
// Events: "kind":"protocol" with conn, pid, tid, ts_ns, stage, event, and
// where they apply command, sql, sql_bytes, statement_id, bytes, seq, truncated,
// error_code, sqlstate, error_message, affected_rows, last_insert_id,
// warnings, status_flags, column_count, row_count, auth_plugin, user,
// database, server_version, server_connection_id, details, and packet_hex
// (with dump) or packet_redacted.
// Command summaries: "kind":"protocol_command" with conn, pid, tid,
// ts_start_ns, ts_end_ns, command, sql, sql_bytes, statement_id, result, rows,
// result_sets, affected_rows, error_code, error_message, bytes_sent,
// bytes_received, server_wait_ns, duration_ns.
// Shim API calls (`mysqltrace run`): "kind":"api" with conn, pid, tid,
// ts_start_ns, ts_end_ns, function, handle, ret, failed, error_code, sqlstate,
// error_message, server_thread_id, sql (or schema), sql_bytes,
// server_wait_ns, duration_ns.
// sql is what the capture kept of the statement; sql_bytes, present only
// when that is not all of it, is the statement's true length.
// Bytes that are not valid UTF-8 (binary values, cut strings) are replaced
// by U+FFFD rather than failing the line.
#pragma once

#include <string>

#include "protocol/event.h"

namespace mysqltrace::output {

struct ProtocolJsonOptions {
    bool dump = false;  // "packet_hex" with the bytes the event carries
};

// Each appends one object and its '\n' to `out`, put together in place: a
// traced application gives ~10 events per statement.
void append_protocol_json(std::string &out, const protocol::ProtocolEvent &ev,
                          const ProtocolJsonOptions &options = {});
void append_command_summary_json(std::string &out, const protocol::CommandSummary &s);
void append_api_call_json(std::string &out, const protocol::ApiCall &call);
// The same, as a string of its own.
std::string render_protocol_json(const protocol::ProtocolEvent &ev,
                                 const ProtocolJsonOptions &options = {});
std::string render_command_summary_json(const protocol::CommandSummary &s);
std::string render_api_call_json(const protocol::ApiCall &call);

}  // namespace mysqltrace::output
