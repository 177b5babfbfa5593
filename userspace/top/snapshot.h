// SPDX-License-Identifier: GPL-2.0-only
// What `mysqltrace top` shows of the servers traced: each server's labels
// and health, and its statement classes' totals (output/statement_stats.h)
// with the latency percentiles, the stages that took most of a class's
// time and its last statements. The agent sends it as one JSON document on
// its control socket; `top --pid` builds it from its own tracer. Every
// count is a total since the server was attached: `top` makes rates from
// two snapshots and their `now_ns`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "output/statement_stats.h"
#include "util/result.h"

namespace mysqltrace::top {

struct StageShare {
    std::string name;
    uint64_t ns = 0;
};

struct ClassSnapshot {
    std::string schema, user, event_name, digest;
    uint64_t calls = 0, errors = 0;
    uint64_t time_ns = 0, max_ns = 0, p50_ns = 0, p99_ns = 0;
    uint64_t rows_sent = 0, rows_examined = 0, rows_affected = 0;
    std::vector<StageShare> stages;  // most time first, at most kTopStages
    // Newest first.
    std::vector<output::RecentStatement> recent;
};

// A lock wait open when the snapshot was taken, with one of its blockers,
// as sys.innodb_lock_waits and sys.schema_table_lock_waits present them (a
// row per waiter and blocker).
struct LockWaitRow {
    uint64_t waiting_pid = 0;          // the waiter's connection id
    uint64_t blocking_pid = 0;         // 0: no blocker known
    std::string lock_kind;             // "metadata" or "row"
    std::string locked_object;         // "TABLE lk.t2" ("" not known)
    std::string lock_type;             // metadata: "EXCLUSIVE"
    std::string wait_stage;            // metadata: "Waiting for table metadata lock"
    uint64_t wait_ns = 0;              // how long it has waited
    std::string blocking_query;        // the blocker's current or last statement seen
    uint64_t blocking_trx_age_ns = 0;  // since its BEGIN (0: not known)
    // Not a certain holder (server/locks.h, LiveLockWait::possible).
    bool possible = false;
    // The start of the waiting statement's text (redacted; "": not read).
    std::string waiting_query;
};

struct ServerSnapshot {
    std::string name;  // agent::server_dir_name: mariadb-3306
    int pid = 0;
    std::string flavour, version;
    uint64_t statements = 0, errors = 0;
    // Tracer health: ring records lost, records that could not be decoded.
    uint64_t dropped = 0, undecodable = 0;
    std::vector<ClassSnapshot> classes;
    bool locks = false;                   // its lock waits are traced
    std::vector<LockWaitRow> lock_waits;  // oldest wait first
};

struct Snapshot {
    uint64_t now_ns = 0;  // CLOCK_MONOTONIC when it was taken
    std::vector<ServerSnapshot> servers;
};

inline constexpr size_t kTopStages = 5;

// A server's classes from its totals (other() too once it has calls):
// percentiles from the latency histogram, the kTopStages stages with the
// most time, the recent statements newest first.
std::vector<ClassSnapshot> snapshot_classes(const output::StatementStats &stats);

nlohmann::json to_json(const Snapshot &s);
std::string to_json_text(const Snapshot &s);
// The document to_json_text wrote; an error naming what is missing.
Result<Snapshot> parse_snapshot(const std::string &text);

}  // namespace mysqltrace::top
