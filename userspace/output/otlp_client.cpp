// SPDX-License-Identifier: GPL-2.0-only
#include "output/otlp_client.h"

#include "output/otlp_channel.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "mysql/commands.h"
#include "output/json_writer.h"

namespace mysqltrace::output {

using namespace otlp;

namespace {

constexpr uint8_t kComChangeUser = 17;

// The schema a `USE db` names ("" when it is not one).
std::string use_target(std::string_view sql) {
    size_t i = sql.find_first_not_of(" \t\r\n");
    if (i == std::string_view::npos || sql.size() - i < 4) {
        return "";
    }
    std::string_view rest = sql.substr(i);
    if (!(std::tolower(static_cast<unsigned char>(rest[0])) == 'u' &&
          std::tolower(static_cast<unsigned char>(rest[1])) == 's' &&
          std::tolower(static_cast<unsigned char>(rest[2])) == 'e' &&
          std::isspace(static_cast<unsigned char>(rest[3])))) {
        return "";
    }
    rest.remove_prefix(4);
    const size_t b = rest.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) {
        return "";
    }
    rest.remove_prefix(b);
    if (rest.front() == '`') {
        const size_t e = rest.find('`', 1);
        return e == std::string_view::npos ? "" : std::string(rest.substr(1, e - 1));
    }
    size_t e = 0;
    while (e < rest.size() && !std::isspace(static_cast<unsigned char>(rest[e])) &&
           rest[e] != ';') {
        e++;
    }
    return std::string(rest.substr(0, e));
}

// network.peer.address and port of a peer string; port 0 for a socket path.
void split_peer(std::string_view peer, std::string_view *address, uint16_t *port) {
    *address = peer;
    *port = 0;
    if (peer.empty() || peer.front() == '/' || peer.front() == '@') {
        return;
    }
    const size_t colon = peer.rfind(':');
    if (colon == std::string_view::npos) {
        return;
    }
    unsigned v = 0;
    for (char c : peer.substr(colon + 1)) {
        if (c < '0' || c > '9' || v > 65535) {
            return;
        }
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    if (v == 0 || v > 65535) {
        return;
    }
    std::string_view host = peer.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    *address = host;
    *port = static_cast<uint16_t>(v);
}

bool result_ok(const protocol::CommandSummary &sum) {
    return sum.result == protocol::CommandResult::ok || sum.result == protocol::CommandResult::rows;
}

}  // namespace

void ClientConnectionState::on_event(const protocol::ProtocolEvent &ev) {
    using protocol::TraceEvent;
    if (ev.server_connection_id && conn.connection_id == 0) {
        conn.connection_id = *ev.server_connection_id;
    }
    switch (ev.event) {
        case TraceEvent::init_packet_received:
            conn.server_version = ev.server_version;
            if (ev.server_connection_id) {
                conn.connection_id = *ev.server_connection_id;
            }
            break;
        case TraceEvent::send_auth_response:
            pending_db_ = ev.database;
            pending_ = true;
            break;
        case TraceEvent::authenticated:
            // The handshake's schema, or the change-user's once its reply
            // (this event) says the server took it.
            if (pending_) {
                conn.db = pending_db_;
                pending_ = false;
            }
            break;
        case TraceEvent::send_command:
            if (ev.command == kComChangeUser) {
                pending_db_ = ev.database;
                pending_ = true;
            } else if (ev.command == mysql::kComInitDb && !ev.details.empty()) {
                // The detail line is "INIT_DB: <schema>".
                const std::string &d = ev.details.front();
                const size_t colon = d.find(": ");
                pending_db_ = colon == std::string::npos ? "" : d.substr(colon + 2);
                pending_ = true;
            }
            break;
        default:
            break;
    }
}

void ClientConnectionState::on_summary(const protocol::CommandSummary &sum) {
    if (sum.command == mysql::kComInitDb || sum.command == kComChangeUser) {
        if (pending_ && result_ok(sum)) {
            conn.db = pending_db_;
        }
        pending_ = false;
    } else if (sum.command == mysql::kComQuery && sum.sql && result_ok(sum)) {
        std::string db = use_target(*sum.sql);
        if (!db.empty()) {
            conn.db = std::move(db);
        }
    }
}

std::string_view db_system_of(std::string_view server_version) {
    if (server_version.empty()) {
        return "other_sql";
    }
    return server_version.find("MariaDB") != std::string_view::npos ? "mariadb" : "mysql";
}

ClientProcess read_client_process(uint32_t pid) {
    ClientProcess p;
    p.pid = pid;
    p.executable = process_executable(pid);
    return p;
}

OtlpClientSpans::OtlpClientSpans(std::string host_name, std::string version, uint64_t seed)
    : host_name_(std::move(host_name)),
      version_(std::move(version)),
      offset_ns_(realtime_offset()),
      ids_(seed) {}

const std::string &OtlpClientSpans::resource_attrs(const ClientProcess &proc) {
    auto &[executable, attrs_text] = resources_[proc.pid];
    if (!attrs_text.empty() && executable == proc.executable) {
        return attrs_text;
    }
    if (resources_.size() > 4096) {
        // Pids come and go: start over rather than grow.
        resources_.clear();
        return resource_attrs(proc);
    }
    executable = proc.executable;
    attrs_text.clear();
    Attrs attrs(attrs_text);
    // The SDKs' default service name is unknown_service:<executable>.
    attrs.str("service.name", proc.executable.empty() ? "unknown_service" : proc.executable);
    attrs.integer("process.pid", proc.pid);
    if (!proc.executable.empty()) {
        attrs.str("process.executable.name", proc.executable);
    }
    if (!host_name_.empty()) {
        attrs.str("host.name", host_name_);
    }
    return attrs_text;
}

OtlpClientSpans::ProcessBatch &OtlpClientSpans::batch_of(const ClientProcess &proc) {
    ProcessBatch &b = batches_[proc.pid];
    if (!b.head.empty()) {
        return b;
    }
    JsonWriter j(b.head);
    j.begin_object();
    j.key("resource");
    j.begin_object();
    j.key("attributes");
    j.begin_array();
    b.head += resource_attrs(proc);
    j.end_array();
    j.end_object();
    j.key("scopeSpans");
    j.begin_array();
    j.begin_object();
    scope_field(j, version_);
    j.key("spans");
    j.begin_array();
    return b;
}

SpanContext OtlpClientSpans::add(const protocol::CommandSummary &sum, const ClientConnection &conn,
                                 const ClientProcess &proc) {
    SpanContext ctx;
    uint32_t flags = kSampled | kFlagHasIsRemote;
    const std::string *text = sum.sql ? &*sum.sql : nullptr;
    std::optional<TraceParent> parent;
    if (text != nullptr) {
        parent = sqlcommenter_traceparent(*text);
    }
    if (parent) {
        ctx.trace_id = parent->trace_id;
        ctx.trace_state = parent->trace_state;
        flags = parent->flags | kFlagHasIsRemote | kFlagIsRemote;
    } else {
        ids_.fill(ctx.trace_id.data(), ctx.trace_id.size());
    }
    ids_.fill(ctx.span_id.data(), ctx.span_id.size());
    ctx.flags = static_cast<uint8_t>(flags & 0xff);
    const std::string operation = command_operation(sum.command, text);
    tables_.clear();
    // Tables of a statement the command runs (not of one it closes or resets).
    if (text != nullptr && !operation.starts_with("COM_")) {
        tables_ = sql::statement_tables(*text);
    }
    const std::string summary = summary_of(operation, tables_);
    const std::string_view system = db_system_of(conn.server_version);
    const bool failed = sum.result == protocol::CommandResult::error;

    ProcessBatch &b = batch_of(proc);
    if (!b.body.empty()) {
        b.body += ',';
    }
    spans_++;
    JsonWriter j(b.body);
    j.begin_object();
    hex_field(j, "traceId", ctx.trace_id.data(), 16);
    hex_field(j, "spanId", ctx.span_id.data(), 8);
    if (parent) {
        if (!parent->trace_state.empty()) {
            j.field("traceState", parent->trace_state);
        }
        hex_field(j, "parentSpanId", parent->parent_id.data(), 8);
    }
    j.field("flags", flags);
    j.field("name", summary);
    j.field("kind", kSpanKindClient);
    int64_string(j, "startTimeUnixNano", sum.ts_start_ns + offset_ns_);
    int64_string(j, "endTimeUnixNano", std::max(sum.ts_end_ns, sum.ts_start_ns) + offset_ns_);
    j.key("attributes");
    j.begin_array();
    Attrs attrs(b.body);
    attrs.str("db.system.name", system);
    if (!conn.db.empty()) {
        attrs.str("db.namespace", conn.db);
    }
    if (text != nullptr) {
        attrs.str("db.query.text", *text);
    }
    attrs.str("db.query.summary", summary);
    attrs.str("db.operation.name", operation);
    std::string_view collection;
    if (one_collection(tables_, conn.db, sum.sql_bytes.has_value(), &collection_)) {
        collection = collection_;
        attrs.str("db.collection.name", collection);
    }
    std::string_view status_code;
    if (failed && sum.error_code) {
        scratch_ = std::to_string(*sum.error_code);
        status_code = scratch_;
        attrs.str("db.response.status_code", scratch_);
        attrs.str("error.type", scratch_);
    } else if (failed) {
        // A client-side error without a server error number.
        status_code = "_OTHER";
        attrs.str("error.type", "_OTHER");
    }
    if (sum.result == protocol::CommandResult::rows) {
        attrs.integer("db.response.returned_rows", sum.rows);
    }
    std::string_view address;
    uint16_t port = 0;
    split_peer(conn.peer, &address, &port);
    if (!address.empty()) {
        attrs.str("server.address", address);
        if (port != 0) {
            attrs.integer("server.port", port);
        }
        attrs.str("network.peer.address", address);
        if (port != 0) {
            attrs.integer("network.peer.port", port);
        }
        attrs.str("network.transport", port != 0 ? "tcp" : "unix");
    }
    if (metrics_ != nullptr) {
        MetricAttrs m;
        m.system = system;
        m.ns = conn.db;
        m.operation = operation;
        m.collection = collection;
        m.summary = summary;
        m.status_code = status_code;
        m.server_address = address;
        m.server_port = port;
        metrics_->record(
            DurationMetric::client, resource_attrs(proc), m,
            static_cast<double>(std::max(sum.ts_end_ns, sum.ts_start_ns) - sum.ts_start_ns) / 1e9);
    }
    if (conn.connection_id != 0) {
        attrs.integer("mysqltrace.connection.id", conn.connection_id);
    }
    attrs.integer("mysqltrace.client.connection", sum.conn);
    attrs.integer("thread.id", sum.tid);
    attrs.str("mysqltrace.command", sum.command_name);
    attrs.str("mysqltrace.result", protocol::command_result_name(sum.result));
    if (sum.affected_rows) {
        attrs.integer("mysqltrace.rows_affected", *sum.affected_rows);
    }
    attrs.integer("mysqltrace.server_wait_ns", sum.server_wait_ns);
    attrs.integer("mysqltrace.bytes_sent", sum.bytes_sent);
    attrs.integer("mysqltrace.bytes_received", sum.bytes_received);
    if (sum.sql_bytes) {
        attrs.integer("mysqltrace.query.text_length", *sum.sql_bytes);
    }
    if (sum.statement_id) {
        attrs.integer("mysqltrace.statement_id", *sum.statement_id);
    }
    j.end_array();
    if (failed) {
        j.key("status");
        j.begin_object();
        j.field("message", sum.error_message);
        j.field("code", kStatusError);
        j.end_object();
    }
    j.end_object();
    return ctx;
}

void OtlpClientSpans::take(std::string &out) {
    out.clear();
    out += R"({"resourceSpans":[)";
    bool first = true;
    for (auto &[pid, b] : batches_) {
        if (b.body.empty()) {
            continue;
        }
        if (!first) {
            out += ',';
        }
        first = false;
        out += b.head;
        out += b.body;
        out += "]}]}";
    }
    out += "]}";
    spans_ = 0;
    // Each batch describes its processes anew (a pid may have been reused).
    batches_.clear();
}

}  // namespace mysqltrace::output
