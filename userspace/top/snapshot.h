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

struct ServerSnapshot {
    std::string name;  // agent::server_dir_name: mariadb-3306
    int pid = 0;
    std::string flavour, version;
    uint64_t statements = 0, errors = 0;
    // Tracer health: ring records lost, records that could not be decoded.
    uint64_t dropped = 0, undecodable = 0;
    std::vector<ClassSnapshot> classes;
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
