// SPDX-License-Identifier: GPL-2.0-only
#include "server/lock_layout.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#include "elf/disassembler.h"
#include "server/hooks.h"
#include "server/thd_code.h"

namespace mysqltrace::server {

namespace {

constexpr const char *kFindDeadlock = "_ZN11MDL_context13find_deadlockEv";
constexpr const char *kLockVisit =
    "_ZN8MDL_lock14visit_subgraphEP10MDL_ticketP26MDL_wait_for_graph_visitor";
constexpr const char *kIncompatibleGranted =
    "_ZNK10MDL_ticket28is_incompatible_when_grantedE13enum_mdl_type";
constexpr const char *kTicketCreate = "_ZN10MDL_ticket6createEP11MDL_context13enum_mdl_type";
constexpr const char *kTimedWait =
    "_ZN8MDL_wait10timed_waitEP17MDL_context_ownerP8timespecbPK17PSI_stage_info_v1";
constexpr const char *kSetStatus = "_ZN8MDL_wait10set_statusENS_16enum_wait_statusE";
constexpr const char *kAcquireLock = "_ZN11MDL_context12acquire_lockEP11MDL_request";
constexpr const char *kGetKey = "_ZNK10MDL_ticket7get_keyEv";
constexpr const char *kStrongerType =
    "_ZNK10MDL_ticket26has_stronger_or_equal_typeE13enum_mdl_type";
constexpr const char *kNotifyShared = "_ZN3THD18notify_shared_lockEP17MDL_context_ownerb";
constexpr const char *kNotifySharedTail = "_N3THD18notify_shared_lockEP17MDL_context_ownerb";
// InnoDB: MySQL 8 exports these (MariaDB's are internal).
constexpr const char *kSuspend = "_Z24lock_wait_suspend_threadP9que_thr_t";
constexpr const char *kLockWaitTimeout = "_Z21thd_lock_wait_timeoutP3THD";
constexpr const char *kReportLockWait = "_Z20thd_report_lock_waitP3THDS0_b";
// MariaDB: called once a row lock wait ended, with the THD and the wait.
constexpr const char *kStorageLockWait = "thd_storage_lock_wait";
constexpr const char *kWaitBegin = "thd_wait_begin";
// MariaDB: InnoDB's wait-for edges, reported only when thd_need_wait_reports()
// holds (the binary log open, or a parallel replication worker).
constexpr const char *kRplDeadlockCheck = "thd_rpl_deadlock_check";

// MDL_context::m_owner: acquire_lock passes it to m_wait.timed_wait(owner,
// ...) as `mov disp(%ctx), %rsi` with %rdi = %ctx (or lea off(%ctx)). Every
// call must agree. The wait's stage argument is indexed by the request's
// namespace, a byte loaded from the request (`movsbq disp(%req)`): that
// register holds the MDL_request at the call (*calls: each call's address
// and that register, -1 when not seen).
int64_t owner_offset(const elf::ElfFile &file, std::vector<std::pair<uint64_t, int>> *calls) {
    auto caller = find_by_prefix(file, kAcquireLock);
    auto callee = file.find(kTimedWait);
    if (!caller || !callee || caller->size == 0) {
        return -1;
    }
    auto code = file.read(caller->vaddr, caller->size);
    if (!code) {
        return -1;
    }
    elf::Disassembler d(file.budget(), /*detail=*/true);
    std::span<const uint8_t> bytes(*code);
    int rsi_base = -1, rdi_base = -1, byte_base = -1;
    int64_t rsi_disp = 0, found = -1;
    bool conflict = false;
    for (size_t at = 0; at < bytes.size();) {
        const cs_insn *insn = d.decode(bytes.subspan(at), caller->vaddr + at);
        if (insn == nullptr) {
            at++;
            continue;
        }
        const cs_x86 &x = insn->detail->x86;
        if (insn->id == X86_INS_MOVSX && x.op_count == 2 && x.operands[1].type == X86_OP_MEM &&
            x.operands[1].size == 1 && x.operands[1].mem.index == X86_REG_INVALID) {
            byte_base = reg_slot(x.operands[1].mem.base);
        }
        if ((insn->id == X86_INS_MOV || insn->id == X86_INS_LEA) && x.op_count == 2 &&
            x.operands[0].type == X86_OP_REG) {
            const x86_reg dst = x.operands[0].reg;
            const cs_x86_op &src = x.operands[1];
            if (dst == X86_REG_RSI) {
                rsi_base = -1;
                if (insn->id == X86_INS_MOV && src.type == X86_OP_MEM &&
                    src.mem.index == X86_REG_INVALID && src.mem.base != X86_REG_RIP) {
                    rsi_base = reg_slot(src.mem.base);
                    rsi_disp = src.mem.disp;
                }
            } else if (dst == X86_REG_RDI) {
                rdi_base = -1;
                if (insn->id == X86_INS_MOV && src.type == X86_OP_REG) {
                    rdi_base = reg_slot(src.reg);
                } else if (insn->id == X86_INS_LEA && src.type == X86_OP_MEM &&
                           src.mem.index == X86_REG_INVALID) {
                    rdi_base = reg_slot(src.mem.base);
                }
            }
        }
        if (insn->id == X86_INS_CALL && insn->size == 5 && bytes[at] == 0xe8) {
            int32_t rel = 0;
            std::memcpy(&rel, &bytes[at + 1], 4);
            if (caller->vaddr + at + 5 + static_cast<int64_t>(rel) == callee->vaddr &&
                rsi_base >= 0 && rsi_base == rdi_base) {
                if (found >= 0 && found != rsi_disp) {
                    conflict = true;
                }
                found = rsi_disp;
                calls->push_back({caller->vaddr + at, byte_base});
            }
            rsi_base = rdi_base = byte_base = -1;  // clobbered by any call
        }
        at += insn->size;
    }
    return conflict ? -1 : found;
}

// MDL_request::init_with_source(ns, db, name, type, duration, ...) stores
// its duration (argument 5) in the request.
int64_t duration_offset(const elf::ElfFile &file) {
    auto fn = thd_code::first_with_prefix(file, "_ZN11MDL_request16init_with_sourceE");
    if (fn.empty()) {
        return -1;
    }
    return thd_code::first_store(file, fn, [](const SymValue &v) {
        int64_t off = -1;
        return v.is_arg(5, &off) && off == 0;
    });
}

// MDL_ticket::get_key() returns &m_lock->key: *(this + m_lock) + key.
void key_offsets(const elf::ElfFile &file, LockLayout &l) {
    auto v = thd_code::returned(file, kGetKey);
    if (!v || v->base != 0 || v->depth != 1) {
        return;
    }
    l.ticket_lock = v->loads[0];
    l.lock_key = v->add;
}

// MDL_ticket::has_stronger_or_equal_type(type) compares its m_type: the
// 4-byte field it loads from `this`.
int64_t type_offset(const elf::ElfFile &file) {
    int64_t found = -1;
    thd_code::walk(file, kStrongerType, [&](const cs_insn &insn, const RegisterState &regs) {
        const cs_x86 &x = insn.detail->x86;
        if ((insn.id == X86_INS_MOVSXD || insn.id == X86_INS_MOV) && x.op_count == 2 &&
            x.operands[0].type == X86_OP_REG && x.operands[1].type == X86_OP_MEM &&
            x.operands[1].size == 4) {
            SymValue a = regs.address_of(insn, x.operands[1].mem);
            int64_t off = 0;
            if (a.is_arg(0, &off)) {
                found = off;
            }
        }
        return found >= 0;
    });
    return found;
}

// MDL_ticket::create(ctx, type) stores ctx in the new ticket's m_ctx.
int64_t ctx_offset(const elf::ElfFile &file) {
    int64_t found = -1;
    thd_code::walk(file, kTicketCreate, [&](const cs_insn &insn, const RegisterState &regs) {
        auto st = regs.store_of(insn);
        int64_t off = -1;
        if (st && st->size == 8 && st->value.is_arg(0, &off) && off == 0 && st->disp > 0) {
            found = st->disp;
        }
        return found >= 0;
    });
    return found;
}

// What the callers of thd_storage_lock_wait (MariaDB: InnoDB's lock_wait(),
// which has no symbol) tell, from one scan of the code for its `call
// rel32`s: the unit of its second argument, and where the same wait began.
// MariaDB passes a microsecond clock's difference divided by 1000 (the
// multiply-shift a compiler makes of an unsigned division by 1000, with
// this multiplier, right before the call): milliseconds; microseconds
// otherwise (the server's own use: utime_after_lock). The wait began at
// the last call of thd_wait_begin(THD*, type) before it in the same code
// (within kBegin bytes), where the waiting THD is in %rdi.
struct StorageWaitCallers {
    uint64_t unit_ns = 1000;
    uint64_t begin_vaddr = 0;  // 0: not found
};

StorageWaitCallers storage_wait_callers(const elf::ElfFile &file, const elf::Symbol &callee,
                                        const std::optional<elf::Symbol> &wait_begin) {
    StorageWaitCallers out;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto &s : file.symbols()) {
        if (s.is_function && s.size != 0) {
            lo = std::min(lo, s.vaddr);
            hi = std::max(hi, s.vaddr + s.size);
        }
    }
    constexpr uint8_t kDiv1000[8] = {0xcf, 0xf7, 0x53, 0xe3, 0xa5, 0x9b, 0xc4, 0x20};
    constexpr uint64_t kChunk = 4 << 20, kBack = 64, kBegin = 4096;
    std::vector<uint64_t> calls, begins;
    size_t divided = 0;
    for (uint64_t at = lo; lo < hi && at < hi; at += kChunk) {
        const uint64_t from = at > lo + kBack ? at - kBack : lo;
        auto code = file.read(from, std::min(hi - from, kChunk + (at - from) + 5));
        if (!code) {
            break;
        }
        const auto &b = *code;
        for (size_t i = at - from; i + 5 <= b.size(); i++) {
            if (b[i] != 0xe8) {
                continue;
            }
            int32_t rel = 0;
            std::memcpy(&rel, &b[i + 1], 4);
            const uint64_t target = from + i + 5 + static_cast<int64_t>(rel);
            if (wait_begin && target == wait_begin->vaddr) {
                begins.push_back(from + i);
            }
            if (target != callee.vaddr) {
                continue;
            }
            calls.push_back(from + i);
            const size_t back = i >= kBack ? i - kBack : 0;
            if (std::search(b.begin() + back, b.begin() + i, kDiv1000, kDiv1000 + 8) !=
                b.begin() + i) {
                divided++;
            }
        }
    }
    if (!calls.empty() && divided == calls.size()) {
        out.unit_ns = 1'000'000;
    }
    if (calls.size() == 1) {
        for (uint64_t b : begins) {
            if (b < calls[0] && calls[0] - b < kBegin) {
                out.begin_vaddr = b;  // the last one before it
            }
        }
    }
    return out;
}

// The waiting transaction and the one it waits for, at the wait's call of
// thd_wait_begin (MariaDB's lock_wait(trx's query thread), with no symbol):
// its THD argument is loaded from the waiting trx_t (`mov disp(%trx),
// %rdi`, neither register written again before the call): the register
// holding the trx there and trx_t::mysql_thd. After the call, InnoDB's
// deadlock search (Deadlock::find_cycle) walks the wait-for chain from that
// trx: `mov D(%trx), %r` then `mov D(%r), %x` with %r not written between
// (hare = hare->lock.wait_trx: the same field read from what it pointed
// to; MariaDB 10.11 loads into %r again, 11.8 into another register): D
// is trx_t::lock.wait_trx, the transaction whose lock the new one
// conflicts with, set before the wait begins. The code before the call has
// no symbol to start from: decoding starts kBack bytes before it, one byte
// later each time until the instructions meet the call (x86 code
// resynchronises within a few instructions, long before the loads used).
struct WaitTrx {
    int reg = -1;  // register slot holding the trx_t at the call
    int64_t thd = -1, wait_trx = -1;
};

// `mov disp(%base), %dst` with 8-byte registers and no index: true, with
// the slots and the displacement.
bool load64(const cs_insn &insn, int *dst, int *base, int64_t *disp) {
    const cs_x86 &x = insn.detail->x86;
    if (insn.id != X86_INS_MOV || x.op_count != 2 || x.operands[0].type != X86_OP_REG ||
        x.operands[0].size != 8 || x.operands[1].type != X86_OP_MEM ||
        x.operands[1].mem.index != X86_REG_INVALID || x.operands[1].mem.base == X86_REG_RIP) {
        return false;
    }
    *dst = reg_slot(x.operands[0].reg);
    *base = reg_slot(x.operands[1].mem.base);
    *disp = x.operands[1].mem.disp;
    return *dst >= 0 && *base >= 0;
}

WaitTrx wait_trx_layout(const elf::ElfFile &file, uint64_t call) {
    constexpr uint64_t kBack = 256, kAfter = 512, kTries = 16;
    constexpr int kRdi = 7;
    WaitTrx out;
    elf::Disassembler d(file.budget(), /*detail=*/true);
    bool met = false;
    const uint64_t first = std::min(kBack, call);
    for (uint64_t back = first; !met && back > 0 && first - back < kTries; back--) {
        auto code = file.read(call - back, back);
        if (!code) {
            return out;
        }
        std::span<const uint8_t> bytes(*code);
        size_t at = 0;
        while (at < back) {
            const cs_insn *insn = d.decode(bytes.subspan(at), call - back + at);
            if (insn == nullptr) {
                break;
            }
            int dst = -1, b = -1;
            int64_t off = 0;
            const bool load = load64(*insn, &dst, &b, &off);
            for_each_written(*insn, [&](int s) {
                if (s == kRdi || s == out.reg) {
                    out.reg = -1;
                }
            });
            if (load && dst == kRdi && b != kRdi && off > 0) {
                out.reg = b;
                out.thd = off;
            }
            at += insn->size;
        }
        met = at == back;
        if (!met) {
            out.reg = -1;
        }
    }
    if (out.reg < 0) {
        return WaitTrx{};
    }
    // From the call on (a call keeps the callee-saved registers), while the
    // trx register is not written: the loads from it, by destination.
    auto code = file.read(call, kAfter);
    if (!code) {
        return WaitTrx{};
    }
    std::span<const uint8_t> bytes(*code);
    bool trx_live = true;
    std::vector<std::pair<int, int64_t>> from_trx;  // (destination, displacement)
    for (size_t at = 0; at < bytes.size() && out.wait_trx < 0;) {
        const cs_insn *insn = d.decode(bytes.subspan(at), call + at);
        if (insn == nullptr || insn->id == X86_INS_RET) {
            break;
        }
        int dst = -1, b = -1;
        int64_t off = 0;
        const bool load = load64(*insn, &dst, &b, &off) && off > 0;
        if (load &&
            std::find(from_trx.begin(), from_trx.end(), std::pair{b, off}) != from_trx.end()) {
            out.wait_trx = off;
        }
        for_each_written(*insn, [&](int s) {
            trx_live = trx_live && s != out.reg;
            std::erase_if(from_trx, [s](const auto &e) { return e.first == s; });
        });
        if (load && trx_live && b == out.reg) {
            from_trx.push_back({dst, off});
        }
        at += insn->size;
    }
    if (out.wait_trx < 0) {
        return WaitTrx{};
    }
    return out;
}

void add_entry(const elf::ElfFile &file, LockLayout &l, const char *sym, LockRole role,
               std::vector<std::string> *lacking) {
    auto s = file.find(sym);
    if (!s || !s->is_function) {
        lacking->push_back(sym);
        return;
    }
    auto site = entry_probe_site(file, *s);
    if (!site) {
        lacking->push_back(sym);
        return;
    }
    l.sites.push_back({site->offset, role, false, sym});
}

}  // namespace

int64_t thunk_adjustment(std::string_view name) {
    if (!name.starts_with("_ZThn") || !name.ends_with(kNotifySharedTail)) {
        return -1;
    }
    int64_t n = -1;
    const char *b = name.data() + 5;
    auto r = std::from_chars(b, name.data() + name.size(), n);
    if (r.ec != std::errc() || r.ptr == b ||
        std::string_view(r.ptr, name.data() + name.size() - r.ptr) != kNotifySharedTail) {
        return -1;
    }
    return n;
}

LockLayout learn_lock_layout(const elf::ElfFile &file) {
    LockLayout l;
    std::string missing;
    // Metadata locks.
    {
        std::vector<std::string> lacking;
        const size_t first = l.sites.size();
        add_entry(file, l, kTimedWait, LockRole::mdl_wait, &lacking);
        if (auto s = file.find(kTimedWait); s && s->is_function) {
            if (auto off = file.vaddr_to_offset(s->vaddr)) {
                l.sites.push_back({*off, LockRole::mdl_wait_ret, true, kTimedWait});
            }
        }
        std::vector<std::pair<uint64_t, int>> wait_calls;
        l.ctx_owner = owner_offset(file, &wait_calls);
        l.request_duration = duration_offset(file);

        // THD derives from MDL_context_owner: first (no thunk for its
        // override, owner == THD), or not (the thunk says by how much).
        for (const auto &s : file.symbols()) {
            if (int64_t n = thunk_adjustment(s.name); n >= 0) {
                l.owner_to_thd = n;
                break;
            }
        }
        if (l.owner_to_thd < 0 && file.find(kNotifyShared)) {
            l.owner_to_thd = 0;
        }
        key_offsets(file, l);
        l.ticket_type = type_offset(file);
        if (l.ctx_owner < 0) {
            lacking.push_back("MDL_context::m_owner (acquire_lock's call of MDL_wait::timed_wait)");
        }
        if (l.owner_to_thd < 0) {
            lacking.push_back("THD::notify_shared_lock (where THD's MDL_context_owner is)");
        }
        l.mdl_waits = lacking.empty() && l.sites.size() == first + 2;
        if (!l.mdl_waits) {
            l.sites.resize(first);
            missing += "metadata lock waits: no " + lacking.front() + "; ";
        } else {
            // Who grants a waiting request: its last blocker.
            std::vector<std::string> grant;
            add_entry(file, l, kSetStatus, LockRole::mdl_grant, &grant);
            // The request's duration, read where acquire_lock is about to wait.
            for (auto [c, reg] : wait_calls) {
                auto off = file.vaddr_to_offset(c);
                if (l.request_duration >= 0 && reg >= 0 && off) {
                    l.sites.push_back({*off, LockRole::mdl_request, false, kAcquireLock, reg});
                }
            }
            const size_t waits_end = l.sites.size();
            std::vector<std::string> search;
            add_entry(file, l, kFindDeadlock, LockRole::mdl_find, &search);
            add_entry(file, l, kLockVisit, LockRole::mdl_visit, &search);
            auto visit = file.find(kLockVisit);
            auto granted = file.find(kIncompatibleGranted);
            std::vector<elf::ProbeSite> calls;
            if (visit && granted) {
                calls = call_sites(file, *visit, *granted);
            }
            for (const auto &c : calls) {
                l.sites.push_back({c.offset, LockRole::mdl_edge, false, kLockVisit});
                // The next instruction reads the result: hit only while
                // a deadlock search runs, so its cost does not matter.
                l.sites.push_back({c.offset + 5, LockRole::mdl_edge_ret, false, kLockVisit});
            }
            if (calls.empty()) {
                search.push_back(
                    "MDL_lock::visit_subgraph() calling "
                    "MDL_ticket::is_incompatible_when_granted()");
            }
            l.ticket_ctx = ctx_offset(file);
            if (l.ticket_ctx < 0) {
                search.push_back("MDL_ticket::m_ctx (MDL_ticket::create()'s stores)");
            }
            l.mdl_blockers = search.empty();
            if (!l.mdl_blockers) {
                l.sites.resize(waits_end);
                missing += "metadata lock blockers: no " + search.front() + "; ";
            }
            if (l.ticket_lock < 0 || l.lock_key < 0 || l.ticket_type < 0) {
                missing +=
                    "metadata lock objects and types: no MDL_ticket::get_key() or "
                    "has_stronger_or_equal_type() to learn them from; ";
            }
        }
    }
    // InnoDB lock waits.
    {
        auto suspend = file.find(kSuspend);
        auto timeout = file.find(kLockWaitTimeout);
        std::vector<elf::ProbeSite> begin;
        if (suspend && timeout) {
            begin = call_sites(file, *suspend, *timeout);
        }
        if (begin.size() == 1) {
            // The return of the wait; the begin is the call that reads the
            // waiter's timeout, with its THD in %rdi (a `call rel32`).
            if (auto off = file.vaddr_to_offset(suspend->vaddr)) {
                l.sites.push_back({begin[0].offset, LockRole::row_begin, false, kSuspend});
                l.sites.push_back({*off, LockRole::row_end, true, kSuspend});
                l.row_waits = true;
            }
        }
        if (auto s = file.find(kStorageLockWait); !l.row_waits && s && s->is_function) {
            std::vector<std::string> lacking;
            add_entry(file, l, kStorageLockWait, LockRole::row_waited, &lacking);
            l.row_waits = lacking.empty();
            const auto callers = storage_wait_callers(file, *s, file.find(kWaitBegin));
            l.row_waited_unit_ns = callers.unit_ns;
            // Where the wait began, and who woke the waiter: the thread
            // whose release granted the lock.
            if (auto off = file.vaddr_to_offset(callers.begin_vaddr);
                l.row_waits && callers.begin_vaddr != 0 && off) {
                // The transaction waited for, when the code shows where.
                const WaitTrx w = wait_trx_layout(file, callers.begin_vaddr);
                l.sites.push_back({*off, LockRole::row_wait_begin, false, kWaitBegin, w.reg});
                // Who woke the waiter is asked (sched_waking, a program run
                // for every wakeup on the machine) only when the
                // transaction waited for cannot be read.
                l.row_wakers = w.reg < 0;
                l.trx_thd = w.thd;
                l.trx_wait_trx = w.wait_trx;
                l.row_wait_trx = w.reg >= 0;
            }
        }
        if (!l.row_waits) {
            missing +=
                "row lock waits: no lock_wait_suspend_thread() calling "
                "thd_lock_wait_timeout(), nor thd_storage_lock_wait(); ";
        } else {
            std::vector<std::string> lacking;
            add_entry(file, l, kReportLockWait, LockRole::row_edge, &lacking);
            if (!lacking.empty()) {
                std::vector<std::string> rpl;
                add_entry(file, l, kRplDeadlockCheck, LockRole::row_edge, &rpl);
                l.row_rpl_edges = rpl.empty();
            }
            // MariaDB: every wait names the transaction it waits for.
            l.row_blockers = lacking.empty() || l.row_wait_trx;
            if (!l.row_blockers && !l.row_wakers && !l.row_rpl_edges) {
                missing +=
                    "row lock blockers: InnoDB does not report its wait-for edges "
                    "(no thd_report_lock_wait(THD*, THD*, bool)); ";
            }
        }
    }
    if (!missing.empty()) {
        missing.resize(missing.size() - 2);
    }
    l.missing = missing;
    return l;
}

}  // namespace mysqltrace::server
