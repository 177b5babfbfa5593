// SPDX-License-Identifier: GPL-2.0-only
// What the `mysqltrace server` tests do to a throwaway server of the harness:
// connect, run statements and read all they return, wait until a connection
// is gone, and start the tracer on the server.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <mysql.h>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"

namespace mysqltrace::test {

// A connection over `server`'s socket to `db` (nullptr: none), as the
// harness's user unless `user` is given. A refused connection fails the test
// (not fatally) and is returned anyway, as mysql_init made it.
MYSQL *connect_to(const MariadbServer &server, unsigned long flags = 0, const char *db = nullptr,
                  const std::string &user = "", const std::string &password = "");

// Runs `sql` and reads every result it produces; returns the error number.
unsigned run_query(MYSQL *m, const std::string &sql);

// Prepares `sql`, executes it with one int parameter, closes it.
void run_prepared(MYSQL *m, const std::string &sql, int v);

// Returns once `server` has finished with connection `id` (its COM_QUIT has
// been dispatched), so a trace holds everything it did.
void wait_gone(MariadbServer &server, unsigned long id);

// `mysqltrace server --pid <server's pid>` followed by `extra`.
std::vector<std::string> server_tracer_argv(const MariadbServer &server,
                                            const std::vector<std::string> &extra);

// That command in the background, once it says it is tracing (a test
// failure if it does not).
std::unique_ptr<BackgroundCommand> start_server_tracer(const MariadbServer &server,
                                                       const std::vector<std::string> &extra);

}  // namespace mysqltrace::test
