// SPDX-License-Identifier: GPL-2.0-only
#include "elf/probe_site.h"

#include <algorithm>

#include <capstone/capstone.h>

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

class Disassembler {
  public:
    Disassembler() { ok_ = cs_open(CS_ARCH_X86, CS_MODE_64, &h_) == CS_ERR_OK; }
    ~Disassembler() {
        if (ok_) {
            cs_close(&h_);
        }
    }
    // Decodes one instruction; returns its length, 0 when invalid.
    size_t one(std::span<const uint8_t> code, std::string *text) {
        if (!ok_ || code.empty()) {
            return 0;
        }
        cs_insn *insn = nullptr;
        size_t n = cs_disasm(h_, code.data(), code.size(), 0, 1, &insn);
        if (n == 0) {
            return 0;
        }
        size_t len = insn[0].size;
        if (text != nullptr) {
            *text = insn[0].mnemonic;
            if (insn[0].op_str[0] != '\0') {
                *text += ' ';
                *text += insn[0].op_str;
            }
        }
        cs_free(insn, n);
        return len;
    }

  private:
    csh h_ = 0;
    bool ok_ = false;
};

}  // namespace

ProbeCost classify_instruction(std::span<const uint8_t> code, std::string *text, size_t *length) {
    Disassembler d;
    size_t len = d.one(code, text);
    if (length != nullptr) {
        *length = len;
    }
    if (len == 0) {
        return ProbeCost::undecodable;
    }
    return cost_of(code.data(), len);
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
