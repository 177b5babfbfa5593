// SPDX-License-Identifier: GPL-2.0-only
// What `server --locks` learns of MariaDB 10.11 (Debian bookworm's
// mariadbd, no CET), on its own instructions reassembled with its symbols:
// the MDL offsets (MDL_ticket::get_key, has_stronger_or_equal_type and
// create; acquire_lock's call of MDL_wait::timed_wait), THD's
// MDL_context_owner base from the thunk of THD::notify_shared_lock, and
// InnoDB's symbol-less lock_wait(): its call of thd_storage_lock_wait after
// a division by 1000 (milliseconds), the thd_wait_begin call before it
// where the wait begins, with the waiting trx_t in %r14 (its mysql_thd
// loaded into %rdi), and the deadlock search's walk of trx->lock.wait_trx
// after it (as 11.8 compiles it: each next one loaded into another
// register). Calls point at stand-ins: the code is read, never
// run.
#include <gtest/gtest.h>

#include <algorithm>

#include "elf/elf_file.h"
#include "server/lock_layout.h"

#define FN(name) "    .globl " name "\n    .type " name ", @function\n" name ":\n"
#define END(name) "    .size " name ", .-" name "\n"
#define STUB(name) FN(name) "    push %rbp\n    pop %rbp\n    ret\n" END(name)

asm(R"(
    .text
)" FN("_ZNK10MDL_ticket7get_keyEv") R"(
    mov    0x40(%rdi),%rax
    ret
)" END("_ZNK10MDL_ticket7get_keyEv")
        FN("_ZNK10MDL_ticket26has_stronger_or_equal_typeE13enum_mdl_type") R"(
    push   %rbp
    mov    %rsp,%rbp
    push   %r12
    mov    %rdi,%r12
    push   %rbx
    mov    0x40(%rdi),%rax
    movslq %esi,%rbx
    mov    0x2a8(%rax),%rdi
    mov    (%rdi),%rax
    call   *(%rax)
    movslq 0x30(%r12),%rdx
    movzwl (%rax,%rdx,2),%edx
    pop    %rbx
    pop    %r12
    pop    %rbp
    ret
)" END("_ZNK10MDL_ticket26has_stronger_or_equal_typeE13enum_mdl_type")
            FN("_ZN10MDL_ticket6createEP11MDL_context13enum_mdl_type") R"(
    push   %rbp
    mov    %rsp,%rbp
    push   %r12
    mov    %rdi,%r12
    mov    $0x50,%edi
    push   %rbx
    mov    %esi,%ebx
    call   lock_layout_mariadb_new
    test   %rax,%rax
    je     1f
    movq   $0x0,0x28(%rax)
    mov    %ebx,0x30(%rax)
    mov    %r12,0x38(%rax)
    movq   $0x0,0x40(%rax)
    movq   $0x0,0x48(%rax)
1:  pop    %rbx
    pop    %r12
    pop    %rbp
    ret
)" END("_ZN10MDL_ticket6createEP11MDL_context13enum_mdl_type") FN(
                "_ZN11MDL_context12acquire_lockEP11MDL_requestd") R"(
    push   %rbp
    mov    %rsp,%rbp
    mov    %rdi,%rbx
    movsbq 0x28(%r13),%rax
    mov    -0xa0(%rbp),%rcx
    lea    -0x70(%rbp),%rdx
    mov    %rbx,%rdi
    mov    0x88(%rbx),%rsi
    lea    (%rax,%rax,2),%rax
    lea    (%rcx,%rax,8),%r8
    xor    %ecx,%ecx
    call   _ZN8MDL_wait10timed_waitEP17MDL_context_ownerP8timespecbPK17PSI_stage_info_v1
    pop    %rbp
    ret
)" END("_ZN11MDL_context12acquire_lockEP11MDL_requestd")
                FN("_ZN8MDL_lock14visit_subgraphEP10MDL_ticketP26MDL_wait_for_graph_visitor") R"(
    push   %rbp
    mov    %rsp,%rbp
    mov    0x30(%r13),%esi
    lea    -0x8(%r15),%rdi
    call   _ZNK10MDL_ticket28is_incompatible_when_grantedE13enum_mdl_type
    test   %al,%al
    pop    %rbp
    ret
)" END("_ZN8MDL_lock14visit_subgraphEP10MDL_ticketP26MDL_wait_for_graph_visitor") FN(
                    "_ZN11MDL_request16init_with_sourceEN7MDL_key18enum_mdl_namespaceEPKcS3_13enum_"
                    "mdl_type17enum_mdl_durationS3_j") R"(
    push   %rbp
    mov    %rsp,%rbp
    push   %r13
    mov    %r8d,%r13d
    push   %r12
    mov    %r9d,%r12d
    push   %rbx
    mov    %rdi,%rbx
    call   lock_layout_mariadb_new
    mov    %r13d,(%rbx)
    mov    %r12d,0x4(%rbx)
    pop    %rbx
    pop    %r12
    pop    %r13
    pop    %rbp
    ret
)" END("_ZN11MDL_request16init_with_sourceEN7MDL_key18enum_mdl_namespaceEPKcS3_13enum_mdl_"
       "type17enum_mdl_durationS3_j")
                    FN("_ZThn232_N3THD18notify_shared_lockEP17MDL_context_ownerb") R"(
    sub    $0xe8,%rdi
    jmp    _ZN3THD18notify_shared_lockEP17MDL_context_ownerb
)" END("_ZThn232_N3THD18notify_shared_lockEP17MDL_context_ownerb") FN(
                        "lock_layout_mariadb_innodb_lock_wait") R"(
    push   %rbp
    mov    %rsp,%rbp
    mov    0x8d0(%r14),%rdi
    cmp    $0x1,%r8d
    sbb    %esi,%esi
    and    $0xfffffffd,%esi
    add    $0x6,%esi
    call   thd_wait_begin
    lea    0x14102f2(%rip),%r12
    mov    %r12,%rdi
    call   lock_layout_mariadb_new
    mov    0x88(%r14),%rax
    test   %rax,%rax
    je     2f
    mov    %r14,%rdi
1:  cmp    %rdi,%rax
    je     2f
    mov    0x88(%rax),%rdx
    mov    %rdx,%rax
    test   %rax,%rax
    jne    1b
2:  mov    -0x38(%rbp),%rax
    movabs $0x20c49ba5e353f7cf,%rdx
    sub    %rbx,%rax
    shr    $0x3,%rax
    mul    %rdx
    mov    %rdx,%rsi
    shr    $0x4,%rsi
    mov    %r8,-0x48(%rbp)
    call   thd_storage_lock_wait
    pop    %rbp
    ret
)" END("lock_layout_mariadb_innodb_lock_wait") STUB("_ZN8MDL_wait10timed_waitEP17MDL_context_"
                                                    "ownerP8timespecbPK17PSI_stage_info_v1")
                        STUB("_ZN8MDL_wait10set_statusENS_16enum_wait_statusE") STUB(
                            "_ZN3THD18notify_shared_lockEP17MDL_context_ownerb")
                            STUB("_ZN11MDL_context13find_deadlockEv") STUB(
                                "_ZNK10MDL_ticket28is_incompatible_when_grantedE13enum_mdl_type")
                                STUB("thd_wait_begin") STUB("thd_storage_lock_wait")
                                    STUB("lock_layout_mariadb_new"));

namespace {

using mysqltrace::elf::ElfFile;
using mysqltrace::server::learn_lock_layout;
using mysqltrace::server::LockRole;

TEST(LockLayoutMariadb, OffsetsOwnerBaseAndInnodbWait) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto l = learn_lock_layout(**f);
    // InnoDB reports no wait-for edges, but each wait's trx names the one it
    // waits for, and who wakes a wait is watched.
    EXPECT_EQ(l.missing, "");
    EXPECT_EQ(l.ctx_owner, 0x88);
    EXPECT_EQ(l.owner_to_thd, 0xe8);
    EXPECT_EQ(l.ticket_lock, 0x40);
    EXPECT_EQ(l.lock_key, 0);
    EXPECT_EQ(l.ticket_type, 0x30);
    EXPECT_EQ(l.ticket_ctx, 0x38);
    EXPECT_EQ(l.request_duration, 4);
    EXPECT_TRUE(l.mdl_waits);
    EXPECT_TRUE(l.mdl_blockers);
    EXPECT_TRUE(l.row_waits);
    EXPECT_TRUE(l.row_blockers);
    EXPECT_TRUE(l.row_wait_trx);
    EXPECT_FALSE(l.row_rpl_edges);
    EXPECT_EQ(l.trx_thd, 0x8d0);
    EXPECT_EQ(l.trx_wait_trx, 0x88);
    EXPECT_FALSE(l.row_wakers);  // no sched_waking program: the blocker is read
    EXPECT_EQ(l.row_waited_unit_ns, 1'000'000u);
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
    // No endbr64: entries on the first instruction (push %rbp).
    ASSERT_NE(site(LockRole::row_waited), nullptr);
    EXPECT_EQ(site(LockRole::row_waited)->offset, offset_of("thd_storage_lock_wait"));
    // The wait begins at lock_wait()'s call of thd_wait_begin.
    ASSERT_NE(site(LockRole::row_wait_begin), nullptr);
    EXPECT_EQ(site(LockRole::row_wait_begin)->offset,
              offset_of("lock_layout_mariadb_innodb_lock_wait") + 1 + 3 + 7 + 4 + 2 + 3 + 3);
    EXPECT_EQ(site(LockRole::row_wait_begin)->reg, 14);  // %r14
    EXPECT_EQ(site(LockRole::row_begin), nullptr);
    EXPECT_EQ(site(LockRole::row_edge), nullptr);
    ASSERT_NE(site(LockRole::mdl_request), nullptr);
    EXPECT_EQ(site(LockRole::mdl_request)->reg, 13);  // %r13
    ASSERT_NE(site(LockRole::mdl_edge), nullptr);
    EXPECT_EQ(site(LockRole::mdl_edge)->offset,
              offset_of("_ZN8MDL_lock14visit_subgraphEP10MDL_ticketP26MDL_wait_for_graph_visitor") +
                  1 + 3 + 4 + 4);
}

}  // namespace
