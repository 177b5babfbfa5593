// SPDX-License-Identifier: GPL-2.0-only
#include <gtest/gtest.h>

#include "server/thd_layout.h"

// MariaDB 11.8 (Debian 13's 11.8.x, a CET build) exports neither
// THD::set_examined_row_count nor inc_examined_row_count, and its
// Diagnostics_area::set_ok_status chooses DA_OK or DA_OK_BULK with a branch
// over one move. These are its instruction sequences (objdump -d of
// 11.8.9-MariaDB-0+deb13u1), with the offsets changed: the matchers must read
// them off the code.
asm(R"(
    .text
    .globl thd_get_thread_id, thd_get_error_number, thd_current_status, thd_query_string
    .globl _ZN3THD28ps_report_examined_row_countEv, _ZN16Diagnostics_area13set_ok_statusEyyPKc
    .type thd_get_thread_id, @function
thd_get_thread_id:
    endbr64
    movq 0x2058(%rdi), %rax
    ret
    .size thd_get_thread_id, .-thd_get_thread_id
    .type thd_get_error_number, @function
thd_get_error_number:
    endbr64
    movq 0x23d0(%rdi), %rax
    movl 0x8(%rax), %eax
    ret
    .size thd_get_error_number, .-thd_get_error_number
    .type thd_current_status, @function
thd_current_status:
    endbr64
    movq 0x23d0(%rdi), %rax
    xorl %edx, %edx
    testq %rax, %rax
    je 1f
    cmpl $5, 0x134(%rax)
    jne 1f
    movl 0x8(%rax), %edx
1:  movl %edx, %eax
    ret
    .size thd_current_status, .-thd_current_status
    .type thd_query_string, @function
thd_query_string:
    endbr64
    leaq 0x58(%rdi), %rax
    ret
    .size thd_query_string, .-thd_query_string
    .type _ZN3THD28ps_report_examined_row_countEv, @function
_ZN3THD28ps_report_examined_row_countEv:
    endbr64
    movq 0x1cd0(%rdi), %rsi
    testq %rsi, %rsi
    je 1f
    movq 0x1d88(%rdi), %rdi
    testq %rdi, %rdi
    jne 2f
1:  ret
2:  leaq mt_psi_server(%rip), %rax
    movq (%rax), %rax
    jmp *0x288(%rax)
    .size _ZN3THD28ps_report_examined_row_countEv, .-_ZN3THD28ps_report_examined_row_countEv
    .type _ZN16Diagnostics_area13set_ok_statusEyyPKc, @function
_ZN16Diagnostics_area13set_ok_statusEyyPKc:
    endbr64
    movq %rdi, %rax
    movl 0x134(%rdi), %edi
    leal -0x5(%rdi), %r8d
    cmpl $0x1, %r8d
    jbe 3f
    movq 0x300(%rax), %r8
    movl 0x64(%r8), %r8d
    cmpl $0x3, %edi
    je 4f
    cmpb $0x0, 0x138(%rax)
    movq %rsi, 0x120(%rax)
    movl $0x1, %esi
    movl %r8d, 0x130(%rax)
    je 1f
    movl $0x3, %esi
1:  movl %esi, 0x134(%rax)
2:  movq %rdx, 0x128(%rax)
    movb $0x0, 0x1a(%rax)
3:  ret
4:  addl %r8d, 0x130(%rax)
    addq %rsi, 0x120(%rax)
    jmp 2b
    .size _ZN16Diagnostics_area13set_ok_statusEyyPKc, .-_ZN16Diagnostics_area13set_ok_statusEyyPKc
    .data
mt_psi_server:
    .quad 0
)");

namespace {

using mysqltrace::elf::ElfFile;
using mysqltrace::server::derive_thd_layout;

TEST(ThdLayoutMariaDb118, ReadsOffsetsOffTheCode) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok());
    auto l = derive_thd_layout(**f);
    ASSERT_TRUE(l.ok()) << l.error().message;
    EXPECT_EQ(l->thread_id, 0x2058);
    EXPECT_EQ(l->stmt_da, 0x23d0);
    EXPECT_EQ(l->da_status, 0x134);
    // The second argument of the performance_schema hook.
    EXPECT_EQ(l->examined_row_count, 0x1cd0);
    // DA_OK or, when the jump skips the second move, DA_OK_BULK.
    EXPECT_EQ(l->da_ok_statuses, (1u << 1) | (1u << 3));
    EXPECT_EQ(l->da_affected_rows, 0x120);
    EXPECT_EQ(l->query_string, 0x58);
}

}  // namespace
