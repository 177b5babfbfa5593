// SPDX-License-Identifier: GPL-2.0-only
// Lock waits, deadlocks, lock wait timeouts and the blocking tree of
// `server --locks` (server/locks.h), as text lines or JSON objects with
// performance_schema's column names (metadata_locks, data_lock_waits) and
// the sys schema's for the tree (sys.innodb_lock_waits,
// sys.schema_table_lock_waits).
#pragma once

#include <string>
#include <vector>

#include "server/locks.h"

namespace mysqltrace::output {

// EVENT_NAME of a wait of each kind.
inline constexpr const char *kMetadataLockWait = "wait/lock/metadata/sql/mdl";
inline constexpr const char *kRowLockWait = "wait/lock/innodb/row_lock";

std::string lock_wait_text(const server::LockWaitReport &r);
std::string lock_wait_json(const server::LockWaitReport &r);
std::string lock_incident_text(const server::LockIncident &i);
std::string lock_incident_json(const server::LockIncident &i);
// The tree at the end of a trace; "" when no wait had a known blocker.
std::string blocking_tree_text(const std::vector<server::BlockingEdge> &edges);
std::string blocking_tree_json(const std::vector<server::BlockingEdge> &edges);

}  // namespace mysqltrace::output
