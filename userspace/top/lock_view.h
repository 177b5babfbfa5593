// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace top`'s blocking tree: who blocks whom right now, from the
// lock waits open in the last snapshot (top/snapshot.h, LockWaitRow), as
// sys.innodb_lock_waits and sys.schema_table_lock_waits present them: each
// blocker with its current or last statement and its transaction's age,
// and under it the connections waiting for it, how long they have waited
// and for what. The screen shows it on `l`; the batch mode after the table.
#pragma once

#include <string>
#include <vector>

#include "top/snapshot.h"

namespace mysqltrace::top {

// The tree of every server whose lock waits are traced, cut to `width`;
// "lock waits: none now" when no one waits, and a line saying how to turn
// the tracing on when no server has it.
std::vector<std::string> lock_lines(const Snapshot &s, size_t width);

// The number of waits open now (waiting connections) over every server.
size_t lock_waiters(const Snapshot &s);

}  // namespace mysqltrace::top
