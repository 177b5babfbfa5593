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

#include <nlohmann/json.hpp>
#include <string>

#include "protocol/event.h"

namespace mysqltrace::output {

struct ProtocolJsonOptions {
    bool dump = false;  // "packet_hex" with the bytes the event carries
};

nlohmann::json protocol_event_json(const protocol::ProtocolEvent &ev,
                                   const ProtocolJsonOptions &options = {});
nlohmann::json command_summary_json(const protocol::CommandSummary &s);
// The object serialised on one line, ending with '\n'.
std::string render_protocol_json(const protocol::ProtocolEvent &ev,
                                 const ProtocolJsonOptions &options = {});
std::string render_command_summary_json(const protocol::CommandSummary &s);
nlohmann::json api_call_json(const protocol::ApiCall &call);
std::string render_api_call_json(const protocol::ApiCall &call);

}  // namespace mysqltrace::output
