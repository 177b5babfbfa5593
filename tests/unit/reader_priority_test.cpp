// SPDX-License-Identifier: GPL-2.0-only
// The ring reader's priority: fixed with --reader-nice, otherwise raised
// only while the rings show it behind, and back once it keeps up.
#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "trace/reader_priority.h"

namespace mysqltrace::trace {
namespace {

constexpr uint64_t kMs = 1'000'000;

struct Calls {
    std::vector<int> set;
    std::vector<bool> realtime;
    int fail = 0;     // errno to give
    int rt_fail = 0;  // errno to give SCHED_RR
    ReaderPriority::Setter setter() {
        return [this](int nice) {
            if (fail != 0) {
                return fail;
            }
            set.push_back(nice);
            return 0;
        };
    }
    ReaderPriority::RealtimeSetter realtime_setter() {
        return [this](bool on) {
            if (on && rt_fail != 0) {
                return rt_fail;
            }
            realtime.push_back(on);
            return 0;
        };
    }
};

TEST(ReaderPriority, StartsRaisedAndDropsBackAfterTenSecondsOfKeepingUp) {
    Calls c;
    ReaderPriority p({}, 0, c.setter(), c.realtime_setter());
    ASSERT_TRUE(p.start(0).ok());
    EXPECT_EQ(p.nice(), -20);
    for (uint64_t t = 0; t <= 100; t++) {
        p.check(0.13, t * 100 * kMs);  // woken at an eighth, on time
    }
    EXPECT_EQ(p.nice(), 0);
    p.finish(20'000 * kMs);
    EXPECT_EQ(c.set, (std::vector<int>{-20, 0}));
    EXPECT_EQ(p.falls_behind(), 0u);
    EXPECT_EQ(p.raised_ns(), 10'000 * kMs);
    EXPECT_EQ(p.note(), "");  // it never fell behind
}

TEST(ReaderPriority, RaisedWhileBehindThenBackAfterTenSecondsOfKeepingUp) {
    Calls c;
    ReaderPriority p({}, 0, c.setter(), c.realtime_setter());
    p.check(0.2, 900 * kMs);  // late, but less than a quarter: stays
    EXPECT_EQ(p.nice(), 0);
    p.check(0.3, 1000 * kMs);  // a quarter: -20
    EXPECT_EQ(p.nice(), -20);
    p.check(0.45, 1100 * kMs);  // still behind, under half: stays
    p.check(0.3, 1200 * kMs);
    p.check(0.1, 1300 * kMs);  // keeping up from here
    p.check(0.15, 11200 * kMs);
    EXPECT_EQ(p.nice(), -20);
    p.check(0.1, 11300 * kMs);  // ten seconds of keeping up
    EXPECT_EQ(p.nice(), 0);
    EXPECT_EQ(c.set, (std::vector<int>{-20, 0}));
    EXPECT_EQ(p.falls_behind(), 1u);
    EXPECT_EQ(p.raised_ns(), 10300 * kMs);
    // Behind again; the calm period starts over each time.
    p.check(0.25, 12000 * kMs);
    p.check(0.1, 12100 * kMs);
    p.check(0.2, 12500 * kMs);  // above 3/16: not calm
    p.check(0.1, 12600 * kMs);
    p.check(0.1, 22500 * kMs);
    EXPECT_EQ(p.nice(), -20);
    p.finish(22550 * kMs);  // the end of the trace puts it back
    EXPECT_EQ(p.nice(), 0);
    EXPECT_EQ(p.falls_behind(), 2u);
    EXPECT_EQ(p.raised_ns(), 10300 * kMs + 10550 * kMs);
    EXPECT_EQ(p.note(),
              "mysqltrace: the reader fell behind 2 times; it ran at nice -20 for 20.9 s in all "
              "(--reader-nice N fixes its priority)");
}

TEST(ReaderPriority, StartsFromTheThreadsOwnNice) {
    Calls c;
    ReaderPriority p({}, 5, c.setter(), c.realtime_setter());
    p.check(0.3, kMs);
    EXPECT_EQ(p.nice(), -20);
    p.finish(2 * kMs);
    EXPECT_EQ(c.set, (std::vector<int>{-20, 5}));
}

TEST(ReaderPriority, FixedValueIsSetOnceAndNeverAdapted) {
    Calls c;
    ReaderPriority p(19, 0, c.setter(), c.realtime_setter());
    ASSERT_TRUE(p.start(0).ok());
    p.check(0.9, kMs);
    p.finish(2 * kMs);
    EXPECT_EQ(c.set, (std::vector<int>{19}));
    EXPECT_EQ(p.note(), "");
}

TEST(ReaderPriority, RefusedFixedValueIsAnError) {
    Calls c;
    c.fail = EACCES;
    ReaderPriority p(-5, 0, c.setter(), c.realtime_setter());
    auto r = p.start(0);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("--reader-nice"), std::string::npos);
}

TEST(ReaderPriority, RefusedRaiseIsSaidOnceAndNotRetried) {
    Calls c;
    c.fail = EPERM;
    ReaderPriority p({}, 0, c.setter(), c.realtime_setter());
    ASSERT_TRUE(p.start(0).ok());  // refused: it starts at 0, quietly
    EXPECT_EQ(p.nice(), 0);
    EXPECT_EQ(p.note(), "");
    p.check(0.9, kMs);
    c.fail = 0;
    p.check(0.9, 2 * kMs);  // not tried again
    EXPECT_TRUE(c.set.empty());
    EXPECT_EQ(p.note(),
              "mysqltrace: the reader fell behind and could not raise its priority (Operation "
              "not permitted): records may be dropped; --reader-nice needs CAP_SYS_NICE");
}

// A ring half full at a wakeup: nice -20 was not enough, so SCHED_RR until
// a wakeup finds it keeping up again; nice -20 stays for the calm period.
TEST(ReaderPriority, HalfFullGoesRealTimeUntilItKeepsUp) {
    Calls c;
    ReaderPriority p({}, 0, c.setter(), c.realtime_setter());
    ASSERT_TRUE(p.start(0).ok());
    p.check(0.13, 100 * kMs);
    p.check(0.3, 200 * kMs);  // behind: -20 already, not real-time yet
    EXPECT_FALSE(p.realtime());
    p.check(0.6, 300 * kMs);  // half full
    EXPECT_TRUE(p.realtime());
    p.check(0.3, 400 * kMs);  // still behind: stays
    p.check(0.2, 500 * kMs);  // not yet keeping up: stays
    EXPECT_TRUE(p.realtime());
    p.check(0.13, 550 * kMs);  // keeping up: back to SCHED_OTHER at -20
    EXPECT_FALSE(p.realtime());
    EXPECT_EQ(p.nice(), -20);
    p.check(0.9, 1000 * kMs);  // again
    EXPECT_TRUE(p.realtime());
    p.finish(1010 * kMs);  // the end of the trace puts both back
    EXPECT_FALSE(p.realtime());
    EXPECT_EQ(p.nice(), 0);
    EXPECT_EQ(c.realtime, (std::vector<bool>{true, false, true, false}));
    EXPECT_EQ(p.realtime_times(), 2u);
    EXPECT_EQ(p.realtime_ns(), 260 * kMs);
    EXPECT_EQ(p.note(),
              "mysqltrace: the reader fell behind 2 times; it ran at nice -20 for 1.0 s in all, "
              "real-time (SCHED_RR) 2 times for 0.260 s of it (--reader-nice N fixes its "
              "priority)");
}

TEST(ReaderPriority, RefusedRealTimeIsSaidOnceAndNotRetried) {
    Calls c;
    c.rt_fail = EPERM;
    ReaderPriority p({}, 0, c.setter(), c.realtime_setter());
    p.check(0.9, kMs);
    p.check(0.1, 2 * kMs);
    p.check(0.9, 3 * kMs);
    EXPECT_FALSE(p.realtime());
    EXPECT_TRUE(c.realtime.empty());
    EXPECT_EQ(p.nice(), -20);  // nice -20 still helps
    p.finish(4 * kMs);
    EXPECT_EQ(p.note(false),
              "mysqltrace: the reader fell behind 2 times; it ran at nice -20 for 0.0 s in all, "
              "real-time refused (Operation not permitted)");
}

TEST(ReaderPriority, FixedValueNeverGoesRealTime) {
    Calls c;
    ReaderPriority p(0, 0, c.setter(), c.realtime_setter());
    ASSERT_TRUE(p.start(0).ok());
    p.check(1.0, kMs);
    p.finish(2 * kMs);
    EXPECT_TRUE(c.realtime.empty());
}

}  // namespace
}  // namespace mysqltrace::trace
