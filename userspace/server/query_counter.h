// SPDX-License-Identifier: GPL-2.0-only
// The server's global query id counter, read from its memory: an exact,
// free count of the statements it ran (the probe never fires for it).
// MariaDB exports `global_query_id`, MySQL 8.0+ `atomic_global_query_id`,
// both 8 bytes. On both (measured, docs/server.md) a query id is taken by
// each statement of a COM_QUERY (each part of a multi-statement one), each
// statement inside a stored program, COM_QUIT, and on MySQL COM_PING; each
// of those but the stored-program statements reaches log_slow_statement.
#pragma once

#include <cstdint>
#include <string>

#include "server/server_target.h"
#include "util/result.h"

namespace mysqltrace::server {

class QueryIdCounter {
  public:
    // An error when the build exports neither symbol, or reading it fails.
    static Result<QueryIdCounter> open(const ServerTarget &target);
    // The counter now; an error when the process's memory cannot be read.
    Result<uint64_t> read() const;
    const std::string &symbol() const { return symbol_; }

  private:
    pid_t pid_ = 0;
    uint64_t addr_ = 0;
    std::string symbol_;
};

}  // namespace mysqltrace::server
