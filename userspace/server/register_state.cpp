// SPDX-License-Identifier: GPL-2.0-only
// The symbolic register tracker (server/register_state.h).
#include "server/register_state.h"

namespace mysqltrace::server {

int reg_slot(x86_reg r) {
    switch (r) {
        case X86_REG_AL:
        case X86_REG_AH:
        case X86_REG_AX:
        case X86_REG_EAX:
        case X86_REG_RAX:
            return 0;
        case X86_REG_CL:
        case X86_REG_CH:
        case X86_REG_CX:
        case X86_REG_ECX:
        case X86_REG_RCX:
            return 1;
        case X86_REG_DL:
        case X86_REG_DH:
        case X86_REG_DX:
        case X86_REG_EDX:
        case X86_REG_RDX:
            return 2;
        case X86_REG_BL:
        case X86_REG_BH:
        case X86_REG_BX:
        case X86_REG_EBX:
        case X86_REG_RBX:
            return 3;
        case X86_REG_SPL:
        case X86_REG_SP:
        case X86_REG_ESP:
        case X86_REG_RSP:
            return 4;
        case X86_REG_BPL:
        case X86_REG_BP:
        case X86_REG_EBP:
        case X86_REG_RBP:
            return 5;
        case X86_REG_SIL:
        case X86_REG_SI:
        case X86_REG_ESI:
        case X86_REG_RSI:
            return 6;
        case X86_REG_DIL:
        case X86_REG_DI:
        case X86_REG_EDI:
        case X86_REG_RDI:
            return 7;
        default:
            break;
    }
    // r8-r15 come in four contiguous runs of eight.
    for (x86_reg first : {X86_REG_R8, X86_REG_R8B, X86_REG_R8D, X86_REG_R8W}) {
        if (r >= first && r < first + 8) {
            return 8 + (r - first);
        }
    }
    return -1;
}

const char *slot_name(int slot) {
    static const char *const names[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                          "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
    return slot >= 0 && slot < 16 ? names[slot] : "?";
}

bool SymValue::is_arg(int8_t b, int64_t *off) const {
    if (base != b || depth != 0) {
        return false;
    }
    if (off != nullptr) {
        *off = add;
    }
    return true;
}

namespace {

SymValue constant(int64_t imm, uint64_t at) {
    SymValue v;
    v.base = SymValue::kConstant;
    v.add = imm;
    v.origin = at;
    return v;
}

SymValue load(SymValue v) {
    if (!v.known() || v.base == SymValue::kConstant || v.depth >= v.loads.size()) {
        return {};
    }
    v.loads[v.depth++] = v.add;
    v.add = 0;
    return v;
}

}  // namespace

void RegisterState::set_arguments() {
    clear();
    const x86_reg args[] = {X86_REG_RDI, X86_REG_RSI, X86_REG_RDX,
                            X86_REG_RCX, X86_REG_R8,  X86_REG_R9};
    for (int8_t i = 0; i < 6; i++) {
        SymValue v;
        v.base = i;
        set(args[i], v);
    }
}

SymValue RegisterState::get(x86_reg r) const {
    int s = reg_slot(r);
    return s < 0 ? SymValue{} : regs_[s];
}

void RegisterState::set(x86_reg r, SymValue v) {
    if (int s = reg_slot(r); s >= 0) {
        regs_[s] = v;
        if (s == 5) {
            n_spills_ = 0;  // a new frame pointer: the old slots are not its
        }
    }
}

namespace {

// A slot of the frame: [%rbp + disp] while %rbp is the frame pointer (not a
// tracked value).
bool frame_slot(const x86_op_mem &m) {
    return m.base == X86_REG_RBP && m.index == X86_REG_INVALID && m.segment == X86_REG_INVALID;
}

}  // namespace

void RegisterState::spill(const x86_op_mem &m, SymValue v) {
    if (!frame_slot(m) || get(X86_REG_RBP).known()) {
        return;
    }
    for (size_t i = 0; i < n_spills_; i++) {
        if (spills_[i].first == m.disp) {
            spills_[i].second = v;
            return;
        }
    }
    if (n_spills_ < spills_.size()) {
        spills_[n_spills_++] = {m.disp, v};
    }
}

SymValue RegisterState::unspill(const x86_op_mem &m) const {
    if (!frame_slot(m) || get(X86_REG_RBP).known()) {
        return {};
    }
    for (size_t i = 0; i < n_spills_; i++) {
        if (spills_[i].first == m.disp) {
            return spills_[i].second;
        }
    }
    return {};
}

SymValue RegisterState::address_of(const cs_insn &insn, const x86_op_mem &m) const {
    // fs:/gs: (thread-local) and indexed addresses are not followed.
    if (m.segment != X86_REG_INVALID || m.index != X86_REG_INVALID) {
        return {};
    }
    if (m.base == X86_REG_RIP || m.base == X86_REG_INVALID) {
        SymValue v;
        v.base = SymValue::kAbsolute;
        v.add = m.base == X86_REG_RIP ? static_cast<int64_t>(insn.address + insn.size) + m.disp
                                      : m.disp;
        v.origin = insn.address;
        return v;
    }
    SymValue v = get(static_cast<x86_reg>(m.base));
    if (!v.known() || v.base == SymValue::kConstant) {
        return {};
    }
    v.add += m.disp;
    return v;
}

std::optional<SymStore> RegisterState::store_of(const cs_insn &insn) const {
    const cs_x86 &x = insn.detail->x86;
    if (insn.id != X86_INS_MOV || x.op_count != 2 || x.operands[0].type != X86_OP_MEM) {
        return std::nullopt;
    }
    const cs_x86_op &dst = x.operands[0], &src = x.operands[1];
    SymStore s;
    s.address = address_of(insn, dst.mem);
    s.slot = reg_slot(static_cast<x86_reg>(dst.mem.base));
    s.disp = dst.mem.disp;
    s.size = dst.size;
    if (src.type == X86_OP_REG) {
        s.value = get(src.reg);
    } else if (src.type == X86_OP_IMM) {
        s.value = constant(src.imm, insn.address);
    }
    return s;
}

void RegisterState::step(const cs_insn &insn) {
    const cs_x86 &x = insn.detail->x86;
    const cs_x86_op *op = x.operands;
    const bool to_reg = x.op_count == 2 && op[0].type == X86_OP_REG;
    switch (insn.id) {
        case X86_INS_MOV:
        case X86_INS_MOVABS:
        case X86_INS_MOVZX:
        case X86_INS_MOVSX:
        case X86_INS_MOVSXD:
            if (x.op_count == 2 && op[0].type == X86_OP_MEM) {
                if (insn.id == X86_INS_MOV && op[0].size == 8 && op[1].type == X86_OP_REG) {
                    spill(op[0].mem, get(op[1].reg));
                }
                return;  // a store: no register changes
            }
            if (to_reg) {
                SymValue v;
                // Writes of 8 or 16 bits merge with the old value: unknown.
                // Narrowing a 64-bit value to 32 bits keeps what is tracked
                // (offsets and small integers) intact.
                if (op[0].size >= 4) {
                    if (op[1].type == X86_OP_REG && insn.id == X86_INS_MOV) {
                        v = get(op[1].reg);
                    } else if (op[1].type == X86_OP_IMM) {
                        v = constant(op[1].imm, insn.address);
                    } else if (op[1].type == X86_OP_MEM) {
                        v = load(address_of(insn, op[1].mem));
                        if (v.known()) {
                            v.size = insn.id == X86_INS_MOV ? op[0].size : op[1].size;
                        } else if (insn.id == X86_INS_MOV && op[0].size == 8) {
                            v = unspill(op[1].mem);
                        }
                    }
                }
                set(op[0].reg, v);
                return;
            }
            break;
        case X86_INS_LEA:
            if (to_reg && op[1].type == X86_OP_MEM) {
                set(op[0].reg, address_of(insn, op[1].mem));
                return;
            }
            break;
        case X86_INS_ADD:
        case X86_INS_SUB:
            if (to_reg && op[1].type == X86_OP_IMM && op[0].size == 8) {
                SymValue v = get(op[0].reg);
                if (v.known() && v.base != SymValue::kConstant) {
                    v.add += insn.id == X86_INS_ADD ? op[1].imm : -op[1].imm;
                    set(op[0].reg, v);
                    return;
                }
            }
            break;
        case X86_INS_CALL:
            // The SysV caller-saved registers.
            for (x86_reg r : {X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RSI, X86_REG_RDI,
                              X86_REG_R8, X86_REG_R9, X86_REG_R10, X86_REG_R11}) {
                set(r, {});
            }
            return;
        default:
            break;
    }
    // Anything else: every register it writes is no longer known.
    for (uint8_t i = 0; i < x.op_count; i++) {
        if (op[i].type == X86_OP_REG && (op[i].access & CS_AC_WRITE) != 0) {
            set(op[i].reg, {});
        }
    }
    for (uint8_t i = 0; i < insn.detail->regs_write_count; i++) {
        set(static_cast<x86_reg>(insn.detail->regs_write[i]), {});
    }
}

}  // namespace mysqltrace::server
