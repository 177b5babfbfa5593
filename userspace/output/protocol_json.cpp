// SPDX-License-Identifier: GPL-2.0-only
#include "output/protocol_json.h"

#include <array>

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

// Stage and event names as JSON strings, quotes included, made once: they
// are in every event's line. A value past the table is quoted as it comes.
template <typename Enum, size_t N>
std::array<std::string, N> quoted_names(const char *(*name)(Enum)) {
    std::array<std::string, N> out;
    for (size_t i = 0; i < N; ++i) {
        append_json_string(out[i], name(static_cast<Enum>(i)));
    }
    return out;
}

const auto kQuotedStages = quoted_names<protocol::Stage, 13>(protocol::stage_name);
const auto kQuotedEvents = quoted_names<protocol::TraceEvent, 17>(protocol::event_name);

// An event's or a command's line (about a dozen of them per statement),
// put together in a FlatWriter: each key a literal that holds its comma,
// quotes and colon (",\"KEY\":"), written without the comma when it is the
// line's first.
class Line {
  public:
    explicit Line(std::string &out) : f_(out) { f_.lit("{"); }
    ~Line() { f_.lit("}\n"); }
    Line(const Line &) = delete;
    Line &operator=(const Line &) = delete;

    template <size_t N>
    FlatWriter &key(const char (&k)[N]) {
        static_assert(N >= 2);
        f_.lit_skip(k, any_ ? 0 : 1);
        any_ = true;
        return f_;
    }
    template <size_t N, std::integral T>
    void num(const char (&k)[N], T v) {
        key(k).num(v);
    }
    template <size_t N, typename T>
    void opt(const char (&k)[N], const std::optional<T> &v) {
        if (v) {
            key(k).num(*v);
        }
    }
    template <size_t N>
    void str(const char (&k)[N], std::string_view v) {
        key(k).str(v);
    }
    // The string, when not empty.
    template <size_t N>
    void some(const char (&k)[N], std::string_view v) {
        if (!v.empty()) {
            key(k).str(v);
        }
    }
    template <size_t N>
    void opt_str(const char (&k)[N], const std::optional<std::string> &v) {
        if (v) {
            key(k).str(*v);
        }
    }
    template <size_t N>
    void flag(const char (&k)[N], bool v) {
        FlatWriter &f = key(k);
        v ? f.lit("true") : f.lit("false");
    }
    // A name of static storage that needs no escaping (an enum's name).
    template <size_t N>
    void word(const char (&k)[N], std::string_view v) {
        FlatWriter &f = key(k);
        f.lit("\"");
        f.raw(v);
        f.lit("\"");
    }
    // An enum's name from its table of quoted names.
    template <size_t N, typename Enum, size_t M>
    void name(const char (&k)[N], const std::array<std::string, M> &names, Enum e,
              const char *(*name)(Enum)) {
        const auto i = static_cast<size_t>(e);
        if (i < M) {
            key(k).raw(names[i]);
        } else {
            key(k).str(name(e));
        }
    }
    // [{"name":"n1","value":"'v1'"}, ...]: a list, since names may repeat.
    template <size_t N>
    void attrs(const char (&k)[N], const std::vector<protocol::QueryAttribute> &attrs) {
        if (attrs.empty()) {
            return;
        }
        key(k).lit("[");
        for (size_t i = 0; i < attrs.size(); i++) {
            if (i > 0) {
                f_.lit(",");
            }
            f_.lit("{\"name\":");
            f_.str(attrs[i].name);
            f_.lit(",\"value\":");
            f_.str(attrs[i].value);
            f_.lit("}");
        }
        f_.lit("]");
    }

  private:
    FlatWriter f_;
    bool any_ = false;
};

}  // namespace

void append_protocol_json(std::string &out, const ProtocolEvent &ev,
                          const ProtocolJsonOptions &options) {
    Line l(out);
    l.opt(",\"affected_rows\":", ev.affected_rows);
    l.some(",\"auth_plugin\":", ev.auth_plugin);
    l.opt(",\"bytes\":", ev.bytes);
    l.opt(",\"column_count\":", ev.column_count);
    l.some(",\"command\":", ev.command_name);
    l.num(",\"conn\":", ev.conn);
    l.some(",\"database\":", ev.database);
    if (!ev.details.empty()) {
        FlatWriter &f = l.key(",\"details\":");
        bool first = true;
        for (const auto &d : ev.details) {
            f.lit(first ? "[" : ",");
            f.str(d);
            first = false;
        }
        f.lit("]");
    }
    l.opt(",\"error_code\":", ev.error_code);
    if (ev.error_code) {
        l.str(",\"error_message\":", ev.error_message);
    }
    l.name(",\"event\":", kQuotedEvents, ev.event, protocol::event_name);
    l.word(",\"kind\":", "protocol");
    l.opt(",\"last_insert_id\":", ev.last_insert_id);
    if (options.dump) {
        if (ev.packet_redacted) {
            l.key(",\"packet_redacted\":").lit("true");
        } else if (!ev.packet.empty()) {
            l.word(",\"packet_hex\":", to_hex(ev.packet));
        }
    }
    l.num(",\"pid\":", ev.pid);
    l.attrs(",\"query_attributes\":", ev.query_attributes);
    l.opt(",\"row_count\":", ev.row_count);
    l.opt(",\"seq\":", ev.seq);
    l.opt(",\"server_connection_id\":", ev.server_connection_id);
    l.some(",\"server_version\":", ev.server_version);
    if (ev.from_library) {
        l.word(",\"source\":", "library");
    }
    l.opt_str(",\"sql\":", ev.sql);
    l.opt(",\"sql_bytes\":", ev.sql_bytes);
    l.some(",\"sqlstate\":", ev.sqlstate);
    l.name(",\"stage\":", kQuotedStages, ev.stage, protocol::stage_name);
    l.opt(",\"statement_id\":", ev.statement_id);
    l.opt(",\"status_flags\":", ev.status_flags);
    l.num(",\"tid\":", ev.tid);
    if (ev.truncated) {
        l.key(",\"truncated\":").lit("true");
    }
    l.num(",\"ts_ns\":", ev.ts_ns);
    l.some(",\"user\":", ev.user);
    l.opt(",\"warnings\":", ev.warnings);
}

void append_command_summary_json(std::string &out, const CommandSummary &s) {
    Line l(out);
    l.opt(",\"affected_rows\":", s.affected_rows);
    l.num(",\"bytes_received\":", s.bytes_received);
    l.num(",\"bytes_sent\":", s.bytes_sent);
    l.str(",\"command\":", s.command_name);
    l.num(",\"conn\":", s.conn);
    l.num(",\"duration_ns\":", s.ts_end_ns - s.ts_start_ns);
    l.opt(",\"error_code\":", s.error_code);
    if (s.error_code) {
        l.str(",\"error_message\":", s.error_message);
    }
    l.word(",\"kind\":", "protocol_command");
    l.num(",\"pid\":", s.pid);
    l.attrs(",\"query_attributes\":", s.query_attributes);
    l.word(",\"result\":", protocol::command_result_name(s.result));
    l.num(",\"result_sets\":", s.result_sets);
    l.num(",\"rows\":", s.rows);
    l.num(",\"server_wait_ns\":", s.server_wait_ns);
    l.opt_str(",\"sql\":", s.sql);
    l.opt(",\"sql_bytes\":", s.sql_bytes);
    l.opt(",\"statement_id\":", s.statement_id);
    l.num(",\"tid\":", s.tid);
    l.num(",\"ts_end_ns\":", s.ts_end_ns);
    l.num(",\"ts_start_ns\":", s.ts_start_ns);
}

void append_api_call_json(std::string &out, const protocol::ApiCall &call) {
    // The argument's key depends on the call; it goes where its name sorts.
    const bool schema = call.func == "mysql_select_db";
    const bool attributes = call.func == "mysql_bind_param";
    Line l(out);
    if (attributes) {
        l.opt_str(",\"attributes\":", call.arg);
    }
    l.num(",\"conn\":", call.conn);
    l.num(",\"duration_ns\":", call.ts_end_ns - call.ts_begin_ns);
    l.opt(",\"error_code\":", call.error_code);
    l.some(",\"error_message\":", call.error_message);
    l.flag(",\"failed\":", call.failed);
    l.str(",\"function\":", call.func);
    l.num(",\"handle\":", call.handle);
    l.word(",\"kind\":", "api");
    l.num(",\"pid\":", call.pid);
    l.num(",\"ret\":", call.ret);
    if (schema) {
        l.opt_str(",\"schema\":", call.arg);
    }
    l.opt(",\"server_thread_id\":", call.server_thread_id);
    l.num(",\"server_wait_ns\":", call.server_wait_ns);
    if (!schema && !attributes) {
        l.opt_str(",\"sql\":", call.arg);
    }
    l.opt(",\"sql_bytes\":", call.arg_bytes);
    l.some(",\"sqlstate\":", call.sqlstate);
    l.num(",\"tid\":", call.tid);
    l.num(",\"ts_end_ns\":", call.ts_end_ns);
    l.num(",\"ts_start_ns\":", call.ts_begin_ns);
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
