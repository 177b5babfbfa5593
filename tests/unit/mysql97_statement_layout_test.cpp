// SPDX-License-Identifier: GPL-2.0-only
// Where Oracle MySQL 9.7.4 (Debian sid's mysqld, CET build) keeps what a
// statement's end reads beyond the fixed THD fields: THD::query_id, stored by
// dispatch_command's inlined set_query_id(next_query_id()) (no accessor in
// MySQL), and the prepared statement a COM_STMT_EXECUTE ran, through
// THD::stmt_map's m_last_found_statement, with its `?` text. The sequences
// below are those of 9.7.4's functions (objdump -d), shortened where the
// patterns do not look, calls pointed at local stubs or at the fixture's own
// functions; the code is read, never run. Real runs: tests/priv/server_pfs_test.cpp.
#include <gtest/gtest.h>

#include "elf/elf_file.h"
#include "server/thd_layout.h"

asm(R"(
    .data
    .globl atomic_global_query_id
    .type atomic_global_query_id, @object
atomic_global_query_id:
    .quad 0
    .size atomic_global_query_id, 8

    .text
    .globl thd_get_thread_id, _ZN22Prepared_statement_map4findEm
    .globl _Z19mysql_stmt_precheckP3THDPK8COM_DATA19enum_server_commandPP18Prepared_statement
    .globl _ZNK18Prepared_statement24get_display_query_stringEPPKcPm
    .globl _Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command
mt97s_stub:
    ret

    .type thd_get_thread_id, @function
thd_get_thread_id:
    endbr64
    mov    0x25d0(%rdi),%eax
    ret
    .size thd_get_thread_id, .-thd_get_thread_id

    .type _ZN22Prepared_statement_map4findEm, @function
_ZN22Prepared_statement_map4findEm:
    endbr64
    mov    0xa0(%rdi),%rcx
    mov    %rdi,%r10
    test   %rcx,%rcx
    je     1f
    cmp    %rsi,0x240(%rcx)
    je     2f
1:  cmpq   $0x0,0x20(%r10)
    mov    0x10(%r10),%r9
    mov    %rsi,%rax
    xor    %edx,%edx
    div    %r9
    mov    0x8(%r10),%rax
    mov    (%rax,%rdx,8),%rdi
    cmpq   $0x0,0x2a0(%rcx)
    mov    %rcx,0xa0(%r10)
2:  mov    %rcx,%rax
    ret
    .size _ZN22Prepared_statement_map4findEm, .-_ZN22Prepared_statement_map4findEm

    .type _Z19mysql_stmt_precheckP3THDPK8COM_DATA19enum_server_commandPP18Prepared_statement, @function
_Z19mysql_stmt_precheckP3THDPK8COM_DATA19enum_server_commandPP18Prepared_statement:
    endbr64
    push   %rbp
    sub    $0x16,%edx
    mov    %rsp,%rbp
    sub    $0x40,%rsp
    mov    %fs:0x28,%rax
    mov    %rax,-0x18(%rbp)
    xor    %eax,%eax
    movq   $0x0,(%rcx)
    cmp    $0x6,%edx
    ja     1f
    mov    %rbx,-0x10(%rbp)
    mov    %rcx,%rbx
    mov    %rdi,%r8
    mov    %rsi,%r9
    lea    mt97s_stub(%rip),%rcx
    movslq (%rcx,%rdx,4),%rax
    add    %rcx,%rax
    notrack jmp *%rax
    mov    -0x10(%rbp),%rbx
1:  mov    $0x1,%eax
    leave
    ret
    mov    %r14,-0x8(%rbp)
    mov    (%rsi),%rsi
    lea    0x1370(%r8),%rdi
    mov    %rsi,%r14
    call   _ZN22Prepared_statement_map4findEm
    mov    %rax,(%rbx)
    leave
    ret
    .size _Z19mysql_stmt_precheckP3THDPK8COM_DATA19enum_server_commandPP18Prepared_statement, .-_Z19mysql_stmt_precheckP3THDPK8COM_DATA19enum_server_commandPP18Prepared_statement

    .type _ZNK18Prepared_statement24get_display_query_stringEPPKcPm, @function
_ZNK18Prepared_statement24get_display_query_stringEPPKcPm:
    endbr64
    mov    0x268(%rdi),%rax
    test   %rax,%rax
    je     1f
    mov    0x260(%rdi),%rcx
    mov    %rcx,(%rsi)
    mov    %rax,(%rdx)
    ret
1:  mov    0x250(%rdi),%rcx
    mov    0x258(%rdi),%rax
    mov    %rcx,(%rsi)
    mov    %rax,(%rdx)
    ret
    .size _ZNK18Prepared_statement24get_display_query_stringEPPKcPm, .-_ZNK18Prepared_statement24get_display_query_stringEPPKcPm

    .type _Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command, @function
_Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    push   %r15
    push   %r14
    push   %r13
    push   %r12
    push   %rbx
    mov    %rdi,%rbx
    sub    $0x9e8,%rsp
    mov    %rsi,-0x9e8(%rbp)
    mov    0x22c0(%rdi),%rdi
    call   mt97s_stub
    mov    0x2330(%rbx),%rdi
    mov    %rdi,0x2330(%rbx)
    movb   $0x0,-0x9b8(%rbp)
    lea    atomic_global_query_id(%rip),%rax
    mov    $0x1,%r12d
    lock xadd %r12,(%rax)
    mov    0x1270(%rbx),%rsi
    lea    0x1248(%rbx),%rax
    add    $0x1,%r12
    mov    %rax,-0x9d0(%rbp)
    test   %rsi,%rsi
    mov    -0x9d0(%rbp),%rdi
    call   mt97s_stub
    mov    0x1270(%rbx),%rdi
    mov    %r12,0x25a8(%rbx)
    mov    %r12,%rsi
    call   mt97s_stub
    lea    -0x28(%rbp),%rsp
    pop    %rbx
    pop    %r12
    pop    %r13
    pop    %r14
    pop    %r15
    pop    %rbp
    ret
    .size _Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command, .-_Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command
)");

namespace {

using mysqltrace::elf::ElfFile;
using mysqltrace::server::derive_thd_layout;

TEST(Mysql97StatementLayout, QueryIdAndPreparedStatementText) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto l = derive_thd_layout(**f, /*mysql8=*/true);
    ASSERT_TRUE(l.ok()) << l.error().message;
    // THD::query_id: where the `lock xadd` on atomic_global_query_id, plus
    // one, is stored, not the stores before it.
    EXPECT_EQ(l->query_id, 0x25a8);
    // THD::stmt_map (0x1370) + Prepared_statement_map::m_last_found_statement (0xa0).
    EXPECT_EQ(l->last_prepared, 0x1370 + 0xa0);
    // Prepared_statement::m_query_string, and m_display_query_string (the
    // one whose length is tested first).
    EXPECT_EQ(l->ps_query_string, 0x250);
    EXPECT_EQ(l->ps_display_query_string, 0x260);
}

}  // namespace
