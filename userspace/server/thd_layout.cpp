// SPDX-License-Identifier: GPL-2.0-only
#include "server/thd_layout.h"

#include <cerrno>
#include <span>
#include <string>
#include <vector>

#include "elf/disassembler.h"

namespace mysqltrace::server {

// ---- RegisterState ----

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

// ---- derive_thd_layout ----

namespace {

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
    elf::Disassembler d(/*detail=*/true);
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

// What an accessor returns in rax, symbolically.
std::optional<SymValue> returned(const elf::ElfFile &file, std::string_view name) {
    std::optional<SymValue> v;
    walk(file, name, [&](const cs_insn &insn, const RegisterState &regs) {
        if (insn.id != X86_INS_RET) {
            return false;
        }
        v = regs.get(X86_REG_RAX);
        return true;
    });
    return v;
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

bool is_argument(const SymValue &v, int8_t arg) {
    int64_t off = -1;
    return v.is_arg(arg, &off) && off == 0;
}

// The first function whose mangled name begins with `prefix` ("" if none):
// later arguments of a signature may differ between servers.
std::string first_with_prefix(const elf::ElfFile &file, std::string_view prefix) {
    for (const auto &s : file.symbols()) {
        if (s.is_function && s.name.starts_with(prefix)) {
            return s.name;
        }
    }
    return {};
}

// `cmp $imm, Y(*(arg0 + X))` as the first comparison: X is the THD's
// m_stmt_da, Y the area's m_status and imm DA_ERROR.
void error_status_check(const elf::ElfFile &file, const std::string &fn, ThdLayout &l) {
    walk(file, fn, [&](const cs_insn &insn, const RegisterState &regs) {
        const cs_x86 &x = insn.detail->x86;
        if (insn.id != X86_INS_CMP || x.op_count != 2 || x.operands[0].type != X86_OP_MEM ||
            x.operands[1].type != X86_OP_IMM) {
            return false;
        }
        SymValue a = regs.address_of(insn, x.operands[0].mem);
        if (a.base == 0 && a.depth == 1 && (l.stmt_da < 0 || a.loads[0] == l.stmt_da)) {
            l.stmt_da = a.loads[0];
            l.da_status = a.add;
            l.da_error_status = x.operands[1].imm;
        }
        return true;
    });
}

// THD::set_db(const LEX_CSTRING &new_db) stores new_db.length right after
// m_db.str, which it also stores (a copy of the name): m_db's offset, or -1.
int64_t set_db_field(const elf::ElfFile &file) {
    std::vector<int64_t> stores;
    int64_t length_at = -1;
    walk(file, "_ZN3THD6set_dbERK17MYSQL_LEX_CSTRING",
         [&](const cs_insn &insn, const RegisterState &regs) {
             int64_t off = -1;
             if (auto s = regs.store_of(insn); s && s->size == 8 && s->address.is_arg(0, &off)) {
                 stores.push_back(off);
                 if (length_at < 0 && s->value.is_load(1, 1) && s->value.loads[0] == 8) {
                     length_at = off;
                 }
             }
             return false;
         });
    for (int64_t off : stores) {
        if (length_at >= 8 && off == length_at - 8) {
            return off;
        }
    }
    return -1;
}

// `add X(arg0), %reg` with %reg = arg 1, then `mov %reg, X(arg0)`: the
// field an inc_*(n) method adds n to, or -1.
int64_t accumulated_field(const elf::ElfFile &file, std::string_view fn) {
    int64_t found = -1, pending = -1;
    int pending_slot = -1;
    walk(file, fn, [&](const cs_insn &insn, const RegisterState &regs) {
        const cs_x86 &x = insn.detail->x86;
        const cs_x86_op *op = x.operands;
        int64_t off = -1;
        if (insn.id == X86_INS_ADD && x.op_count == 2 && op[0].type == X86_OP_REG &&
            op[0].size == 8 && op[1].type == X86_OP_MEM && is_argument(regs.get(op[0].reg), 1) &&
            regs.address_of(insn, op[1].mem).is_arg(0, &off)) {
            pending = off;
            pending_slot = reg_slot(op[0].reg);
            return false;
        }
        if (auto s = regs.store_of(insn);
            s && pending >= 0 && s->size == 8 && s->address.is_arg(0, &off) && off == pending &&
            x.operands[1].type == X86_OP_REG && reg_slot(x.operands[1].reg) == pending_slot) {
            found = off;
            return true;
        }
        return insn.id == X86_INS_RET;
    });
    return found;
}

// The values `fn` stores into the area's m_status (at `status`), as a bit
// per value: `movl $imm`, or MariaDB's branch-free choice of two
// (`sbb %r,%r; and $a,%r; add $b,%r` = b or a + b, as a 32-bit value).
uint32_t stored_statuses(const elf::ElfFile &file, std::string_view fn, int64_t status) {
    uint32_t bits = 0;
    std::array<std::vector<uint32_t>, 16> sets;  // registers with a few known values
    walk(file, fn, [&](const cs_insn &insn, const RegisterState &regs) {
        const cs_x86 &x = insn.detail->x86;
        const cs_x86_op *op = x.operands;
        auto mark = [&](uint32_t v) {
            if (v < 32) {
                bits |= 1u << v;
            }
        };
        int64_t off = -1;
        if (auto s = regs.store_of(insn); s && s->size == 4 && s->address.is_arg(0, &off)) {
            if (off == status && op[1].type == X86_OP_IMM) {
                mark(static_cast<uint32_t>(op[1].imm));
            } else if (off == status && op[1].type == X86_OP_REG) {
                for (uint32_t v : sets[reg_slot(op[1].reg)]) {
                    mark(v);
                }
            }
            return false;
        }
        const int r = x.op_count >= 1 && op[0].type == X86_OP_REG ? reg_slot(op[0].reg) : -1;
        if (r < 0) {
            return false;
        }
        if (insn.id == X86_INS_SBB && x.op_count == 2 && op[1].type == X86_OP_REG &&
            reg_slot(op[1].reg) == r) {
            sets[r] = {0u, ~0u};
        } else if ((insn.id == X86_INS_AND || insn.id == X86_INS_ADD) && x.op_count == 2 &&
                   op[1].type == X86_OP_IMM && !sets[r].empty()) {
            for (uint32_t &v : sets[r]) {
                const auto imm = static_cast<uint32_t>(op[1].imm);
                v = insn.id == X86_INS_AND ? v & imm : v + imm;
            }
        } else if (insn.id != X86_INS_CMP && insn.id != X86_INS_TEST) {
            sets[r].clear();  // anything else writing it
        }
        return false;
    });
    return bits;
}

void set_error_status_fields(const elf::ElfFile &file, ThdLayout &l) {
    // Diagnostics_area::set_error_status(uint sql_errno, const char *message,
    // const char *sqlstate, ...) copies the first bytes of sqlstate, the errno
    // and the message (strmake(this + m_message, message, ...)) into *this.
    // MariaDB's takes (..., Sql_user_condition_identity&, Sql_condition*)
    // after them, MySQL's nothing more: the first whose name begins so.
    int64_t sqlstate = -1, errno_at = -1, message = -1;
    walk(file, first_with_prefix(file, "_ZN16Diagnostics_area16set_error_statusEjPKcS1_"),
         [&](const cs_insn &insn, const RegisterState &regs) {
             int64_t off = 0;
             if (auto s = regs.store_of(insn); s && s->address.is_arg(0, &off)) {
                 if (sqlstate < 0 && s->value.is_load(3, 1) && s->value.loads[0] == 0) {
                     sqlstate = off;
                 }
                 if (errno_at < 0 && is_argument(s->value, 1)) {
                     errno_at = off;
                 }
             }
             if (insn.id == X86_INS_CALL && message < 0 && regs.get(X86_REG_RDI).is_arg(0, &off) &&
                 is_argument(regs.get(X86_REG_RSI), 2)) {
                 message = off;
             }
             return false;
         });
    if (l.da_errno < 0) {
        l.da_errno = errno_at;
    }
    if (l.da_message < 0) {
        l.da_message = message;
    }
    if (sqlstate >= 0 && (errno_at < 0 || errno_at == l.da_errno)) {
        l.da_sqlstate = sqlstate;
    } else if (l.da_errno >= 8) {
        // Sql_state_errno is {char m_sqlstate[6]; uint m_sql_errno;}.
        l.da_sqlstate = l.da_errno - 8;
    }
}

// handler::lock_shared_ha_data() begins with its first read of
// this->table_share (table_share->tmp_table). init_tmp_table_share(thd,
// share, key, key_length, table_name, path) stores share->db.str = key and
// share->table_name.str = table_name; the lengths follow each pointer.
void set_table_share_fields(const elf::ElfFile &file, ThdLayout &l) {
    walk(file, "_ZN7handler19lock_shared_ha_dataEv",
         [&](const cs_insn &insn, const RegisterState &regs) {
             const cs_x86 &x = insn.detail->x86;
             if (insn.id != X86_INS_MOV || x.op_count != 2 || x.operands[1].type != X86_OP_MEM) {
                 return false;
             }
             int64_t off = -1;
             if (regs.address_of(insn, x.operands[1].mem).is_arg(0, &off) && off >= 0) {
                 l.handler_table_share = off;
             }
             return true;
         });
    std::vector<int64_t> key_stores;
    int64_t name = -1;
    walk(file, "_Z20init_tmp_table_shareP3THDP11TABLE_SHAREPKcjS4_S4_",
         [&](const cs_insn &insn, const RegisterState &regs) {
             int64_t off = -1;
             if (auto s = regs.store_of(insn); s && s->size == 8 && s->address.is_arg(1, &off)) {
                 if (is_argument(s->value, 2)) {
                     key_stores.push_back(off);
                 } else if (is_argument(s->value, 4) && name < 0) {
                     name = off;
                 }
             }
             return false;
         });
    // db is stored from the same key as table_cache_key; it is the one that
    // sits right before table_name, as TABLE_SHARE declares them.
    for (int64_t off : key_stores) {
        if (name >= 16 && off == name - 16) {
            l.share_db = off;
            l.share_table_name = name;
        }
    }
}

// The symbol of accessor `c_name`: itself, or with `cxx` and no such C
// symbol, the first C++ function of that name taking a pointer
// (thd_get_thread_id(THD const*) is _Z17thd_get_thread_idPK3THD).
std::string accessor(const elf::ElfFile &file, std::string_view c_name, bool cxx) {
    if (!cxx || file.find(c_name)) {
        return std::string(c_name);
    }
    const std::string prefix = "_Z" + std::to_string(c_name.size()) + std::string(c_name) + "P";
    for (const auto &s : file.symbols()) {
        if (s.is_function && s.name.rfind(prefix, 0) == 0) {
            return s.name;
        }
    }
    return std::string(c_name);
}

// The THD constructor points m_stmt_da (at `stmt_da`) at the THD's own
// Diagnostics_area: `lea main_da(%this), %reg` ... `mov %reg, stmt_da(%this)`.
// Its offset, or -1.
int64_t main_diagnostics_area(const elf::ElfFile &file, int64_t stmt_da) {
    if (stmt_da < 0) {
        return -1;
    }
    std::string ctor;
    for (const auto &s : file.symbols()) {
        if (s.is_function && s.name.rfind("_ZN3THDC2E", 0) == 0) {
            ctor = s.name;
            break;
        }
    }
    int64_t found = -1;
    walk(file, ctor, [&](const cs_insn &insn, const RegisterState &regs) {
        int64_t at = -1, value = -1;
        if (auto s = regs.store_of(insn); s && s->size == 8 && s->address.is_arg(0, &at) &&
                                          at == stmt_da && s->value.is_arg(0, &value)) {
            found = value;
        }
        return found >= 0;
    });
    return found;
}

// A LEX_CSTRING member returned by value (in rax:rdx), as by
// thd_query_unsafe(THD*): its offset, or -1.
int64_t returned_lex_cstring(const elf::ElfFile &file, std::string_view name) {
    int64_t found = -1;
    walk(file, name, [&](const cs_insn &insn, const RegisterState &regs) {
        if (insn.id != X86_INS_RET) {
            return false;
        }
        SymValue str = regs.get(X86_REG_RAX), len = regs.get(X86_REG_RDX);
        if (str.is_load(0, 1) && len.is_load(0, 1) && len.loads[0] == str.loads[0] + 8) {
            found = str.loads[0];
        }
        return true;
    });
    return found;
}

}  // namespace

Result<ThdLayout> derive_thd_layout(const elf::ElfFile &file, bool mysql8) {
    ThdLayout l;
    // MySQL declares some accessors with C++ linkage (thd_query_unsafe(THD*)):
    // a missing C name is looked up as a C++ one, whatever the server.
    auto acc = [&](std::string_view c_name) { return accessor(file, c_name, true); };
    // A single load from the THD argument: thread_id, query_id.
    auto field = [&](std::string_view fn, uint8_t *size = nullptr) -> int64_t {
        auto v = returned(file, acc(fn));
        if (!v || !v->is_load(0, 1)) {
            return -1;
        }
        if (size != nullptr) {
            *size = v->size;
        }
        return v->loads[0];
    };
    l.thread_id = field("thd_get_thread_id", &l.thread_id_size);
    if (l.thread_id < 0) {
        return Error{ENOENT, "cannot learn THD::thread_id from " + file.path() +
                                 ": no thd_get_thread_id() that loads it"};
    }
    l.query_id = field("thd_query_id");
    // Two loads: thd->m_stmt_da->m_sql_errno.
    if (auto v = returned(file, acc("thd_get_error_number")); v && v->is_load(0, 2)) {
        l.stmt_da = v->loads[0];
        l.da_errno = v->loads[1];
    }
    if (auto v = returned(file, acc("thd_current_db"))) {
        v->is_arg(0, &l.db);  // &thd->db
    }
    if (l.db < 0) {
        l.db = set_db_field(file);
    }
    // thd->m_stmt_da->m_message: the address within the area.
    if (auto v = returned(file, acc("thd_get_error_message"));
        v && v->base == 0 && v->depth == 1 && (l.stmt_da < 0 || v->loads[0] == l.stmt_da)) {
        l.stmt_da = v->loads[0];
        l.da_message = v->add;
    }
    // thd_current_status() (MariaDB) and thd_is_error() (MySQL) compare
    // m_stmt_da->m_status with DA_ERROR before anything else.
    for (const char *fn : {"thd_current_status", "thd_is_error"}) {
        if (l.da_status < 0) {
            error_status_check(file, acc(fn), l);
        }
    }
    l.main_da = main_diagnostics_area(file, l.stmt_da);
    // Setters that store their first argument (arg 1) into the object (arg 0).
    auto stores_arg1 = [](const SymValue &v) { return is_argument(v, 1); };
    l.sent_row_count = first_store(file, "_ZN3THD18set_sent_row_countEy", stores_arg1);
    l.examined_row_count = first_store(file, "_ZN3THD22set_examined_row_countEy", stores_arg1);
    if (l.examined_row_count < 0) {
        // MySQL only has THD::inc_examined_row_count(n): field += n.
        l.examined_row_count = accumulated_field(file, "_ZN3THD22inc_examined_row_countEy");
    }
    l.da_affected_rows =
        first_store(file, "_ZN16Diagnostics_area13set_ok_statusEyyPKc", stores_arg1);
    if (l.da_status >= 0) {
        l.da_ok_statuses =
            stored_statuses(file, "_ZN16Diagnostics_area13set_ok_statusEyyPKc", l.da_status);
    }
    set_error_status_fields(file, l);
    // set_thd_stage_info(thd, new_stage, ...) is THD::enter_stage(new_stage)
    // out of line: m_current_stage_key = new_stage->m_key, proc_info = ->m_name.
    auto stage_field = [](int64_t member) {
        return [member](const SymValue &v) { return v.is_load(1, 1) && v.loads[0] == member; };
    };
    const std::string set_stage = acc("set_thd_stage_info");
    l.proc_info = first_store(file, set_stage, stage_field(kPsiStageName));
    l.stage_key = first_store(file, set_stage, stage_field(kPsiStageKey));
    if (mysql8 && l.proc_info < 0) {
        // MySQL 8: set_thd_stage_info calls THD::enter_stage(new_stage, ...)
        // out of line, which stores new_stage->m_key and ->m_name.
        l.proc_info = first_store(file, kMysql8EnterStage, stage_field(kPsiStageName));
        l.stage_key = first_store(file, kMysql8EnterStage, stage_field(kPsiStageKey));
    }
    if (l.proc_info < 0) {
        // Older servers: set_thd_proc_info(thd, info, ...) assigns proc_info = info.
        l.proc_info = first_store(file, acc("set_thd_proc_info"), stores_arg1);
    }
    // thd->security_ctx->user, ->host, ->ip: two loads each, through the
    // same Security_context pointer.
    auto account = [&](std::string_view fn, int64_t &member) {
        if (auto v = returned(file, acc(fn));
            v && v->is_load(0, 2) && (l.security_ctx < 0 || v->loads[0] == l.security_ctx)) {
            l.security_ctx = v->loads[0];
            member = v->loads[1];
        }
    };
    account("thd_user_name", l.sctx_user);
    account("thd_client_host", l.sctx_host);
    account("thd_client_ip", l.sctx_ip);
    set_table_share_fields(file, l);
    l.query_string = returned_lex_cstring(file, acc("thd_query_unsafe"));
    return l;
}

}  // namespace mysqltrace::server
