// SPDX-License-Identifier: GPL-2.0-only
// The patterns of mysql97_statement_layout_test.cpp on code that does not
// verify: each function below differs from 9.7.4's in the one place its
// pattern checks, and the field it gives stays unknown (-1), never a guess.
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
mt97r_stub:
    ret

    .type thd_get_thread_id, @function
thd_get_thread_id:
    endbr64
    mov    0x25d0(%rdi),%eax
    ret
    .size thd_get_thread_id, .-thd_get_thread_id

    # The id compared is not the argument: no m_last_found_statement.
    .type _ZN22Prepared_statement_map4findEm, @function
_ZN22Prepared_statement_map4findEm:
    endbr64
    mov    0xa0(%rdi),%rcx
    mov    0x8(%rdi),%rsi
    cmp    %rsi,0x240(%rcx)
    mov    %rcx,%rax
    ret
    .size _ZN22Prepared_statement_map4findEm, .-_ZN22Prepared_statement_map4findEm

    .type _Z19mysql_stmt_precheckP3THDPK8COM_DATA19enum_server_commandPP18Prepared_statement, @function
_Z19mysql_stmt_precheckP3THDPK8COM_DATA19enum_server_commandPP18Prepared_statement:
    endbr64
    mov    %rdi,%r8
    lea    0x1370(%r8),%rdi
    call   _ZN22Prepared_statement_map4findEm
    ret
    .size _Z19mysql_stmt_precheckP3THDPK8COM_DATA19enum_server_commandPP18Prepared_statement, .-_Z19mysql_stmt_precheckP3THDPK8COM_DATA19enum_server_commandPP18Prepared_statement

    # A length that is not right after its string.
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
    mov    0x270(%rdi),%rax
    mov    %rcx,(%rsi)
    mov    %rax,(%rdx)
    ret
    .size _ZNK18Prepared_statement24get_display_query_stringEPPKcPm, .-_ZNK18Prepared_statement24get_display_query_stringEPPKcPm

    # The new id is replaced before the store into the THD.
    .type _Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command, @function
_Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    push   %r12
    push   %rbx
    mov    %rdi,%rbx
    lea    atomic_global_query_id(%rip),%rax
    mov    $0x1,%r12d
    lock xadd %r12,(%rax)
    add    $0x1,%r12
    mov    0x10(%rbx),%r12
    mov    %r12,0x25a8(%rbx)
    pop    %rbx
    pop    %r12
    pop    %rbp
    ret
    .size _Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command, .-_Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command
)");

namespace {

using mysqltrace::elf::ElfFile;
using mysqltrace::server::derive_thd_layout;

TEST(Mysql97StatementLayoutRefusal, UnverifiedFieldsStayUnknown) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto l = derive_thd_layout(**f, /*mysql8=*/true);
    ASSERT_TRUE(l.ok()) << l.error().message;
    EXPECT_EQ(l->thread_id, 0x25d0);
    EXPECT_EQ(l->query_id, -1);
    EXPECT_EQ(l->last_prepared, -1);
    EXPECT_EQ(l->ps_query_string, -1);
    EXPECT_EQ(l->ps_display_query_string, -1);
}

}  // namespace
