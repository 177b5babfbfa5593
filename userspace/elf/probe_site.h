// SPDX-License-Identifier: GPL-2.0-only
// Where to put a uprobe so that it stays cheap.
//
// On this project's machines a uprobe on an instruction the kernel emulates
// (push reg, 1-byte nop, jmp, jcc, call rel32) costs ~0.6 us per hit, on the
// exact nop5 ~0.35 us, and on anything else (mov, lea, endbr64, ret, ...) the
// kernel single-steps a copy: 21-32 us (shared/FACTS.md section 2).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace mysqltrace::elf {

enum class ProbeCost {
    optimized,       // exact 5-byte nop, optimised by the kernel
    emulated,        // trapped and emulated
    single_stepped,  // trapped and single-stepped: ~40x dearer
    undecodable,     // not a valid instruction
};

const char *probe_cost_name(ProbeCost c);

struct ProbeSite {
    uint64_t offset = 0;  // file offset of the chosen instruction
    ProbeCost cost = ProbeCost::undecodable;
    std::string instruction;  // e.g. "push rbp"
    bool skipped_endbr = false;
};

// Classifies the instruction at the start of `code`.
ProbeCost classify_instruction(std::span<const uint8_t> code, std::string *text = nullptr,
                               size_t *length = nullptr);

// Chooses the entry probe site of a function whose first bytes are `code`,
// found at file offset `offset`: its first instruction, or the one after a
// leading endbr64 (arguments are still in their registers there).
ProbeSite place_entry_probe(std::span<const uint8_t> code, uint64_t offset);

}  // namespace mysqltrace::elf
