// SPDX-License-Identifier: GPL-2.0-only
#include "top/lock_view.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "top/top_model.h"

namespace mysqltrace::top {

namespace {

std::string what_waits(const LockWaitRow &w) {
    std::string s = "waits " + short_duration(w.wait_ns) + " for ";
    if (w.lock_kind == "row") {
        s += "an InnoDB row lock";
    } else {
        s += "metadata lock" + (w.lock_type.empty() ? "" : " " + w.lock_type);
    }
    if (!w.locked_object.empty()) {
        s += " on " + w.locked_object;
    }
    return s;
}

std::string who_blocks(const LockWaitRow &w) {
    std::string s = "thread " + std::to_string(w.blocking_pid);
    s += w.blocking_trx_age_ns != 0 ? ", transaction open " + short_duration(w.blocking_trx_age_ns)
                                    : ", no BEGIN seen";
    s += ": " + (w.blocking_query.empty() ? std::string("(no statement seen)") : w.blocking_query);
    return s;
}

void server_lines(const ServerSnapshot &sv, size_t width, std::vector<std::string> &out) {
    std::set<uint64_t> waiting;
    std::map<uint64_t, std::vector<const LockWaitRow *>> by_blocker;
    std::map<uint64_t, const LockWaitRow *> blocker_row;
    std::vector<const LockWaitRow *> unblocked;
    for (const auto &w : sv.lock_waits) {
        waiting.insert(w.waiting_pid);
        if (w.blocking_pid == 0) {
            unblocked.push_back(&w);
        } else {
            by_blocker[w.blocking_pid].push_back(&w);
            blocker_row.emplace(w.blocking_pid, &w);
        }
    }
    out.push_back(cut("lock waits of " + sv.name + " (pid " + std::to_string(sv.pid) +
                          "): " + std::to_string(waiting.size()) + " waiting",
                      width));
    // A waiter that blocks others lists its own waiters under it (once; a
    // waiter on its own path is a cycle).
    std::set<uint64_t> shown, path;
    std::function<void(uint64_t, size_t)> waiters = [&](uint64_t blocker, size_t depth) {
        auto it = by_blocker.find(blocker);
        if (it == by_blocker.end()) {
            return;
        }
        path.insert(blocker);
        for (const LockWaitRow *w : it->second) {
            const std::string pad(2 * depth, ' ');
            out.push_back(cut(pad + "-> thread " + std::to_string(w->waiting_pid) + " " +
                                  what_waits(*w) + (w->possible ? " (possible blocker)" : "") +
                                  (w->waiting_query.empty() ? "" : ": " + w->waiting_query),
                              width));
            if (path.contains(w->waiting_pid)) {
                out.push_back(cut(pad + "  (a cycle: a deadlock)", width));
            } else if (shown.insert(w->waiting_pid).second) {
                waiters(w->waiting_pid, depth + 1);
            }
        }
        path.erase(blocker);
    };
    // Roots: blockers that wait for no one; then any left in a cycle.
    std::vector<uint64_t> roots;
    for (const auto &[id, rows] : by_blocker) {
        if (!waiting.contains(id)) {
            roots.push_back(id);
        }
    }
    for (const auto &[id, rows] : by_blocker) {
        if (waiting.contains(id)) {
            roots.push_back(id);
        }
    }
    for (uint64_t id : roots) {
        if (waiting.contains(id) && shown.contains(id)) {
            continue;
        }
        shown.insert(id);
        const bool possible = std::ranges::all_of(by_blocker.at(id), &LockWaitRow::possible);
        out.push_back(cut(std::string(possible ? "possibly blocking " : "blocking ") +
                              who_blocks(*blocker_row[id]),
                          width));
        waiters(id, 1);
    }
    for (const LockWaitRow *w : unblocked) {
        out.push_back(cut("no blocker known: thread " + std::to_string(w->waiting_pid) + " " +
                              what_waits(*w) +
                              (w->wait_stage.empty() ? "" : " (" + w->wait_stage + ")") +
                              (w->waiting_query.empty() ? "" : ": " + w->waiting_query),
                          width));
    }
}

}  // namespace

size_t lock_waiters(const Snapshot &s) {
    size_t n = 0;
    for (const auto &sv : s.servers) {
        std::set<uint64_t> waiting;
        for (const auto &w : sv.lock_waits) {
            waiting.insert(w.waiting_pid);
        }
        n += waiting.size();
    }
    return n;
}

std::vector<std::string> lock_lines(const Snapshot &s, size_t width) {
    std::vector<std::string> out;
    bool traced = false;
    for (const auto &sv : s.servers) {
        traced = traced || sv.locks;
        if (sv.locks && !sv.lock_waits.empty()) {
            server_lines(sv, width, out);
        }
    }
    if (!traced) {
        out.push_back(
            cut("lock waits: not traced (the agent's `locks = yes`, or top --pid --locks)", width));
    } else if (out.empty()) {
        out.push_back("lock waits: none now");
    }
    return out;
}

}  // namespace mysqltrace::top
