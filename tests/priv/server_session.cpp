// SPDX-License-Identifier: GPL-2.0-only
#include "priv/server_session.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace mysqltrace::test {

MYSQL *connect_to(const MariadbServer &server, unsigned long flags, const char *db,
                  const std::string &user, const std::string &password) {
    MYSQL *m = mysql_init(nullptr);
    const std::string &u = user.empty() ? server.user() : user;
    const std::string &p = user.empty() ? server.password() : password;
    EXPECT_NE(mysql_real_connect(m, nullptr, u.c_str(), p.c_str(), db, 0,
                                 server.socket_path().c_str(), flags),
              nullptr)
        << mysql_error(m);
    return m;
}

unsigned run_query(MYSQL *m, const std::string &sql) {
    if (mysql_query(m, sql.c_str()) != 0) {
        return mysql_errno(m);
    }
    do {
        mysql_free_result(mysql_store_result(m));
    } while (mysql_next_result(m) == 0);
    return mysql_errno(m);
}

void run_prepared(MYSQL *m, const std::string &sql, int v) {
    MYSQL_STMT *st = mysql_stmt_init(m);
    ASSERT_EQ(mysql_stmt_prepare(st, sql.c_str(), sql.size()), 0) << mysql_stmt_error(st);
    MYSQL_BIND b{};
    b.buffer_type = MYSQL_TYPE_LONG;
    b.buffer = &v;
    ASSERT_EQ(mysql_stmt_bind_param(st, &b), 0);
    ASSERT_EQ(mysql_stmt_execute(st), 0) << mysql_stmt_error(st);
    mysql_stmt_store_result(st);
    mysql_stmt_close(st);
}

void wait_gone(MariadbServer &server, unsigned long id) {
    for (int i = 0; i < 200; i++) {
        auto rows = server.query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = " +
                                 std::to_string(id));
        ASSERT_TRUE(rows.ok()) << rows.error().message;
        if ((*rows)[0][0] == "0") {
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "connection " << id << " did not go away";
}

std::vector<std::string> server_tracer_argv(const MariadbServer &server,
                                            const std::vector<std::string> &extra) {
    std::vector<std::string> argv = {MYSQLTRACE_BINARY, "server", "--pid",
                                     std::to_string(server.pid())};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
}

std::unique_ptr<BackgroundCommand> start_server_tracer(const MariadbServer &server,
                                                       const std::vector<std::string> &extra) {
    auto t = std::make_unique<BackgroundCommand>(server_tracer_argv(server, extra));
    EXPECT_TRUE(t->wait_for_stderr("Ctrl-C to stop"));
    return t;
}

}  // namespace mysqltrace::test
