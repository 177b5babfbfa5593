// SPDX-License-Identifier: GPL-2.0-only
// Where a THD counts its connection's memory (server/thd_layout_memory.cpp).
// The sequences are those of MariaDB 11.8.9 (Debian 13's mariadbd: the
// callback mysqld_main hands to set_malloc_size_cb) and Oracle MySQL 9.7.4
// (thd_mem_cnt_alloc, Thd_mem_cnt::reset), shortened where the patterns do
// not look, with the offsets changed; the code is read, never run.
#include <gtest/gtest.h>

#include "elf/elf_file.h"
#include "server/thd_layout.h"

asm(R"(
    .text
    .globl thd_get_thread_id, set_malloc_size_cb, _Z11mysqld_mainiPPc
    .globl _Z17thd_mem_cnt_allocP3THDm, _ZN11Thd_mem_cnt9alloc_cntEm, _ZN11Thd_mem_cnt5resetEv
    .type thd_get_thread_id, @function
thd_get_thread_id:
    endbr64
    movq 0x2058(%rdi), %rax
    ret
    .size thd_get_thread_id, .-thd_get_thread_id

mtm_current_thd:
    ret

    .type set_malloc_size_cb, @function
set_malloc_size_cb:
    endbr64
    ret
    .size set_malloc_size_cb, .-set_malloc_size_cb

mtm_size_cb:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    push   %r14
    push   %r13
    push   %r12
    mov    %rdi,%r12
    push   %rbx
    sub    $0x160,%rsp
    mov    %fs:0x28,%r13
    mov    %r13,-0x28(%rbp)
    mov    %esi,%r13d
    call   mtm_current_thd
    mov    %rax,%rbx
    test   %r13b,%r13b
    je     1f
    test   %rax,%rax
    je     1f
    mov    0x15c8(%rax),%rax
    add    %r12,%rax
    mov    %rax,0x15c8(%rbx)
    mov    0x15c8(%rbx),%rax
    cmp    %rax,0x15b0(%rbx)
    jge    1f
    mov    0x15c8(%rbx),%rax
    mov    %rax,0x15b0(%rbx)
1:  add    $0x160,%rsp
    pop    %rbx
    pop    %r12
    pop    %r13
    pop    %r14
    pop    %rbp
    ret

    .type _Z11mysqld_mainiPPc, @function
_Z11mysqld_mainiPPc:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    xor    %edi,%edi
    call   set_malloc_size_cb
    call   mtm_current_thd
    lea    mtm_size_cb(%rip),%rdi
    call   set_malloc_size_cb
    pop    %rbp
    ret
    .size _Z11mysqld_mainiPPc, .-_Z11mysqld_mainiPPc

    .type _ZN11Thd_mem_cnt9alloc_cntEm, @function
_ZN11Thd_mem_cnt9alloc_cntEm:
    endbr64
    ret
    .size _ZN11Thd_mem_cnt9alloc_cntEm, .-_ZN11Thd_mem_cnt9alloc_cntEm

    .type _Z17thd_mem_cnt_allocP3THDm, @function
_Z17thd_mem_cnt_allocP3THDm:
    endbr64
    add    $0x88,%rdi
    jmp    _ZN11Thd_mem_cnt9alloc_cntEm
    .size _Z17thd_mem_cnt_allocP3THDm, .-_Z17thd_mem_cnt_allocP3THDm

    .type _ZN11Thd_mem_cnt5resetEv, @function
_ZN11Thd_mem_cnt5resetEv:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    add    $0xffffffffffffff80,%rsp
    mov    0x31c(%rdi),%edx
    mov    0x8(%rdi),%rax
    mov    %rbx,-0x18(%rbp)
    mov    0x300(%rdi),%r9
    mov    %fs:0x28,%rbx
    mov    %rbx,-0x28(%rbp)
    mov    %rdi,%rbx
    mov    %edx,0x318(%rdi)
    mov    %r9,0x308(%rdi)
    leave
    ret
    .size _ZN11Thd_mem_cnt5resetEv, .-_ZN11Thd_mem_cnt5resetEv
)");

namespace {

using mysqltrace::elf::ElfFile;
using mysqltrace::server::derive_thd_layout;

TEST(ThdLayoutMemory, MariaDbMallocSizeCallback) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok());
    auto l = derive_thd_layout(**f);
    ASSERT_TRUE(l.ok()) << l.error().message;
    // `+= size` at local_memory_used, then copied into the mark.
    EXPECT_EQ(l->mem_used, 0x15c8);
    EXPECT_EQ(l->mem_max, 0x15b0);
    EXPECT_FALSE(l->mem_max_per_command);
}

TEST(ThdLayoutMemory, MysqlThdMemCnt) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok());
    auto l = derive_thd_layout(**f, /*mysql8=*/true);
    ASSERT_TRUE(l.ok()) << l.error().message;
    // The counter object at THD+0x88; mem_counter at +0x300 is copied to
    // max_conn_mem at +0x308 (the 4-byte mode copy is not it).
    EXPECT_EQ(l->mem_used, 0x88 + 0x300);
    EXPECT_EQ(l->mem_max, 0x88 + 0x308);
    EXPECT_TRUE(l->mem_max_per_command);
}

}  // namespace
