// SPDX-License-Identifier: GPL-2.0-only
// Symbols and bytes of an ELF file on disk (libelf). Servers such as
// Debian's mariadbd are stripped but export tens of thousands of dynamic
// symbols: both .symtab and .dynsym are read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "elf/analysis_budget.h"
#include "util/result.h"

struct Elf;

namespace mysqltrace::elf {

struct Symbol {
    std::string name;  // mangled, as in the file
    uint64_t vaddr = 0;
    uint64_t size = 0;
    bool is_function = false;
};

class ElfFile {
  public:
    // Everything read from the file and decoded from its code is charged to
    // a budget with `limits` (elf/analysis_budget.h); a file larger than
    // they allow, or with more symbols, is refused here.
    static Result<std::unique_ptr<ElfFile>> open(
        const std::string &path, const AnalysisLimits &limits = default_analysis_limits());
    // An ELF image in memory, e.g. a mutated copy of a server binary (the
    // binary-analysis fuzzer). `image` must outlive the ElfFile and stay
    // writable: libelf may convert it in place.
    static Result<std::unique_ptr<ElfFile>> open_memory(
        const std::string &name, std::span<uint8_t> image,
        const AnalysisLimits &limits = default_analysis_limits());
    ~ElfFile();
    ElfFile(const ElfFile &) = delete;
    ElfFile &operator=(const ElfFile &) = delete;

    const std::string &path() const { return path_; }
    const std::vector<Symbol> &symbols() const { return symbols_; }
    std::optional<Symbol> find(std::string_view name) const;

    // The file offset a virtual address is loaded from (what a uprobe needs).
    Result<uint64_t> vaddr_to_offset(uint64_t vaddr) const;
    // Up to `n` bytes of the file at virtual address `vaddr` (fewer where
    // the file ends), charged to the budget: an error once it is exhausted.
    Result<std::vector<uint8_t>> read(uint64_t vaddr, size_t n) const;

    // What analysing this file may still cost; the analyses of a const
    // ElfFile charge it too.
    AnalysisBudget *budget() const { return budget_.get(); }

  private:
    struct Segment {
        uint64_t vaddr, offset, filesz;
    };
    ElfFile(const std::string &path, const AnalysisLimits &limits)
        : path_(path), budget_(std::make_unique<AnalysisBudget>(path, limits)) {}
    // Reads the segments and symbol tables of an opened image.
    static Result<std::unique_ptr<ElfFile>> load(std::unique_ptr<ElfFile> f, Elf *e);

    std::string path_;
    int fd_ = -1;
    std::span<const uint8_t> image_;  // open_memory: the bytes, instead of fd_
    uint64_t file_size_ = 0;
    std::unique_ptr<AnalysisBudget> budget_;
    std::vector<Symbol> symbols_;
    std::vector<Segment> segments_;
};

// The displacement of the field an accessor such as `thd_get_thread_id(THD*)`
// loads: its first instruction must be `mov reg, qword ptr [rdi + disp]`.
// This is how struct offsets of a build are learnt without debug info.
Result<int64_t> accessor_field_offset(const ElfFile &file, std::string_view symbol);

// Where a function that returns a thread_local pointer finds it, as an
// offset from the thread pointer (%fs base): MariaDB's `_current_thd()`
// loads it at a constant offset (`mov rax, fs:[0]; mov rax, [rax + disp]`,
// or in one instruction `mov rax, fs:[disp]`),
// MySQL's `thd_get_current_thd()` adds an offset the dynamic loader wrote
// into a GOT slot (`mov rax, fs:[0]; add rax, [rip + slot]; mov rax,
// [rax + disp]`): then `got` is that slot's address in the file, whose
// run-time value is to be added to `offset`.
struct ThreadPointerLoad {
    int64_t offset = 0;
    uint64_t got = 0;  // 0: none
};
Result<ThreadPointerLoad> thread_pointer_load(const ElfFile &file, std::string_view symbol);

}  // namespace mysqltrace::elf
