// SPDX-License-Identifier: GPL-2.0-only
// Where a THD counts the memory its connection uses, learnt from the code
// (bpf/server_onepass.bpf.h and end_statement() copy it with the THD's
// other fields at a statement's end, at no extra probe).
//
// MariaDB: THD::status_var.local_memory_used, and next to it (before it)
// max_local_memory_used, its high-water mark. Both are kept by the static
// callback mysqld_main hands to set_malloc_size_cb(): `thd->...local_memory_used
// += size` (a load, an add of argument 0, a store back), then the mark is
// raised (`...max = ...local`). Neither is reset per statement.
//
// MySQL: the THD's Thd_mem_cnt (thd_mem_cnt_alloc(thd, n) is
// `lea X(%rdi),%rdi; jmp Thd_mem_cnt::alloc_cnt`) holds mem_counter and
// max_conn_mem; Thd_mem_cnt::reset(), called as each command begins, sets
// max_conn_mem = mem_counter (a load and a store of the same value). The
// counter moves only while performance_schema's memory instrumentation runs
// (it calls thd_mem_cnt_alloc/free): 0 on a server started without it.
#include <array>
#include <optional>

#include "server/thd_code.h"

namespace mysqltrace::server::thd_code {

namespace {

constexpr size_t kMaxInsns = 2048;  // of mysqld_main, walked to its set_malloc_size_cb call

// Calls visit(insn, registers before it) on straight-line code from `start`,
// at most `max_bytes` bytes, until it returns true, a ret, or bad code.
template <class Visit>
void walk_at(const elf::ElfFile &file, uint64_t start, uint64_t max_bytes, Visit visit) {
    auto code = file.read(start, max_bytes);
    if (!code) {
        return;
    }
    elf::Disassembler d(file.budget(), /*detail=*/true);
    RegisterState regs;
    regs.set_arguments();
    for (uint64_t pc = start; pc - start < code->size();) {
        const cs_insn *insn = d.decode(std::span(*code).subspan(pc - start), pc);
        if (insn == nullptr || visit(*insn, regs) || insn->id == X86_INS_RET) {
            return;
        }
        regs.step(*insn);
        pc += insn->size;
    }
}

bool is_call_to(const cs_insn &insn, uint64_t target) {
    const cs_x86 &x = insn.detail->x86;
    return (insn.id == X86_INS_CALL || insn.id == X86_INS_JMP) && x.op_count == 1 &&
           x.operands[0].type == X86_OP_IMM && static_cast<uint64_t>(x.operands[0].imm) == target;
}

// The function mysqld_main passes to set_malloc_size_cb (not the reset
// with 0 at its end), or nullopt.
std::optional<uint64_t> malloc_size_callback(const elf::ElfFile &file) {
    auto cb = file.find("set_malloc_size_cb");
    if (!cb) {
        return std::nullopt;
    }
    std::optional<uint64_t> found;
    for (const char *main_fn : {"_Z11mysqld_mainiPPc", "mysqld_main"}) {
        auto sym = file.find(main_fn);
        if (!sym || !sym->is_function || found) {
            continue;
        }
        size_t n = 0;
        walk_at(file, sym->vaddr, sym->size, [&](const cs_insn &insn, const RegisterState &regs) {
            if (++n > kMaxInsns) {
                return true;
            }
            if (!is_call_to(insn, cb->vaddr)) {
                return false;
            }
            const SymValue f = regs.get(X86_REG_RDI);
            if (f.base == SymValue::kAbsolute && f.depth == 0 && f.add > 0) {
                found = static_cast<uint64_t>(f.add);
                return true;
            }
            return false;
        });
    }
    return found;
}

// In the callback: the field `+= size` is done to, then the one it is
// copied into (the high-water mark). Registers are followed by what they
// were loaded from (a displacement) and whether argument 0 was added.
void mariadb_fields(const elf::ElfFile &file, uint64_t fn, ThdLayout &l) {
    struct Reg {
        int64_t from = -1;  // displacement it was loaded from, -1: not a field
        bool plus_size = false;
    };
    std::array<Reg, 16> regs_from{};
    int64_t used = -1;
    walk_at(file, fn, kMaxBody, [&](const cs_insn &insn, const RegisterState &regs) {
        const cs_x86 &x = insn.detail->x86;
        const cs_x86_op *op = x.operands;
        if (insn.id == X86_INS_MOV && x.op_count == 2 && op[0].type == X86_OP_REG &&
            op[0].size == 8 && op[1].type == X86_OP_MEM && op[1].mem.base != X86_REG_RIP &&
            op[1].mem.base != X86_REG_RSP && op[1].mem.base != X86_REG_RBP &&
            op[1].mem.base != X86_REG_INVALID && op[1].mem.index == X86_REG_INVALID &&
            reg_slot(op[0].reg) >= 0) {
            regs_from[reg_slot(op[0].reg)] = Reg{op[1].mem.disp, false};
            return false;
        }
        if (insn.id == X86_INS_ADD && x.op_count == 2 && op[0].type == X86_OP_REG &&
            op[1].type == X86_OP_REG && reg_slot(op[0].reg) >= 0 &&
            is_argument(regs.get(op[1].reg), 0)) {
            regs_from[reg_slot(op[0].reg)].plus_size = true;
            return false;
        }
        if (insn.id == X86_INS_MOV && x.op_count == 2 && op[0].type == X86_OP_MEM &&
            op[0].size == 8 && op[1].type == X86_OP_REG && reg_slot(op[1].reg) >= 0 &&
            op[0].mem.index == X86_REG_INVALID) {
            const Reg r = regs_from[reg_slot(op[1].reg)];
            const int64_t at = op[0].mem.disp;
            if (used < 0 && r.plus_size && r.from == at) {
                used = at;
            } else if (used >= 0 && !r.plus_size && r.from == used && at != used) {
                l.mem_used = used;
                l.mem_max = at;
                return true;
            }
            return false;
        }
        // Anything else that writes a register forgets what it held.
        for (uint8_t i = 0; i < x.op_count; i++) {
            if (op[i].type == X86_OP_REG && (op[i].access & CS_AC_WRITE) != 0 &&
                reg_slot(op[i].reg) >= 0) {
                regs_from[reg_slot(op[i].reg)] = Reg{};
            }
        }
        return false;
    });
}

// thd_mem_cnt_alloc's THD offset of the counter object, and in
// Thd_mem_cnt::reset() the `max_conn_mem = mem_counter` copy.
void mysql_fields(const elf::ElfFile &file, ThdLayout &l) {
    auto alloc = file.find("_ZN11Thd_mem_cnt9alloc_cntEm");
    if (!alloc) {
        return;
    }
    int64_t cnt = -1;
    walk(file, "_Z17thd_mem_cnt_allocP3THDm", [&](const cs_insn &insn, const RegisterState &regs) {
        if (is_call_to(insn, alloc->vaddr)) {
            regs.get(X86_REG_RDI).is_arg(0, &cnt);
            return true;
        }
        return false;
    });
    if (cnt < 0) {
        return;
    }
    int64_t counter = -1, max = -1;
    walk(file, "_ZN11Thd_mem_cnt5resetEv", [&](const cs_insn &insn, const RegisterState &regs) {
        int64_t at = -1;
        if (auto s = regs.store_of(insn); s && s->size == 8 && s->address.is_arg(0, &at) &&
                                          s->value.is_load(0, 1) && s->value.loads[0] != at) {
            counter = s->value.loads[0];
            max = at;
            return true;
        }
        return false;
    });
    if (counter < 0) {
        return;
    }
    l.mem_used = cnt + counter;
    l.mem_max = cnt + max;
    l.mem_max_per_command = true;
}

}  // namespace

void set_memory_fields(const elf::ElfFile &file, bool mysql8, ThdLayout &l) {
    if (mysql8) {
        mysql_fields(file, l);
        return;
    }
    if (auto fn = malloc_size_callback(file)) {
        mariadb_fields(file, *fn, l);
    }
}

}  // namespace mysqltrace::server::thd_code
