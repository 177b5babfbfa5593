// SPDX-License-Identifier: GPL-2.0-only
#include "output/server_render.h"

#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "mysql/commands.h"

namespace mysqltrace::output {

namespace {

// Statement text on one line: control characters shown as escapes.
std::string one_line(const std::string &s) {
    std::string out;
    out.reserve(s.size());
    for (unsigned char c : s) {
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

bool argument_is_text(uint32_t command) {
    // COM_INIT_DB, COM_QUERY, COM_FIELD_LIST, COM_CREATE_DB, COM_DROP_DB, COM_STMT_PREPARE
    return command == 2 || command == 3 || command == 4 || command == 5 || command == 6 ||
           command == mysql::kComStmtPrepare;
}

}  // namespace

std::string command_text_header() {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "%-15s %9s %-26s %s\n", "TIME", "THREAD_ID", "EVENT_NAME",
                  "SQL_TEXT");
    return buf;
}

std::string command_text(const server::CommandEvent &ev, const Clock &clock) {
    char head[128];
    std::snprintf(head, sizeof(head), "%-15s %9llu %-26s ", clock.wall(ev.ts_ns).c_str(),
                  static_cast<unsigned long long>(ev.thread_id),
                  mysql::command_event_name(ev.command).c_str());
    std::string line = head;
    if (argument_is_text(ev.command)) {
        line += one_line(ev.argument);
        if (ev.truncated) {
            line += "... (" + std::to_string(ev.packet_len) + " bytes)";
        }
    }
    while (!line.empty() && line.back() == ' ') {
        line.pop_back();
    }
    return line + "\n";
}

std::string command_json(const server::CommandEvent &ev, uint32_t pid) {
    nlohmann::ordered_json j;
    j["kind"] = "command";
    j["pid"] = pid;
    j["tid"] = ev.tid;
    j["ts_ns"] = ev.ts_ns;
    j["THREAD_ID"] = ev.thread_id;
    j["EVENT_NAME"] = mysql::command_event_name(ev.command);
    j["command"] = mysql::command_name(ev.command);
    j["TIMER_START"] = ev.ts_ns * 1000;  // picoseconds, as performance_schema
    if (argument_is_text(ev.command)) {
        j["SQL_TEXT"] = ev.argument;
        if (ev.truncated) {
            j["sql_bytes"] = ev.packet_len;
        }
    }
    // Statement text may hold any bytes: never fail on invalid UTF-8.
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace mysqltrace::output
