// SPDX-License-Identifier: GPL-2.0-only
#include "output/lock_render.h"

#include <set>

#include "output/json_writer.h"
#include "output/units.h"

namespace mysqltrace::output {

namespace {

std::string one_line(std::string_view sql, size_t max = 120) {
    std::string s;
    for (char c : sql) {
        if (s.size() >= max) {
            s += "...";
            break;
        }
        s += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    }
    return s;
}

std::string what_waited(const server::LockWaitReport &r) {
    if (r.wait.kind == server::LockKind::row) {
        return r.object_type.empty()
                   ? "an InnoDB row lock"
                   : "an InnoDB row lock on " + r.object_type + " " + r.schema + "." + r.name;
    }
    std::string s = "metadata lock";
    if (!r.lock_type.empty()) {
        s += " " + r.lock_type;
    }
    if (!r.lock_duration.empty()) {
        s += " (" + r.lock_duration + ")";
    }
    if (!r.object_type.empty()) {
        s += " on " + r.object_type + " " + r.schema + (r.name.empty() ? "" : "." + r.name);
    } else if (!r.stage.empty()) {
        s += " (" + r.stage + ")";
    }
    return s;
}

uint64_t waited(const server::LockWait &w) {
    return w.end_ns > w.start_ns ? w.end_ns - w.start_ns : 0;
}

}  // namespace

std::string lock_wait_text(const server::LockWaitReport &r) {
    std::string s = "lock wait: thread " + std::to_string(r.wait.thread_id) + " waited " +
                    human_duration(waited(r.wait)) + " for " + what_waited(r);
    if (!r.outcome.empty()) {
        s += ": " + r.outcome;
    }
    if (!r.blockers_known && r.blockers.empty()) {
        s += "; blocker unknown (not visible in this build)";
    } else if (r.blockers.empty()) {
        s += "; no blocker found";
    }
    for (const auto &b : r.blockers) {
        s += "; blocked by thread " + std::to_string(b.thread_id);
        if (b.trx_start_ns != 0 && b.trx_start_ns <= r.wait.start_ns) {
            s += " (transaction open " + human_duration(r.wait.start_ns - b.trx_start_ns) +
                 " when the wait began)";
        }
        if (!b.sql.empty()) {
            s += ": " + one_line(b.sql);
        }
    }
    for (const auto &b : r.possible_blockers) {
        s += "; possibly thread " + std::to_string(b.thread_id);
        if (b.trx_start_ns != 0 && b.trx_start_ns <= r.wait.start_ns) {
            s += " (transaction open " + human_duration(r.wait.start_ns - b.trx_start_ns) +
                 " when the wait began, which ran: " + one_line(b.sql) + ")";
        }
    }
    s += "\n";
    if (!r.waiter_sql.empty()) {
        s += "  waiting statement: " + one_line(r.waiter_sql, 400) + "\n";
    }
    return s;
}

std::string lock_wait_json(const server::LockWaitReport &r) {
    std::string out;
    JsonWriter j(out);
    const auto &w = r.wait;
    const bool row = w.kind == server::LockKind::row;
    j.begin_object();
    j.field("kind", "lock_wait");
    j.field("EVENT_NAME", row ? kRowLockWait : kMetadataLockWait);
    j.field("THREAD_ID", w.thread_id);
    j.field("TIMER_START", w.start_ns * 1000);  // picoseconds, as performance_schema
    j.field("TIMER_END", w.end_ns * 1000);
    j.field("TIMER_WAIT", waited(w) * 1000);
    j.string_or_null("OBJECT_TYPE", r.object_type);
    j.string_or_null("OBJECT_SCHEMA", r.schema);
    j.string_or_null("OBJECT_NAME", r.name);
    j.string_or_null("LOCK_TYPE", r.lock_type);
    j.string_or_null("LOCK_DURATION", r.lock_duration);
    j.string_or_null("LOCK_STATUS", r.outcome);
    j.string_or_null("WAIT_STAGE", r.stage);
    j.string_or_null("SQL_TEXT", r.waiter_sql);
    j.field("BLOCKERS_KNOWN", r.blockers_known);
    // data_lock_waits' pair: the requesting and the (first) blocking thread.
    j.field("REQUESTING_THREAD_ID", w.thread_id);
    j.key("BLOCKING_THREAD_ID");
    if (r.blockers.empty()) {
        j.null();
    } else {
        j.value(r.blockers.front().thread_id);
    }
    auto blockers = [&](const char *key, const std::vector<server::Blocker> &list) {
        j.key(key);
        j.begin_array();
        for (const auto &b : list) {
            j.begin_object();
            j.field("THREAD_ID", b.thread_id);
            j.string_or_null("SQL_TEXT", b.sql);
            if (b.trx_start_ns != 0 && b.trx_start_ns <= w.start_ns) {
                j.field("TRX_STARTED", b.trx_start_ns * 1000);
                j.field("TRX_AGE", (w.start_ns - b.trx_start_ns) * 1000);
            } else {
                j.null_field("TRX_STARTED");
                j.null_field("TRX_AGE");
            }
            j.end_object();
        }
        j.end_array();
    };
    blockers("BLOCKERS", r.blockers);
    blockers("POSSIBLE_BLOCKERS", r.possible_blockers);
    j.end_object();
    out += "\n";
    return out;
}

std::string lock_incident_text(const server::LockIncident &i) {
    return (i.event == "deadlock" ? "deadlock: thread " : "lock wait timeout: thread ") +
           std::to_string(i.thread_id) + " got error " + std::to_string(i.error) + ": " +
           one_line(i.sql, 400) + "\n";
}

std::string lock_incident_json(const server::LockIncident &i) {
    std::string out;
    JsonWriter j(out);
    j.begin_object();
    j.field("kind", "lock_incident");
    j.field("EVENT", i.event);
    j.field("THREAD_ID", i.thread_id);
    j.field("TIMER_END", i.ts_ns * 1000);
    j.field("MYSQL_ERRNO", i.error);
    j.string_or_null("SQL_TEXT", i.sql);
    j.end_object();
    out += "\n";
    return out;
}

namespace {

void tree_below(const std::vector<server::BlockingEdge> &edges, uint64_t blocker, int depth,
                std::set<uint64_t> &path, std::set<uint64_t> &shown, std::string &out) {
    for (const auto &e : edges) {
        if (e.blocker != blocker) {
            continue;
        }
        out += std::string(2 + 2 * depth, ' ') + "-> thread " + std::to_string(e.waiter) +
               " waited " + std::to_string(e.waits) + (e.waits == 1 ? " time, " : " times, ") +
               human_duration(e.wait_ns) + ", for " +
               (e.kind == server::LockKind::row ? std::string("an InnoDB row lock")
                                                : std::string("a metadata lock")) +
               (e.object.empty() ? "" : " on " + e.object) +
               (e.waiting_sql.empty() ? "" : ": " + one_line(e.waiting_sql)) + "\n";
        shown.insert(e.waiter);
        if (path.insert(e.waiter).second) {
            tree_below(edges, e.waiter, depth + 1, path, shown, out);
            path.erase(e.waiter);
        } else {
            out += std::string(4 + 2 * depth, ' ') + "(a cycle: a deadlock)\n";
        }
    }
}

}  // namespace

std::string blocking_tree_text(const std::vector<server::BlockingEdge> &edges) {
    if (edges.empty()) {
        return "";
    }
    std::string out = "blocking tree (who blocked whom during the trace):\n";
    // Roots come first; a blocker already shown under one is not repeated.
    std::set<uint64_t> shown;
    for (const auto &e : edges) {
        if (!shown.insert(e.blocker).second) {
            continue;
        }
        out += "thread " + std::to_string(e.blocker);
        if (!e.blocking_sql.empty()) {
            out += ": " + one_line(e.blocking_sql);
        }
        out += "\n";
        std::set<uint64_t> path{e.blocker};
        tree_below(edges, e.blocker, 0, path, shown, out);
    }
    return out;
}

std::string blocking_tree_json(const std::vector<server::BlockingEdge> &edges) {
    if (edges.empty()) {
        return "";
    }
    std::set<uint64_t> waiters;
    for (const auto &e : edges) {
        waiters.insert(e.waiter);
    }
    std::string out;
    JsonWriter j(out);
    j.begin_object();
    j.field("kind", "blocking_tree");
    j.key("edges");
    j.begin_array();
    for (const auto &e : edges) {
        j.begin_object();
        j.field("blocking_pid", e.blocker);
        j.field("waiting_pid", e.waiter);
        j.field("root", !waiters.contains(e.blocker));
        j.field("lock_kind", e.kind == server::LockKind::row ? "row" : "metadata");
        j.string_or_null("locked_object", e.object);
        j.field("waits", e.waits);
        j.field("wait_time", e.wait_ns * 1000);
        j.string_or_null("blocking_query", e.blocking_sql);
        j.string_or_null("waiting_query", e.waiting_sql);
        if (e.blocking_trx_start_ns != 0) {
            j.field("blocking_trx_started", e.blocking_trx_start_ns * 1000);
        } else {
            j.null_field("blocking_trx_started");
        }
        j.end_object();
    }
    j.end_array();
    j.end_object();
    out += "\n";
    return out;
}

}  // namespace mysqltrace::output
