// SPDX-License-Identifier: GPL-2.0-only
// agent/handover.h: which of a server's two attachments writes each
// statement of a reload's overlap. Both attachments see every hit, each
// with its own timestamp; the cut falls between the two of one statement.
// Each statement must be written by exactly one side, whichever side's
// probe runs first.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/handover.h"

namespace mysqltrace::agent {
namespace {

struct Hit {
    uint64_t thread_id, query_id;
    uint64_t before_ns, heir_ns;  // each attachment's timestamp of it
};

// Runs the rule over `hits` with the cut at `cut_ns`: the query ids each
// side writes, the attachment before first (it writes what ended before the
// cut and records it, then the heir's held statements are decided).
void split(const std::vector<Hit> &hits, uint64_t cut_ns, std::vector<uint64_t> *before,
           std::vector<uint64_t> *heir) {
    Handover h;
    for (const auto &x : hits) {
        if (x.before_ns < cut_ns) {
            h.wrote(x.thread_id, x.query_id);
            before->push_back(x.query_id);
        }
    }
    for (const auto &x : hits) {
        if (h.heir_writes(x.thread_id, x.query_id, x.heir_ns, cut_ns)) {
            heir->push_back(x.query_id);
        }
    }
}

// One connection's statements 10 ns apart, the heir's probe running 3 ns
// before the other's (the newer consumer first) or after it.
std::vector<Hit> one_connection(uint64_t thread_id, int64_t heir_offset) {
    std::vector<Hit> hits;
    for (uint64_t q = 1; q <= 10; q++) {
        const uint64_t t = 100 + 10 * q;
        hits.push_back(
            {thread_id, q, t, static_cast<uint64_t>(static_cast<int64_t>(t) + heir_offset)});
    }
    return hits;
}

TEST(Handover, EachStatementOnceWhereverTheCutFalls) {
    std::vector<uint64_t> all;
    for (uint64_t q = 1; q <= 10; q++) {
        all.push_back(q);
    }
    for (int64_t offset : {-3, 3}) {
        // Every cut from before the first statement to after the last, the
        // ones between a statement's two timestamps included.
        for (uint64_t cut = 100; cut <= 220; cut++) {
            std::vector<uint64_t> before, heir;
            split(one_connection(5, offset), cut, &before, &heir);
            std::vector<uint64_t> both = before;
            both.insert(both.end(), heir.begin(), heir.end());
            EXPECT_EQ(both, all) << "cut " << cut << ", heir's probe " << offset << " ns after";
        }
    }
}

TEST(Handover, TheStatementBetweenTheTwoTimestamps) {
    // Statement 4: the heir's probe at 137, the other's at 140; the cut at
    // 138. By time alone, neither side would write it.
    std::vector<uint64_t> before, heir;
    split(one_connection(5, -3), 138, &before, &heir);
    EXPECT_EQ(before, (std::vector<uint64_t>{1, 2, 3}));
    EXPECT_EQ(heir, (std::vector<uint64_t>{4, 5, 6, 7, 8, 9, 10}));
    // The other order: at 140 and 143, the cut at 141. By time alone, both
    // sides would write it.
    before.clear();
    heir.clear();
    split(one_connection(5, 3), 141, &before, &heir);
    EXPECT_EQ(before, (std::vector<uint64_t>{1, 2, 3, 4}));
    EXPECT_EQ(heir, (std::vector<uint64_t>{5, 6, 7, 8, 9, 10}));
}

TEST(Handover, ConnectionsApart) {
    Handover h;
    h.wrote(5, 40);
    h.wrote(5, 42);
    h.wrote(5, 41);  // read out of order: the highest counts
    h.wrote(6, 7);
    EXPECT_FALSE(h.heir_writes(5, 42, 0, 1000));
    EXPECT_TRUE(h.heir_writes(5, 43, 0, 1000));
    EXPECT_FALSE(h.heir_writes(6, 7, 2000, 1000));  // its time does not count
    EXPECT_TRUE(h.heir_writes(6, 8, 0, 1000));
    // A connection the attachment before wrote nothing of: all the heir's.
    EXPECT_TRUE(h.heir_writes(9, 1, 0, 1000));
    EXPECT_FALSE(h.empty());
    h.clear();
    EXPECT_TRUE(h.empty());
}

TEST(Handover, WithoutQueryIdsTheCutDecides) {
    Handover h;
    h.wrote(5, 0);
    EXPECT_FALSE(h.heir_writes(5, 0, 999, 1000));
    EXPECT_TRUE(h.heir_writes(5, 0, 1000, 1000));
    EXPECT_TRUE(h.heir_writes(5, 0, 1001, 1000));
}

}  // namespace
}  // namespace mysqltrace::agent
