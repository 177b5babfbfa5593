// SPDX-License-Identifier: GPL-2.0-only
#include "output/clock.h"

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
    unsigned us = static_cast<unsigned>((ns % 1'000'000'000ull) / 1000);
    for (int i = 14; i >= 9; i--) {
        buf[i] = static_cast<char>('0' + us % 10);
        us /= 10;
    }
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
