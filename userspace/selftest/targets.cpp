// SPDX-License-Identifier: GPL-2.0-only
#include "selftest/targets.h"

#include <sys/sdt.h>

asm(R"(
    .text
    .globl mysqltrace_selftest_target
    .type mysqltrace_selftest_target, @function
mysqltrace_selftest_target:
    push %rbp
    pop %rbp
    ret
    .size mysqltrace_selftest_target, .-mysqltrace_selftest_target
)");

namespace mysqltrace::selftest {

__attribute__((noinline)) void fire_usdt(uint64_t arg) {
    DTRACE_PROBE1(mysqltrace_selftest, ping, arg);
}

}  // namespace mysqltrace::selftest
