// SPDX-License-Identifier: GPL-2.0-only
// The merge of per-CPU rings into one timestamp order.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "bpf/reorder.h"

namespace mysqltrace::bpf {
namespace {

// A record whose bytes are its own id, so the output can be read back.
std::vector<uint8_t> record(uint32_t id) {
    return {static_cast<uint8_t>(id), static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id >> 16),
            static_cast<uint8_t>(id >> 24)};
}

uint32_t id_of(std::span<const uint8_t> r) {
    return static_cast<uint32_t>(r[0]) | static_cast<uint32_t>(r[1]) << 8 |
           static_cast<uint32_t>(r[2]) << 16 | static_cast<uint32_t>(r[3]) << 24;
}

struct Collected {
    std::vector<uint32_t> ids;
    void release(ReorderBuffer &rb, uint64_t up_to, size_t max_pending = SIZE_MAX) {
        rb.release(up_to, max_pending,
                   [&](std::span<const uint8_t> r) { ids.push_back(id_of(r)); });
    }
};

TEST(ReorderBuffer, MergesLanesByTimestampAndHoldsYoungRecords) {
    ReorderBuffer rb(2);
    // id = timestamp here.
    for (uint32_t ts : {10u, 30u, 50u}) {
        rb.push(0, ts, record(ts));
    }
    for (uint32_t ts : {20u, 40u, 60u}) {
        rb.push(1, ts, record(ts));
    }
    Collected out;
    out.release(rb, 45);
    EXPECT_EQ(out.ids, (std::vector<uint32_t>{10, 20, 30, 40}));
    EXPECT_EQ(rb.pending(), 2u);
    out.release(rb, UINT64_MAX);
    EXPECT_EQ(out.ids, (std::vector<uint32_t>{10, 20, 30, 40, 50, 60}));
    EXPECT_EQ(rb.pending(), 0u);
    EXPECT_EQ(rb.late(), 0u);
}

TEST(ReorderBuffer, SortsARecordOvertakenOnItsOwnCpu) {
    ReorderBuffer rb(2);
    rb.push(0, 100, record(100));
    rb.push(1, 110, record(110));
    rb.push(0, 120, record(120));
    rb.push(0, 105, record(105));  // reserved after 120 but stamped before it
    rb.push(0, 90, record(90));    // becomes the lane's new head
    Collected out;
    out.release(rb, UINT64_MAX);
    EXPECT_EQ(out.ids, (std::vector<uint32_t>{90, 100, 105, 110, 120}));
    EXPECT_EQ(rb.late(), 0u);
}

TEST(ReorderBuffer, EqualTimestampsKeepArrivalOrder) {
    ReorderBuffer rb(3);
    rb.push(2, 5, record(1));
    rb.push(0, 5, record(2));
    rb.push(2, 5, record(3));
    rb.push(1, 5, record(4));
    Collected out;
    out.release(rb, 5);
    EXPECT_EQ(out.ids, (std::vector<uint32_t>{1, 2, 3, 4}));
}

TEST(ReorderBuffer, CountsARecordThatArrivesAfterItsTimeWasReleased) {
    ReorderBuffer rb(1);
    rb.push(0, 50, record(50));
    Collected out;
    out.release(rb, 60);
    rb.push(0, 40, record(40));
    out.release(rb, 60);
    EXPECT_EQ(out.ids, (std::vector<uint32_t>{50, 40}));
    EXPECT_EQ(rb.late(), 1u);
}

TEST(ReorderBuffer, CapReleasesTheOldestBeyondTheWindow) {
    ReorderBuffer rb(2);
    for (uint32_t i = 0; i < 10; i++) {
        rb.push(i % 2, 1000 + i, record(i));
    }
    Collected out;
    out.release(rb, 0, 4);  // nothing is old enough; the cap forces 6 out
    EXPECT_EQ(out.ids, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(rb.pending(), 4u);
}

TEST(ReorderBuffer, OutOfRangeLaneGoesToTheLastLane) {
    ReorderBuffer rb(2);
    rb.push(7, 3, record(3));
    rb.push(1, 1, record(1));
    Collected out;
    out.release(rb, UINT64_MAX);
    EXPECT_EQ(out.ids, (std::vector<uint32_t>{1, 3}));
}

// Many CPUs, each nearly in order with local swaps, released in steps:
// the output is the sorted input, exactly.
TEST(ReorderBuffer, RandomNearlySortedLanesComeOutSorted) {
    std::mt19937 rng(42);
    const size_t lanes = 8;
    ReorderBuffer rb(lanes);
    // Arrival slots in time order, each on a random CPU, stamped 10 apart.
    std::vector<size_t> slot_lane;
    std::vector<uint64_t> slot_ts;
    std::vector<std::vector<size_t>> slots_of(lanes);
    for (uint64_t t = 0; t < 20000; t++) {
        slot_lane.push_back(rng() % lanes);
        slot_ts.push_back(t * 10);
        slots_of[slot_lane.back()].push_back(t);
    }
    // Now and then a record is overtaken on its own CPU: swap the stamps of
    // two neighbouring records of one lane.
    for (const auto &slots : slots_of) {
        for (size_t i = 1; i < slots.size(); i++) {
            if (rng() % 5 == 0) {
                std::swap(slot_ts[slots[i - 1]], slot_ts[slots[i]]);
            }
        }
    }
    // Arrive in slot order, releasing behind a window now and then.
    Collected out;
    uint64_t clock = 0;
    uint32_t id = 0;
    for (size_t s = 0; s < slot_ts.size(); s++) {
        rb.push(slot_lane[s], slot_ts[s], record(static_cast<uint32_t>(slot_ts[s])));
        clock = std::max(clock, slot_ts[s]);
        id++;
        if (s % 13 == 0) {
            out.release(rb, clock > 2000 ? clock - 2000 : 0);
        }
    }
    out.release(rb, UINT64_MAX);
    ASSERT_EQ(out.ids.size(), id);
    for (size_t i = 0; i < out.ids.size(); i++) {
        ASSERT_EQ(out.ids[i], i * 10) << "at " << i;
    }
    EXPECT_EQ(rb.late(), 0u);
}

// What RingSet does while it delivers a long batch: records pushed from
// inside the sink (the rings read again) are held or handed out in order,
// and the record being handed out stays intact while chunks fill.
TEST(ReorderBuffer, RecordsPushedWhileReleasingKeepTheOrder) {
    ReorderBuffer rb(2);
    uint32_t next_ts = 0;
    // Lane 0 and 1 alternate, 10 apart; large records fill chunks quickly.
    auto push_some = [&](size_t n) {
        for (size_t i = 0; i < n; i++) {
            std::vector<uint8_t> r = record(next_ts);
            r.resize(4000, static_cast<uint8_t>(next_ts));
            rb.push((next_ts / 10) % 2, next_ts, r);
            next_ts += 10;
        }
    };
    push_some(100);
    std::vector<uint32_t> ids;
    auto sink = [&](std::span<const uint8_t> r) {
        ASSERT_EQ(r.size(), 4000u);
        ASSERT_EQ(r.back(), static_cast<uint8_t>(id_of(r)));
        ids.push_back(id_of(r));
        if (ids.size() % 16 == 0 && next_ts < 5000) {
            push_some(20);
        }
    };
    rb.release(700, SIZE_MAX, sink);  // up to 700: what came later waits
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.back(), 700u);
    rb.release(UINT64_MAX, 0, sink);
    ASSERT_EQ(ids.size(), next_ts / 10);
    for (size_t i = 0; i < ids.size(); i++) {
        ASSERT_EQ(ids[i], i * 10) << "at " << i;
    }
    EXPECT_EQ(rb.late(), 0u);
    EXPECT_EQ(rb.pending(), 0u);
}

}  // namespace
}  // namespace mysqltrace::bpf
