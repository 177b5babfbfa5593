// SPDX-License-Identifier: GPL-2.0-only
#include "server/thd_layout.h"

#include <unistd.h>

#include <gtest/gtest.h>

// A miniature server with its own THD layout, shaped like mariadbd's code:
// the matchers must read the offsets off the instructions, not know them.
asm(R"(
    .text
    .globl thd_get_thread_id, thd_query_id, thd_current_db, _ZN3THDC2Eyb
    .globl thd_get_error_number, thd_get_error_message, thd_current_status
    .globl set_thd_stage_info, thd_user_name, thd_client_host, thd_client_ip
    .type thd_user_name, @function
thd_user_name:
    movq 0x1700(%rdi), %rax
    testq %rax, %rax
    je 1f
    movq 0x8(%rax), %rax
1:  ret
    .size thd_user_name, .-thd_user_name
    .type thd_client_host, @function
thd_client_host:
    movq 0x1700(%rdi), %rax
    testq %rax, %rax
    je 1f
    movq (%rax), %rax
1:  ret
    .size thd_client_host, .-thd_client_host
    .type thd_client_ip, @function
thd_client_ip:
    movq 0x1700(%rdi), %rax
    testq %rax, %rax
    je 1f
    movq 0x10(%rax), %rax
1:  ret
    .size thd_client_ip, .-thd_client_ip
    .type thd_get_thread_id, @function
thd_get_thread_id:
    movq 0x1118(%rdi), %rax
    ret
    .size thd_get_thread_id, .-thd_get_thread_id
    .type thd_query_id, @function
thd_query_id:
    movq 0x1120(%rdi), %rax
    ret
    .size thd_query_id, .-thd_query_id
    .type _ZN3THDC2Eyb, @function
_ZN3THDC2Eyb:
    pushq %rbx
    pushq %r13
    movq %rdi, %rbx
    leaq 0x1c00(%rbx), %r13
    movq %r13, %rdi
    call mt_strmake
    movq %r13, 0x2000(%rbx)
    popq %r13
    popq %rbx
    ret
    .size _ZN3THDC2Eyb, .-_ZN3THDC2Eyb
    .type thd_current_db, @function
thd_current_db:
    leaq 0x90(%rdi), %rax
    ret
    .size thd_current_db, .-thd_current_db
    .type thd_get_error_number, @function
thd_get_error_number:
    movq 0x2000(%rdi), %rax
    movl 0xc(%rax), %eax
    ret
    .size thd_get_error_number, .-thd_get_error_number
    .type thd_get_error_message, @function
thd_get_error_message:
    movq 0x2000(%rdi), %rax
    addq $0x20, %rax
    ret
    .size thd_get_error_message, .-thd_get_error_message
    .type thd_current_status, @function
thd_current_status:
    movq 0x2000(%rdi), %rax
    xorl %edx, %edx
    testq %rax, %rax
    je 1f
    cmpl $5, 0x300(%rax)
    jne 1f
    movl 0xc(%rax), %edx
1:  movl %edx, %eax
    ret
    .size thd_current_status, .-thd_current_status
    .type _ZN3THD18set_sent_row_countEy, @function
_ZN3THD18set_sent_row_countEy:
    movq %rsi, 0x1200(%rdi)
    ret
    .size _ZN3THD18set_sent_row_countEy, .-_ZN3THD18set_sent_row_countEy
    .type _ZN3THD22set_examined_row_countEy, @function
_ZN3THD22set_examined_row_countEy:
    movq 0x8(%rdi), %rax
    movq %rax, 0x10(%rdi)
    movq %rsi, 0x1208(%rdi)
    ret
    .size _ZN3THD22set_examined_row_countEy, .-_ZN3THD22set_examined_row_countEy
    .type _ZN16Diagnostics_area13set_ok_statusEyyPKc, @function
_ZN16Diagnostics_area13set_ok_statusEyyPKc:
    movq %rdi, %rax
    movq %rsi, %rdi
    movq %rdx, 0x2f8(%rax)
    movq %rdi, 0x2f0(%rax)
    ret
    .size _ZN16Diagnostics_area13set_ok_statusEyyPKc, .-_ZN16Diagnostics_area13set_ok_statusEyyPKc
    .type _ZN16Diagnostics_area16set_error_statusEjPKcS1_RK27Sql_user_condition_identityPK13Sql_condition, @function
_ZN16Diagnostics_area16set_error_statusEjPKcS1_RK27Sql_user_condition_identityPK13Sql_condition:
    cmpl $6, 0x300(%rdi)
    je 1f
    jmp .Lset_error_body
1:  ret
    .size _ZN16Diagnostics_area16set_error_statusEjPKcS1_RK27Sql_user_condition_identityPK13Sql_condition, .-_ZN16Diagnostics_area16set_error_statusEjPKcS1_RK27Sql_user_condition_identityPK13Sql_condition
    .type set_thd_stage_info, @function
set_thd_stage_info:
    movl 0x1508(%rdi), %eax
    movl %eax, (%rdx)
    movl (%rsi), %eax
    movq 8(%rsi), %rcx
    movl %eax, 0x1508(%rdi)
    movq %rcx, 0x1500(%rdi)
    ret
    .size set_thd_stage_info, .-set_thd_stage_info
    .type mt_strmake, @function
mt_strmake:
    ret
    .size mt_strmake, .-mt_strmake
    nop
.Lset_error_body:
    movl %esi, %eax
    movq %rdx, %rsi
    leaq 0x20(%rdi), %rdi
    movl %eax, -0x14(%rdi)
    movl (%rcx), %eax
    movl %eax, -0x20(%rdi)
    call mt_strmake
    ret
    # One-probe statements: the command, utime_after_lock (+=), and
    # start_utime, subtracted from it in the slow log's writer after an early
    # return that pops the THD's register (a linear walk loses it there).
    .globl thd_current_command, thd_storage_lock_wait, _ZN6LOGGER14slow_log_printEP3THDPKcmy
    .type thd_current_command, @function
thd_current_command:
    movl 0x2400(%rdi), %eax
    ret
    .size thd_current_command, .-thd_current_command
    .type thd_storage_lock_wait, @function
thd_storage_lock_wait:
    addq %rsi, 0x2418(%rdi)
    ret
    .size thd_storage_lock_wait, .-thd_storage_lock_wait
    .type _ZN6LOGGER14slow_log_printEP3THDPKcmy, @function
_ZN6LOGGER14slow_log_printEP3THDPKcmy:
    pushq %rbx
    cmpq $0, 0x78(%rdi)
    movq %rsi, %rbx
    jne 1f
    xorl %eax, %eax
    popq %rbx
    ret
1:  movq 0x2418(%rbx), %rsi
    movq 0x2410(%rbx), %rax
    subq %rax, %r8
    subq %rax, %rsi
    popq %rbx
    ret
    .size _ZN6LOGGER14slow_log_printEP3THDPKcmy, .-_ZN6LOGGER14slow_log_printEP3THDPKcmy
)");

namespace {

using mysqltrace::elf::ElfFile;
using mysqltrace::server::derive_thd_layout;

TEST(ThdLayout, ReadsOffsetsOffTheCode) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok());
    auto l = derive_thd_layout(**f);
    ASSERT_TRUE(l.ok()) << l.error().message;
    EXPECT_EQ(l->thread_id, 0x1118);
    EXPECT_EQ(l->query_id, 0x1120);
    EXPECT_EQ(l->db, 0x90);
    EXPECT_EQ(l->stmt_da, 0x2000);
    EXPECT_EQ(l->main_da, 0x1c00);  // from the constructor, through a callee-saved register
    EXPECT_EQ(l->da_errno, 0xc);
    EXPECT_EQ(l->da_sqlstate, 0x0);  // from the body (errno - 8 would be 4)
    EXPECT_EQ(l->da_message, 0x20);
    EXPECT_EQ(l->da_status, 0x300);
    EXPECT_EQ(l->da_affected_rows, 0x2f0);
    EXPECT_EQ(l->sent_row_count, 0x1200);
    EXPECT_EQ(l->examined_row_count, 0x1208);
    EXPECT_EQ(l->proc_info, 0x1500);
    EXPECT_EQ(l->stage_key, 0x1508);
    EXPECT_EQ(l->security_ctx, 0x1700);
    EXPECT_EQ(l->sctx_user, 0x8);
    EXPECT_EQ(l->sctx_host, 0x0);
    EXPECT_EQ(l->sctx_ip, 0x10);
    EXPECT_EQ(l->command, 0x2400);
    EXPECT_EQ(l->lock_time, 0x2418);
    EXPECT_FALSE(l->lock_is_duration);  // a time: Lock_time = it - start
    EXPECT_EQ(l->start_utime, 0x2410);
    EXPECT_EQ(l->start_clock, mysqltrace::server::ThdLayout::Clock::monotonic);
}

TEST(ThdLayout, NotAServer) {
    auto f = ElfFile::open("/bin/true");
    ASSERT_TRUE(f.ok());
    auto l = derive_thd_layout(**f);
    ASSERT_FALSE(l.ok());
    EXPECT_NE(l.error().message.find("thread_id"), std::string::npos);
}

// Debian's MariaDB 10.11 build (CI installs mariadb-server); the values were
// checked against `objdump -d` of the accessors.
TEST(ThdLayout, MariaDb1011) {
    constexpr const char *kServer = "/usr/sbin/mariadbd";
    ASSERT_EQ(access(kServer, R_OK), 0) << kServer << " is missing: install mariadb-server";
    auto f = ElfFile::open(kServer);
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto l = derive_thd_layout(**f);
    ASSERT_TRUE(l.ok()) << l.error().message;
    EXPECT_EQ(l->thread_id, 0x3f18);
    EXPECT_EQ(l->query_id, 0x3e68);
    EXPECT_EQ(l->db, 0xa0);
    EXPECT_EQ(l->stmt_da, 0x62e0);
    EXPECT_EQ(l->main_da, 0x5fd8);
    EXPECT_EQ(l->da_errno, 0x8);
    EXPECT_EQ(l->da_sqlstate, 0x0);
    EXPECT_EQ(l->da_message, 0x1a);
    EXPECT_EQ(l->da_status, 0x234);
    EXPECT_EQ(l->da_affected_rows, 0x220);
    EXPECT_EQ(l->sent_row_count, 0x3b98);
    EXPECT_EQ(l->examined_row_count, 0x3ba0);
    EXPECT_EQ(l->proc_info, 0x2600);
    EXPECT_EQ(l->stage_key, 0x2608);
    EXPECT_EQ(l->security_ctx, 0x25f8);
    EXPECT_EQ(l->sctx_user, 0x8);
    EXPECT_EQ(l->sctx_host, 0x0);
    EXPECT_EQ(l->sctx_ip, 0x10);
}

}  // namespace
