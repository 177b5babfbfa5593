// SPDX-License-Identifier: GPL-2.0-only
#include "output/protocol_text.h"

#include <algorithm>
#include <cstdio>

#include "output/units.h"

namespace mysqltrace::output {

using protocol::CommandSummary;
using protocol::ProtocolEvent;

namespace {

std::string prefix(uint64_t conn, uint64_t ts_ns, uint32_t pid, uint32_t tid,
                   const ProtocolTextOptions &options) {
    std::string out;
    if (options.timestamps) {
        if (options.clock != nullptr) {
            options.clock->append_wall(ts_ns, out);
            out += ' ';
            out += std::to_string(pid);
            out += '/';
            out += std::to_string(tid);
            out += ' ';
        } else {
            char buf[64];
            std::snprintf(buf, sizeof(buf), "%llu.%06llu %u/%u ",
                          static_cast<unsigned long long>(ts_ns / 1000000000ULL),
                          static_cast<unsigned long long>((ts_ns / 1000ULL) % 1000000ULL), pid,
                          tid);
            out += buf;
        }
    }
    out += "mysqltrace: " + std::to_string(conn) + ": ";
    return out;
}

std::string duration(uint64_t ns) {
    std::string s;
    if (ns < 10000) {
        append_fixed(s, ns, 1, 0);
        s += " ns";
    } else if (ns < 10000000) {
        append_fixed(s, ns, 1000, 1);
        s += " us";
    } else {
        append_fixed(s, ns, 1'000'000, 3);
        s += " ms";
    }
    return s;
}

}  // namespace

std::string escape_text(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char ch : s) {
        auto c = static_cast<unsigned char>(ch);
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
            default:
                if (c < 0x20 || c == 0x7F) {
                    char buf[8];
                    std::snprintf(buf, sizeof(buf), "\\x%02x", c);
                    out += buf;
                } else {
                    out += ch;
                }
        }
    }
    return out;
}

std::string cut_text(std::string_view s, size_t max, std::optional<uint64_t> true_len) {
    const uint64_t len = std::max<uint64_t>(true_len.value_or(0), s.size());
    if (s.size() <= max && len == s.size()) {
        return escape_text(s);
    }
    size_t keep = std::min(s.size(), max);
    while (keep > 0 && keep < s.size() && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) {
        --keep;
    }
    return escape_text(s.substr(0, keep)) + "... (" + std::to_string(len) + " bytes)";
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

std::string render_protocol_text(const ProtocolEvent &ev, const ProtocolTextOptions &options) {
    std::string out = prefix(ev.conn, ev.ts_ns, ev.pid, ev.tid, options);
    out += "stage: ";
    out += protocol::stage_name(ev.stage);
    out += ", event: ";
    out += protocol::event_name(ev.event);
    out += '\n';
    bool sql_done = false;
    for (const auto &d : ev.details) {
        std::string_view line = d;
        if (!sql_done && ev.sql && !ev.sql->empty() && line.size() >= ev.sql->size() + 2 &&
            line.ends_with(*ev.sql) && line.substr(line.size() - ev.sql->size() - 2, 2) == ": ") {
            sql_done = true;
            out += "    " + escape_text(line.substr(0, line.size() - ev.sql->size())) +
                   cut_text(*ev.sql, options.max_value_chars, ev.sql_bytes) + "\n";
            continue;
        }
        out += "    " + cut_text(line, options.max_value_chars) + "\n";
    }
    if (options.dump && ev.bytes) {
        if (ev.packet_redacted) {
            out += "    (packet withheld: it carries secrets; --show-secrets shows it)\n";
        } else if (!ev.packet.empty()) {
            out += "    packet: " + std::to_string(*ev.bytes) + " bytes";
            if (ev.packet.size() < *ev.bytes) {
                out += ", first " + std::to_string(ev.packet.size()) + " shown";
            }
            out += "\n";
            out += hex_dump(ev.packet, "      ");
        }
    }
    return out;
}

std::string render_command_summary_text(const CommandSummary &s,
                                        const ProtocolTextOptions &options) {
    std::string out = prefix(s.conn, s.ts_end_ns, s.pid, s.tid, options);
    out += "summary: " + s.command_name + " -> " + protocol::command_result_name(s.result);
    if (s.error_code) {
        out += " " + std::to_string(*s.error_code) + " (" + escape_text(s.error_message) + ")";
    }
    if (s.statement_id) {
        out += "; statement: " + std::to_string(*s.statement_id);
    }
    if (s.result_sets > 0) {
        out += "; result sets: " + std::to_string(s.result_sets);
    }
    out += "; rows: " + std::to_string(s.rows);
    if (s.affected_rows) {
        out += "; affected: " + std::to_string(*s.affected_rows);
    }
    out += "; bytes sent: " + std::to_string(s.bytes_sent);
    out += "; bytes received: " + std::to_string(s.bytes_received);
    out += "; server wait: " + duration(s.server_wait_ns);
    out += "; total: " + duration(s.ts_end_ns - s.ts_start_ns);
    if (s.sql) {
        out += "; SQL: " + cut_text(*s.sql, options.max_value_chars, s.sql_bytes);
    }
    out += '\n';
    return out;
}

std::string render_api_call_text(const protocol::ApiCall &call,
                                 const ProtocolTextOptions &options) {
    std::string out = prefix(call.conn, call.ts_end_ns, call.pid, call.tid, options);
    char handle[32];
    std::snprintf(handle, sizeof(handle), "0x%llx", static_cast<unsigned long long>(call.handle));
    out += "api: " + call.func + "(" + handle + ") -> ";
    if (call.func == "mysql_stmt_fetch" && !call.failed) {
        out += call.ret == 0     ? "OK"
               : call.ret == 100 ? "NO_DATA"
               : call.ret == 101 ? "DATA_TRUNCATED"
                                 : std::to_string(call.ret);
    } else {
        out += call.failed ? "FAILED" : "OK";
    }
    if (call.error_code) {
        out += " " + std::to_string(*call.error_code);
        if (!call.sqlstate.empty()) {
            out += " (" + escape_text(call.sqlstate) + ")";
        }
        out += ": " + escape_text(call.error_message);
    }
    const uint64_t total = call.ts_end_ns - call.ts_begin_ns;
    out += "; time: " + duration(total);
    if (call.server_wait_ns > 0) {
        out += "; server wait: " + duration(call.server_wait_ns);
        out += "; in client: " +
               duration(total > call.server_wait_ns ? total - call.server_wait_ns : 0);
    }
    if (call.server_thread_id) {
        out += "; server thread: " + std::to_string(*call.server_thread_id);
    }
    if (call.arg) {
        out += (call.func == "mysql_select_db" ? "; schema: " : "; SQL: ") +
               cut_text(*call.arg, options.max_value_chars, call.arg_bytes);
    }
    out += '\n';
    return out;
}

}  // namespace mysqltrace::output
