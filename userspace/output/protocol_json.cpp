// SPDX-License-Identifier: GPL-2.0-only
#include "output/protocol_json.h"

#include "output/json_writer.h"
#include "util/hex.h"

namespace mysqltrace::output {

using protocol::CommandSummary;
using protocol::ProtocolEvent;

// Keys are written in the byte order of their names, the order nlohmann's
// ordered-by-key object dumped them in before these renderers wrote lines
// straight into a buffer: outputs did not change (protocol_output_test
// checks every line of the recorded sessions against nlohmann's dump of it).
namespace {

template <typename T>
void put(JsonWriter &w, std::string_view key, const std::optional<T> &v) {
    if (v) {
        w.field(key, *v);
    }
}

void put(JsonWriter &w, std::string_view key, std::string_view v) {
    if (!v.empty()) {
        w.field(key, v);
    }
}

// [{"name":"n1","value":"'v1'"}, ...]: a list, since names may repeat.
void put(JsonWriter &w, std::string_view key, const std::vector<protocol::QueryAttribute> &attrs) {
    if (attrs.empty()) {
        return;
    }
    w.key(key);
    w.begin_array();
    for (const auto &a : attrs) {
        w.begin_object();
        w.field("name", a.name);
        w.field("value", a.value);
        w.end_object();
    }
    w.end_array();
}

// The keys that sort last in a line with a start and an end, and the line's end.
void end_timed(JsonWriter &w, std::string &out, uint32_t tid, uint64_t end_ns, uint64_t start_ns) {
    w.field("tid", tid);
    w.field("ts_end_ns", end_ns);
    w.field("ts_start_ns", start_ns);
    w.end_object();
    out += '\n';
}

}  // namespace

void append_protocol_json(std::string &out, const ProtocolEvent &ev,
                          const ProtocolJsonOptions &options) {
    JsonWriter w(out);
    w.begin_object();
    put(w, "affected_rows", ev.affected_rows);
    put(w, "auth_plugin", ev.auth_plugin);
    put(w, "bytes", ev.bytes);
    put(w, "column_count", ev.column_count);
    put(w, "command", ev.command_name);
    w.field("conn", ev.conn);
    put(w, "database", ev.database);
    if (!ev.details.empty()) {
        w.key("details");
        w.begin_array();
        for (const auto &d : ev.details) {
            w.value(d);
        }
        w.end_array();
    }
    put(w, "error_code", ev.error_code);
    if (ev.error_code) {
        w.field("error_message", ev.error_message);
    }
    w.field("event", protocol::event_name(ev.event));
    w.field("kind", "protocol");
    put(w, "last_insert_id", ev.last_insert_id);
    if (options.dump) {
        if (ev.packet_redacted) {
            w.field("packet_redacted", true);
        } else if (!ev.packet.empty()) {
            w.field("packet_hex", to_hex(ev.packet));
        }
    }
    w.field("pid", ev.pid);
    put(w, "query_attributes", ev.query_attributes);
    put(w, "row_count", ev.row_count);
    put(w, "seq", ev.seq);
    put(w, "server_connection_id", ev.server_connection_id);
    put(w, "server_version", ev.server_version);
    if (ev.from_library) {
        w.field("source", "library");
    }
    put(w, "sql", ev.sql);
    put(w, "sql_bytes", ev.sql_bytes);
    put(w, "sqlstate", ev.sqlstate);
    w.field("stage", protocol::stage_name(ev.stage));
    put(w, "statement_id", ev.statement_id);
    put(w, "status_flags", ev.status_flags);
    w.field("tid", ev.tid);
    if (ev.truncated) {
        w.field("truncated", true);
    }
    w.field("ts_ns", ev.ts_ns);
    put(w, "user", ev.user);
    put(w, "warnings", ev.warnings);
    w.end_object();
    out += '\n';
}

void append_command_summary_json(std::string &out, const CommandSummary &s) {
    JsonWriter w(out);
    w.begin_object();
    put(w, "affected_rows", s.affected_rows);
    w.field("bytes_received", s.bytes_received);
    w.field("bytes_sent", s.bytes_sent);
    w.field("command", s.command_name);
    w.field("conn", s.conn);
    w.field("duration_ns", s.ts_end_ns - s.ts_start_ns);
    put(w, "error_code", s.error_code);
    if (s.error_code) {
        w.field("error_message", s.error_message);
    }
    w.field("kind", "protocol_command");
    w.field("pid", s.pid);
    put(w, "query_attributes", s.query_attributes);
    w.field("result", protocol::command_result_name(s.result));
    w.field("result_sets", s.result_sets);
    w.field("rows", s.rows);
    w.field("server_wait_ns", s.server_wait_ns);
    put(w, "sql", s.sql);
    put(w, "sql_bytes", s.sql_bytes);
    put(w, "statement_id", s.statement_id);
    end_timed(w, out, s.tid, s.ts_end_ns, s.ts_start_ns);
}

void append_api_call_json(std::string &out, const protocol::ApiCall &call) {
    // The argument's key depends on the call; it goes where its name sorts.
    const std::string_view arg_key = call.func == "mysql_select_db"    ? "schema"
                                     : call.func == "mysql_bind_param" ? "attributes"
                                                                       : "sql";
    JsonWriter w(out);
    w.begin_object();
    if (arg_key == "attributes") {
        put(w, arg_key, call.arg);
    }
    w.field("conn", call.conn);
    w.field("duration_ns", call.ts_end_ns - call.ts_begin_ns);
    put(w, "error_code", call.error_code);
    put(w, "error_message", call.error_message);
    w.field("failed", call.failed);
    w.field("function", call.func);
    w.field("handle", call.handle);
    w.field("kind", "api");
    w.field("pid", call.pid);
    w.field("ret", call.ret);
    if (arg_key == "schema") {
        put(w, arg_key, call.arg);
    }
    put(w, "server_thread_id", call.server_thread_id);
    w.field("server_wait_ns", call.server_wait_ns);
    if (arg_key == "sql") {
        put(w, arg_key, call.arg);
    }
    put(w, "sql_bytes", call.arg_bytes);
    put(w, "sqlstate", call.sqlstate);
    end_timed(w, out, call.tid, call.ts_end_ns, call.ts_begin_ns);
}

std::string render_protocol_json(const ProtocolEvent &ev, const ProtocolJsonOptions &options) {
    std::string out;
    append_protocol_json(out, ev, options);
    return out;
}

std::string render_command_summary_json(const CommandSummary &s) {
    std::string out;
    append_command_summary_json(out, s);
    return out;
}

std::string render_api_call_json(const protocol::ApiCall &call) {
    std::string out;
    append_api_call_json(out, call);
    return out;
}

}  // namespace mysqltrace::output
