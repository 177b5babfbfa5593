// SPDX-License-Identifier: GPL-2.0-only
#include "output/units.h"

#include <gtest/gtest.h>

namespace {

using mysqltrace::output::append_fixed;
using mysqltrace::output::human_duration;

TEST(Units, HumanDurations) {
    EXPECT_EQ(human_duration(0), "0.00 us");
    EXPECT_EQ(human_duration(850), "0.85 us");
    EXPECT_EQ(human_duration(9'999), "10.00 us");  // rounded up, still in its range's format
    EXPECT_EQ(human_duration(12'345), "12.3 us");
    EXPECT_EQ(human_duration(4'560'000), "4560.0 us");
    EXPECT_EQ(human_duration(45'600'000), "45.60 ms");
    EXPECT_EQ(human_duration(12'345'000'000), "12.345 s");
}

TEST(Units, FixedPointRoundsHalfUp) {
    std::string s;
    append_fixed(s, 1'005, 1000, 2);
    EXPECT_EQ(s, "1.01");
    s.clear();
    append_fixed(s, 1'004, 1000, 2);
    EXPECT_EQ(s, "1.00");
    s.clear();
    append_fixed(s, 1'500'000'001, 1'000'000'000, 6);
    EXPECT_EQ(s, "1.500000");
    s.clear();
    append_fixed(s, 42, 1, 0);
    EXPECT_EQ(s, "42");
    s.clear();
    append_fixed(s, UINT64_MAX, 1'000'000'000, 3);
    EXPECT_EQ(s, "18446744073.710");
}

}  // namespace
