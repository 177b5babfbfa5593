// SPDX-License-Identifier: GPL-2.0-only
// Transactions (server --transactions) as text lines or
// events_transactions_*-shaped JSON objects (server/transactions.h).
#pragma once

#include <cstdint>
#include <string>

#include "output/clock.h"
#include "server/transactions.h"

namespace mysqltrace::output {

// "HH:MM:SS.uuuuuu THREAD_ID duration transaction COMMITTED autocommit=NO
// READ WRITE REPEATABLE READ statements=3"
void transaction_text(std::string &out, const Clock &clock, const server::Transaction &t);
// One JSON object and a newline: "kind":"transaction", THREAD_ID, EVENT_ID,
// END_EVENT_ID, EVENT_NAME "transaction", STATE, TIMER_START/END/WAIT
// (picoseconds), ACCESS_MODE, ISOLATION_LEVEL, AUTOCOMMIT, the columns the
// tracer does not know as null (TRX_ID, GTID, XID_*, XA_STATE, SOURCE,
// NESTING_*), and "statements".
void transaction_json(std::string &out, uint32_t pid, const server::Transaction &t);

}  // namespace mysqltrace::output
