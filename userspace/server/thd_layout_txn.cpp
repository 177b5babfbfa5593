// SPDX-License-Identifier: GPL-2.0-only
// Where a THD keeps its transaction state, learnt from the code: the
// accessors InnoDB uses (thd_test_options, thd_tx_isolation,
// thd_tx_is_read_only: one load each from the THD), and in trans_begin the
// option bits it tests (`test $mask` on the loaded option_bits: in a
// multi-statement transaction, autocommit off, LOCK TABLES) and the one it
// sets (`or $OPTION_BEGIN` into the field, found by its displacement).
#include <bit>

#include "server/thd_code.h"

namespace mysqltrace::server::thd_code {

namespace {

// The THD offset of the first load from argument 0 in `fn`, or -1.
int64_t first_load(const elf::ElfFile &file, const char *fn) {
    int64_t found = -1;
    walk(file, fn, [&](const cs_insn &insn, const RegisterState &regs) {
        const cs_x86 &x = insn.detail->x86;
        if ((insn.id == X86_INS_MOV || insn.id == X86_INS_MOVZX) && x.op_count == 2 &&
            x.operands[0].type == X86_OP_REG && x.operands[1].type == X86_OP_MEM) {
            int64_t off = -1;
            if (regs.address_of(insn, x.operands[1].mem).is_arg(0, &off)) {
                found = off;
            }
        }
        return found >= 0;
    });
    return found;
}

}  // namespace

void set_transaction_fields(const elf::ElfFile &file, ThdLayout &l) {
    l.option_bits = first_load(file, "thd_test_options");
    l.tx_isolation = first_load(file, "thd_tx_isolation");
    l.tx_read_only = first_load(file, "thd_tx_is_read_only");
    if (l.option_bits < 0) {
        return;
    }
    // By displacement: the THD pointer has been through calls, branches and
    // register restores by then, in the address order the walk follows.
    auto is_field = [&](const x86_op_mem &m) {
        return m.disp == l.option_bits && m.base != X86_REG_RIP && m.base != X86_REG_RSP &&
               m.base != X86_REG_RBP && m.index == X86_REG_INVALID;
    };
    int loaded = -1;  // the register slot last loaded from option_bits
    walk(file, "_Z11trans_beginP3THDj", [&](const cs_insn &insn, const RegisterState &) {
        const cs_x86 &x = insn.detail->x86;
        const cs_x86_op *op = x.operands;
        if (insn.id == X86_INS_MOV && x.op_count == 2 && op[0].type == X86_OP_REG &&
            op[1].type == X86_OP_MEM) {
            loaded = is_field(op[1].mem) ? reg_slot(op[0].reg) : -1;
            return false;
        }
        if (x.op_count != 2 || op[1].type != X86_OP_IMM || op[1].imm <= 0) {
            return false;
        }
        const auto imm = static_cast<uint64_t>(op[1].imm);
        if (insn.id == X86_INS_TEST && op[0].type == X86_OP_REG && loaded >= 0 &&
            reg_slot(op[0].reg) == loaded && l.multi_statement_mask == 0) {
            l.multi_statement_mask = imm;
        }
        if (insn.id == X86_INS_OR && op[0].type == X86_OP_MEM && std::popcount(imm) == 1 &&
            is_field(op[0].mem)) {
            l.option_begin = imm;
        }
        return l.option_begin != 0 && l.multi_statement_mask != 0;
    });
    // The bit trans_begin sets must be one it tests.
    if ((l.multi_statement_mask & l.option_begin) == 0) {
        l.option_begin = 0;
        l.multi_statement_mask = 0;
    }
}

}  // namespace mysqltrace::server::thd_code
