// SPDX-License-Identifier: GPL-2.0-only
#include "output/clock.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace mysqltrace::output {

namespace {

uint64_t clock_ns(clockid_t id) {
    timespec ts{};
    clock_gettime(id, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// "000" "001" ... "999".
constexpr std::array<char, 3000> kThreeDigits = [] {
    std::array<char, 3000> t{};
    for (int i = 0; i < 1000; i++) {
        t[3 * i] = static_cast<char>('0' + i / 100);
        t[3 * i + 1] = static_cast<char>('0' + i / 10 % 10);
        t[3 * i + 2] = static_cast<char>('0' + i % 10);
    }
    return t;
}();

}  // namespace

Clock::Clock() {
    offset_ns_ = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
}

void Clock::start_second(uint64_t ns) const {
    const uint64_t sec = ns / 1'000'000'000ull;
    time_t secs = static_cast<time_t>(sec);
    tm t{};
    localtime_r(&secs, &t);
    std::snprintf(cached_hms_, sizeof(cached_hms_), "%02d:%02d:%02d.", t.tm_hour % 100,
                  t.tm_min % 100, t.tm_sec % 100);
    cached_sec_ns_ = sec * 1'000'000'000ull;
}

size_t Clock::put_wall(uint64_t monotonic_ns, char *buf) const {
    const uint64_t ns = realtime_ns(monotonic_ns);
    // Within the cached second (the common case: a trace's lines come in
    // time order), the microseconds are a 32-bit difference, and no 64-bit
    // division runs.
    if (ns - cached_sec_ns_ >= 1'000'000'000ull || cached_sec_ns_ == kNoSecond) {
        start_second(ns);
    }
    std::memcpy(buf, cached_hms_, 9);
    // Three digits at a time, from a table (this runs for every line of a
    // trace).
    const uint32_t us = static_cast<uint32_t>(ns - cached_sec_ns_) / 1000;
    std::memcpy(buf + 9, kThreeDigits.data() + 3 * (us / 1000), 3);
    std::memcpy(buf + 12, kThreeDigits.data() + 3 * (us % 1000), 3);
    return kWallChars;
}

void Clock::append_wall(uint64_t monotonic_ns, std::string &out) const {
    char buf[kWallChars];
    out.append(buf, put_wall(monotonic_ns, buf));
}

std::string Clock::wall(uint64_t monotonic_ns) const {
    std::string s;
    append_wall(monotonic_ns, s);
    return s;
}

}  // namespace mysqltrace::output
