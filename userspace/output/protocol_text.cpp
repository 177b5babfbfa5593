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
// line: a command's events come in a run of one connection and thread, so
// the three numbers are then one copy of constant size instead of three
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
        // Reused: two connections' events interleaved come here for every
        // other line, and a string made each time allocated each time.
        thread_local std::string text;
        text.clear();
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

// Whether any of x's 8 bytes needs escaping: a word holds a byte below
// 0x20 iff (x - 0x20..) & ~x & 0x80.. is non-zero (exact as a yes/no for
// bounds up to 0x80), and a 0x7F iff x ^ 0x7F.. holds a zero byte.
bool has_unplain(uint64_t x) {
    constexpr uint64_t kOnes = 0x0101010101010101ULL;
    constexpr uint64_t kHigh = 0x8080808080808080ULL;
    const uint64_t del = x ^ (0x7F * kOnes);
    return ((((x - 0x20 * kOnes) & ~x) | ((del - kOnes) & ~del)) & kHigh) != 0;
}

// The length of s's leading run of plain bytes, 8 bytes at a time: the
// rendered lines are mostly printable, and a byte loop over them was the
// largest cost of rendering text.
size_t plain_run(std::string_view s, size_t i) {
    while (i + 8 <= s.size()) {
        uint64_t x;
        std::memcpy(&x, s.data() + i, 8);
        if (has_unplain(x)) {
            break;
        }
        i += 8;
    }
    while (i < s.size() && plain(static_cast<unsigned char>(s[i]))) {
        ++i;
    }
    return i;
}

// One byte as append_escaped() writes it, to d; returns the bytes written.
size_t put_escaped_byte(char *d, unsigned char c) {
    if (plain(c)) {
        d[0] = static_cast<char>(c);
        return 1;
    }
    d[0] = '\\';
    switch (c) {
        case '\n':
            d[1] = 'n';
            return 2;
        case '\r':
            d[1] = 'r';
            return 2;
        case '\t':
            d[1] = 't';
            return 2;
        default: {
            static constexpr char kHex[] = "0123456789abcdef";
            d[1] = 'x';
            d[2] = kHex[c >> 4];
            d[3] = kHex[c & 15];
            return 4;
        }
    }
}

// append_escaped() into a buffer with room for 4 * s.size() bytes, 8 plain
// bytes a copy; returns the bytes written. For the short detail lines that
// make most of a trace, written into the line's FlatWriter without a
// string append per run.
size_t put_escaped(char *out, std::string_view s) {
    char *d = out;
    size_t i = 0;
    bool last_plain = false;  // the 8 bytes before i went out as they are
    while (i + 8 <= s.size()) {
        uint64_t x;
        std::memcpy(&x, s.data() + i, 8);
        last_plain = !has_unplain(x);
        if (last_plain) {
            std::memcpy(d, &x, 8);
            d += 8;
        } else {
            for (size_t k = 0; k < 8; ++k) {
                d += put_escaped_byte(d, static_cast<unsigned char>(s[i + k]));
            }
        }
        i += 8;
    }
    const size_t rest = s.size() - i;
    if (rest > 0 && last_plain) {
        // The last 8 bytes as one word, over the end of the word before,
        // which is the same bytes unescaped.
        uint64_t x;
        std::memcpy(&x, s.data() + s.size() - 8, 8);
        if (!has_unplain(x)) {
            std::memcpy(d + rest - 8, &x, 8);
            return static_cast<size_t>(d + rest - out);
        }
    }
    for (; i < s.size(); ++i) {
        d += put_escaped_byte(d, static_cast<unsigned char>(s[i]));
    }
    return static_cast<size_t>(d - out);
}

// Detail lines up to this long (and not cut) go through put_escaped().
constexpr size_t kShortLine = 200;

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
        char esc[4];
        out.append(esc, put_escaped_byte(esc, static_cast<unsigned char>(s[j])));
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
    bool sql_done = false;
    {
        FlatWriter w(out);
        put_prefix(w, ev.conn, ev.ts_ns, ev.pid, ev.tid, options);
        w.lit("stage: ");
        put_name(w, kStageNames, ev.stage, protocol::stage_name);
        w.lit(", event: ");
        put_name(w, kEventNames, ev.event, protocol::event_name);
        w.lit("\n");
        for (const auto &d : ev.details) {
            std::string_view line = d;
            if (!sql_done && ev.sql && !ev.sql->empty() && line.size() >= ev.sql->size() + 2 &&
                line.ends_with(*ev.sql) &&
                line.substr(line.size() - ev.sql->size() - 2, 2) == ": ") {
                sql_done = true;
                w.flush();
                out += "    ";
                append_escaped(out, line.substr(0, line.size() - ev.sql->size()));
                append_cut(out, *ev.sql, options.max_value_chars, ev.sql_bytes);
                out += '\n';
            } else if (line.size() <= kShortLine && line.size() <= options.max_value_chars) {
                // What append_cut() writes for a line it need not cut.
                w.lit("    ");
                w.advance(put_escaped(w.space(4 * line.size()), line));
                w.lit("\n");
            } else {
                w.flush();
                out += "    ";
                append_cut(out, line, options.max_value_chars);
                out += '\n';
            }
        }
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
