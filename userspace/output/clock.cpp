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

std::string Clock::wall(uint64_t monotonic_ns) const {
    uint64_t ns = realtime_ns(monotonic_ns);
    time_t secs = static_cast<time_t>(ns / 1'000'000'000ull);
    tm t{};
    localtime_r(&secs, &t);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%06llu", t.tm_hour, t.tm_min, t.tm_sec,
                  static_cast<unsigned long long>((ns % 1'000'000'000ull) / 1000));
    return buf;
}

}  // namespace mysqltrace::output
