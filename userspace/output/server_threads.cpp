// SPDX-License-Identifier: GPL-2.0-only
#include "output/server_threads.h"

#include "output/json_writer.h"
#include "output/protocol_text.h"
#include "output/units.h"

namespace mysqltrace::output {

namespace {

const char *event_of(const server::Connection &c) {
    return c.op == server::Connection::Op::connect ? "connect" : "disconnect";
}

}  // namespace

void connection_text(std::string &out, const Clock &clock, const server::Connection &c) {
    size_t from = out.size();
    clock.append_wall(c.ts_ns, out);
    while (out.size() - from < 15) {
        out += ' ';
    }
    out += ' ';
    from = out.size();
    append_uint(out, c.thread_id);
    while (out.size() - from < 9) {
        out.insert(from, 1, ' ');
    }
    out += ' ';
    out += event_of(c);
    out += c.op == server::Connection::Op::connect ? "    " : " ";
    out += c.user.empty() ? "(unknown)" : c.user;
    out += '@';
    out += c.host.empty() ? c.ip : c.host;
    out += " type=";
    out += c.connection_type();
    if (!c.db.empty()) {
        out += " db=";
        append_escaped(out, c.db);
    }
    if (c.op == server::Connection::Op::disconnect && c.connected_ns && c.ts_ns > c.connected_ns) {
        out += " after ";
        append_human_duration(out, c.ts_ns - c.connected_ns);
    }
    for (const auto &[k, v] : c.attrs) {
        out += ' ';
        append_escaped(out, k);
        out += '=';
        append_escaped(out, v);
    }
    if (c.attrs_cut) {
        out += " ...";
    }
    out += '\n';
}

void connection_json(std::string &out, uint32_t pid, const server::Connection &c) {
    JsonWriter j(out);
    j.begin_object();
    j.field("kind", "thread");
    j.field("EVENT", event_of(c));
    j.field("pid", pid);
    j.field("ts_ns", c.ts_ns);
    j.field("THREAD_ID", c.thread_id);
    j.field("PROCESSLIST_ID", c.thread_id);
    j.field("THREAD_OS_ID", c.tid);
    j.field("NAME", "thread/sql/one_connection");
    j.field("TYPE", "FOREGROUND");
    j.string_or_null("PROCESSLIST_USER", c.user);
    j.string_or_null("PROCESSLIST_HOST", c.host.empty() ? c.ip : c.host);
    j.string_or_null("PROCESSLIST_DB", c.db);
    j.field("CONNECTION_TYPE", c.connection_type());
    j.string_or_null("IP", c.ip);
    j.field("TIMER", c.ts_ns * 1000);
    if (c.op == server::Connection::Op::disconnect) {
        if (c.connected_ns && c.ts_ns >= c.connected_ns) {
            j.field("duration_ps", (c.ts_ns - c.connected_ns) * 1000);
        } else {
            j.null_field("duration_ps");
        }
    }
    j.key("connect_attrs");
    j.begin_object();
    for (const auto &[k, v] : c.attrs) {
        j.field(k, v);
    }
    j.end_object();
    if (c.attrs_cut) {
        j.field("connect_attrs_cut", true);
    }
    j.end_object();
    out += '\n';
}

}  // namespace mysqltrace::output
