// SPDX-License-Identifier: GPL-2.0-only
#include "server/read_plan.h"

#include <gtest/gtest.h>

namespace {

using mysqltrace::server::plan_reads;
using mysqltrace::server::ReadField;

// The THD fields of Debian's MariaDB 10.11 build: three windows instead of
// nine reads.
TEST(ReadPlan, MergesNearbyFieldsIntoWindows) {
    auto p = plan_reads({{0x3f18, 8},
                         {0x3e68, 8},
                         {0x3b98, 8},
                         {0x3ba0, 8},
                         {0x58, 8},
                         {0x68, 16},
                         {0xa0, 16},
                         {0x62e0, 8}},
                        1024, 4);
    ASSERT_EQ(p.windows.size(), 3u);
    EXPECT_EQ(p.windows[0].offset, 0x58);
    EXPECT_EQ(p.windows[0].length, 0xb0u - 0x58u);
    EXPECT_EQ(p.windows[0].at, 0u);
    EXPECT_EQ(p.windows[1].offset, 0x3b98);
    EXPECT_EQ(p.windows[1].length, 0x3f20u - 0x3b98u);
    EXPECT_EQ(p.windows[1].at, 1024u);
    EXPECT_EQ(p.windows[2].offset, 0x62e0);
    EXPECT_EQ(p.windows[2].length, 8u);
    EXPECT_EQ(p.windows[2].at, 2048u);
    EXPECT_EQ(p.at, (std::vector<int32_t>{1024 + 0x3f18 - 0x3b98, 1024 + 0x3e68 - 0x3b98, 1024,
                                          1024 + 8, 0, 0x10, 0x48, 2048}));
}

TEST(ReadPlan, UnknownFieldsAreNotRead) {
    auto p = plan_reads({{-1, 8}, {0x10, 8}, {-1, 16}}, 64, 2);
    ASSERT_EQ(p.windows.size(), 1u);
    EXPECT_EQ(p.windows[0].offset, 0x10);
    EXPECT_EQ(p.windows[0].length, 8u);
    EXPECT_EQ(p.at, (std::vector<int32_t>{-1, 0, -1}));
}

TEST(ReadPlan, OverlappingFieldsShareBytes) {
    // A LEX_CSTRING and its length read on their own: one 16-byte window.
    auto p = plan_reads({{0x20, 16}, {0x28, 8}}, 64, 1);
    ASSERT_EQ(p.windows.size(), 1u);
    EXPECT_EQ(p.windows[0].length, 16u);
    EXPECT_EQ(p.at, (std::vector<int32_t>{0, 8}));
}

TEST(ReadPlan, AWindowNeverExceedsItsMaximum) {
    auto p = plan_reads({{0, 8}, {56, 8}, {57, 8}}, 64, 4);
    ASSERT_EQ(p.windows.size(), 2u);
    EXPECT_EQ(p.windows[0].length, 64u);
    EXPECT_EQ(p.windows[1].offset, 57);
    EXPECT_EQ(p.windows[1].at, 64u);
    EXPECT_EQ(p.at, (std::vector<int32_t>{0, 56, 64}));
}

TEST(ReadPlan, FieldsBeyondTheLastWindowAreLeftOut) {
    auto p = plan_reads({{0, 8}, {1000, 8}, {2000, 8}}, 64, 2);
    ASSERT_EQ(p.windows.size(), 2u);
    EXPECT_EQ(p.at, (std::vector<int32_t>{0, 64, -1}));
}

TEST(ReadPlan, AFieldLargerThanAWindowIsLeftOut) {
    auto p = plan_reads({{0, 128}, {200, 8}}, 64, 2);
    ASSERT_EQ(p.windows.size(), 1u);
    EXPECT_EQ(p.at, (std::vector<int32_t>{-1, 0}));
}

TEST(ReadPlan, AnExtraFieldJoinsAWindowThatReachesIt) {
    std::vector<ReadField> fields = {{0, 8}, {1000, 8}};
    auto p = plan_reads(fields, 64, 4);
    EXPECT_EQ(plan_extra(p, fields, {1040, 8}, 64, 4), 64 + 40);
    ASSERT_EQ(p.windows.size(), 2u);
    EXPECT_EQ(p.windows[1].length, 48u);
    EXPECT_EQ(p.at, (std::vector<int32_t>{0, 64, 104}));
    EXPECT_EQ(fields.size(), 3u);
}

TEST(ReadPlan, AnExtraFieldNeverCostsAWindowOfItsOwn) {
    std::vector<ReadField> fields = {{0, 8}, {1000, 8}};
    auto p = plan_reads(fields, 64, 4);
    EXPECT_EQ(plan_extra(p, fields, {500, 8}, 64, 4), -1);
    EXPECT_EQ(p.windows.size(), 2u);
    EXPECT_EQ(p.at, (std::vector<int32_t>{0, 64}));
    EXPECT_EQ(fields.size(), 2u);
    EXPECT_EQ(plan_extra(p, fields, {-1, 8}, 64, 4), -1);
    EXPECT_EQ(fields.size(), 2u);
}

TEST(ReadPlan, AnExtraFieldNeverTakesAnotherFieldsPlace) {
    // Two windows at most: 500 would take the window 1000 is read in.
    std::vector<ReadField> fields = {{0, 8}, {1000, 8}};
    auto p = plan_reads(fields, 64, 2);
    EXPECT_EQ(plan_extra(p, fields, {500, 8}, 64, 2), -1);
    EXPECT_EQ(p.at, (std::vector<int32_t>{0, 64}));
}

}  // namespace
