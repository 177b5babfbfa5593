// SPDX-License-Identifier: GPL-2.0-only
// The THD fields of a whole statement, learnt from the code: MySQL's query id
// and prepared statement text, and where the one-probe path finds a
// statement's start, lock time and command (thd_code.h's walker).
#include <array>
#include <cerrno>
#include <string>

#include "server/thd_code.h"

namespace mysqltrace::server::thd_code {

// MySQL has no accessor for THD::query_id: dispatch_command gives each
// command its id with an inlined THD::set_query_id(next_query_id()), a
// `lock xadd` of 1 into atomic_global_query_id whose result (plus one) is
// stored into the THD. The THD offset of the first such store, or -1.
int64_t next_query_id_field(const elf::ElfFile &file, const std::string &fn) {
    auto global = file.find("atomic_global_query_id");
    if (!global || fn.empty()) {
        return -1;
    }
    int64_t found = -1;
    int slot = -1;  // the register holding the new id
    walk(file, fn, [&](const cs_insn &insn, const RegisterState &regs) {
        const cs_x86 &x = insn.detail->x86;
        const cs_x86_op *op = x.operands;
        if (insn.id == X86_INS_XADD && x.op_count == 2 && op[0].type == X86_OP_MEM &&
            op[1].type == X86_OP_REG && op[1].size == 8) {
            const SymValue a = regs.address_of(insn, op[0].mem);
            if (a.base == SymValue::kAbsolute && a.depth == 0 &&
                a.add == static_cast<int64_t>(global->vaddr)) {
                slot = reg_slot(op[1].reg);
            }
            return false;
        }
        if (slot < 0) {
            return false;
        }
        int64_t off = -1;
        if (auto s = regs.store_of(insn);
            s && s->size == 8 && op[1].type == X86_OP_REG && reg_slot(op[1].reg) == slot) {
            if (s->address.is_arg(0, &off)) {
                found = off;
            }
            return found >= 0;  // else a spill: the id is still in the register
        }
        // `add $1, %reg` makes the id; any other write loses it.
        if (x.op_count >= 1 && op[0].type == X86_OP_REG && reg_slot(op[0].reg) == slot &&
            (op[0].access & CS_AC_WRITE) != 0 &&
            !(insn.id == X86_INS_ADD && x.op_count == 2 && op[1].type == X86_OP_IMM)) {
            slot = -1;
        }
        return false;
    });
    return found;
}

// MySQL: where a THD keeps the prepared statement it last looked up by id
// (COM_STMT_EXECUTE's). Prepared_statement_map::find(id) first compares id
// with its m_last_found_statement's (`mov X(%this),%r; cmp %id,Y(%r)`), and
// mysql_stmt_precheck(thd, ...) calls it on thd->stmt_map (`lea Z(%thd),%rdi`):
// Z + X, or -1.
int64_t last_prepared_statement(const elf::ElfFile &file) {
    constexpr const char *kFind = "_ZN22Prepared_statement_map4findEm";
    auto find = file.find(kFind);
    if (!find) {
        return -1;
    }
    int64_t last_found = -1;
    walk(file, kFind, [&](const cs_insn &insn, const RegisterState &regs) {
        const cs_x86 &x = insn.detail->x86;
        const cs_x86_op *op = x.operands;
        if (insn.id != X86_INS_CMP || x.op_count != 2 || op[0].type != X86_OP_MEM ||
            op[1].type != X86_OP_REG) {
            return false;
        }
        const SymValue a = regs.address_of(insn, op[0].mem);
        if (is_argument(regs.get(op[1].reg), 1) && a.base == 0 && a.depth == 1) {
            last_found = a.loads[0];
        }
        return true;
    });
    int64_t map = -1;
    walk(file, first_with_prefix(file, "_Z19mysql_stmt_precheckP3THD"),
         [&](const cs_insn &insn, const RegisterState &regs) {
             const cs_x86 &x = insn.detail->x86;
             if (insn.id == X86_INS_CALL && x.op_count == 1 && x.operands[0].type == X86_OP_IMM &&
                 static_cast<uint64_t>(x.operands[0].imm) == find->vaddr) {
                 regs.get(X86_REG_RDI).is_arg(0, &map);
                 return true;
             }
             return false;
         });
    return last_found >= 0 && map >= 0 ? map + last_found : -1;
}

// Prepared_statement::get_display_query_string(const char **, size_t *)
// tests m_display_query_string.length, then stores that string's {str,
// length} through its two arguments, or m_query_string's.
void set_prepared_text_fields(const elf::ElfFile &file, ThdLayout &l) {
    int64_t tested = -1;
    std::vector<int64_t> strs, lens;
    walk(file, "_ZNK18Prepared_statement24get_display_query_stringEPPKcPm",
         [&](const cs_insn &insn, const RegisterState &regs) {
             const cs_x86 &x = insn.detail->x86;
             int64_t at = -1;
             if (tested < 0 && insn.id == X86_INS_MOV && x.op_count == 2 &&
                 x.operands[0].type == X86_OP_REG && x.operands[1].type == X86_OP_MEM &&
                 regs.address_of(insn, x.operands[1].mem).is_arg(0, &at)) {
                 tested = at;
             }
             if (auto s = regs.store_of(insn); s && s->size == 8 && s->value.is_load(0, 1)) {
                 if (s->address.is_arg(1, &at) && at == 0) {
                     strs.push_back(s->value.loads[0]);
                 } else if (s->address.is_arg(2, &at) && at == 0) {
                     lens.push_back(s->value.loads[0]);
                 }
             }
             return false;
         });
    if (strs.size() != 2 || lens.size() != 2 || lens[0] != strs[0] + 8 || lens[1] != strs[1] + 8) {
        return;
    }
    const size_t display = lens[0] == tested ? 0 : lens[1] == tested ? 1 : 2;
    if (display < 2) {
        l.ps_display_query_string = strs[display];
        l.ps_query_string = strs[1 - display];
    }
}

// `add %reg, X(arg0)` with %reg = arg 1 (MariaDB's thd_storage_lock_wait:
// thd->utime_after_lock += value): X, or -1.
int64_t added_in_place(const elf::ElfFile &file, std::string_view fn) {
    int64_t found = -1;
    walk(file, fn, [&](const cs_insn &insn, const RegisterState &regs) {
        const cs_x86 &x = insn.detail->x86;
        const cs_x86_op *op = x.operands;
        int64_t off = -1;
        if (insn.id == X86_INS_ADD && x.op_count == 2 && op[0].type == X86_OP_MEM &&
            op[1].type == X86_OP_REG && op[1].size == 8 && is_argument(regs.get(op[1].reg), 1) &&
            regs.address_of(insn, op[0].mem).is_arg(0, &off)) {
            found = off;
        }
        return found >= 0 || insn.id == X86_INS_RET;
    });
    return found;
}

// The first `sub %src, %dst` of `fn` where %dst was loaded from field
// `minuend` of an object and %src from another field of the same object
// (same base register): that field's offset, or -1. MariaDB's
// LOGGER::slow_log_print(THD*, ...) computes the slow log's Lock_time as
// thd->utime_after_lock - thd->start_utime. The base register is matched
// as loaded, not as an argument: the function's early return pops it before
// the code that follows in address order.
int64_t subtracted_field(const elf::ElfFile &file, std::string_view fn, int64_t minuend) {
    struct Load {
        int base = -1;
        int64_t disp = 0;
    };
    std::array<Load, 16> loaded{};
    int64_t found = -1;
    walk(file, fn, [&](const cs_insn &insn, const RegisterState &) {
        const cs_x86 &x = insn.detail->x86;
        const cs_x86_op *op = x.operands;
        const int dst = x.op_count >= 1 && op[0].type == X86_OP_REG ? reg_slot(op[0].reg) : -1;
        if (insn.id == X86_INS_SUB && x.op_count == 2 && dst >= 0 && op[1].type == X86_OP_REG &&
            op[0].size == 8) {
            const int src = reg_slot(op[1].reg);
            const Load a = loaded[dst], b = src >= 0 ? loaded[src] : Load{};
            if (a.base >= 0 && a.disp == minuend && b.base == a.base && b.disp != minuend) {
                found = b.disp;
                return true;
            }
        }
        if (dst < 0) {
            return false;
        }
        loaded[dst] = {};
        if (insn.id == X86_INS_MOV && x.op_count == 2 && op[0].size == 8 &&
            op[1].type == X86_OP_MEM && op[1].mem.index == X86_REG_INVALID &&
            op[1].mem.segment == X86_REG_INVALID && reg_slot(op[1].mem.base) >= 0) {
            loaded[dst] = {reg_slot(op[1].mem.base), op[1].mem.disp};
        }
        return false;
    });
    return found;
}

// `add X(arg0), %reg`: the first THD field MySQL's
// THD::update_slow_query_status() adds to another (start_utime +
// long_query_time, compared with the wall clock's microseconds), or -1.
int64_t added_field(const elf::ElfFile &file, std::string_view fn) {
    int64_t found = -1;
    walk(file, fn, [&](const cs_insn &insn, const RegisterState &regs) {
        const cs_x86 &x = insn.detail->x86;
        const cs_x86_op *op = x.operands;
        int64_t off = -1;
        if (insn.id == X86_INS_ADD && x.op_count == 2 && op[0].type == X86_OP_REG &&
            op[0].size == 8 && op[1].type == X86_OP_MEM &&
            regs.address_of(insn, op[1].mem).is_arg(0, &off) && off > 0) {
            SymValue dst = regs.get(op[0].reg);
            if (dst.is_load(0, 1)) {
                found = off;
            }
        }
        return found >= 0;
    });
    return found;
}

// Where a statement's start, lock time and command are (one-probe
// statements): see ThdLayout. MariaDB: thd_current_command(),
// thd_storage_lock_wait() (utime_after_lock) and LOGGER::slow_log_print()
// (start_utime, subtracted from it; microsecond_interval_timer(): the
// monotonic clock). MySQL: THD::set_command(), THD::inc_lock_usec()
// (m_lock_usec, a duration) and THD::update_slow_query_status()
// (start_utime, from my_micro_time(): the wall clock).
void set_statement_clock_fields(const elf::ElfFile &file, bool mysql8, ThdLayout &l) {
    if (auto v = returned(file, "thd_current_command"); v && v->is_load(0, 1)) {
        l.command = v->loads[0];
    } else {
        l.command = first_store(file, "_ZN3THD11set_commandE19enum_server_command",
                                [](const SymValue &v) { return is_argument(v, 1); });
    }
    if (const int64_t usec = accumulated_field(file, "_ZN3THD13inc_lock_usecEy"); usec >= 0) {
        const int64_t start = added_field(file, "_ZN3THD24update_slow_query_statusEv");
        if (start >= 0 && start != usec) {
            l.lock_time = usec;
            l.lock_is_duration = true;
            l.start_utime = start;
            l.start_clock = ThdLayout::Clock::realtime;
        }
        return;
    }
    (void)mysql8;
    const int64_t after_lock = added_in_place(file, "thd_storage_lock_wait");
    if (after_lock < 0) {
        return;
    }
    const int64_t start =
        subtracted_field(file, "_ZN6LOGGER14slow_log_printEP3THDPKcmy", after_lock);
    if (start >= 0) {
        l.lock_time = after_lock;
        l.start_utime = start;
        l.start_clock = ThdLayout::Clock::monotonic;
    }
}

}  // namespace mysqltrace::server::thd_code
