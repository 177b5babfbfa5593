// SPDX-License-Identifier: GPL-2.0-only
// Renderers for server command events: readable rows, or one JSON object per
// line with performance_schema column names.
#pragma once

#include <cstdint>
#include <string>

#include "server/command_tracer.h"

namespace mysqltrace::output {

// Converts CLOCK_MONOTONIC timestamps to wall-clock time for display.
class Clock {
  public:
    Clock();
    uint64_t realtime_ns(uint64_t monotonic_ns) const { return monotonic_ns + offset_ns_; }
    // "HH:MM:SS.uuuuuu" in local time.
    std::string wall(uint64_t monotonic_ns) const;

  private:
    uint64_t offset_ns_ = 0;
};

std::string command_text_header();
std::string command_text(const server::CommandEvent &ev, const Clock &clock);
std::string command_json(const server::CommandEvent &ev, uint32_t pid);

}  // namespace mysqltrace::output
