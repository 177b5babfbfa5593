// SPDX-License-Identifier: GPL-2.0-only
#include "elf/probe_site.h"

#include <algorithm>

#include "elf/disassembler.h"

namespace mysqltrace::elf {

const char *probe_cost_name(ProbeCost c) {
    switch (c) {
        case ProbeCost::optimized:
            return "optimized";
        case ProbeCost::emulated:
            return "emulated";
        case ProbeCost::single_stepped:
            return "single-stepped";
        case ProbeCost::undecodable:
            return "undecodable";
    }
    return "?";
}

namespace {

// The opcodes the x86 uprobe code emulates instead of single-stepping
// (arch/x86/kernel/uprobes.c: branch_setup_xol_ops, push_setup_xol_ops),
// judged on the raw bytes after any REX prefix.
ProbeCost cost_of(const uint8_t *b, size_t len) {
    static const uint8_t nop5[] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
    if (len == 5 && std::equal(b, b + 5, nop5)) {
        return ProbeCost::optimized;
    }
    size_t i = 0;
    bool rex = false;
    if (len > 1 && (b[0] & 0xf0) == 0x40) {
        rex = true;
        i = 1;
    }
    uint8_t op = b[i];
    if (len == 1 && op == 0x90) {
        return ProbeCost::emulated;  // nop
    }
    if (op >= 0x50 && op <= 0x57 && len == i + 1) {
        return ProbeCost::emulated;  // push reg
    }
    if (!rex) {
        if (op == 0xe8 || op == 0xe9 || op == 0xeb) {
            return ProbeCost::emulated;  // call rel32, jmp rel32, jmp rel8
        }
        if (op >= 0x70 && op <= 0x7f) {
            return ProbeCost::emulated;  // jcc rel8
        }
        if (op == 0x0f && len == 6 && b[1] >= 0x80 && b[1] <= 0x8f) {
            return ProbeCost::emulated;  // jcc rel32
        }
    }
    return ProbeCost::single_stepped;
}

}  // namespace

ProbeCost classify_instruction(std::span<const uint8_t> code, std::string *text, size_t *length) {
    Disassembler d;
    const cs_insn *insn = d.decode(code);
    if (length != nullptr) {
        *length = insn != nullptr ? insn->size : 0;
    }
    if (insn == nullptr) {
        return ProbeCost::undecodable;
    }
    if (text != nullptr) {
        *text = Disassembler::text(*insn);
    }
    return cost_of(code.data(), insn->size);
}

ProbeSite place_entry_probe(std::span<const uint8_t> code, uint64_t offset) {
    static const uint8_t endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
    ProbeSite site;
    site.offset = offset;
    if (code.size() >= 4 && std::equal(code.begin(), code.begin() + 4, endbr64)) {
        code = code.subspan(4);
        site.offset += 4;
        site.skipped_endbr = true;
    }
    site.cost = classify_instruction(code, &site.instruction);
    return site;
}

}  // namespace mysqltrace::elf
