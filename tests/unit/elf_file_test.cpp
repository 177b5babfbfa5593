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
