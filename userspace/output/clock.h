// SPDX-License-Identifier: GPL-2.0-only
// Event timestamps are CLOCK_MONOTONIC (what BPF reads); people read wall
// clock time. One conversion, taken when the trace starts.
#pragma once

#include <cstdint>
#include <string>

namespace mysqltrace::output {

class Clock {
  public:
    Clock();
    uint64_t realtime_ns(uint64_t monotonic_ns) const { return monotonic_ns + offset_ns_; }
    // "HH:MM:SS.uuuuuu" in local time.
    std::string wall(uint64_t monotonic_ns) const;

  private:
    uint64_t offset_ns_ = 0;
};

}  // namespace mysqltrace::output
