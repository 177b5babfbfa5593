// SPDX-License-Identifier: GPL-2.0-only
// server --waits: which statement a thread's waits belong to, and the idle
// waits made from statements' times on the one-probe path.
#include "server/wait_placer.h"

#include <gtest/gtest.h>

namespace {

using mysqltrace::server::Statement;
using mysqltrace::server::Wait;

struct Tagged {
    Wait wait;
    int tag = 0;
};

Wait wait(uint32_t tid, uint64_t start, uint64_t end, bool in_statement, uint64_t thread_id = 7) {
    Wait w;
    w.tid = tid;
    w.start_ns = start;
    w.end_ns = end;
    w.thread_id = thread_id;
    w.kind = MT_WAIT_SEND;
    w.flags = MT_WAIT_SOCKET | (in_statement ? MT_WAIT_IN_STATEMENT : 0);
    return w;
}

Statement statement(uint32_t tid, uint64_t start, uint64_t end, uint64_t thread_id = 7) {
    Statement s;
    s.tid = tid;
    s.start_ns = start;
    s.end_ns = end;
    s.thread_id = thread_id;
    return s;
}

// Feeds a wait as server_cmd.cpp does: held, or written at once.
void feed(mysqltrace::server::WaitPlacer<Tagged> &p, const Wait &w, int tag,
          std::vector<int> *written) {
    if (p.holds(w)) {
        p.hold(Tagged{w, tag});
    } else {
        p.written(w);
        written->push_back(tag);
    }
}

std::vector<int> tags(const std::vector<Tagged> &v) {
    std::vector<int> out;
    for (const auto &t : v) {
        out.push_back(t.tag);
    }
    return out;
}

// Entry-and-end path: a statement takes the held waits that began inside
// it; the BPF side sends the idle waits, none are made here.
TEST(WaitPlacer, EntryPathTakesTheWaitsThatBeganInTheStatement) {
    mysqltrace::server::WaitPlacer<Tagged> p;
    mysqltrace::server::WaitPlacer<Tagged>::Placed placed;
    std::vector<int> written;
    feed(p, wait(1, 50, 60, false), 1, &written);
    feed(p, wait(1, 110, 120, true), 2, &written);
    feed(p, wait(2, 130, 140, true), 3, &written);  // another thread's
    feed(p, wait(1, 150, 160, true), 4, &written);
    p.place(statement(1, 100, 200), placed);
    EXPECT_EQ(written, std::vector<int>{1});
    EXPECT_EQ(tags(placed.in), (std::vector<int>{2, 4}));
    EXPECT_FALSE(placed.idle.has_value());
    p.place(statement(1, 300, 400), placed);
    EXPECT_TRUE(placed.in.empty());
    EXPECT_FALSE(placed.idle.has_value());
    p.place(statement(2, 100, 200), placed);
    EXPECT_EQ(tags(placed.in), std::vector<int>{3});
}

// One-probe path: the next statement of the thread takes its held waits;
// the idle wait runs from the end of the previous statement, or of the last
// wait written after it, to this statement's start.
TEST(WaitPlacer, OneProbePathMakesTheIdleWaitsBetweenStatements) {
    mysqltrace::server::WaitPlacer<Tagged> p;
    mysqltrace::server::WaitPlacer<Tagged>::Placed placed;
    p.set_by_time(true);
    std::vector<int> written;
    feed(p, wait(1, 110, 120, true), 1, &written);
    p.place(statement(1, 100, 200), placed);
    EXPECT_EQ(tags(placed.in), std::vector<int>{1});
    EXPECT_FALSE(placed.idle.has_value());  // no statement before it

    feed(p, wait(1, 310, 320, true), 2, &written);
    p.place(statement(1, 300, 400), placed);
    EXPECT_EQ(tags(placed.in), std::vector<int>{2});
    ASSERT_TRUE(placed.idle.has_value());
    EXPECT_EQ(placed.idle->start_ns, 200u);
    EXPECT_EQ(placed.idle->end_ns, 300u);
    EXPECT_EQ(placed.idle->thread_id, 7u);
    EXPECT_EQ(placed.idle->tid, 1u);
    EXPECT_EQ(placed.idle->kind, static_cast<uint32_t>(MT_WAIT_POLL));
    EXPECT_FALSE(placed.idle->in_statement());

    // A wait between two statements, written at once: the idle wait
    // begins after it.
    feed(p, wait(1, 420, 450, false), 3, &written);
    p.place(statement(1, 500, 600), placed);
    EXPECT_EQ(written, std::vector<int>{3});
    ASSERT_TRUE(placed.idle.has_value());
    EXPECT_EQ(placed.idle->start_ns, 450u);
    EXPECT_EQ(placed.idle->end_ns, 500u);

    // Another connection on the same thread: no idle wait.
    p.place(statement(1, 700, 800, 8), placed);
    EXPECT_FALSE(placed.idle.has_value());
    // Nor when a statement begins where the last one ended.
    p.place(statement(1, 800, 900, 8), placed);
    EXPECT_FALSE(placed.idle.has_value());
    // A held wait that ended before its statement began belonged to one
    // whose record never came (filtered in the kernel): not this one's.
    feed(p, wait(1, 910, 920, true, 8), 4, &written);
    feed(p, wait(1, 1010, 1020, true, 8), 5, &written);
    p.place(statement(1, 1000, 1100, 8), placed);
    EXPECT_EQ(tags(placed.in), std::vector<int>{5});
}

}  // namespace
