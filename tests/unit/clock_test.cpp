// SPDX-License-Identifier: GPL-2.0-only
// The wall clock every text line starts with: "HH:MM:SS.uuuuuu" in local
// time, as strftime and a zero-padded microsecond count write it.
#include <ctime>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "output/clock.h"

namespace {

using mysqltrace::output::Clock;

std::string expected_wall(uint64_t realtime_ns) {
    const time_t secs = static_cast<time_t>(realtime_ns / 1'000'000'000ull);
    tm t{};
    localtime_r(&secs, &t);
    char hms[16];
    std::strftime(hms, sizeof(hms), "%H:%M:%S", &t);
    char out[32];
    std::snprintf(out, sizeof(out), "%s.%06u", hms,
                  static_cast<unsigned>(realtime_ns % 1'000'000'000ull / 1000));
    return out;
}

TEST(Clock, WallTimeHasEveryMicrosecondDigitInPlace) {
    const Clock clock;
    const uint64_t mono_base = 5'000'000'000'000ull;
    const uint64_t real_base = clock.realtime_ns(mono_base);
    // Within one second (the cached part stays) and across seconds.
    for (uint64_t delta : {0ull, 1'000ull, 9'000ull, 10'000ull, 99'000ull, 100'000ull,
                           123'456'000ull, 999'999'000ull, 999'999'999ull, 1'000'000'000ull,
                           1'000'001'500ull, 86'399'000'000'000ull, 86'400'000'007'000ull}) {
        // From the start of a second, so that each delta's digits are its own.
        const uint64_t mono = mono_base - real_base % 1'000'000'000ull + delta;
        EXPECT_EQ(clock.wall(mono), expected_wall(clock.realtime_ns(mono))) << delta;
        char buf[Clock::kWallChars];
        ASSERT_EQ(clock.put_wall(mono, buf), Clock::kWallChars);
        EXPECT_EQ(std::string(buf, Clock::kWallChars), expected_wall(clock.realtime_ns(mono)));
    }
}

// Lines of two connections interleave a little out of time order: the
// second a line falls in is found again after a line of another second,
// before and after it, and in the first second after the epoch.
TEST(Clock, WallTimeGoesBackAndForthAcrossSeconds) {
    const Clock clock;
    const uint64_t mono_base = 7'000'000'000'000ull;
    const uint64_t start = mono_base - clock.realtime_ns(mono_base) % 1'000'000'000ull;
    for (uint64_t delta : {999'999'000ull, 1'000'000'000ull, 999'998'000ull, 3'000'000'000ull,
                           1'500'000ull, 1'000'002'000ull, 0ull}) {
        EXPECT_EQ(clock.wall(start + delta), expected_wall(clock.realtime_ns(start + delta)))
            << delta;
    }
    const Clock fresh;
    // The monotonic time whose realtime is 0.5 s after the epoch.
    const uint64_t early = 500'000'000ull - fresh.realtime_ns(0);
    EXPECT_EQ(fresh.wall(early), expected_wall(500'000'000ull));
}

}  // namespace
