// SPDX-License-Identifier: GPL-2.0-only
#include "output/server_txn.h"

#include "output/json_writer.h"
#include "output/units.h"

namespace mysqltrace::output {

namespace {

const char *state_of(const server::Transaction &t) {
    return t.committed ? "COMMITTED" : "ROLLED BACK";
}

const char *access_of(const server::Transaction &t) {
    return t.read_only ? "READ ONLY" : "READ WRITE";
}

}  // namespace

void transaction_text(std::string &out, const Clock &clock, const server::Transaction &t) {
    size_t from = out.size();
    clock.append_wall(t.start_ns, out);
    while (out.size() - from < 15) {
        out += ' ';
    }
    out += ' ';
    from = out.size();
    append_uint(out, t.thread_id);
    while (out.size() - from < 9) {
        out.insert(from, 1, ' ');
    }
    out += ' ';
    from = out.size();
    append_human_duration(out, t.end_ns > t.start_ns ? t.end_ns - t.start_ns : 0);
    while (out.size() - from < 10) {
        out.insert(from, 1, ' ');
    }
    out += " transaction ";
    out += state_of(t);
    out += t.autocommit ? " autocommit=YES " : " autocommit=NO ";
    out += access_of(t);
    out += ' ';
    out += t.isolation_name();
    out += " statements=";
    append_uint(out, t.statements);
    if (!t.xa_state.empty()) {
        out += " xa=";
        out += t.xa_state;
        out += " xid='";
        out += t.xid_gtrid;
        out += "','";
        out += t.xid_bqual;
        out += "',";
        out += std::to_string(t.xid_format_id);
    }
    out += '\n';
}

void transaction_json(std::string &out, uint32_t pid, const server::Transaction &t) {
    JsonWriter j(out);
    j.begin_object();
    j.field("kind", "transaction");
    j.field("pid", pid);
    j.field("tid", t.tid);
    j.field("THREAD_ID", t.thread_id);
    j.field("EVENT_ID", t.event_id);
    j.field("END_EVENT_ID", t.event_id);
    j.field("EVENT_NAME", "transaction");
    j.field("STATE", state_of(t));
    j.null_field("TRX_ID");
    j.null_field("GTID");
    if (t.xa_state.empty()) {
        j.null_field("XID_FORMAT_ID");
        j.null_field("XID_GTRID");
        j.null_field("XID_BQUAL");
        j.null_field("XA_STATE");
    } else {
        j.field("XID_FORMAT_ID", t.xid_format_id);
        j.field("XID_GTRID", t.xid_gtrid);
        j.field("XID_BQUAL", t.xid_bqual);
        j.field("XA_STATE", t.xa_state);
    }
    j.null_field("SOURCE");
    j.field("TIMER_START", t.start_ns * 1000);
    j.field("TIMER_END", t.end_ns * 1000);
    j.field("TIMER_WAIT", (t.end_ns > t.start_ns ? t.end_ns - t.start_ns : 0) * 1000);
    j.field("ACCESS_MODE", access_of(t));
    j.string_or_null("ISOLATION_LEVEL", t.isolation_name());
    j.field("AUTOCOMMIT", t.autocommit ? "YES" : "NO");
    j.null_field("NESTING_EVENT_ID");
    j.null_field("NESTING_EVENT_TYPE");
    j.field("statements", t.statements);
    j.end_object();
    out += '\n';
}

}  // namespace mysqltrace::output
