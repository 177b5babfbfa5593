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

// "00" "01" ... "99".
constexpr std::array<char, 200> kTwoDigits = [] {
    std::array<char, 200> t{};
    for (int i = 0; i < 100; i++) {
        t[2 * i] = static_cast<char>('0' + i / 10);
        t[2 * i + 1] = static_cast<char>('0' + i % 10);
    }
    return t;
}();

}  // namespace

Clock::Clock() {
    offset_ns_ = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
}

size_t Clock::put_wall(uint64_t monotonic_ns, char *buf) const {
    const uint64_t ns = realtime_ns(monotonic_ns);
    const uint64_t sec = ns / 1'000'000'000ull;
    if (sec != cached_sec_) {
        time_t secs = static_cast<time_t>(sec);
        tm t{};
        localtime_r(&secs, &t);
        std::snprintf(cached_hms_, sizeof(cached_hms_), "%02d:%02d:%02d.", t.tm_hour % 100,
                      t.tm_min % 100, t.tm_sec % 100);
        cached_sec_ = sec;
    }
    std::memcpy(buf, cached_hms_, 9);
    // Two digits at a time, from a table: three independent divisions
    // instead of a chain of six (this runs for every line of a trace).
    const unsigned us = static_cast<unsigned>((ns % 1'000'000'000ull) / 1000);
    std::memcpy(buf + 9, kTwoDigits.data() + 2 * (us / 10000), 2);
    std::memcpy(buf + 11, kTwoDigits.data() + 2 * (us / 100 % 100), 2);
    std::memcpy(buf + 13, kTwoDigits.data() + 2 * (us % 100), 2);
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
