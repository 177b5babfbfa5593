// SPDX-License-Identifier: GPL-2.0-only
// One x86-64 instruction at a time, through libcapstone, with the handle and
// the decoded instruction owned here. Given a budget (the ElfFile's whose
// code it decodes), each decode is charged to it: once the budget is
// exhausted, or this disassembler has decoded more instructions than one
// function may take, decode() returns nullptr as at the end of the code.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <capstone/capstone.h>

#include "elf/analysis_budget.h"

namespace mysqltrace::elf {

class Disassembler {
  public:
    // `detail`: decode operands too (capstone's slower mode).
    explicit Disassembler(bool detail = false);
    explicit Disassembler(AnalysisBudget *budget, bool detail = false);
    ~Disassembler();
    Disassembler(const Disassembler &) = delete;
    Disassembler &operator=(const Disassembler &) = delete;

    // Decodes the instruction at the start of `code` (at address `addr`);
    // nullptr when it is not a valid instruction. Valid until the next call.
    const cs_insn *decode(std::span<const uint8_t> code, uint64_t addr = 0);
    // "mnemonic operands" of the last decoded instruction.
    static std::string text(const cs_insn &insn);

  private:
    AnalysisBudget *budget_ = nullptr;
    uint64_t decoded_ = 0;
    csh h_ = 0;
    bool ok_ = false;
    cs_insn *insn_ = nullptr;
};

}  // namespace mysqltrace::elf
