// SPDX-License-Identifier: GPL-2.0-only
// What `server --locks` learns of a build (server/lock_layout.h), on the
// instructions of Oracle MySQL 9.7.4's own functions (Debian sid's mysqld,
// CET: each starts with endbr64), reassembled here with the symbols they
// have there: MDL_ticket::get_key (m_lock, the key at the lock's start),
// has_stronger_or_equal_type (m_type), create (m_ctx), the call of
// MDL_wait::timed_wait in MDL_context::acquire_lock (m_owner), and the
// functions only a waiting thread runs, where the probes go. Calls point
// at stand-ins: the code is read, never run. Also the thunk name MariaDB
// 10.11's THD gets for its MDL_context_owner base.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "elf/elf_file.h"
#include "server/lock_layout.h"

#define FN(name) "    .globl " name "\n    .type " name ", @function\n" name ":\n"
#define END(name) "    .size " name ", .-" name "\n"

asm(R"(
    .text
)" FN("_ZNK10MDL_ticket7get_keyEv") R"(
    endbr64
    mov    0x38(%rdi),%rax
    ret
)" END("_ZNK10MDL_ticket7get_keyEv")
        FN("_ZNK10MDL_ticket26has_stronger_or_equal_typeE13enum_mdl_type") R"(
    endbr64
    mov    0x38(%rdi),%rax
    movslq %esi,%rsi
    mov    0x258(%rax),%rdx
    movslq 0x28(%rdi),%rax
    movzwl (%rdx,%rax,2),%eax
    movzwl (%rdx,%rsi,2),%edx
    not    %eax
    test   %edx,%eax
    sete   %al
    ret
)" END("_ZNK10MDL_ticket26has_stronger_or_equal_typeE13enum_mdl_type") FN(
            "_ZN10MDL_ticket6createEP11MDL_context13enum_mdl_type") R"(
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    push   %r12
    mov    %esi,%r12d
    push   %rbx
    mov    %rdi,%rbx
    mov    $0x50,%edi
    call   lock_layout_test_new
    test   %rax,%rax
    je     1f
    mov    %r12d,0x28(%rax)
    mov    %rbx,0x30(%rax)
    movq   $0x0,0x38(%rax)
    movq   $0x0,0x48(%rax)
1:  pop    %rbx
    pop    %r12
    pop    %rbp
    ret
)" END("_ZN10MDL_ticket6createEP11MDL_context13enum_mdl_type")
            FN("_ZN11MDL_context12acquire_lockEP11MDL_requestm") R"(
    endbr64
    push   %rbp
    mov    %rdi,%rbx
    movsbq 0x26(%r15),%rax
    mov    -0xd8(%rbp),%rcx
    mov    %rbx,%rdi
    lea    -0xb0(%rbp),%rdx
    mov    0xc0(%rbx),%rsi
    shl    $0x5,%rax
    lea    (%rax,%rcx,1),%r8
    xor    %ecx,%ecx
    call   _ZN8MDL_wait10timed_waitEP17MDL_context_ownerP8timespecbPK17PSI_stage_info_v1
    test   %eax,%eax
    mov    %r15,%r13
    movsbq 0x26(%r13),%rax
    mov    0xc0(%rbx),%rsi
    mov    $0x1,%ecx
    lea    -0xc0(%rbp),%rdx
    mov    %rbx,%rdi
    call   _ZN8MDL_wait10timed_waitEP17MDL_context_ownerP8timespecbPK17PSI_stage_info_v1
    pop    %rbp
    ret
)" END("_ZN11MDL_context12acquire_lockEP11MDL_requestm") FN(
                "_ZN8MDL_wait10timed_waitEP17MDL_context_ownerP8timespecbPK17PSI_stage_info_v1") R"(
    endbr64
    push   %rbp
    pop    %rbp
    ret
)" END("_ZN8MDL_wait10timed_waitEP17MDL_context_ownerP8timespecbPK17PSI_stage_info_v1")
                FN("_ZN8MDL_wait10set_statusENS_16enum_wait_statusE") R"(
    endbr64
    push   %rbp
    pop    %rbp
    ret
)" END("_ZN8MDL_wait10set_statusENS_16enum_wait_statusE")
                    FN("_ZN3THD18notify_shared_lockEP17MDL_context_ownerb") R"(
    endbr64
    push   %rbp
    pop    %rbp
    ret
)" END("_ZN3THD18notify_shared_lockEP17MDL_context_ownerb")
                        FN("_ZN11MDL_context13find_deadlockEv") R"(
    endbr64
    push   %rbp
    pop    %rbp
    ret
)" END("_ZN11MDL_context13find_deadlockEv") FN("_ZN8MDL_lock14visit_subgraphEP10MDL_ticketP26MDL_"
                                               "wait_for_graph_visitor") R"(
    endbr64
    push   %rbp
    mov    0x28(%r15),%esi
    mov    %rdx,%rdi
    call   _ZNK10MDL_ticket28is_incompatible_when_grantedE13enum_mdl_type
    mov    -0x80(%rbp),%rcx
    test   %al,%al
    pop    %rbp
    ret
)" END("_ZN8MDL_lock14visit_subgraphEP10MDL_ticketP26MDL_wait_for_graph_visitor")
                            FN("_ZNK10MDL_ticket28is_incompatible_when_grantedE13enum_mdl_type") R"(
    endbr64
    push   %rbp
    pop    %rbp
    ret
)" END("_ZNK10MDL_ticket28is_incompatible_when_grantedE13enum_mdl_type")
                                FN("_Z24lock_wait_suspend_threadP9que_thr_t") R"(
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    mov    0x48(%rdi),%rax
    mov    0x50(%rax),%rbx
    mov    0x198(%rbx),%rdi
    call   _Z21thd_lock_wait_timeoutP3THD
    pop    %rbp
    ret
)" END("_Z24lock_wait_suspend_threadP9que_thr_t") FN("_Z21thd_lock_wait_timeoutP3THD") R"(
    endbr64
    push   %rbp
    pop    %rbp
    ret
)" END("_Z21thd_lock_wait_timeoutP3THD") FN("_Z20thd_report_lock_waitP3THDS0_b") R"(
    endbr64
    test   %rdi,%rdi
    ret
)" END("_Z20thd_report_lock_waitP3THDS0_b")
                                    FN("_ZN11MDL_request16init_with_sourceEN7MDL_key18enum_mdl_"
                                       "namespaceEPKcS3_13enum_mdl_type17enum_mdl_durationS3_j") R"(
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    push   %r13
    mov    %r8d,%r13d
    push   %r12
    mov    %r9d,%r12d
    push   %rbx
    mov    %rdi,%rbx
    call   lock_layout_test_new
    mov    %r13d,(%rbx)
    mov    %r12d,0x4(%rbx)
    pop    %rbx
    pop    %r12
    pop    %r13
    pop    %rbp
    ret
)" END("_ZN11MDL_request16init_with_sourceEN7MDL_key18enum_mdl_namespaceEPKcS3_13enum_mdl_"
       "type17enum_mdl_durationS3_j") FN("lock_layout_test_new") R"(
    xor    %eax,%eax
    ret
)" END("lock_layout_test_new"));

namespace {

using mysqltrace::elf::ElfFile;
using mysqltrace::server::learn_lock_layout;
using mysqltrace::server::LockRole;
using mysqltrace::server::thunk_adjustment;

TEST(LockLayout, Mysql97OffsetsAndWaitPathSites) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto l = learn_lock_layout(**f);
    EXPECT_EQ(l.missing, "");
    EXPECT_EQ(l.ctx_owner, 0xc0);
    EXPECT_EQ(l.owner_to_thd, 0);  // MDL_context_owner is THD's first base: no thunk
    EXPECT_EQ(l.ticket_lock, 0x38);
    EXPECT_EQ(l.lock_key, 0);
    EXPECT_EQ(l.ticket_type, 0x28);
    EXPECT_EQ(l.ticket_ctx, 0x30);
    EXPECT_EQ(l.request_duration, 4);
    EXPECT_TRUE(l.mdl_waits);
    EXPECT_TRUE(l.mdl_blockers);
    EXPECT_TRUE(l.row_waits);
    EXPECT_TRUE(l.row_blockers);
    auto site = [&](LockRole role) {
        auto it = std::find_if(l.sites.begin(), l.sites.end(),
                               [&](const auto &s) { return s.role == role; });
        return it == l.sites.end() ? nullptr : &*it;
    };
    auto offset_of = [&](const char *name) {
        auto s = (*f)->find(name);
        EXPECT_TRUE(s.has_value()) << name;
        auto off = (*f)->vaddr_to_offset(s ? s->vaddr : 0);
        return off ? *off : 0;
    };
    // Entries past endbr64; the return probe on the function itself.
    const uint64_t wait =
        offset_of("_ZN8MDL_wait10timed_waitEP17MDL_context_ownerP8timespecbPK17PSI_stage_info_v1");
    ASSERT_NE(site(LockRole::mdl_wait), nullptr);
    EXPECT_EQ(site(LockRole::mdl_wait)->offset, wait + 4);
    ASSERT_NE(site(LockRole::mdl_wait_ret), nullptr);
    EXPECT_EQ(site(LockRole::mdl_wait_ret)->offset, wait);
    EXPECT_TRUE(site(LockRole::mdl_wait_ret)->retprobe);
    // The comparison call in the deadlock search, and the instruction after it.
    const uint64_t visit =
        offset_of("_ZN8MDL_lock14visit_subgraphEP10MDL_ticketP26MDL_wait_for_graph_visitor");
    ASSERT_NE(site(LockRole::mdl_edge), nullptr);
    EXPECT_EQ(site(LockRole::mdl_edge)->offset, visit + 4 + 1 + 4 + 3);
    ASSERT_NE(site(LockRole::mdl_edge_ret), nullptr);
    EXPECT_EQ(site(LockRole::mdl_edge_ret)->offset, site(LockRole::mdl_edge)->offset + 5);
    // The request is in %r15 at the first call of timed_wait, in %r13 at
    // the second (x86 registers 15 and 13).
    std::vector<int> regs;
    for (const auto &s : l.sites) {
        if (s.role == LockRole::mdl_request) {
            regs.push_back(s.reg);
        }
    }
    EXPECT_EQ(regs, (std::vector<int>{15, 13}));
    EXPECT_NE(site(LockRole::mdl_find), nullptr);
    EXPECT_NE(site(LockRole::mdl_visit), nullptr);
    EXPECT_NE(site(LockRole::mdl_grant), nullptr);
    // InnoDB: the call that reads the waiter's timeout, the return, the edges.
    const uint64_t suspend = offset_of("_Z24lock_wait_suspend_threadP9que_thr_t");
    ASSERT_NE(site(LockRole::row_begin), nullptr);
    EXPECT_EQ(site(LockRole::row_begin)->offset, suspend + 4 + 1 + 3 + 4 + 4 + 7);
    ASSERT_NE(site(LockRole::row_end), nullptr);
    EXPECT_EQ(site(LockRole::row_end)->offset, suspend);
    EXPECT_NE(site(LockRole::row_edge), nullptr);
    EXPECT_EQ(site(LockRole::row_waited), nullptr);
}

TEST(LockLayout, ThunkNamesTheOwnerBase) {
    // MariaDB 10.11: `sub $0xe8,%rdi; jmp THD::notify_shared_lock`.
    EXPECT_EQ(thunk_adjustment("_ZThn232_N3THD18notify_shared_lockEP17MDL_context_ownerb"), 232);
    EXPECT_EQ(thunk_adjustment("_ZThn8_N3THD18notify_shared_lockEP17MDL_context_ownerb"), 8);
    EXPECT_EQ(thunk_adjustment("_ZThn232_N3THD5abortEv"), -1);
    EXPECT_EQ(thunk_adjustment("_ZThn_N3THD18notify_shared_lockEP17MDL_context_ownerb"), -1);
    EXPECT_EQ(thunk_adjustment("_ZN3THD18notify_shared_lockEP17MDL_context_ownerb"), -1);
    EXPECT_EQ(thunk_adjustment("_ZThn232_N3THD18notify_shared_lockEP17MDL_context_ownerbX"), -1);
}

}  // namespace
