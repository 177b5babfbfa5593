// SPDX-License-Identifier: GPL-2.0-only
// Durations for people, formatted with integer arithmetic: a busy trace
// prints one or more per event, and printf's floating-point path showed in
// profiles of the tracer.
#pragma once

#include <cstdint>
#include <string>

namespace mysqltrace::output {

// Appends ns / unit with `decimals` digits after the point, rounded half up.
// `unit` must be a multiple of 10^decimals (1000 with 2: microseconds to
// two places).
void append_fixed(std::string &out, uint64_t ns, uint64_t unit, int decimals);

// "0.85 us", "12.3 us", "45.60 ms", "12.345 s".
std::string human_duration(uint64_t ns);
void append_human_duration(std::string &out, uint64_t ns);

// Decimal digits of v.
void append_uint(std::string &out, uint64_t v);

}  // namespace mysqltrace::output
