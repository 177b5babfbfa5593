// SPDX-License-Identifier: GPL-2.0-only
#include "output/protocol_json.h"

#include "util/hex.h"

namespace mysqltrace::output {

using nlohmann::json;
using protocol::CommandSummary;
using protocol::ProtocolEvent;

namespace {

template <typename T>
void put(json &j, const char *key, const std::optional<T> &v) {
    if (v) {
        j[key] = *v;
    }
}

void put(json &j, const char *key, const std::string &v) {
    if (!v.empty()) {
        j[key] = v;
    }
}

// [{"name":"n1","value":"'v1'"}, ...]: a list, since names may repeat.
void put(json &j, const char *key, const std::vector<protocol::QueryAttribute> &attrs) {
    if (attrs.empty()) {
        return;
    }
    json list = json::array();
    for (const auto &a : attrs) {
        list.push_back({{"name", a.name}, {"value", a.value}});
    }
    j[key] = std::move(list);
}

std::string line(const json &j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

json protocol_event_json(const ProtocolEvent &ev, const ProtocolJsonOptions &options) {
    json j;
    j["kind"] = "protocol";
    j["conn"] = ev.conn;
    j["pid"] = ev.pid;
    j["tid"] = ev.tid;
    j["ts_ns"] = ev.ts_ns;
    j["stage"] = protocol::stage_name(ev.stage);
    j["event"] = protocol::event_name(ev.event);
    put(j, "command", ev.command_name);
    put(j, "sql", ev.sql);
    put(j, "sql_bytes", ev.sql_bytes);
    put(j, "statement_id", ev.statement_id);
    put(j, "query_attributes", ev.query_attributes);
    put(j, "bytes", ev.bytes);
    put(j, "seq", ev.seq);
    if (ev.truncated) {
        j["truncated"] = true;
    }
    put(j, "error_code", ev.error_code);
    put(j, "sqlstate", ev.sqlstate);
    if (ev.error_code) {
        j["error_message"] = ev.error_message;
    }
    put(j, "affected_rows", ev.affected_rows);
    put(j, "last_insert_id", ev.last_insert_id);
    put(j, "warnings", ev.warnings);
    put(j, "status_flags", ev.status_flags);
    put(j, "column_count", ev.column_count);
    put(j, "row_count", ev.row_count);
    put(j, "auth_plugin", ev.auth_plugin);
    put(j, "user", ev.user);
    put(j, "database", ev.database);
    put(j, "server_version", ev.server_version);
    put(j, "server_connection_id", ev.server_connection_id);
    if (!ev.details.empty()) {
        j["details"] = ev.details;
    }
    if (ev.from_library) {
        j["source"] = "library";
    }
    if (options.dump) {
        if (ev.packet_redacted) {
            j["packet_redacted"] = true;
        } else if (!ev.packet.empty()) {
            j["packet_hex"] = to_hex(ev.packet);
        }
    }
    return j;
}

json command_summary_json(const CommandSummary &s) {
    json j;
    j["kind"] = "protocol_command";
    j["conn"] = s.conn;
    j["pid"] = s.pid;
    j["tid"] = s.tid;
    j["ts_start_ns"] = s.ts_start_ns;
    j["ts_end_ns"] = s.ts_end_ns;
    j["command"] = s.command_name;
    put(j, "sql", s.sql);
    put(j, "sql_bytes", s.sql_bytes);
    put(j, "statement_id", s.statement_id);
    put(j, "query_attributes", s.query_attributes);
    j["result"] = protocol::command_result_name(s.result);
    j["rows"] = s.rows;
    j["result_sets"] = s.result_sets;
    put(j, "affected_rows", s.affected_rows);
    put(j, "error_code", s.error_code);
    if (s.error_code) {
        j["error_message"] = s.error_message;
    }
    j["bytes_sent"] = s.bytes_sent;
    j["bytes_received"] = s.bytes_received;
    j["server_wait_ns"] = s.server_wait_ns;
    j["duration_ns"] = s.ts_end_ns - s.ts_start_ns;
    return j;
}

std::string render_protocol_json(const ProtocolEvent &ev, const ProtocolJsonOptions &options) {
    return line(protocol_event_json(ev, options));
}

std::string render_command_summary_json(const CommandSummary &s) {
    return line(command_summary_json(s));
}

json api_call_json(const protocol::ApiCall &call) {
    json j;
    j["kind"] = "api";
    j["conn"] = call.conn;
    j["pid"] = call.pid;
    j["tid"] = call.tid;
    j["ts_start_ns"] = call.ts_begin_ns;
    j["ts_end_ns"] = call.ts_end_ns;
    j["function"] = call.func;
    j["handle"] = call.handle;
    j["ret"] = call.ret;
    j["failed"] = call.failed;
    put(j, "error_code", call.error_code);
    put(j, "sqlstate", call.sqlstate);
    put(j, "error_message", call.error_message);
    put(j, "server_thread_id", call.server_thread_id);
    put(j,
        call.func == "mysql_select_db"    ? "schema"
        : call.func == "mysql_bind_param" ? "attributes"
                                          : "sql",
        call.arg);
    put(j, "sql_bytes", call.arg_bytes);
    j["server_wait_ns"] = call.server_wait_ns;
    j["duration_ns"] = call.ts_end_ns - call.ts_begin_ns;
    return j;
}

std::string render_api_call_json(const protocol::ApiCall &call) {
    return line(api_call_json(call));
}

}  // namespace mysqltrace::output
