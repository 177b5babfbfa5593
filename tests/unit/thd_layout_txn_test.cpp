// SPDX-License-Identifier: GPL-2.0-only
// Where a THD keeps its transaction state (server/thd_layout_txn.cpp). The
// sequences are Oracle MySQL 9.7.4's (thd_test_options, thd_tx_isolation,
// thd_tx_is_read_only, the start of trans_begin, whose early return restores
// the THD register before the test of option_bits), shortened, with the
// offsets changed; the code is read, never run.
#include <gtest/gtest.h>

#include "elf/elf_file.h"
#include "server/thd_layout.h"

asm(R"(
    .text
    .globl thd_get_thread_id, thd_test_options, thd_tx_isolation, thd_tx_is_read_only
    .globl _Z11trans_beginP3THDj
    .type thd_get_thread_id, @function
thd_get_thread_id:
    endbr64
    mov    0x25d0(%rdi),%eax
    ret
    .size thd_get_thread_id, .-thd_get_thread_id

    .type thd_test_options, @function
thd_test_options:
    endbr64
    mov    0x770(%rdi),%rax
    and    %rsi,%rax
    ret
    .size thd_test_options, .-thd_test_options

    .type thd_tx_isolation, @function
thd_tx_isolation:
    endbr64
    mov    0x25f4(%rdi),%eax
    ret
    .size thd_tx_isolation, .-thd_tx_isolation

    .type thd_tx_is_read_only, @function
thd_tx_is_read_only:
    endbr64
    movzbl 0x25f8(%rdi),%eax
    test   %al,%al
    je     1f
    xor    %edx,%edx
1:  ret
    .size thd_tx_is_read_only, .-thd_tx_is_read_only

mttx_stub:
    ret

    .type _Z11trans_beginP3THDj, @function
_Z11trans_beginP3THDj:
    endbr64
    push   %rbp
    mov    %rsp,%rbp
    sub    $0x30,%rsp
    mov    %rbx,-0x20(%rbp)
    mov    %rdi,%rbx
    call   mttx_stub
    test   %al,%al
    je     2f
    mov    -0x20(%rbp),%rbx
    leave
    ret
2:  mov    0x770(%rbx),%rax
    test   $0x380000,%eax
    je     3f
    call   mttx_stub
3:  orq    $0x100000,0x770(%rbx)
    leave
    ret
    .size _Z11trans_beginP3THDj, .-_Z11trans_beginP3THDj
)");

namespace {

TEST(ThdLayoutTxn, OptionBitsIsolationAndReadOnly) {
    auto f = mysqltrace::elf::ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok());
    auto l = mysqltrace::server::derive_thd_layout(**f, /*mysql8=*/true);
    ASSERT_TRUE(l.ok()) << l.error().message;
    EXPECT_EQ(l->option_bits, 0x770);
    EXPECT_EQ(l->tx_isolation, 0x25f4);
    EXPECT_EQ(l->tx_read_only, 0x25f8);
    EXPECT_EQ(l->multi_statement_mask, 0x380000u);
    EXPECT_EQ(l->option_begin, 0x100000u);
}

}  // namespace
