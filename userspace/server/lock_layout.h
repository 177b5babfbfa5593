// SPDX-License-Identifier: GPL-2.0-only
// Where a server build's lock waits can be seen (server --locks), learnt
// from its exported symbols and code as the THD layout is: the functions
// only a waiting thread runs, and the few struct offsets the probes read
// (MDL_context's owner, MDL_ticket's type and lock, the MDL_key in the
// lock). What a build lacks is named, never guessed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "elf/elf_file.h"

namespace mysqltrace::server {

// A probe's role: its attach cookie (bpf/server_locks.bpf.h, enum lock_role).
enum class LockRole : uint32_t {
    mdl_find = 1,
    mdl_visit = 2,
    mdl_edge = 3,
    mdl_edge_ret = 4,
    mdl_wait = 6,
    row_begin = 7,
    row_end = 8,
    row_waited = 9,
    row_edge = 10,
    mdl_wait_ret = 11,
    mdl_grant = 12,
    row_wait_begin = 13,
    mdl_request = 14,
};

struct LockSite {
    uint64_t offset = 0;  // file offset of the probed instruction
    LockRole role = LockRole::mdl_wait;
    bool retprobe = false;
    std::string what;  // the function, for messages
    int reg = -1;      // mdl_request: the register holding the request there;
                       // row_wait_begin: the waiting trx_t (-1: not known)
};

struct LockLayout {
    // MDL_context::m_owner (MDL_context_owner *), and what to subtract from
    // that pointer to reach the THD (MariaDB's THD has MDL_context_owner as
    // a secondary base, at the offset its notify_shared_lock thunk adjusts by).
    int64_t ctx_owner = -1;
    int64_t owner_to_thd = -1;
    int64_t ticket_type = -1;  // MDL_ticket::m_type (enum_mdl_type, 4 bytes)
    int64_t ticket_ctx = -1;   // MDL_ticket::m_ctx (MDL_context *)
    int64_t ticket_lock = -1;  // MDL_ticket::m_lock (MDL_lock *)
    int64_t lock_key = -1;     // MDL_lock::key (MDL_key)
    // The waiting MDL_request's duration field (enum_mdl_duration, 4
    // bytes); the request is in a register (LockSite::reg) at acquire_lock's
    // calls of MDL_wait::timed_wait.
    int64_t request_duration = -1;
    std::vector<LockSite> sites;
    bool mdl_waits = false;     // MDL waits are seen
    bool mdl_blockers = false;  // ... with the contexts they wait for
    bool row_waits = false;     // InnoDB lock waits are seen
    bool row_blockers = false;  // ... with the transactions they wait for
    // ... or with the thread that woke the waiter when the wait was granted
    // (MariaDB: the begin of the wait is known, and sched_waking says who
    // woke it).
    bool row_wakers = false;
    // ... or with the transactions they wait for, while the binary log is
    // open (MariaDB's thd_rpl_deadlock_check(waiter, blocker), called by
    // InnoDB's lock_wait_rpl_report when thd_need_wait_reports() holds).
    bool row_rpl_edges = false;
    // ... or, whatever the binary log, with the transaction each waits for
    // (MariaDB: trx_t::lock.wait_trx, read at the wait's thd_wait_begin
    // call, LockRole::row_wait_begin, whose LockSite::reg holds the
    // waiting trx_t): row_blockers is then set too.
    bool row_wait_trx = false;
    int64_t trx_thd = -1;       // trx_t::mysql_thd (THD *)
    int64_t trx_wait_trx = -1;  // trx_t::lock.wait_trx (trx_t *)
    // InnoDB's wait, when only its end is seen with its length
    // (LockRole::row_waited): the length's unit, in ns.
    uint64_t row_waited_unit_ns = 1000;
    // What is missing, one sentence per capability ("" when all is there).
    std::string missing;
};

// Never fails: a build without some of it traces the rest (see `missing`).
LockLayout learn_lock_layout(const elf::ElfFile &file);

// The MDL_context_owner adjustment a THD thunk's mangled name states:
// "_ZThn232_N3THD18notify_shared_lockEP17MDL_context_ownerb" -> 232; -1
// when `name` is not such a thunk.
int64_t thunk_adjustment(std::string_view name);

}  // namespace mysqltrace::server
