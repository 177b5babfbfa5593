// SPDX-License-Identifier: GPL-2.0-only
// The layout and hook analysis on code shaped like Oracle MySQL 9.7.4's
// (Debian sid's mysqld, CET build): the instruction sequences below are
// those of its exported functions (objdump -d), calls pointed at local
// stubs, so the matchers are checked without the 9.7 binary. Real runs
// against 9.7 itself are tests/priv/server_trace*_test.cpp and server_pfs_test.cpp.
#include <gtest/gtest.h>

#include "elf/elf_file.h"
#include "server/hooks.h"
#include "server/server_target.h"
#include "server/thd_layout.h"

asm(R"(
    .text
    .globl thd_get_thread_id, _Z16thd_query_unsafeP3THD, _Z12thd_is_errorPK3THD
    .globl _ZN16Diagnostics_area16set_error_statusEjPKcS1_
    .globl _ZN16Diagnostics_area13set_ok_statusEyyPKc, _ZN3THD18set_sent_row_countEy
    .globl _ZN3THD22inc_examined_row_countEy, _ZN3THD6set_dbERK17MYSQL_LEX_CSTRING
    .globl _ZN3THDC2Eb, _Z18log_slow_statementP3THD
    .globl _Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command
    .globl _Z20dispatch_sql_commandP3THDP12Parser_stateb
mt97_stub:
    ret

    .type thd_get_thread_id, @function
thd_get_thread_id:
    endbr64
    mov    0x25d0(%rdi),%eax
    ret
    .size thd_get_thread_id, .-thd_get_thread_id

    .type _Z16thd_query_unsafeP3THD, @function
_Z16thd_query_unsafeP3THD:
    endbr64
    mov    0x510(%rdi),%rax
    mov    0x518(%rdi),%rdx
    ret
    .size _Z16thd_query_unsafeP3THD, .-_Z16thd_query_unsafeP3THD

    .type _Z12thd_is_errorPK3THD, @function
_Z12thd_is_errorPK3THD:
    endbr64
    mov    0x33a0(%rdi),%rax
    cmpl   $0x3,0x8c(%rax)
    sete   %al
    ret
    .size _Z12thd_is_errorPK3THD, .-_Z12thd_is_errorPK3THD

    .type _ZN16Diagnostics_area16set_error_statusEjPKcS1_, @function
_ZN16Diagnostics_area16set_error_statusEjPKcS1_:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    push   %r14
    mov    %rdx,%r14
    mov    %esi,%edx
    push   %r13
    mov    %rcx,%r13
    push   %r12
    mov    %esi,%r12d
    mov    $0x3,%esi
    push   %rbx
    mov    %rdi,%rbx
    call   mt97_stub
    cmpl   $0x4,0x8c(%rbx)
    je     1f
    mov    %r12d,0x29c(%rbx)
    mov    0x0(%r13),%eax
    mov    $0x1ff,%edx
    mov    %r14,%rsi
    lea    0x90(%rbx),%rdi
    mov    %eax,0x294(%rbx)
    movzbl 0x4(%r13),%eax
    movb   $0x0,0x299(%rbx)
    mov    %al,0x298(%rbx)
    call   mt97_stub
    lea    0x90(%rbx),%rdi
    call   mt97_stub
    movl   $0x3,0x8c(%rbx)
    mov    %eax,0x290(%rbx)
1:  pop    %rbx
    pop    %r12
    pop    %r13
    pop    %r14
    pop    %rbp
    ret
    .size _ZN16Diagnostics_area16set_error_statusEjPKcS1_, .-_ZN16Diagnostics_area16set_error_statusEjPKcS1_

    .type _ZN16Diagnostics_area13set_ok_statusEyyPKc, @function
_ZN16Diagnostics_area13set_ok_statusEyyPKc:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    push   %r14
    mov    %rsi,%r14
    mov    $0x1,%esi
    push   %r13
    mov    %rdx,%r13
    xor    %edx,%edx
    push   %r12
    mov    %rcx,%r12
    push   %rbx
    mov    %rdi,%rbx
    call   mt97_stub
    mov    0x8c(%rbx),%eax
    sub    $0x3,%eax
    cmp    $0x1,%eax
    jbe    1f
    mov    0x2b4(%rbx),%eax
    mov    %r14,0x2a0(%rbx)
    mov    %r13,0x2a8(%rbx)
    mov    %eax,0x2b0(%rbx)
    lea    0x90(%rbx),%rdi
    call   mt97_stub
    mov    %eax,0x290(%rbx)
    movl   $0x1,0x8c(%rbx)
1:  pop    %rbx
    pop    %r12
    pop    %r13
    pop    %r14
    pop    %rbp
    ret
    .size _ZN16Diagnostics_area13set_ok_statusEyyPKc, .-_ZN16Diagnostics_area13set_ok_statusEyyPKc

    .type _ZN3THD18set_sent_row_countEy, @function
_ZN3THD18set_sent_row_countEy:
    endbr64
    mov    %rsi,0x22a0(%rdi)
    mov    0x2330(%rdi),%rdi
    test   %rdi,%rdi
    je     1f
    jmp    mt97_stub
1:  ret
    .size _ZN3THD18set_sent_row_countEy, .-_ZN3THD18set_sent_row_countEy

    .type _ZN3THD22inc_examined_row_countEy, @function
_ZN3THD22inc_examined_row_countEy:
    endbr64
    add    0x22a8(%rdi),%rsi
    mov    %rsi,0x22a8(%rdi)
    mov    0x2330(%rdi),%rdi
    test   %rdi,%rdi
    je     1f
    jmp    mt97_stub
1:  ret
    .size _ZN3THD22inc_examined_row_countEy, .-_ZN3THD22inc_examined_row_countEy

    .type _ZN3THD6set_dbERK17MYSQL_LEX_CSTRING, @function
_ZN3THD6set_dbERK17MYSQL_LEX_CSTRING:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    sub    $0x70,%rsp
    mov    %rbx,-0x18(%rbp)
    mov    %rdi,%rbx
    mov    %r12,-0x10(%rbp)
    mov    %rsi,%r12
    mov    0x558(%rbx),%rdi
    call   mt97_stub
    movq   $0x0,0x558(%rbx)
    mov    (%r12),%rsi
    movq   $0x0,0x560(%rbx)
    mov    0x8(%r12),%rdx
    mov    $0x410,%ecx
    call   mt97_stub
    mov    %rax,0x558(%rbx)
    mov    0x8(%r12),%rax
    mov    0x1270(%rbx),%rdi
    mov    %rax,0x560(%rbx)
    mov    -0x18(%rbp),%rbx
    mov    -0x10(%rbp),%r12
    leave
    ret
    .size _ZN3THD6set_dbERK17MYSQL_LEX_CSTRING, .-_ZN3THD6set_dbERK17MYSQL_LEX_CSTRING

    # THD::THD(bool): m_stmt_da = &main_da, through a frame slot and calls.
    .type _ZN3THDC2Eb, @function
_ZN3THDC2Eb:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    push   %rbx
    mov    %rdi,%rbx
    sub    $0xc8,%rsp
    lea    0x2af8(%rbx),%rax
    mov    %rax,%rdi
    movq   $0x0,0x2a38(%rbx)
    mov    %rax,-0x70(%rbp)
    call   mt97_stub
    lea    0x2dd8(%rbx),%rax
    xor    %esi,%esi
    mov    %rax,%rdi
    mov    %rax,-0xd0(%rbp)
    call   mt97_stub
    mov    -0x70(%rbp),%rax
    mov    %rax,0x33a0(%rbx)
    add    $0xc8,%rsp
    pop    %rbx
    pop    %rbp
    ret
    .size _ZN3THDC2Eb, .-_ZN3THDC2Eb

    .type _Z18log_slow_statementP3THD, @function
_Z18log_slow_statementP3THD:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    pop    %rbp
    ret
    .size _Z18log_slow_statementP3THD, .-_Z18log_slow_statementP3THD

    .type _Z20dispatch_sql_commandP3THDP12Parser_stateb, @function
_Z20dispatch_sql_commandP3THDP12Parser_stateb:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    pop    %rbp
    ret
    .size _Z20dispatch_sql_commandP3THDP12Parser_stateb, .-_Z20dispatch_sql_commandP3THDP12Parser_stateb

    # dispatch_command: the multi-statement loop's call of log_slow_statement
    # (dispatch_sql_command runs the next statement after it), then the
    # command's last one before it returns.
    .type _Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command, @function
_Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    push   %rbx
    mov    %rdi,%rbx
    call   _Z20dispatch_sql_commandP3THDP12Parser_stateb
    jmp    2f
1:  mov    %rbx,%rdi
    call   _Z18log_slow_statementP3THD
    mov    %rbx,%rdi
    call   mt97_stub
    mov    %rbx,%rdi
    call   _Z20dispatch_sql_commandP3THDP12Parser_stateb
2:  test   %eax,%eax
    jne    1b
    mov    %rbx,%rdi
    call   _Z18log_slow_statementP3THD
    mov    %rbx,%rdi
    call   mt97_stub
    pop    %rbx
    pop    %rbp
    ret
    .size _Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command, .-_Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command
)");

namespace {

using mysqltrace::elf::ElfFile;
using mysqltrace::elf::ProbeCost;

TEST(ThdLayoutMysql97, ReadsOffsetsOffTheCode) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok());
    auto l = mysqltrace::server::derive_thd_layout(**f);
    ASSERT_TRUE(l.ok()) << l.error().message;
    EXPECT_EQ(l->thread_id, 0x25d0);
    EXPECT_EQ(l->thread_id_size, 4);  // my_thread_id: `mov 0x25d0(%rdi), %eax`
    EXPECT_EQ(l->query_id, -1);       // 9.7 exports no accessor for it: unknown
    EXPECT_EQ(l->query_string, 0x510);
    EXPECT_EQ(l->db, 0x558);
    EXPECT_EQ(l->stmt_da, 0x33a0);
    EXPECT_EQ(l->main_da, 0x2af8);  // from a frame slot, across two calls
    EXPECT_EQ(l->da_status, 0x8c);
    EXPECT_EQ(l->da_error_status, 3);       // MySQL's DA_ERROR (MariaDB's is 5)
    EXPECT_EQ(l->da_ok_statuses, 1u << 1);  // DA_OK only
    EXPECT_EQ(l->da_errno, 0x29c);
    EXPECT_EQ(l->da_sqlstate, 0x294);
    EXPECT_EQ(l->da_message, 0x90);
    EXPECT_EQ(l->da_affected_rows, 0x2a0);
    EXPECT_EQ(l->sent_row_count, 0x22a0);
    EXPECT_EQ(l->examined_row_count, 0x22a8);  // from inc_examined_row_count's add
    EXPECT_EQ(l->security_ctx, -1);
}

TEST(ThdLayoutMysql97, HooksByPrefixAndEndSites) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok());
    auto p = mysqltrace::server::detect_profile(**f, "pid 1");
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->profile, mysqltrace::server::ServerProfile::mysql8);
    // 9.7's extra bool argument does not matter.
    EXPECT_EQ(p->statement, "_Z20dispatch_sql_commandP3THDP12Parser_stateb");
    EXPECT_EQ(p->end_statement, "_Z18log_slow_statementP3THD");

    auto dispatch = (*f)->find(p->dispatch);
    auto callee = (*f)->find(p->end_statement);
    auto stmt = (*f)->find(p->statement);
    ASSERT_TRUE(dispatch && callee && stmt);
    auto sites = mysqltrace::server::call_sites(**f, *dispatch, *callee);
    ASSERT_EQ(sites.size(), 2u);
    auto base = (*f)->vaddr_to_offset(dispatch->vaddr);
    ASSERT_TRUE(base.ok());
    std::vector<bool> more;
    for (const auto &s : sites) {
        EXPECT_EQ(s.cost, ProbeCost::emulated);  // call rel32
        more.push_back(mysqltrace::server::call_follows(
            **f, *dispatch, dispatch->vaddr + (s.offset - *base), *stmt));
    }
    EXPECT_EQ(more, (std::vector<bool>{true, false}));

    // Entries of a CET build: after the endbr64, on the emulated push.
    auto entry = mysqltrace::server::entry_probe_site(**f, *dispatch);
    ASSERT_TRUE(entry.ok());
    EXPECT_TRUE(entry->skipped_endbr);
    EXPECT_EQ(entry->cost, ProbeCost::emulated);
    EXPECT_EQ(entry->offset, *base + 4);
}

}  // namespace
