// SPDX-License-Identifier: GPL-2.0-only
// Renderers for server command events: readable rows, or one JSON object per
// line with performance_schema column names.
#pragma once

#include <cstdint>
#include <string>

#include "output/clock.h"
#include "server/command_tracer.h"

namespace mysqltrace::output {

std::string command_text_header();
std::string command_text(const server::CommandEvent &ev, const Clock &clock);
std::string command_json(const server::CommandEvent &ev, uint32_t pid);

}  // namespace mysqltrace::output
