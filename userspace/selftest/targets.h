// SPDX-License-Identifier: GPL-2.0-only
// Probe targets inside mysqltrace itself, so that `doctor` can prove that a
// uprobe and a USDT probe really fire on this machine.
#pragma once

#include <cstdint>

extern "C" {
// Written in assembly so that its first instruction is `push %rbp`, one the
// kernel emulates: the proof measures the cheap path, whatever the compiler
// would have emitted.
void mysqltrace_selftest_target(uint64_t arg);
}

namespace mysqltrace::selftest {

// Fires the USDT probe mysqltrace_selftest:ping(arg).
void fire_usdt(uint64_t arg);

inline constexpr const char *kUsdtProvider = "mysqltrace_selftest";
inline constexpr const char *kUsdtName = "ping";

}  // namespace mysqltrace::selftest
