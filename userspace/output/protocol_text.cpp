// SPDX-License-Identifier: GPL-2.0-only
#include "output/protocol_text.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "output/json_writer.h"
#include "output/units.h"

namespace mysqltrace::output {

using protocol::CommandSummary;
using protocol::ProtocolEvent;

namespace {

// What follows the time in a line's prefix, " PID/TID mysqltrace: CONN: "
// (or "mysqltrace: CONN: " without timestamps), kept from the thread's last
// line: consecutive events are mostly of one connection and thread, so the
// three numbers are then one copy of constant size instead of three
// to_chars.
struct PrefixTail {
    static constexpr size_t kCap = 64;  // >= 1 + 10 + 1 + 10 + 1 + 12 + 20 + 2
    bool valid = false;
    bool ids = false;  // with " PID/TID"
    uint64_t conn = 0;
    uint32_t pid = 0;
    uint32_t tid = 0;
    size_t size = 0;
    char text[kCap] = {};
};

void put_tail(FlatWriter &w, bool ids, uint64_t conn, uint32_t pid, uint32_t tid) {
    thread_local PrefixTail last;
    if (!last.valid || last.ids != ids || last.conn != conn || last.pid != pid || last.tid != tid) {
        std::string text;
        {
            FlatWriter t(text);
            if (ids) {
                t.lit(" ");
                t.num(pid);
                t.lit("/");
                t.num(tid);
                t.lit(" ");
            }
            t.lit("mysqltrace: ");
            t.num(conn);
            t.lit(": ");
        }
        if (text.size() > PrefixTail::kCap) {
            w.raw(text);  // never: the numbers are bounded
            return;
        }
        std::memcpy(last.text, text.data(), text.size());
        last.size = text.size();
        last.ids = ids;
        last.conn = conn;
        last.pid = pid;
        last.tid = tid;
        last.valid = true;
    }
    std::memcpy(w.space(PrefixTail::kCap), last.text, PrefixTail::kCap);
    w.advance(last.size);
}

// "HH:MM:SS.uuuuuu PID/TID mysqltrace: CONN: ", on the stack: this heads
// every line a traced application's ~10 events per statement give.
void put_prefix(FlatWriter &w, uint64_t conn, uint64_t ts_ns, uint32_t pid, uint32_t tid,
                const ProtocolTextOptions &options) {
    if (options.timestamps && options.clock != nullptr) {
        w.advance(options.clock->put_wall(ts_ns, w.space(Clock::kWallChars)));
        put_tail(w, true, conn, pid, tid);
        return;
    }
    if (options.timestamps) {
        char buf[64];
        const int n = std::snprintf(buf, sizeof(buf), "%llu.%06llu %u/%u ",
                                    static_cast<unsigned long long>(ts_ns / 1000000000ULL),
                                    static_cast<unsigned long long>((ts_ns / 1000ULL) % 1000000ULL),
                                    pid, tid);
        w.raw({buf, static_cast<size_t>(std::clamp(n, 0, static_cast<int>(sizeof(buf) - 1)))});
    }
    put_tail(w, false, conn, pid, tid);
}

void append_duration(std::string &out, uint64_t ns) {
    if (ns < 10000) {
        append_fixed(out, ns, 1, 0);
        out += " ns";
    } else if (ns < 10000000) {
        append_fixed(out, ns, 1000, 1);
        out += " us";
    } else {
        append_fixed(out, ns, 1'000'000, 3);
        out += " ms";
    }
}

// Stage and event names padded to a fixed size, so that each is a copy of
// constant size into the line instead of a strlen and a memcpy call (they
// head every event's line). Filled from event.cpp's names at start-up; a
// name too long for the padding, or an enum value past the table, is
// written from event.cpp's name as it is.
struct Name {
    static constexpr size_t kCap = 24;
    char text[kCap] = {};
    size_t size = 0;  // 0: not in the table
};

template <typename Enum, size_t N>
std::array<Name, N> padded_names(const char *(*name)(Enum)) {
    std::array<Name, N> out{};
    for (size_t i = 0; i < N; ++i) {
        const std::string_view s = name(static_cast<Enum>(i));
        if (s.size() <= Name::kCap) {
            out[i].size = s.size();
            std::memcpy(out[i].text, s.data(), s.size());
        }
    }
    return out;
}

const auto kStageNames = padded_names<protocol::Stage, 13>(protocol::stage_name);
const auto kEventNames = padded_names<protocol::TraceEvent, 17>(protocol::event_name);

template <typename Enum, size_t N>
void put_name(FlatWriter &w, const std::array<Name, N> &names, Enum e, const char *(*name)(Enum)) {
    const auto i = static_cast<size_t>(e);
    if (i >= N || names[i].size == 0) {
        w.raw(name(e));
        return;
    }
    std::memcpy(w.space(Name::kCap), names[i].text, Name::kCap);
    w.advance(names[i].size);
}

bool plain(unsigned char c) {
    return c >= 0x20 && c != 0x7F;
}

// The length of s's leading run of plain bytes, 8 bytes at a time: the
// rendered lines are mostly printable, and a byte loop over them was the
// largest cost of rendering text. A word holds a byte below 0x20 iff
// (x - 0x20..) & ~x & 0x80.. is non-zero (exact as a yes/no for bounds up to
// 0x80), and a 0x7F iff x ^ 0x7F.. holds a zero byte.
size_t plain_run(std::string_view s, size_t i) {
    constexpr uint64_t kOnes = 0x0101010101010101ULL;
    constexpr uint64_t kHigh = 0x8080808080808080ULL;
    while (i + 8 <= s.size()) {
        uint64_t x;
        std::memcpy(&x, s.data() + i, 8);
        const uint64_t del = x ^ (0x7F * kOnes);
        if ((((x - 0x20 * kOnes) & ~x) | ((del - kOnes) & ~del)) & kHigh) {
            break;
        }
        i += 8;
    }
    while (i < s.size() && plain(static_cast<unsigned char>(s[i]))) {
        ++i;
    }
    return i;
}

}  // namespace

void append_escaped(std::string &out, std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        // Runs of printable bytes go in whole.
        const size_t j = plain_run(s, i);
        out.append(s.data() + i, j - i);
        if (j == s.size()) {
            break;
        }
        const auto c = static_cast<unsigned char>(s[j]);
        switch (c) {
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default: {
                static constexpr char kHex[] = "0123456789abcdef";
                const char esc[4] = {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
                out.append(esc, 4);
            }
        }
        i = j + 1;
    }
}

namespace {

void append_cut(std::string &out, std::string_view s, size_t max,
                std::optional<uint64_t> true_len = {}) {
    const uint64_t len = std::max<uint64_t>(true_len.value_or(0), s.size());
    if (s.size() <= max && len == s.size()) {
        append_escaped(out, s);
        return;
    }
    size_t keep = std::min(s.size(), max);
    while (keep > 0 && keep < s.size() && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) {
        --keep;
    }
    append_escaped(out, s.substr(0, keep));
    out += "... (";
    append_uint(out, len);
    out += " bytes)";
}

}  // namespace

std::string escape_text(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    append_escaped(out, s);
    return out;
}

std::string cut_text(std::string_view s, size_t max, std::optional<uint64_t> true_len) {
    std::string out;
    append_cut(out, s, max, true_len);
    return out;
}

std::string hex_dump(std::span<const uint8_t> bytes, const std::string &indent) {
    std::string out;
    for (size_t row = 0; row < bytes.size(); row += 16) {
        std::string hexpart;
        std::string text;
        for (size_t i = 0; i < 16; ++i) {
            if (i == 8) {
                hexpart += ' ';
            }
            if (row + i < bytes.size()) {
                uint8_t c = bytes[row + i];
                char buf[4];
                std::snprintf(buf, sizeof(buf), " %02X", c);
                hexpart += buf;
                text += (c >= 0x20 && c < 0x7F) ? static_cast<char>(c) : '.';
            } else {
                hexpart += "   ";
            }
        }
        out += indent + hexpart.substr(1) + "   " + text + "\n";
    }
    return out;
}

void append_protocol_text(std::string &out, const ProtocolEvent &ev,
                          const ProtocolTextOptions &options) {
    {
        FlatWriter w(out);
        put_prefix(w, ev.conn, ev.ts_ns, ev.pid, ev.tid, options);
        w.lit("stage: ");
        put_name(w, kStageNames, ev.stage, protocol::stage_name);
        w.lit(", event: ");
        put_name(w, kEventNames, ev.event, protocol::event_name);
        w.lit("\n");
    }
    bool sql_done = false;
    for (const auto &d : ev.details) {
        std::string_view line = d;
        out += "    ";
        if (!sql_done && ev.sql && !ev.sql->empty() && line.size() >= ev.sql->size() + 2 &&
            line.ends_with(*ev.sql) && line.substr(line.size() - ev.sql->size() - 2, 2) == ": ") {
            sql_done = true;
            append_escaped(out, line.substr(0, line.size() - ev.sql->size()));
            append_cut(out, *ev.sql, options.max_value_chars, ev.sql_bytes);
        } else {
            append_cut(out, line, options.max_value_chars);
        }
        out += '\n';
    }
    if (options.dump && ev.bytes) {
        if (ev.packet_redacted) {
            out += "    (packet withheld: it carries secrets; --show-secrets shows it)\n";
        } else if (!ev.packet.empty()) {
            out += "    packet: ";
            append_uint(out, *ev.bytes);
            out += " bytes";
            if (ev.packet.size() < *ev.bytes) {
                out += ", first ";
                append_uint(out, ev.packet.size());
                out += " shown";
            }
            out += "\n";
            out += hex_dump(ev.packet, "      ");
        }
    }
}

std::string render_protocol_text(const ProtocolEvent &ev, const ProtocolTextOptions &options) {
    std::string out;
    append_protocol_text(out, ev, options);
    return out;
}

void append_command_summary_text(std::string &out, const CommandSummary &s,
                                 const ProtocolTextOptions &options) {
    FlatWriter w(out);
    put_prefix(w, s.conn, s.ts_end_ns, s.pid, s.tid, options);
    w.lit("summary: ");
    w.raw(s.command_name);
    w.lit(" -> ");
    w.raw(protocol::command_result_name(s.result));
    if (s.error_code) {
        w.lit(" ");
        w.num(*s.error_code);
        w.lit(" (");
        w.flush();
        append_escaped(out, s.error_message);
        w.lit(")");
    }
    if (s.statement_id) {
        w.lit("; statement: ");
        w.num(*s.statement_id);
    }
    if (s.result_sets > 0) {
        w.lit("; result sets: ");
        w.num(s.result_sets);
    }
    w.lit("; rows: ");
    w.num(s.rows);
    if (s.affected_rows) {
        w.lit("; affected: ");
        w.num(*s.affected_rows);
    }
    w.lit("; bytes sent: ");
    w.num(s.bytes_sent);
    w.lit("; bytes received: ");
    w.num(s.bytes_received);
    w.flush();
    out += "; server wait: ";
    append_duration(out, s.server_wait_ns);
    out += "; total: ";
    append_duration(out, s.ts_end_ns - s.ts_start_ns);
    if (s.sql) {
        out += "; SQL: ";
        append_cut(out, *s.sql, options.max_value_chars, s.sql_bytes);
    }
    for (size_t i = 0; i < s.query_attributes.size(); ++i) {
        out += i == 0 ? "; query attributes: " : ", ";
        append_escaped(out, s.query_attributes[i].name);
        out += '=';
        append_escaped(out, s.query_attributes[i].value);
    }
    out += '\n';
}

std::string render_command_summary_text(const CommandSummary &s,
                                        const ProtocolTextOptions &options) {
    std::string out;
    append_command_summary_text(out, s, options);
    return out;
}

void append_api_call_text(std::string &out, const protocol::ApiCall &call,
                          const ProtocolTextOptions &options) {
    {
        FlatWriter w(out);
        put_prefix(w, call.conn, call.ts_end_ns, call.pid, call.tid, options);
        w.lit("api: ");
        w.raw(call.func);
        char handle[24];
        const auto h = std::to_chars(handle, handle + sizeof(handle), call.handle, 16);
        w.lit("(0x");
        w.raw({handle, static_cast<size_t>(h.ptr - handle)});
        w.lit(") -> ");
        if (call.func == "mysql_stmt_fetch" && !call.failed) {
            switch (call.ret) {
                case 0:
                    w.lit("OK");
                    break;
                case 100:
                    w.lit("NO_DATA");
                    break;
                case 101:
                    w.lit("DATA_TRUNCATED");
                    break;
                default:
                    w.num(call.ret);
            }
        } else if (call.failed) {
            w.lit("FAILED");
        } else {
            w.lit("OK");
        }
        if (call.error_code) {
            w.lit(" ");
            w.num(*call.error_code);
        }
    }
    if (call.error_code) {
        if (!call.sqlstate.empty()) {
            out += " (";
            append_escaped(out, call.sqlstate);
            out += ')';
        }
        out += ": ";
        append_escaped(out, call.error_message);
    }
    const uint64_t total = call.ts_end_ns - call.ts_begin_ns;
    out += "; time: ";
    append_duration(out, total);
    if (call.server_wait_ns > 0) {
        out += "; server wait: ";
        append_duration(out, call.server_wait_ns);
        out += "; in client: ";
        append_duration(out, total > call.server_wait_ns ? total - call.server_wait_ns : 0);
    }
    if (call.server_thread_id) {
        out += "; server thread: ";
        append_uint(out, *call.server_thread_id);
    }
    if (call.arg) {
        out += call.func == "mysql_select_db"    ? "; schema: "
               : call.func == "mysql_bind_param" ? "; attributes: "
                                                 : "; SQL: ";
        append_cut(out, *call.arg, options.max_value_chars, call.arg_bytes);
    }
    out += '\n';
}

std::string render_api_call_text(const protocol::ApiCall &call,
                                 const ProtocolTextOptions &options) {
    std::string out;
    append_api_call_text(out, call, options);
    return out;
}

}  // namespace mysqltrace::output
