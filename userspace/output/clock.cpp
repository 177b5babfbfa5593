// SPDX-License-Identifier: GPL-2.0-only
#include "output/clock.h"

#include <cstdio>
#include <ctime>

namespace mysqltrace::output {

namespace {

uint64_t clock_ns(clockid_t id) {
    timespec ts{};
    clock_gettime(id, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

Clock::Clock() {
    offset_ns_ = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
}

void Clock::append_wall(uint64_t monotonic_ns, std::string &out) const {
    const uint64_t ns = realtime_ns(monotonic_ns);
    const uint64_t sec = ns / 1'000'000'000ull;
    if (sec != cached_sec_) {
        time_t secs = static_cast<time_t>(sec);
        tm t{};
        localtime_r(&secs, &t);
        char buf[16];
        std::snprintf(buf, sizeof(buf), "%02d:%02d:%02d.", t.tm_hour, t.tm_min, t.tm_sec);
        cached_hms_ = buf;
        cached_sec_ = sec;
    }
    out += cached_hms_;
    unsigned us = static_cast<unsigned>((ns % 1'000'000'000ull) / 1000);
    char digits[6];
    for (int i = 5; i >= 0; i--) {
        digits[i] = static_cast<char>('0' + us % 10);
        us /= 10;
    }
    out.append(digits, 6);
}

std::string Clock::wall(uint64_t monotonic_ns) const {
    std::string s;
    append_wall(monotonic_ns, s);
    return s;
}

}  // namespace mysqltrace::output
