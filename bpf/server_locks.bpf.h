// SPDX-License-Identifier: GPL-2.0-only
// Server side: lock waits (--locks).
//
// Every probe here sits on a path the server only takes when a thread is
// about to wait or waits, never per statement or per lock taken, so a server
// without contention never hits them:
// - metadata locks: MDL_context::find_deadlock (called once a request has to
//   wait), MDL_lock::visit_subgraph (the deadlock search; its first call
//   is for the waiting ticket's lock), its calls of MDL_ticket::
//   is_incompatible_when_granted and the instruction after them (the
//   granted tickets that conflict with the waiting one: their owners are
//   the blockers; the visitor's own methods are inlined there),
//   MDL_context::acquire_lock's calls of MDL_wait::timed_wait (the request,
//   for its duration), MDL_wait::timed_wait (entry and return: the wait,
//   and how it ended) and MDL_wait::set_status (the thread granting it);
// - InnoDB row locks: a site where the waiting thread's THD is in a
//   register when the wait begins plus the wait's return (MySQL:
//   lock_wait_suspend_thread), or a function called once a wait ended with
//   its duration (MariaDB: thd_storage_lock_wait, and the wait's call of
//   thd_wait_begin before it, where the waiting transaction names the one
//   it waits for, or, where that cannot be read, sched_waking names who
//   woke the waiter), and the wait-for edges InnoDB reports (MySQL:
//   thd_report_lock_wait(waiter, blocker); MariaDB with a binary log:
//   thd_rpl_deadlock_check).
// One program for the uprobes; the attach cookie's low 16 bits say which
// role a site has, the bits above where a register it reads is in pt_regs.
// Offsets come from server/lock_layout.cpp (learnt from the binary).
//
// Part of server.bpf.c, included after server_table_io.bpf.h.
#pragma once

enum lock_role {  // attach cookies (server/lock_layout.h, LockRole)
    LOCK_MDL_FIND = 1,      // MDL_context::find_deadlock(this)
    LOCK_MDL_VISIT = 2,     // MDL_lock::visit_subgraph(this, waiting ticket, visitor)
    LOCK_MDL_EDGE = 3,      // a call of is_incompatible_when_granted(granted ticket, type)
    LOCK_MDL_EDGE_RET = 4,  // the instruction after it: al = the result
    LOCK_MDL_WAIT = 6,      // MDL_wait::timed_wait(this, owner, abstime, bool, stage): entry
    LOCK_ROW_BEGIN = 7,     // a row lock wait begins: THD in rdi
    LOCK_ROW_END = 8,       // return of the function that waited
    LOCK_ROW_WAITED = 9,    // (THD *, waited time): a row lock wait ended
    LOCK_ROW_EDGE = 10,     // (THD *waiter, THD *blocker)
    LOCK_MDL_WAIT_RET = 11,  // MDL_wait::timed_wait: return
    LOCK_MDL_GRANT = 12,     // MDL_wait::set_status(this, status), by the thread granting
    LOCK_ROW_WAIT_BEGIN = 13,  // the wait's thd_wait_begin(THD *, type) call (MariaDB),
                               // the waiting trx_t in a register
    LOCK_MDL_REQUEST = 14      // acquire_lock's call of timed_wait: the request in a register
};

// Inputs: MDL_context::m_owner; MDL_ticket::m_ctx; what to subtract from an MDL_context_owner
// pointer to get the THD (MariaDB's THD has it as a secondary base); in
// MDL_ticket, m_type and m_lock; the MDL_key's offset in MDL_lock.
const volatile __s64 off_ctx_owner = -1;
const volatile __s64 off_ticket_ctx = -1;
const volatile __s64 owner_to_thd = 0;
const volatile __s64 off_ticket_type = -1;
const volatile __s64 off_ticket_lock = -1;
const volatile __s64 off_lock_key = -1;
// LOCK_MDL_REQUEST: the request's duration field (-1: unknown); where in
// pt_regs the register holding the request is comes in the cookie's upper
// bits (it differs between call sites).
const volatile __s64 off_request_duration = -1;
// LOCK_ROW_WAIT_BEGIN: trx_t::mysql_thd and trx_t::lock.wait_trx (-1:
// unknown); the register holding the waiting trx_t is in the cookie.
const volatile __s64 off_trx_thd = -1;
const volatile __s64 off_trx_wait_trx = -1;
// LOCK_ROW_WAITED's length: its unit in ns.
const volatile __u64 row_waited_unit_ns = 1000;
// THD's query string (LEX_CSTRING {str, length}), for an open wait's record
// (-1: unknown).
const volatile __s64 off_lock_query = -1;

// What a thread is waiting for. Only threads that wait have one.
struct lock_state {
    __u64 mdl_start;  // 0: no MDL wait open
    __u64 mdl_owner;
    __u64 mdl_stage;
    __u64 mdl_wait;  // the MDL_wait waited on
    __s32 mdl_duration;
    __u32 _pad1;
    __u64 ticket;     // the waiting ticket (0: unknown)
    __u64 candidate;  // the granted ticket being compared with it
    __u64 row_start;
    __u64 row_thd;
    __u64 blockers[MT_MAX_LOCK_BLOCKERS];
    __u32 visits;     // deadlock search: locks visited
    __u32 searching;  // inside find_deadlock
    __u16 n_blockers;
    __u16 blockers_lost;
    __u16 flags;
    __u16 _pad0;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, struct lock_state);
} lock_states SEC(".maps");

// MDL_wait -> the OS thread that set it GRANTED: a thread releasing a lock
// grants the waiters its release lets in, so it is the last one that
// blocked them. MySQL's "fast path" locks (SHARED_READ, ...) are counted in
// the lock, not listed as granted tickets, so its deadlock search cannot
// name their holders; this can.
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 4096);
    __type(key, __u64);
    __type(value, __u32);
} mdl_granted_by SEC(".maps");

// InnoDB waits whose begin is seen (LOCK_ROW_WAIT_BEGIN), by OS thread:
// when, and the first thread of the server that woke the waiter since (the
// one whose release granted the lock, when the wait ends granted: userspace
// keeps it only then). Watched from sched_waking, which runs in the waker's
// context (sched_wakeup may run on the wakee's CPU, in another task's).
struct row_wait {
    __u64 start;
    __u32 waker;
    __u32 _pad0;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, struct row_wait);
} row_waits SEC(".maps");

// Waits open in row_waits: sched_waking does nothing while there are none.
__s64 row_waiting = 0;

SEC("tp_btf/sched_waking")
int BPF_PROG(server_lock_waking, struct task_struct *p) {
    struct row_wait *rw;
    __u32 wakee;

    if (!row_waiting || !traced())
        return 0;
    wakee = BPF_CORE_READ(p, pid);
    rw = bpf_map_lookup_elem(&row_waits, &wakee);
    if (rw && !rw->waker)
        rw->waker = (__u32)bpf_get_current_pid_tgid();
    return 0;
}

static __always_inline struct lock_state *lock_state_of(int create) {
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct lock_state *ls = bpf_map_lookup_elem(&lock_states, &tid);
    struct lock_state zero = {};

    if (ls || !create)
        return ls;
    bpf_map_update_elem(&lock_states, &tid, &zero, BPF_NOEXIST);
    return bpf_map_lookup_elem(&lock_states, &tid);
}

static __always_inline __u64 owner_thread_id(__u64 owner) {
    if (!owner)
        return 0;
    return thread_id_of((void *)(owner - owner_to_thd));
}

static __always_inline void add_blocker(struct lock_state *ls, __u64 id) {
    if (!id)
        return;
    for (int i = 0; i < MT_MAX_LOCK_BLOCKERS; i++) {
        if (i >= ls->n_blockers)
            break;
        if (ls->blockers[i] == id)
            return;
    }
    if (ls->n_blockers < MT_MAX_LOCK_BLOCKERS) {
        ls->blockers[ls->n_blockers & (MT_MAX_LOCK_BLOCKERS - 1)] = id;
        ls->n_blockers++;
    } else {
        ls->blockers_lost++;
    }
}

static __always_inline struct mt_server_lock_wait_event *lock_reserve(void **ring) {
    struct mt_server_lock_wait_event *ev =
        mt_reserve(ring, MT_EV_SERVER_LOCK_WAIT, sizeof(struct mt_server_lock_wait_event));

    if (!ev)
        return 0;
    ev->stage = 0;
    ev->status = 0;
    ev->lock_type = -1;
    ev->n_blockers = 0;
    ev->blockers_lost = 0;
    ev->flags = 0;
    ev->key_len = 0;
    ev->granter_tid = 0;
    ev->lock_duration = -1;
    ev->_pad0 = 0;
    ev->query_len = 0;
    for (int i = 0; i < MT_MAX_LOCK_BLOCKERS; i++)
        ev->blockers[i] = 0;
    return ev;
}

static __always_inline void lock_mdl_end(struct pt_regs *ctx, struct lock_state *ls) {
    struct mt_server_lock_wait_event *ev;
    __u32 status = (__u32)PT_REGS_RC(ctx);
    void *ring, *lock;
    __u32 *granter;

    // MariaDB waits for a lock that needs its holders notified in slices
    // of a second, and a slice that ran out returns EMPTY (0): the wait
    // goes on.
    if (!ls->mdl_start || status == 0)
        return;
    ev = lock_reserve(&ring);
    if (ev) {
        ev->start_ns = ls->mdl_start;
        ev->thread_id = owner_thread_id(ls->mdl_owner);
        ev->stage = ls->mdl_stage;
        ev->kind = MT_LOCK_METADATA;
        ev->status = status;
        ev->lock_duration = ls->mdl_duration;
        ev->flags = ls->flags;
        ev->n_blockers = ls->n_blockers;
        ev->blockers_lost = ls->blockers_lost;
        granter = bpf_map_lookup_elem(&mdl_granted_by, &ls->mdl_wait);
        if (granter && status == MT_LOCK_GRANTED)
            ev->granter_tid = *granter;
        for (int i = 0; i < MT_MAX_LOCK_BLOCKERS; i++)
            ev->blockers[i] = ls->blockers[i];
        if (ls->ticket) {
            if (off_ticket_type >= 0)
                ev->lock_type = (__s32)read_u32((void *)ls->ticket, off_ticket_type);
            lock = (void *)read_u64((void *)ls->ticket, off_ticket_lock);
            if (lock && off_lock_key >= 0 &&
                bpf_probe_read_user(ev->key, sizeof(ev->key), lock + off_lock_key) == 0)
                ev->key_len = sizeof(ev->key);
        }
        mt_submit(ring, ev, sizeof(*ev));
    }
    bpf_map_delete_elem(&mdl_granted_by, &ls->mdl_wait);
    ls->mdl_start = 0;
    ls->ticket = 0;
    ls->n_blockers = 0;
    ls->blockers_lost = 0;
    ls->flags = 0;
}

// A wait begins: its open record (MT_LOCK_OPEN), for what waits now
// (`mysqltrace top`). MDL: the deadlock search ran before the wait, so the
// object and the blockers are known.
static __always_inline void lock_open(struct lock_state *ls, __u32 kind, void *thd) {
    struct mt_server_lock_wait_event *ev;
    void *ring, *lock;
    struct {
        __u64 str, len;
    } q = {};

    ev = lock_reserve(&ring);
    if (!ev)
        return;
    ev->kind = kind;
    ev->thread_id = thd ? thread_id_of(thd) : 0;
    ev->flags = MT_LOCK_OPEN;
    // At most MT_MAX_LOCK_QUERY - 1 bytes: the mask bounds the read.
    if (thd && off_lock_query >= 0 &&
        bpf_probe_read_user(&q, sizeof(q), thd + off_lock_query) == 0 && q.str && q.len) {
        __u32 n = q.len < MT_MAX_LOCK_QUERY - 1 ? (__u32)q.len : MT_MAX_LOCK_QUERY - 1;

        n &= MT_MAX_LOCK_QUERY - 1;
        if (n && bpf_probe_read_user(ev->query, n, (void *)q.str) == 0)
            ev->query_len = (__u16)n;
    }
    if (kind == MT_LOCK_METADATA && ls) {
        ev->start_ns = ls->mdl_start;
        ev->stage = ls->mdl_stage;
        ev->lock_duration = ls->mdl_duration;
        ev->flags |= ls->flags;
        ev->n_blockers = ls->n_blockers;
        ev->blockers_lost = ls->blockers_lost;
        for (int i = 0; i < MT_MAX_LOCK_BLOCKERS; i++)
            ev->blockers[i] = ls->blockers[i];
        if (ls->ticket) {
            if (off_ticket_type >= 0)
                ev->lock_type = (__s32)read_u32((void *)ls->ticket, off_ticket_type);
            lock = (void *)read_u64((void *)ls->ticket, off_ticket_lock);
            if (lock && off_lock_key >= 0 &&
                bpf_probe_read_user(ev->key, sizeof(ev->key), lock + off_lock_key) == 0)
                ev->key_len = sizeof(ev->key);
        }
    } else {
        ev->start_ns = bpf_ktime_get_ns();
    }
    mt_submit(ring, ev, sizeof(*ev));
}

SEC("uprobe")
int server_lock(struct pt_regs *ctx) {
    __u64 cookie = bpf_get_attach_cookie(ctx);
    __u64 role = cookie & 0xffff;
    struct mt_server_lock_wait_event *ev;
    struct mt_server_lock_edge_event *edge;
    struct lock_state *ls;
    __u64 now, waited;
    void *ring;

    if (!traced())
        return 0;
    ls = lock_state_of(role != LOCK_ROW_EDGE && role != LOCK_ROW_WAITED &&
                       role != LOCK_MDL_GRANT && role != LOCK_ROW_WAIT_BEGIN);
    switch (role) {
    case LOCK_MDL_FIND:
        if (!ls)
            return 0;
        ls->searching = 1;
        ls->visits = 0;
        ls->candidate = 0;
        if (!ls->mdl_start) {  // the first search of this wait
            ls->ticket = 0;
            ls->n_blockers = 0;
            ls->blockers_lost = 0;
        }
        ls->flags |= MT_LOCK_SEARCHED;
        if (!ls->mdl_start)
            ls->mdl_duration = -1;
        return 0;
    case LOCK_MDL_REQUEST:
        if (ls && !ls->mdl_start && (cookie >> 16) < sizeof(struct pt_regs) &&
            off_request_duration >= 0) {
            __u64 req = 0;

            bpf_probe_read_kernel(&req, sizeof(req), (void *)ctx + (cookie >> 16));
            ls->mdl_duration = req ? (__s32)read_u32((void *)req, off_request_duration) : -1;
        }
        return 0;
    case LOCK_MDL_VISIT:
        if (ls && ls->searching && ls->visits++ == 0 && !ls->ticket)
            ls->ticket = PT_REGS_PARM2(ctx);
        return 0;
    case LOCK_MDL_EDGE:
        // Only the waiter's own lock (the search's first): its holders.
        if (ls && ls->searching && ls->visits == 1)
            ls->candidate = PT_REGS_PARM1(ctx);
        return 0;
    case LOCK_MDL_EDGE_RET:
        if (ls && ls->searching && ls->visits == 1 && ls->candidate && (PT_REGS_RC(ctx) & 0xff))
            add_blocker(ls, owner_thread_id(read_u64(
                                (void *)read_u64((void *)ls->candidate, off_ticket_ctx),
                                off_ctx_owner)));
        if (ls)
            ls->candidate = 0;
        return 0;
    case LOCK_MDL_WAIT:
        if (!ls || ls->mdl_start)
            return 0;
        ls->mdl_start = bpf_ktime_get_ns();
        ls->mdl_wait = PT_REGS_PARM1(ctx);
        ls->mdl_owner = PT_REGS_PARM2(ctx);
        // PSI_stage_info_v1 {m_key, m_name, ...}: the name.
        ls->mdl_stage = read_u64((void *)PT_REGS_PARM5(ctx), 8);
        ls->searching = 0;
        lock_open(ls, MT_LOCK_METADATA, ls->mdl_owner ? (void *)(ls->mdl_owner - owner_to_thd) : 0);
        return 0;
    case LOCK_MDL_WAIT_RET:
        if (ls)
            lock_mdl_end(ctx, ls);
        return 0;
    case LOCK_MDL_GRANT:
        if (PT_REGS_PARM2(ctx) == MT_LOCK_GRANTED) {
            __u64 wait = PT_REGS_PARM1(ctx);
            __u32 tid = (__u32)bpf_get_current_pid_tgid();

            bpf_map_update_elem(&mdl_granted_by, &wait, &tid, BPF_ANY);
        }
        return 0;
    case LOCK_ROW_BEGIN:
        if (!ls)
            return 0;
        ls->row_start = bpf_ktime_get_ns();
        ls->row_thd = PT_REGS_PARM1(ctx);
        lock_open(0, MT_LOCK_ROW, (void *)ls->row_thd);
        return 0;
    case LOCK_ROW_END:
        if (!ls || !ls->row_start)
            return 0;
        ev = lock_reserve(&ring);
        if (ev) {
            ev->start_ns = ls->row_start;
            ev->thread_id = thread_id_of((void *)ls->row_thd);
            ev->kind = MT_LOCK_ROW;
            mt_submit(ring, ev, sizeof(*ev));
        }
        ls->row_start = 0;
        return 0;
    case LOCK_ROW_WAIT_BEGIN: {
        struct row_wait rw = {.start = bpf_ktime_get_ns()};
        __u32 tid = (__u32)bpf_get_current_pid_tgid();

        if (bpf_map_update_elem(&row_waits, &tid, &rw, BPF_NOEXIST) == 0)
            __sync_fetch_and_add(&row_waiting, 1);
        else
            bpf_map_update_elem(&row_waits, &tid, &rw, BPF_ANY);
        // The transaction it waits for (MariaDB's trx->lock.wait_trx, set
        // before the wait begins): its THD is the blocker. Only when the
        // register holds the trx whose THD is the one waiting.
        if (off_trx_wait_trx >= 0 && off_trx_thd >= 0 && (cookie >> 16) < sizeof(struct pt_regs)) {
            __u64 trx = 0, waiter = PT_REGS_PARM1(ctx), blocker;

            bpf_probe_read_kernel(&trx, sizeof(trx), (void *)ctx + (cookie >> 16));
            if (trx && waiter && read_u64((void *)trx, off_trx_thd) == waiter) {
                blocker = read_u64((void *)read_u64((void *)trx, off_trx_wait_trx), off_trx_thd);
                edge = blocker && blocker != waiter ? mt_reserve(&ring, MT_EV_SERVER_LOCK_EDGE,
                                                                 sizeof(*edge))
                                                    : 0;
                if (edge) {
                    edge->thread_id = thread_id_of((void *)waiter);
                    edge->blocker = thread_id_of((void *)blocker);
                    mt_submit(ring, edge, sizeof(*edge));
                }
            }
        }
        lock_open(0, MT_LOCK_ROW, (void *)PT_REGS_PARM1(ctx));
        return 0;
    }
    case LOCK_ROW_WAITED: {
        __u32 tid = (__u32)bpf_get_current_pid_tgid();
        struct row_wait *rw = bpf_map_lookup_elem(&row_waits, &tid);

        now = bpf_ktime_get_ns();
        ev = lock_reserve(&ring);
        if (ev) {
            waited = PT_REGS_PARM2(ctx) * row_waited_unit_ns;
            ev->start_ns = waited < now ? now - waited : 0;
            if (rw) {
                ev->start_ns = rw->start;
                ev->granter_tid = rw->waker;
                ev->flags = MT_LOCK_WAKER_SEEN;
            }
        }
        if (rw && bpf_map_delete_elem(&row_waits, &tid) == 0)
            __sync_fetch_and_add(&row_waiting, -1);
        if (!ev)
            return 0;
        ev->thread_id = thread_id_of((void *)PT_REGS_PARM1(ctx));
        ev->kind = MT_LOCK_ROW;
        mt_submit(ring, ev, sizeof(*ev));
        return 0;
    }
    case LOCK_ROW_EDGE:
        if (!PT_REGS_PARM1(ctx) || !PT_REGS_PARM2(ctx))
            return 0;
        edge = mt_reserve(&ring, MT_EV_SERVER_LOCK_EDGE, sizeof(*edge));
        if (!edge)
            return 0;
        edge->thread_id = thread_id_of((void *)PT_REGS_PARM1(ctx));
        edge->blocker = thread_id_of((void *)PT_REGS_PARM2(ctx));
        mt_submit(ring, edge, sizeof(*edge));
        return 0;
    }
    return 0;
}
