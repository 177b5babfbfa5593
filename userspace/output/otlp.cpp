// SPDX-License-Identifier: GPL-2.0-only
#include "output/otlp.h"

#include <time.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "mysql/commands.h"
#include "output/json_writer.h"
#include "output/otlp_json.h"
#include "sql/tables.h"

namespace mysqltrace::output {

namespace {

using namespace otlp;

constexpr size_t kMaxEvents = 128;

int hex_digit(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

// W3C: lower-case hex only.
bool parse_hex(std::string_view s, uint8_t *out, size_t n) {
    if (s.size() != n * 2) {
        return false;
    }
    bool nonzero = false;
    for (size_t i = 0; i < n; i++) {
        const int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return false;
        }
        out[i] = static_cast<uint8_t>(hi << 4 | lo);
        nonzero |= out[i] != 0;
    }
    return nonzero;
}

std::optional<TraceParent> parse_traceparent(std::string_view v) {
    // version "-" trace-id "-" parent-id "-" flags; a later version may
    // append "-..." fields, version 00 may not.
    if (v.size() < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-') {
        return std::nullopt;
    }
    uint8_t version = 0;
    if (hex_digit(v[0]) < 0 || hex_digit(v[1]) < 0) {
        return std::nullopt;
    }
    version = static_cast<uint8_t>(hex_digit(v[0]) << 4 | hex_digit(v[1]));
    if (version == 0xff || (version == 0 && v.size() != 55) || (v.size() > 55 && v[55] != '-')) {
        return std::nullopt;
    }
    TraceParent tp;
    uint8_t flags[1];
    if (!parse_hex(v.substr(3, 32), tp.trace_id.data(), 16) ||
        !parse_hex(v.substr(36, 16), tp.parent_id.data(), 8)) {
        return std::nullopt;
    }
    if (!parse_hex(v.substr(53, 2), flags, 1)) {
        // parse_hex refuses 00, a valid flags byte.
        if (v.substr(53, 2) != "00") {
            return std::nullopt;
        }
        flags[0] = 0;
    }
    tp.flags = flags[0];
    return tp;
}

// sqlcommenter's URL encoding: %XX; false on a bad escape.
bool url_decode(std::string_view in, std::string &out) {
    out.clear();
    for (size_t i = 0; i < in.size(); i++) {
        if (in[i] != '%') {
            out += in[i];
            continue;
        }
        if (i + 2 >= in.size()) {
            return false;
        }
        auto hexval = [](char c) {
            return hex_digit(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
        };
        const int hi = hexval(in[i + 1]), lo = hexval(in[i + 2]);
        if (hi < 0 || lo < 0) {
            return false;
        }
        out += static_cast<char>(hi << 4 | lo);
        i += 2;
    }
    return true;
}

// The key='value' pairs of one comment's body; false when it is not all
// such pairs (a comment that is not sqlcommenter's).
bool comment_pairs(std::string_view body, std::vector<std::pair<std::string, std::string>> &out) {
    out.clear();
    size_t i = 0;
    auto skip_blanks = [&] {
        while (i < body.size() && std::isspace(static_cast<unsigned char>(body[i]))) {
            i++;
        }
    };
    skip_blanks();
    while (i < body.size()) {
        const size_t eq = body.find('=', i);
        if (eq == std::string_view::npos || eq + 1 >= body.size() || body[eq + 1] != '\'') {
            return false;
        }
        std::string_view key = body.substr(i, eq - i);
        while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) {
            key.remove_suffix(1);
        }
        std::string raw;
        size_t j = eq + 2;
        bool closed = false;
        for (; j < body.size(); j++) {
            if (body[j] == '\\' && j + 1 < body.size()) {
                raw += body[++j];
            } else if (body[j] == '\'') {
                closed = true;
                break;
            } else {
                raw += body[j];
            }
        }
        if (!closed || key.empty()) {
            return false;
        }
        std::string k, v;
        if (!url_decode(key, k) || !url_decode(raw, v)) {
            return false;
        }
        out.emplace_back(std::move(k), std::move(v));
        i = j + 1;
        skip_blanks();
        if (i < body.size()) {
            if (body[i] != ',') {
                return false;
            }
            i++;
            skip_blanks();
        }
    }
    return !out.empty();
}

std::string upper_words(std::string_view s) {
    std::string out(s);
    for (char &c : out) {
        c = c == '_' ? ' ' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
}

}  // namespace

std::optional<TraceParent> sqlcommenter_traceparent(std::string_view sql) {
    std::vector<std::pair<std::string, std::string>> pairs;
    size_t i = 0;
    while (i < sql.size()) {
        const char c = sql[i];
        if (c == '\'' || c == '"' || c == '`') {
            // A quoted string or name: a comment inside it is not one.
            size_t j = i + 1;
            while (j < sql.size() && sql[j] != c) {
                j += (sql[j] == '\\' && c != '`') ? 2 : 1;
            }
            i = j + 1;
            continue;
        }
        if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
            const size_t end = sql.find("*/", i + 2);
            if (end == std::string_view::npos) {
                return std::nullopt;
            }
            if (comment_pairs(sql.substr(i + 2, end - i - 2), pairs)) {
                std::optional<TraceParent> tp;
                std::string state;
                for (const auto &[k, v] : pairs) {
                    if (k == "traceparent" && !tp) {
                        tp = parse_traceparent(v);
                    } else if (k == "tracestate") {
                        state = v;
                    }
                }
                if (tp) {
                    tp->trace_state = std::move(state);
                    return tp;
                }
            }
            i = end + 2;
            continue;
        }
        i++;
    }
    return std::nullopt;
}

namespace {

// The operation of an SQL text: performance_schema's SQLCOM name as the
// keywords that start it.
std::string sql_operation(std::string_view text) {
    const std::string name = server::sql_command_name(text);
    if (name.empty()) {
        // Not a statement the tracer names: its first word.
        const size_t b = text.find_first_not_of(" \t\r\n(");
        if (b == std::string_view::npos) {
            return "";
        }
        size_t e = b;
        while (e < text.size() && std::isalpha(static_cast<unsigned char>(text[e]))) {
            e++;
        }
        return upper_words(text.substr(b, e - b));
    }
    static const std::pair<const char *, const char *> renamed[] = {
        {"insert_select", "INSERT"},
        {"replace_select", "REPLACE"},
        {"set_option", "SET"},
        {"set_password", "SET PASSWORD"},
        {"set_role", "SET ROLE"},
        {"change_db", "USE"},
        {"dealloc_sql", "DEALLOCATE PREPARE"},
        {"execute_sql", "EXECUTE"},
        {"prepare_sql", "PREPARE"},
        {"create_db", "CREATE DATABASE"},
        {"drop_db", "DROP DATABASE"},
        {"alter_db", "ALTER DATABASE"},
        {"update_multi", "UPDATE"},
        {"delete_multi", "DELETE"}};
    for (const auto &[from, to] : renamed) {
        if (name == from) {
            return to;
        }
    }
    return upper_words(name);
}

}  // namespace

std::string command_operation(uint8_t command, const std::string *text) {
    // A query, or a prepared statement's text (prepare, execute, fetch).
    if (text != nullptr && (command == mysql::kComQuery || command == mysql::kComStmtPrepare ||
                            command == mysql::kComStmtExecute || command == 28 ||
                            command == mysql::kComStmtBulkExecute)) {
        std::string op = sql_operation(*text);
        if (!op.empty()) {
            return op;
        }
    }
    return mysql::command_name(command);
}

std::string operation_name(const server::Statement &st) {
    return command_operation(st.command, ServerRenderer::has_text(st) ? &st.text : nullptr);
}

namespace {

std::string spelled(const sql::TableName &t) {
    return t.schema.empty() ? t.name : t.schema + "." + t.name;
}

}  // namespace

std::string summary_of(std::string_view operation, const std::vector<sql::TableName> &tables) {
    // The tables in order of appearance, each once, as the text names them;
    // semantic conventions cap the summary at 255 characters.
    std::string out(operation);
    std::vector<std::string> seen;
    for (const auto &t : tables) {
        std::string name = spelled(t);
        if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
            continue;
        }
        if (out.size() + 1 + name.size() > 255) {
            break;
        }
        out += ' ';
        out += name;
        seen.push_back(std::move(name));
    }
    return out;
}

bool one_collection(const std::vector<sql::TableName> &tables, std::string_view db, bool truncated,
                    std::string *out) {
    if (tables.empty() || truncated) {
        return false;
    }
    auto full = [&](const sql::TableName &t) {
        return sql::TableName{t.schema.empty() ? std::string(db) : t.schema, t.name};
    };
    const auto first = full(tables.front());
    for (const auto &t : tables) {
        if (!(full(t) == first)) {
            return false;
        }
    }
    *out = spelled(tables.front());
    return true;
}

std::string query_summary(const server::Statement &st, std::string_view operation) {
    if (!ServerRenderer::has_text(st)) {
        return std::string(operation);
    }
    return summary_of(operation, sql::statement_tables(st.text));
}

OtlpSpans::OtlpSpans(OtlpResource r, uint64_t seed) : offset_ns_(realtime_offset()), ids_(seed) {
    JsonWriter j(head_);
    j.begin_object();
    j.key("resourceSpans");
    j.begin_array();
    j.begin_object();
    j.key("resource");
    j.begin_object();
    j.key("attributes");
    j.begin_array();
    Attrs attrs(resource_attrs_);
    attrs.str("service.name", r.service_name);
    attrs.str("db.system.name", r.db_system);
    attrs.integer("process.pid", r.pid);
    if (!r.executable.empty()) {
        attrs.str("process.executable.name", r.executable);
    }
    if (!r.host_name.empty()) {
        attrs.str("host.name", r.host_name);
    }
    head_ += resource_attrs_;
    j.end_array();
    j.end_object();
    j.key("scopeSpans");
    j.begin_array();
    j.begin_object();
    scope_field(j, r.version);
    j.key("spans");
    j.begin_array();
    resource_ = std::move(r);
}

void OtlpSpans::add(const server::Statement &st, std::string_view event_name,
                    const std::vector<OtlpStage> &stages,
                    const std::vector<OtlpSampledStage> &sampled,
                    const std::vector<NamedWait> &waits, const TraceParent *client) {
    uint8_t trace_id[16], span_id[8];
    uint32_t flags = kSampled | kFlagHasIsRemote;
    const bool text = ServerRenderer::has_text(st);
    std::optional<TraceParent> parent;
    if (client != nullptr) {
        parent = *client;
    } else if (text) {
        parent = sqlcommenter_traceparent(st.text);
    }
    if (parent) {
        std::copy(parent->trace_id.begin(), parent->trace_id.end(), trace_id);
        flags = parent->flags | kFlagHasIsRemote | (parent->remote ? kFlagIsRemote : 0);
    } else {
        ids_.fill(trace_id, sizeof(trace_id));
    }
    ids_.fill(span_id, sizeof(span_id));
    const std::string operation = operation_name(st);
    tables_.clear();
    if (text) {
        tables_ = sql::statement_tables(st.text);
    }
    const std::string summary = summary_of(operation, tables_);

    if (spans_ > 0) {
        body_ += ',';
    }
    spans_++;
    JsonWriter j(body_);
    j.begin_object();
    hex_field(j, "traceId", trace_id, 16);
    hex_field(j, "spanId", span_id, 8);
    if (parent) {
        if (!parent->trace_state.empty()) {
            j.field("traceState", parent->trace_state);
        }
        hex_field(j, "parentSpanId", parent->parent_id.data(), 8);
    }
    j.field("flags", flags);
    j.field("name", summary);
    j.field("kind", kSpanKindServer);
    int64_string(j, "startTimeUnixNano", st.start_ns + offset_ns_);
    int64_string(j, "endTimeUnixNano", st.end_ns + offset_ns_);
    j.key("attributes");
    j.begin_array();
    Attrs attrs(body_);
    attrs.str("db.system.name", resource_.db_system);
    if (!st.db.empty()) {
        attrs.str("db.namespace", st.db);
    }
    if (text) {
        attrs.str("db.query.text", st.text);
    }
    attrs.str("db.query.summary", summary);
    attrs.str("db.operation.name", operation);
    std::string_view collection;
    if (one_collection(tables_, st.db, st.truncated(), &collection_)) {
        collection = collection_;
        attrs.str("db.collection.name", collection);
    }
    std::string_view status_code;
    if (st.failed()) {
        scratch_ = std::to_string(st.error);
        status_code = scratch_;
        attrs.str("db.response.status_code", scratch_);
        attrs.str("error.type", scratch_);
        attrs.str("mysqltrace.sqlstate", st.sqlstate);
    }
    attrs.integer("db.response.returned_rows", st.rows_sent);
    if (resource_.port != 0) {
        attrs.str("server.address", resource_.host_name);
        attrs.integer("server.port", resource_.port);
    }
    if (metrics_ != nullptr) {
        MetricAttrs m;
        m.system = resource_.db_system;
        m.ns = st.db;
        m.operation = operation;
        m.collection = collection;
        m.summary = summary;
        m.status_code = status_code;
        if (resource_.port != 0) {
            m.server_address = resource_.host_name;
            m.server_port = resource_.port;
        }
        metrics_->record(DurationMetric::server, resource_attrs_, m,
                         static_cast<double>(st.end_ns - std::min(st.start_ns, st.end_ns)) / 1e9);
    }
    attrs.integer("mysqltrace.connection.id", st.thread_id);
    attrs.integer("thread.id", st.tid);
    attrs.str("mysqltrace.event_name", event_name);
    attrs.integer("mysqltrace.rows_examined", st.rows_examined);
    attrs.integer("mysqltrace.rows_affected", st.rows_affected);
    attrs.integer("mysqltrace.lock_time_ns", st.lock_ns);
    if (st.truncated()) {
        attrs.integer("mysqltrace.query.text_length", st.text_len);
    }
    j.end_array();
    if (!sampled.empty() || !waits.empty()) {
        j.key("events");
        j.begin_array();
        // Sampled stages have counts, not times: one event per stage at the
        // statement's end.
        for (const auto &s : sampled) {
            j.begin_object();
            int64_string(j, "timeUnixNano", st.end_ns + offset_ns_);
            scratch_ = "stage/sql/";
            scratch_ += s.name;
            j.field("name", scratch_);
            j.key("attributes");
            j.begin_array();
            Attrs ea(body_);
            ea.integer("mysqltrace.stage.on_cpu_samples", s.on_cpu);
            ea.integer("mysqltrace.stage.off_cpu_ns", s.off_cpu_ns);
            ea.integer("mysqltrace.stage.switches", s.switches);
            ea.integer("mysqltrace.stage.sample_period_us", st.sample_period_us);
            j.end_array();
            j.end_object();
        }
        // The SDKs' default limit of events per span: a statement with
        // thousands of waits (--table-io) keeps its first ones and says how
        // many it left out.
        size_t room = sampled.size() < kMaxEvents ? kMaxEvents - sampled.size() : 0;
        for (const auto &w : waits) {
            if (room == 0) {
                break;
            }
            room--;
            j.begin_object();
            int64_string(j, "timeUnixNano", w.wait.start_ns + offset_ns_);
            j.field("name", w.name.event_name);
            j.key("attributes");
            j.begin_array();
            Attrs ea(body_);
            ea.integer("mysqltrace.wait.duration_ns", w.wait.end_ns - w.wait.start_ns);
            if (!w.name.operation.empty()) {
                ea.str("mysqltrace.wait.operation", w.name.operation);
            }
            if (!w.name.object_name.empty()) {
                std::string object;
                w.name.append_object(object);
                ea.str("mysqltrace.wait.object", object);
            }
            j.end_array();
            j.end_object();
        }
        j.end_array();
    }
    const size_t events = sampled.size() + waits.size();
    if (events > kMaxEvents && waits.size() > 0) {
        j.field("droppedEventsCount",
                std::min(events - std::max(kMaxEvents, sampled.size()), waits.size()));
    }
    if (st.failed()) {
        j.key("status");
        j.begin_object();
        j.field("message", st.message);
        j.field("code", kStatusError);
        j.end_object();
    }
    j.end_object();

    const uint32_t child_flags = (flags & 0xff) | kFlagHasIsRemote;
    for (const auto &s : stages) {
        uint8_t stage_id[8];
        ids_.fill(stage_id, sizeof(stage_id));
        body_ += ',';
        spans_++;
        JsonWriter c(body_);
        c.begin_object();
        hex_field(c, "traceId", trace_id, 16);
        hex_field(c, "spanId", stage_id, 8);
        if (parent && !parent->trace_state.empty()) {
            c.field("traceState", parent->trace_state);
        }
        hex_field(c, "parentSpanId", span_id, 8);
        c.field("flags", child_flags);
        c.field("name", s.name);
        c.field("kind", kSpanKindInternal);
        int64_string(c, "startTimeUnixNano", s.start_ns + offset_ns_);
        int64_string(c, "endTimeUnixNano", s.end_ns + offset_ns_);
        c.key("attributes");
        c.begin_array();
        Attrs ca(body_);
        scratch_ = "stage/sql/";
        scratch_ += s.name;
        ca.str("mysqltrace.event_name", scratch_);
        c.end_array();
        c.end_object();
    }
}

void OtlpSpans::take(std::string &out) {
    out.clear();
    out.reserve(head_.size() + body_.size() + 8);
    out += head_;
    out += body_;
    out += "]}]}]}";
    body_.clear();
    spans_ = 0;
}

}  // namespace mysqltrace::output
