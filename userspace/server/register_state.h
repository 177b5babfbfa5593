// SPDX-License-Identifier: GPL-2.0-only
// A symbolic register tracker for straight-line x86-64 code: what each
// register holds in terms of the function's arguments, and what the stores
// write where. server/thd_layout.cpp reads field offsets off the loads and
// stores of small methods with it, server/stage_sites.cpp the stages a
// function enters.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include <capstone/capstone.h>

namespace mysqltrace::server {

// What a register holds while straight-line code is walked:
// base, then for each load "add loads[i] and dereference", then + add.
// E.g. thd_get_error_number(THD *thd) returns *(*(arg0 + 0x62e0) + 8).
struct SymValue {
    static constexpr int8_t kUnknown = -1;  // bases 0..5: the SysV argument registers
    static constexpr int8_t kAbsolute = 6;  // a link-time address (rip-relative)
    static constexpr int8_t kConstant = 7;  // an immediate

    int8_t base = kUnknown;
    uint8_t depth = 0;
    uint8_t size = 8;  // bytes the last load read (4: `mov 0x10(%rdi), %eax`)
    std::array<int64_t, 3> loads{};
    int64_t add = 0;
    uint64_t origin = 0;  // the instruction that produced the root value

    bool known() const { return base != kUnknown; }
    // `b + *off`, with no load.
    bool is_arg(int8_t b, int64_t *off = nullptr) const;
    // `*(b + loads[0])`, `*(*(b + loads[0]) + loads[1])`, ... with nothing added after.
    bool is_load(int8_t b, uint8_t d) const { return base == b && depth == d && add == 0; }
};

struct SymStore {
    SymValue address;  // where it writes
    SymValue value;    // what it writes
    int slot = -1;     // base register of the memory operand (register slot, see reg_slot)
    int64_t disp = 0;
    uint8_t size = 0;
};

// Slot 0-15 of a general-purpose register (any width), or -1.
int reg_slot(x86_reg r);
const char *slot_name(int slot);  // "rax".."r15"

// Calls f(slot) for each general-purpose register `insn` (decoded in
// detail mode) writes; a call writes the caller-saved ones.
template <class F>
void for_each_written(const cs_insn &insn, F f) {
    const cs_x86 &x = insn.detail->x86;
    for (uint8_t i = 0; i < x.op_count; i++) {
        if (x.operands[i].type == X86_OP_REG && (x.operands[i].access & CS_AC_WRITE) != 0) {
            f(reg_slot(x.operands[i].reg));
        }
    }
    for (uint8_t i = 0; i < insn.detail->regs_write_count; i++) {
        f(reg_slot(static_cast<x86_reg>(insn.detail->regs_write[i])));
    }
    if (insn.id == X86_INS_CALL) {
        for (int s : {0, 1, 2, 6, 7, 8, 9, 10, 11}) {  // caller-saved
            f(s);
        }
    }
}

class RegisterState {
  public:
    void clear() {
        regs_.fill(SymValue{});
        n_spills_ = 0;
    }
    void set_arguments();  // rdi, rsi, rdx, rcx, r8, r9 = arguments 0-5
    SymValue get(x86_reg r) const;
    // The address a memory operand designates (unknown with an index register).
    SymValue address_of(const cs_insn &insn, const x86_op_mem &m) const;
    // The store `insn` (decoded in detail mode) performs, if it is a mov to memory.
    std::optional<SymStore> store_of(const cs_insn &insn) const;
    // Applies `insn` to the registers.
    void step(const cs_insn &insn);

  private:
    void set(x86_reg r, SymValue v);
    void spill(const x86_op_mem &m, SymValue v);
    SymValue unspill(const x86_op_mem &m) const;
    std::array<SymValue, 16> regs_{};
    // Registers spilled to the frame (`mov %rax, -0x70(%rbp)`) and read back
    // later, as a large constructor does: by displacement from %rbp.
    std::array<std::pair<int64_t, SymValue>, 8> spills_{};
    size_t n_spills_ = 0;
};

}  // namespace mysqltrace::server
