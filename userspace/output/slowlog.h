// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server --format slowlog`: statements as the server's own slow
// query log writes them (slow_query_log=1, long_query_time=0), so that
// pt-query-digest and mysqldumpslow read a trace as they read that log.
//
// The layout is MariaDB's (sql/log.cc, MYSQL_QUERY_LOG::write), one record
// per statement:
//
//   # Time: 251125 10:04:05
//   # User@Host: app[app] @ localhost []
//   # Thread_id: 12  Schema: shop  QC_hit: No
//   # Query_time: 0.000151  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 1
//   # Rows_affected: 0
//   use `shop`;
//   SET timestamp=1764061445;
//   SELECT c FROM t WHERE id=7;
//
// with `# Time:` on every record (the server writes it when the second
// changes; pt-query-digest takes both), `use` when the schema differs from
// the last record's, and commands without SQL text as
// `# administrator command: Quit;`. Lock_time is not captured yet: always 0.
#pragma once

#include <cstdint>
#include <string>

#include "output/clock.h"
#include "server/accounts.h"
#include "server/statement.h"

namespace mysqltrace::output {

class SlowlogRenderer {
  public:
    // The record of one statement run by `account`'s connection (empty
    // user and host when not known). Valid until the next call.
    const std::string &statement(const server::Statement &st, const server::Account &account);

  private:
    Clock clock_;
    std::string out_;
    std::string last_db_;  // of the last record: `use` only on a change
    uint64_t time_sec_ = UINT64_MAX;
    std::string time_line_;  // "# Time: ...\n" of time_sec_
};

}  // namespace mysqltrace::output
