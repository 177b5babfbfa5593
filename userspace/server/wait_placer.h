// SPDX-License-Identifier: GPL-2.0-only
// Which statement a server thread's waits belong to (server --waits).
//
// The BPF side marks the waits made inside a statement
// (MT_WAIT_IN_STATEMENT): such a wait waits for its statement's record,
// which comes at its end; the others are written as they come.
//
// On the entry-and-end path a statement is the one whose span holds the
// wait's start, and the BPF side sends the idle waits between commands. On
// the one-probe path (log_slow_statement, `by_time`) the BPF side knows a
// wait is inside a statement from the command its THD runs, not which one:
// the thread's next statement record takes the waits held that ended after
// it began, and the thread's idle wait (performance_schema's idle: waiting
// for its client) is made here, from the end of its previous statement, or
// of its last wait after that, to this statement's start. A thread whose
// connection changed in between (the server's thread cache hands it to
// another one) gets none; nor do the statements of one multi-statement query
// get told apart from two commands: a short idle wait lies between them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mysqltrace/abi/event.h"
#include "server/statement.h"
#include "server/waits.h"

namespace mysqltrace::server {

// W: a wait with what the caller keeps with it, as a member `wait`
// (struct Wait).
template <class W>
class WaitPlacer {
  public:
    // by_time: the one-probe path (see above).
    void set_by_time(bool by_time) { by_time_ = by_time; }

    // Whether `w` waits for a statement (then hold() it); else the caller
    // writes it now, and tells written().
    bool holds(const Wait &w) const { return w.in_statement(); }
    void hold(W w) {
        const uint32_t tid = w.wait.tid;
        threads_[tid].held.push_back(std::move(w));
    }
    void written(const Wait &w) {
        if (by_time_) {
            uint64_t &end = threads_[w.tid].last_outside_end;
            end = std::max(end, w.end_ns);
        }
    }

    struct Placed {
        std::optional<Wait> idle;  // by_time: its idle wait before this statement
        std::vector<W> in;         // the statement's own
    };

    // The statement `st` ended (its record came): its waits into out.
    void place(const Statement &st, Placed &out) {
        out.in.clear();
        out.idle.reset();
        if (threads_.size() >= kMaxThreads && !threads_.contains(st.tid)) {
            // Threads come and go (one per connection without a thread
            // cache): forget those holding nothing.
            std::erase_if(threads_, [](const auto &kv) { return kv.second.held.empty(); });
        }
        Thread &t = threads_[st.tid];
        for (auto &w : t.held) {
            const Wait &x = w.wait;
            if (by_time_ ? x.end_ns > st.start_ns
                         : x.start_ns >= st.start_ns && x.start_ns <= st.end_ns) {
                out.in.push_back(std::move(w));
            }
        }
        t.held.clear();
        if (threads_.size() > kManyThreads) {
            t.held.shrink_to_fit();
        }
        if (by_time_ && t.last_end && t.last_thread_id == st.thread_id) {
            const uint64_t from = std::max(t.last_end, t.last_outside_end);
            if (st.start_ns > from) {
                Wait idle;
                idle.tid = st.tid;
                idle.start_ns = from;
                idle.end_ns = st.start_ns;
                idle.thread_id = st.thread_id;
                idle.kind = MT_WAIT_POLL;
                idle.flags = MT_WAIT_SOCKET;
                out.idle = idle;
            }
        }
        t.last_end = st.end_ns;
        t.last_thread_id = st.thread_id;
    }

  private:
    // Past this many threads seen, a thread's buffer is let go after each
    // statement instead of kept for the next.
    static constexpr size_t kManyThreads = 512;
    // Past this many, the threads holding no wait are forgotten (their next
    // statement, if any, gets no idle wait).
    static constexpr size_t kMaxThreads = 65536;
    struct Thread {
        std::vector<W> held;
        uint64_t last_end = 0;  // its last statement's end (0: none seen)
        uint64_t last_thread_id = 0;
        uint64_t last_outside_end = 0;  // its last wait outside a statement's end
    };
    bool by_time_ = false;
    std::unordered_map<uint32_t, Thread> threads_;
};

}  // namespace mysqltrace::server
