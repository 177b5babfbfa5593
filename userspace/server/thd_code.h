// SPDX-License-Identifier: GPL-2.0-only
// What the THD layout learner (thd_layout.cpp, thd_layout_statement.cpp)
// shares: walking a function's code with symbolic registers, and the small
// patterns built on it. Internal to the layout learner.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "elf/disassembler.h"
#include "elf/elf_file.h"
#include "server/register_state.h"
#include "server/thd_layout.h"

namespace mysqltrace::server::thd_code {

constexpr uint64_t kMaxBody = 512;  // bytes walked of a body that has no symbol

// Walks the code of function `name` in address order, calling
// visit(insn, registers before it) until visit returns true or the code ends.
// Arguments are symbolic (arg 0 = rdi, ...). A jmp out of the function, a
// tail call into an unnamed body such as set_error_status's, is followed
// once, up to that body's first ret.
template <class Visit>
bool walk(const elf::ElfFile &file, std::string_view name, Visit visit) {
    auto sym = file.find(name);
    if (!sym || !sym->is_function) {
        return false;
    }
    uint64_t start = sym->vaddr;
    uint64_t end = start + (sym->size != 0 ? sym->size : kMaxBody);
    bool in_body = sym->size == 0;
    auto code = file.read(start, end - start);
    elf::Disassembler d(file.budget(), /*detail=*/true);
    RegisterState regs;
    regs.set_arguments();
    for (uint64_t pc = start; code && pc < end && pc - start < code->size();) {
        const cs_insn *insn = d.decode(std::span(*code).subspan(pc - start), pc);
        if (insn == nullptr) {
            return true;
        }
        if (visit(*insn, regs)) {
            return true;
        }
        regs.step(*insn);
        pc += insn->size;
        const cs_x86 &x = insn->detail->x86;
        if (insn->id == X86_INS_RET && in_body) {
            return true;
        }
        if (insn->id == X86_INS_JMP && !in_body && x.op_count == 1 &&
            x.operands[0].type == X86_OP_IMM) {
            const auto target = static_cast<uint64_t>(x.operands[0].imm);
            if (target < sym->vaddr || target >= sym->vaddr + sym->size) {
                in_body = true;
                start = pc = target;
                end = target + kMaxBody;
                code = file.read(start, kMaxBody);
            }
        }
    }
    return true;
}

// The offset from argument 0 of the first store of `fn` whose value matches `want`.
template <class Want>
int64_t first_store(const elf::ElfFile &file, std::string_view fn, Want want) {
    int64_t found = -1;
    walk(file, fn, [&](const cs_insn &insn, const RegisterState &regs) {
        auto s = regs.store_of(insn);
        int64_t off = 0;
        if (s && s->address.is_arg(0, &off) && want(s->value)) {
            found = off;
        }
        return found >= 0;
    });
    return found;
}

// What an accessor returns in rax, symbolically.
std::optional<SymValue> returned(const elf::ElfFile &file, std::string_view name);
// `v` is argument `arg` itself.
bool is_argument(const SymValue &v, int8_t arg);
// The first function whose mangled name begins with `prefix` ("" if none).
std::string first_with_prefix(const elf::ElfFile &file, std::string_view prefix);
// The field an inc_*(n) method adds n to, or -1.
int64_t accumulated_field(const elf::ElfFile &file, std::string_view fn);

// thd_layout_statement.cpp: MySQL's query id and prepared statement text,
// and where a statement's start, lock time and command are.
int64_t next_query_id_field(const elf::ElfFile &file, const std::string &fn);
int64_t last_prepared_statement(const elf::ElfFile &file);
void set_prepared_text_fields(const elf::ElfFile &file, ThdLayout &l);
void set_statement_clock_fields(const elf::ElfFile &file, bool mysql8, ThdLayout &l);
// thd_layout_memory.cpp: the connection's memory counters.
void set_memory_fields(const elf::ElfFile &file, bool mysql8, ThdLayout &l);
// thd_layout_txn.cpp: the transaction state.
void set_transaction_fields(const elf::ElfFile &file, ThdLayout &l);

}  // namespace mysqltrace::server::thd_code
