// SPDX-License-Identifier: GPL-2.0-only
#include "elf/disassembler.h"

namespace mysqltrace::elf {

Disassembler::Disassembler(AnalysisBudget *budget, bool detail) : Disassembler(detail) {
    budget_ = budget;
}

Disassembler::Disassembler(bool detail) {
    ok_ = cs_open(CS_ARCH_X86, CS_MODE_64, &h_) == CS_ERR_OK;
    if (ok_ && detail) {
        cs_option(h_, CS_OPT_DETAIL, CS_OPT_ON);
    }
}

Disassembler::~Disassembler() {
    if (insn_ != nullptr) {
        cs_free(insn_, 1);
    }
    if (ok_) {
        cs_close(&h_);
    }
}

const cs_insn *Disassembler::decode(std::span<const uint8_t> code, uint64_t addr) {
    if (insn_ != nullptr) {
        cs_free(insn_, 1);
        insn_ = nullptr;
    }
    if (budget_ != nullptr && (!budget_->charge(Limit::instructions) ||
                               !budget_->check(Limit::function_instructions, ++decoded_))) {
        return nullptr;
    }
    if (!ok_ || code.empty() || cs_disasm(h_, code.data(), code.size(), addr, 1, &insn_) != 1) {
        return nullptr;
    }
    return insn_;
}

std::string Disassembler::text(const cs_insn &insn) {
    std::string s = insn.mnemonic;
    if (insn.op_str[0] != '\0') {
        s += ' ';
        s += insn.op_str;
    }
    return s;
}

}  // namespace mysqltrace::elf
