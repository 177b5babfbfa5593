// SPDX-License-Identifier: GPL-2.0-only
#include "output/slowlog.h"

#include <arpa/inet.h>

#include <cstdio>
#include <ctime>

#include "mysql/commands.h"
#include "output/units.h"

namespace mysqltrace::output {

namespace {

// The account's host is its name when the server resolved one, else its
// address: the log has a field for each.
bool is_ip_address(const std::string &host) {
    unsigned char buf[sizeof(in6_addr)];
    return inet_pton(AF_INET, host.c_str(), buf) == 1 ||
           inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// Commands the server logs with their SQL text; the others are written as
// administrator commands, by the server's name for the command.
bool logs_text(const server::Statement &st) {
    switch (st.command) {
        case 3:                       // COM_QUERY
        case mysql::kComStmtExecute:  // the prepared statement's text
        case mysql::kComStmtBulkExecute:
            return !st.text.empty();
        default:
            return false;
    }
}

}  // namespace

const std::string &SlowlogRenderer::statement(const server::Statement &st,
                                              const server::Account &account) {
    std::string &out = out_;
    out.clear();
    const uint64_t end_sec = clock_.realtime_ns(st.end_ns) / 1'000'000'000ull;
    if (end_sec != time_sec_) {
        // MariaDB's "%02d%02d%02d %2d:%02d:%02d", local time.
        const auto t = static_cast<time_t>(end_sec);
        tm tm{};
        localtime_r(&t, &tm);
        char buf[48];
        std::snprintf(buf, sizeof(buf), "# Time: %02d%02d%02d %2d:%02d:%02d\n", tm.tm_year % 100,
                      tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        time_line_ = buf;
        time_sec_ = end_sec;
    }
    out += time_line_;
    out += "# User@Host: ";
    out += account.user;
    out += '[';
    out += account.user;
    out += "] @ ";
    const bool ip = is_ip_address(account.host);
    if (!ip) {
        out += account.host;
    }
    out += " [";
    if (ip) {
        out += account.host;
    }
    out += "]\n# Thread_id: ";
    append_uint(out, st.thread_id);
    out += "  Schema: ";
    out += st.db;
    out += "  QC_hit: No\n# Query_time: ";
    append_fixed(out, st.end_ns - st.start_ns, 1'000'000'000, 6);
    out += "  Lock_time: ";
    append_fixed(out, st.lock_ns, 1'000'000'000, 6);
    out += "  Rows_sent: ";
    append_uint(out, st.rows_sent);
    out += "  Rows_examined: ";
    append_uint(out, st.rows_examined);
    out += "\n# Rows_affected: ";
    append_uint(out, st.rows_affected);
    out += '\n';
    if (!st.db.empty() && st.db != last_db_) {
        out += "use `";  // quoted as MariaDB quotes it
        for (const char c : st.db) {
            out += c;
            if (c == '`') {
                out += '`';
            }
        }
        out += "`;\n";
        last_db_ = st.db;
    }
    out += "SET timestamp=";
    append_uint(out, clock_.realtime_ns(st.start_ns) / 1'000'000'000ull);
    out += ";\n";
    if (logs_text(st)) {
        out += st.text;
    } else {
        // "statement/com/Quit" -> "# administrator command: Quit".
        std::string name = server::statement_event_name(st);
        const auto slash = name.rfind('/');
        out += "# administrator command: ";
        out.append(name, slash == std::string::npos ? 0 : slash + 1);
    }
    out += ";\n";
    return out;
}

}  // namespace mysqltrace::output
