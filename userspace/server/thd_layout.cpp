// SPDX-License-Identifier: GPL-2.0-only
#include "server/thd_layout.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <span>
#include <string>
#include <vector>

#include "elf/disassembler.h"
#include "server/register_state.h"
#include "server/thd_code.h"

namespace mysqltrace::server {

namespace thd_code {

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

}  // namespace thd_code

using namespace thd_code;

namespace {

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

// The THD field (a load from arg 0) that `fn` passes as the second argument
// of its first call or tail jump through a pointer (a performance_schema
// hook); -1 if none.
int64_t passed_field(const elf::ElfFile &file, std::string_view fn) {
    int64_t found = -1;
    walk(file, fn, [&](const cs_insn &insn, const RegisterState &regs) {
        const cs_x86 &x = insn.detail->x86;
        if ((insn.id != X86_INS_CALL && insn.id != X86_INS_JMP) || x.op_count != 1 ||
            x.operands[0].type == X86_OP_IMM) {
            return false;
        }
        if (const SymValue v = regs.get(X86_REG_RSI); v.is_load(0, 1)) {
            found = v.loads[0];
        }
        return true;
    });
    return found;
}

// The values `fn` stores into the area's m_status (at `status`), as a bit
// per value: `movl $imm`, MariaDB 10.11's branch-free choice of two
// (`sbb %r,%r; and $a,%r; add $b,%r` = b or a + b, as a 32-bit value), or
// 11.8's branch over one move (`mov $a,%r; jcc 1f; mov $b,%r; 1: mov %r,...`).
uint32_t stored_statuses(const elf::ElfFile &file, std::string_view fn, int64_t status) {
    uint32_t bits = 0;
    std::array<std::vector<uint32_t>, 16> sets;  // registers with a few known values
    uint64_t skipped_to = 0;                     // where the last conditional jump goes
    walk(file, fn, [&](const cs_insn &insn, const RegisterState &regs) {
        const cs_x86 &x = insn.detail->x86;
        const cs_x86_op *op = x.operands;
        const uint64_t jumped_over = skipped_to;
        skipped_to = 0;
        const auto *groups = insn.detail->groups;
        const bool jump = std::find(groups, groups + insn.detail->groups_count, CS_GRP_JUMP) !=
                          groups + insn.detail->groups_count;
        if (jump && insn.id != X86_INS_JMP && x.op_count == 1 && op[0].type == X86_OP_IMM) {
            skipped_to = static_cast<uint64_t>(op[0].imm);
            return false;
        }
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
        if (insn.id == X86_INS_MOV && x.op_count == 2 && op[1].type == X86_OP_IMM) {
            const auto imm = static_cast<uint32_t>(op[1].imm);
            // A move the jump before it may skip: either value reaches the store.
            if (jumped_over != insn.address + insn.size) {
                sets[r].clear();
            }
            sets[r].push_back(imm);
        } else if (insn.id == X86_INS_SBB && x.op_count == 2 && op[1].type == X86_OP_REG &&
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
             // The stack protector's %fs:0x28 load (CET builds) comes first.
             if (insn.id != X86_INS_MOV || x.op_count != 2 || x.operands[1].type != X86_OP_MEM ||
                 x.operands[1].mem.segment != X86_REG_INVALID) {
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
    // MariaDB: (THD*, TABLE_SHARE*, const char*, uint, const char*, const
    // char*); MySQL 8/9: a size_t key length and a MEM_ROOT* after.
    std::string init_share = "_Z20init_tmp_table_shareP3THDP11TABLE_SHAREPKcjS4_S4_";
    const bool mariadb_share = file.find(init_share).has_value();
    for (const auto &s : file.symbols()) {
        if (!mariadb_share && s.is_function &&
            s.name.rfind("_Z20init_tmp_table_shareP3THDP11TABLE_SHAREPKc", 0) == 0) {
            init_share = s.name;
            break;
        }
    }
    walk(file, init_share, [&](const cs_insn &insn, const RegisterState &regs) {
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

// MySQL 8/9's THD::enter_stage(new_stage, old_stage, ...) first saves the
// current stage into *old_stage (old_stage->m_key = m_current_stage_key,
// ->m_name = m_proc_info): the same two fields it then sets from new_stage.
// A build where the two patterns disagree gets neither (never a guess).
void verify_stage_fields(const elf::ElfFile &file, ThdLayout &l) {
    int64_t key = -1, name = -1;
    walk(file, kMysql8EnterStage, [&](const cs_insn &insn, const RegisterState &regs) {
        int64_t at = -1;
        if (auto s = regs.store_of(insn);
            s && s->address.is_arg(2, &at) && s->value.is_load(0, 1)) {
            if (at == kPsiStageKey && key < 0) {
                key = s->value.loads[0];
            } else if (at == kPsiStageName && name < 0) {
                name = s->value.loads[0];
            }
        }
        return key >= 0 && name >= 0;
    });
    if ((key >= 0 && key != l.stage_key) || (name >= 0 && name != l.proc_info)) {
        l.stage_key = l.proc_info = -1;
    }
}

// MySQL 8/9 keep the account in THD::m_main_security_ctx's String members
// ({char *ptr; size_t length; ...}), reached through THD::m_security_ctx:
// thd_get_security_context(THD*, Security_context**) stores that pointer,
// and Security_context::user()/host()/ip() return {ptr, length} pairs.
void set_mysql_account_fields(const elf::ElfFile &file, ThdLayout &l) {
    int64_t sctx = -1;
    walk(file, accessor(file, "thd_get_security_context", true),
         [&](const cs_insn &insn, const RegisterState &regs) {
             int64_t at = -1;
             if (auto s = regs.store_of(insn); s && s->size == 8 && s->address.is_arg(1, &at) &&
                                               at == 0 && s->value.is_load(0, 1)) {
                 sctx = s->value.loads[0];
             }
             return sctx >= 0;
         });
    const int64_t user = returned_lex_cstring(file, "_ZNK16Security_context4userEv");
    if (sctx < 0 || user < 0) {
        return;
    }
    l.security_ctx = sctx;
    l.sctx_user = user;
    l.sctx_host = returned_lex_cstring(file, "_ZNK16Security_context4hostEv");
    l.sctx_ip = returned_lex_cstring(file, "_ZNK16Security_context2ipEv");
    l.sctx_lengths = true;
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
    if (l.examined_row_count < 0) {
        // MariaDB 11.8 exports neither: its ps_report_examined_row_count()
        // hands the field to performance_schema as the second argument.
        l.examined_row_count = passed_field(file, "_ZN3THD28ps_report_examined_row_countEv");
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
        verify_stage_fields(file, l);
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
    if (mysql8 && l.security_ctx < 0) {
        set_mysql_account_fields(file, l);
    }
    set_table_share_fields(file, l);
    l.query_string = returned_lex_cstring(file, acc("thd_query_unsafe"));
    if (l.query_string < 0) {
        // MariaDB: thd_query_string(thd) returns &thd->query_string, whose
        // LEX_STRING {char *str; size_t length} comes first.
        if (auto v = returned(file, acc("thd_query_string")); v && v->depth == 0) {
            v->is_arg(0, &l.query_string);
        }
    }
    if (l.query_id < 0) {
        l.query_id =
            next_query_id_field(file, first_with_prefix(file, "_Z16dispatch_commandP3THD"));
    }
    l.last_prepared = last_prepared_statement(file);
    set_prepared_text_fields(file, l);
    set_statement_clock_fields(file, mysql8, l);
    set_memory_fields(file, mysql8, l);
    set_transaction_fields(file, l);
    return l;
}

}  // namespace mysqltrace::server
