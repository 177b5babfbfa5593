// SPDX-License-Identifier: GPL-2.0-only
#include "elf/elf_file.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "proc/maps.h"

// An accessor shaped like mariadbd's thd_get_thread_id(): the offset it loads
// from its argument is what accessor_field_offset() must recover.
asm(R"(
    .text
    .globl mt_test_accessor
    .type mt_test_accessor, @function
mt_test_accessor:
    movq 0x3f18(%rdi), %rax
    ret
    .size mt_test_accessor, .-mt_test_accessor
    .globl mt_test_not_accessor
    .type mt_test_not_accessor, @function
mt_test_not_accessor:
    xorl %eax, %eax
    ret
    .size mt_test_not_accessor, .-mt_test_not_accessor
)");
extern "C" void mt_test_accessor();

// Functions that return a thread_local pointer, shaped as mariadbd's
// _current_thd() (a constant offset from the thread pointer, in two
// instructions or one) and mysqld's thd_get_current_thd() (an offset the
// loader writes into a GOT slot), and one that does not.
asm(R"(
    .text
    .globl mt_test_tls_local
    .type mt_test_tls_local, @function
mt_test_tls_local:
    push %rbp
    mov %rsp, %rbp
    movq %fs:0, %rax
    pop %rbp
    movq -0x68(%rax), %rax
    ret
    .size mt_test_tls_local, .-mt_test_tls_local
    .globl mt_test_tls_direct
    .type mt_test_tls_direct, @function
mt_test_tls_direct:
    movq %fs:-0x1d8, %rax
    ret
    .size mt_test_tls_direct, .-mt_test_tls_direct
    .globl mt_test_tls_got
    .type mt_test_tls_got, @function
mt_test_tls_got:
    push %rbp
    mov %rsp, %rbp
    movq %fs:0, %rax
    addq mt_test_tls_slot(%rip), %rax
    pop %rbp
    movq 0x10(%rax), %rax
    ret
    .size mt_test_tls_got, .-mt_test_tls_got
    .globl mt_test_tls_not
    .type mt_test_tls_not, @function
mt_test_tls_not:
    movq %fs:0, %rax
    movq $0, %rax
    movq 8(%rax), %rax
    ret
    .size mt_test_tls_not, .-mt_test_tls_not
    .data
    .globl mt_test_tls_slot
    .type mt_test_tls_slot, @object
mt_test_tls_slot:
    .quad -0x220
    .size mt_test_tls_slot, 8
    .text
)");
extern "C" long mt_test_tls_slot;

// A thread_local of this program, read by a function of its own: what the
// compiler makes of it must lead to the variable too.
thread_local void *mt_test_tls_var = nullptr;
extern "C" __attribute__((noinline, used)) void *mt_test_tls_read() {
    return mt_test_tls_var;
}

namespace {

using mysqltrace::elf::ElfFile;

std::unique_ptr<ElfFile> self() {
    auto f = ElfFile::open("/proc/self/exe");
    EXPECT_TRUE(f.ok());
    return f.ok() ? std::move(f).value() : nullptr;
}

TEST(ElfFile, FindsFunctionAndMapsItToTheRunningAddress) {
    auto f = self();
    ASSERT_TRUE(f);
    auto sym = f->find("mt_test_accessor");
    ASSERT_TRUE(sym.has_value());
    EXPECT_TRUE(sym->is_function);
    auto off = f->vaddr_to_offset(sym->vaddr);
    ASSERT_TRUE(off.ok());
    // The same file offset must back the function's address in this process.
    auto loc =
        mysqltrace::proc::locate_address(getpid(), reinterpret_cast<uint64_t>(&mt_test_accessor));
    ASSERT_TRUE(loc.ok());
    EXPECT_EQ(loc->offset, *off);
    auto bytes = f->read(sym->vaddr, 7);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(*bytes, (std::vector<uint8_t>{0x48, 0x8b, 0x87, 0x18, 0x3f, 0x00, 0x00}));
}

TEST(ElfFile, AccessorOffset) {
    auto f = self();
    ASSERT_TRUE(f);
    auto off = mysqltrace::elf::accessor_field_offset(*f, "mt_test_accessor");
    ASSERT_TRUE(off.ok()) << off.error().message;
    EXPECT_EQ(*off, 0x3f18);
    auto bad = mysqltrace::elf::accessor_field_offset(*f, "mt_test_not_accessor");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("does not start with a load"), std::string::npos);
    auto missing = mysqltrace::elf::accessor_field_offset(*f, "no_such_symbol_here");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("not found"), std::string::npos);
}

TEST(ElfFile, ThreadPointerLoads) {
    auto f = self();
    ASSERT_TRUE(f);
    auto local = mysqltrace::elf::thread_pointer_load(*f, "mt_test_tls_local");
    ASSERT_TRUE(local.ok()) << local.error().message;
    EXPECT_EQ(local->offset, -0x68);
    EXPECT_EQ(local->got, 0u);
    auto direct = mysqltrace::elf::thread_pointer_load(*f, "mt_test_tls_direct");
    ASSERT_TRUE(direct.ok()) << direct.error().message;
    EXPECT_EQ(direct->offset, -0x1d8);
    EXPECT_EQ(direct->got, 0u);
    auto got = mysqltrace::elf::thread_pointer_load(*f, "mt_test_tls_got");
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->offset, 0x10);
    auto slot = f->find("mt_test_tls_slot");
    ASSERT_TRUE(slot.has_value());
    EXPECT_EQ(got->got, slot->vaddr);
    auto bad = mysqltrace::elf::thread_pointer_load(*f, "mt_test_tls_not");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("does not load a pointer at the thread pointer"),
              std::string::npos);
    EXPECT_FALSE(mysqltrace::elf::thread_pointer_load(*f, "no_such_symbol_here").ok());
}

// What the compiler made of a thread_local read leads to the variable of
// this thread: its thread pointer (the %fs base, which points to itself)
// plus the offset, plus what a GOT slot holds at run time.
TEST(ElfFile, ThreadPointerLoadFindsThisThreadsVariable) {
    auto f = self();
    ASSERT_TRUE(f);
    int here = 0;
    mt_test_tls_var = &here;
    ASSERT_EQ(mt_test_tls_read(), &here);
    auto load = mysqltrace::elf::thread_pointer_load(*f, "mt_test_tls_read");
    ASSERT_TRUE(load.ok()) << load.error().message;
    auto sym = f->find("mt_test_tls_read");
    ASSERT_TRUE(sym.has_value());
    const uint64_t bias = reinterpret_cast<uint64_t>(&mt_test_tls_read) - sym->vaddr;
    int64_t offset = load->offset;
    if (load->got != 0) {
        offset += *reinterpret_cast<const int64_t *>(load->got + bias);
    }
    uint64_t tp = 0;
    asm("movq %%fs:0, %0" : "=r"(tp));
    EXPECT_EQ(*reinterpret_cast<void *const *>(tp + static_cast<uint64_t>(offset)), &here);
}

TEST(ElfFile, ErrorsAreClear) {
    auto f = ElfFile::open("/nonexistent/binary");
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.error().message, "cannot open /nonexistent/binary: No such file or directory");
    auto g = ElfFile::open("/etc/hostname");
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().message, "/etc/hostname is not an ELF file");
    auto h = self();
    ASSERT_TRUE(h);
    auto bad = h->vaddr_to_offset(0xffffffff0000);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("0xffffffff0000 is not in a loaded segment"),
              std::string::npos);
}

}  // namespace
