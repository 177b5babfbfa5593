// SPDX-License-Identifier: GPL-2.0-only
// Lock waits (server --locks): the records of bpf/server_locks.bpf.h
// decoded, named as performance_schema names them (metadata_locks,
// data_lock_waits), joined with the statements the tracer sees (who the
// blocker is, what it ran last, since when its transaction is open), and
// the blocking tree of the whole trace.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "server/statement.h"
#include "sql/tables.h"

namespace mysqltrace::server {

enum class LockKind : uint32_t { metadata = 1, row = 2 };

struct LockWait {
    uint32_t tid = 0;  // OS thread of the waiter
    uint64_t start_ns = 0, end_ns = 0;
    uint64_t thread_id = 0;  // the waiting connection
    LockKind kind = LockKind::metadata;
    uint32_t status = 0;         // enum mt_lock_status
    int32_t lock_type = -1;      // the build's enum_mdl_type value
    int32_t lock_duration = -1;  // enum_mdl_duration
    uint64_t stage = 0;          // MDL: the wait's stage name (server address)
    std::vector<uint64_t> blockers;
    uint32_t blockers_lost = 0;
    bool searched = false;     // the MDL blocker search ran
    uint32_t granter_tid = 0;  // the OS thread whose release granted it (0: none seen)
    bool waker_seen = false;   // InnoDB: granter_tid is who woke the waiter
    bool open = false;         // MT_LOCK_OPEN: it began, its end is to come
    std::string query;         // open: the start of the waiting statement's text
    bool query_cut = false;    // ... not all of it
    std::vector<uint8_t> key;  // raw MDL_key
};

struct LockEdge {
    uint64_t ts_ns = 0;
    uint64_t thread_id = 0;  // waits for
    uint64_t blocker = 0;
};

bool decode_lock_wait(std::span<const uint8_t> rec, LockWait *out);
bool decode_lock_edge(std::span<const uint8_t> rec, LockEdge *out);

// An MDL_key as both servers lay it out: 2-byte total and schema lengths,
// then (after other fields of the build) the namespace byte, the schema
// and the name, each NUL-terminated. The start of that part is the one
// offset where all of it holds; false when none or several do.
bool parse_mdl_key(std::span<const uint8_t> key, int *ns, std::string *schema, std::string *name);

// performance_schema's OBJECT_TYPE of a namespace and LOCK_TYPE of an
// enum_mdl_type value ("TABLE", "SHARED_READ"), for the server's flavour
// (their enums differ); "" when out of range.
std::string mdl_object_type(int ns, bool mysql8);
std::string mdl_lock_type(int type, bool mysql8);

// A blocker as the tree and the reports show it.
struct Blocker {
    uint64_t thread_id = 0;
    std::string sql;            // its current or last statement seen ("" unknown)
    uint64_t trx_start_ns = 0;  // its open transaction began (0: not known)
};

// One wait, ready to print.
struct LockWaitReport {
    LockWait wait;
    // MDL: the lock's key. InnoDB: the one table the waiting statement
    // names (sql/tables.h), "" when it names several or none.
    std::string object_type, schema, name, lock_type, lock_duration;
    std::string stage;       // MDL: the wait's stage name
    std::string waiter_sql;  // the statement that waited
    // How it ended: GRANTED, TIMEOUT, DEADLOCK, KILLED, or "" (not known).
    std::string outcome;
    // The blockers were searched (MDL) or reported (InnoDB edges): an empty
    // list is then "none found", else "not known in this build".
    bool blockers_known = false;
    std::vector<Blocker> blockers;
    // An InnoDB wait with no blocker known but its table: the other
    // connections whose transaction, open from before the wait to its end,
    // ran a statement that takes row locks on that table (UPDATE, DELETE,
    // INSERT, REPLACE, a locking SELECT). One of them held the row, or
    // none did (a transaction the trace saw no BEGIN of); `sql` is that
    // statement.
    std::vector<Blocker> possible_blockers;
};

// A deadlock or a lock wait timeout, from the statement that failed with it.
struct LockIncident {
    std::string event;  // "deadlock" or "lock_wait_timeout"
    uint64_t thread_id = 0;
    uint64_t ts_ns = 0;
    uint32_t error = 0;
    std::string sql;
};

// One edge of the blocking tree: `waiter` waited for `blocker`.
struct BlockingEdge {
    uint64_t blocker = 0, waiter = 0;
    LockKind kind = LockKind::metadata;
    std::string object;  // "TABLE test.t2" / "" (row locks: the waiter's statement says)
    uint64_t waits = 0, wait_ns = 0;
    std::string blocking_sql, waiting_sql;
    uint64_t blocking_trx_start_ns = 0;
    uint64_t last_end_ns = 0;
};

// A wait open now, with one of its blockers (sys.innodb_lock_waits and
// sys.schema_table_lock_waits: a row per waiter and blocker; blocker 0
// when none is known).
struct LiveLockWait {
    uint64_t waiter = 0;
    LockKind kind = LockKind::metadata;
    uint64_t start_ns = 0;
    std::string object;      // "TABLE lk.t2" ("": not known while it waits)
    std::string lock_type;   // MDL: "EXCLUSIVE"
    std::string stage;       // MDL: "Waiting for table metadata lock"
    std::string waiter_sql;  // the start of the waiting statement's text ("": not read)
    Blocker blocker;
    // Not a certain holder (an InnoDB wait of a build whose edges are not
    // seen): a connection whose open transaction took row locks before the
    // wait began.
    bool possible = false;
};

class LockTracker {
  public:
    // `stage_name` reads a stage name at a server address.
    LockTracker(bool mysql8, std::function<std::string(uint64_t)> stage_name);

    void on_record(std::span<const uint8_t> rec);
    // Call for every statement, in order: the waits of its thread that
    // ended before it come out (take()), with their blockers.
    void on_statement(const Statement &st);
    // Waits and incidents ready to print since the last call; `all`: also
    // those still waiting for their statement (the trace's end).
    std::vector<LockWaitReport> take_waits(bool all = false);
    std::vector<LockIncident> take_incidents();
    // The blocking tree: every edge seen, roots (blockers that waited for
    // no one) first.
    std::vector<BlockingEdge> tree() const;
    uint64_t undecodable() const { return undecodable_; }
    // The waits open now, oldest first, each with its blockers: MDL's
    // deadlock search, plus on MySQL the connections whose transaction,
    // open since before the wait, ran a statement naming the table when
    // the lock requested conflicts with what that statement holds (its
    // "fast path" locks are not in the search); InnoDB's edges (MySQL's
    // reported ones, MariaDB's wait_trx) or else the possible blockers.
    std::vector<LiveLockWait> live() const;
    // Forgets connections whose last statement began before `before_ns`
    // with no transaction open, and the tree: a long-running tracer (the
    // agent) that only asks live().
    void prune(uint64_t before_ns);
    // The build reports InnoDB's wait-for edges (LockLayout::row_blockers).
    void set_row_blockers(bool known) { row_blockers_ = known; }

  private:
    // `error`: the waiting statement's error if this wait was its last.
    // `waiter`: the statement that waited (nullptr: it never ended);
    // `error`: how it ended, for its last wait.
    LockWaitReport report(const LockWait &w, const Statement *waiter, uint32_t error);
    Blocker blocker(uint64_t id, uint64_t at_ns) const;
    std::vector<Blocker> possible_blockers(const LockWait &w, const LockWaitReport &r) const;
    bool mysql8_;
    std::function<std::string(uint64_t)> stage_name_;
    std::vector<LockWait> pending_;  // waiting for their statement's end
    std::vector<LockWait> open_;     // begun, not ended
    std::vector<uint64_t> fast_path_holders(const LockWait &w, const std::string &schema,
                                            const std::string &name) const;
    std::vector<Blocker> row_lockers(const LockWait &w) const;
    struct Seen;
    // Each other connection whose transaction is open now and began before
    // `w`, with the first statement of it before `w` that `keep` takes (the
    // last one when `latest`); connections with none are left out.
    std::vector<Blocker> in_open_transactions(const LockWait &w, bool latest,
                                              const std::function<bool(const Seen &)> &keep) const;
    // Whether statement `s` names `table` (its schema, if unnamed, the
    // statement's CURRENT_SCHEMA).
    static bool names_table(const Seen &s, const sql::TableName &table);
    std::unordered_map<uint64_t, std::vector<LockEdge>> edges_;  // by waiter
    // The last statements of each connection, oldest first: a blocker's
    // statement is the one it ran when the wait began.
    struct Seen {
        uint64_t start_ns = 0;
        std::string sql;
        uint64_t trx_start_ns = 0;  // its transaction's start after it (0: none known)
        std::string db;             // its CURRENT_SCHEMA
        uint32_t error = 0;
    };
    std::unordered_map<uint64_t, std::deque<Seen>> conns_;
    std::string head_;  // on_statement's, reused
    bool row_blockers_ = false;
    std::unordered_map<uint32_t, uint64_t> conn_of_tid_;  // OS thread -> connection
    std::vector<LockWaitReport> ready_;
    std::vector<LockIncident> incidents_;
    std::map<std::tuple<uint64_t, uint64_t, uint32_t, std::string>, BlockingEdge> tree_;
    uint64_t undecodable_ = 0;
};

}  // namespace mysqltrace::server
