// SPDX-License-Identifier: GPL-2.0-only
// Event timestamps are CLOCK_MONOTONIC (what BPF reads); people read wall
// clock time. One conversion, taken when the trace starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mysqltrace::output {

class Clock {
  public:
    Clock();
    uint64_t realtime_ns(uint64_t monotonic_ns) const { return monotonic_ns + offset_ns_; }
    // "HH:MM:SS.uuuuuu" in local time.
    std::string wall(uint64_t monotonic_ns) const;
    // The same, appended to `out`.
    void append_wall(uint64_t monotonic_ns, std::string &out) const;
    // The same, written to buf (room for kWallChars); returns kWallChars.
    static constexpr size_t kWallChars = 15;
    size_t put_wall(uint64_t monotonic_ns, char *buf) const;

  private:
    uint64_t offset_ns_ = 0;
    // Formatting local time is dear (localtime_r takes a lock and walks the
    // zone rules) and a trace prints many events a second: keep the last
    // second's "HH:MM:SS." and where it starts, in realtime ns (so a Clock
    // is not for sharing between threads).
    static constexpr uint64_t kNoSecond = UINT64_MAX;
    // Caches the second ns falls in; apart, so that put_wall() stays a leaf.
    __attribute__((noinline, cold)) void start_second(uint64_t ns) const;
    mutable uint64_t cached_sec_ns_ = kNoSecond;
    mutable char cached_hms_[16] = {};
};

}  // namespace mysqltrace::output
