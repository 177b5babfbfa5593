// SPDX-License-Identifier: GPL-2.0-only
// One x86-64 instruction at a time, through libcapstone, with the handle and
// the decoded instruction owned here.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <capstone/capstone.h>

namespace mysqltrace::elf {

class Disassembler {
  public:
    // `detail`: decode operands too (capstone's slower mode).
    explicit Disassembler(bool detail = false);
    ~Disassembler();
    Disassembler(const Disassembler &) = delete;
    Disassembler &operator=(const Disassembler &) = delete;

    // Decodes the instruction at the start of `code` (at address `addr`);
    // nullptr when it is not a valid instruction. Valid until the next call.
    const cs_insn *decode(std::span<const uint8_t> code, uint64_t addr = 0);
    // "mnemonic operands" of the last decoded instruction.
    static std::string text(const cs_insn &insn);

  private:
    csh h_ = 0;
    bool ok_ = false;
    cs_insn *insn_ = nullptr;
};

}  // namespace mysqltrace::elf
