// SPDX-License-Identifier: GPL-2.0-only
// A MariaDB-like build whose InnoDB lock_wait() (no symbol) loads the
// waiting THD from a trx_t held in a caller-saved register (%rcx): the
// call of thd_wait_begin clobbers it, so the loads after the call (a walk
// of `0x88` as the deadlock search's) are not from the trx and no
// trx_t::lock.wait_trx is learnt. The wait and who wakes it are still
// traced; the blocker is then not certain (row_blockers false). Calls point
// at stand-ins: the code is read, never run.
#include <gtest/gtest.h>

#include <algorithm>

#include "elf/elf_file.h"
#include "server/lock_layout.h"

#define FN(name) "    .globl " name "\n    .type " name ", @function\n" name ":\n"
#define END(name) "    .size " name ", .-" name "\n"
#define STUB(name) FN(name) "    push %rbp\n    pop %rbp\n    ret\n" END(name)

asm(R"(
    .text
)" FN("lock_layout_lost_innodb_lock_wait") R"(
    push   %rbp
    mov    %rsp,%rbp
    mov    0x8d0(%rcx),%rdi
    mov    $0x6,%esi
    call   thd_wait_begin
    mov    0x88(%rcx),%rax
    test   %rax,%rax
    je     2f
1:  mov    0x88(%rax),%rax
    test   %rax,%rax
    jne    1b
2:  mov    -0x38(%rbp),%rax
    movabs $0x20c49ba5e353f7cf,%rdx
    mul    %rdx
    mov    %rdx,%rsi
    shr    $0x4,%rsi
    call   thd_storage_lock_wait
    pop    %rbp
    ret
)" END("lock_layout_lost_innodb_lock_wait") STUB("thd_wait_begin") STUB("thd_storage_lock_wait"));

namespace {

using mysqltrace::elf::ElfFile;
using mysqltrace::server::learn_lock_layout;
using mysqltrace::server::LockRole;

TEST(LockLayoutMariadbLost, NoWaitTrxWhenTheTrxRegisterDoesNotSurviveTheCall) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto l = learn_lock_layout(**f);
    EXPECT_TRUE(l.row_waits);
    EXPECT_TRUE(l.row_wakers);
    EXPECT_FALSE(l.row_wait_trx);
    EXPECT_FALSE(l.row_blockers);
    EXPECT_EQ(l.trx_thd, -1);
    EXPECT_EQ(l.trx_wait_trx, -1);
    auto it = std::find_if(l.sites.begin(), l.sites.end(),
                           [](const auto &s) { return s.role == LockRole::row_wait_begin; });
    ASSERT_NE(it, l.sites.end());
    EXPECT_EQ(it->reg, -1);
    EXPECT_EQ(l.missing.find("row lock"), std::string::npos) << l.missing;
}

}  // namespace
