// SPDX-License-Identifier: GPL-2.0-only
// `server --format slowlog` records, as MariaDB's slow log lays them out.
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "output/slowlog.h"

namespace {

using mysqltrace::server::Account;
using mysqltrace::server::Statement;

Statement statement(std::string text, std::string db) {
    Statement st;
    st.thread_id = 12;
    st.command = 3;  // COM_QUERY
    st.start_ns = 1'000'000'000;
    st.end_ns = 1'000'151'500;
    st.text = std::move(text);
    st.db = std::move(db);
    st.rows_sent = 1;
    st.rows_examined = 7;
    st.rows_affected = 0;
    return st;
}

// "# Time: YYMMDD HH:MM:SS\n" (local time: not compared), then the rest.
std::string without_time(const std::string &record) {
    static const std::regex time_line("^# Time: [0-9]{6} [ 0-9][0-9]:[0-9]{2}:[0-9]{2}\n");
    EXPECT_TRUE(std::regex_search(record, time_line)) << record;
    return std::regex_replace(record, time_line, "");
}

// SET timestamp=N: the wall clock second of the start (not compared).
std::string without_timestamp(const std::string &record) {
    static const std::regex ts("SET timestamp=[0-9]+;\n");
    EXPECT_TRUE(std::regex_search(record, ts)) << record;
    return std::regex_replace(record, ts, "SET timestamp=T;\n");
}

TEST(Slowlog, RecordsAsMariadbWritesThem) {
    mysqltrace::output::SlowlogRenderer r;
    const Account local{12, "app", "localhost"};
    auto st = statement("SELECT c FROM t WHERE id=7", "shop");
    EXPECT_EQ(without_timestamp(without_time(r.statement(st, local))),
              "# User@Host: app[app] @ localhost []\n"
              "# Thread_id: 12  Schema: shop  QC_hit: No\n"
              "# Query_time: 0.000152  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 7\n"
              "# Rows_affected: 0\n"
              "use `shop`;\n"
              "SET timestamp=T;\n"
              "SELECT c FROM t WHERE id=7;\n");
    // The same schema again: no `use`; an address is the IP field.
    st.rows_affected = 2;
    st.text = "update t set a = 1\nwhere id = 2";
    EXPECT_EQ(without_timestamp(without_time(r.statement(st, {13, "app", "127.0.0.1"}))),
              "# User@Host: app[app] @  [127.0.0.1]\n"
              "# Thread_id: 12  Schema: shop  QC_hit: No\n"
              "# Query_time: 0.000152  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 7\n"
              "# Rows_affected: 2\n"
              "SET timestamp=T;\n"
              "update t set a = 1\nwhere id = 2;\n");
}

TEST(Slowlog, CommandsWithoutTextAreAdministratorCommands) {
    mysqltrace::output::SlowlogRenderer r;
    auto quit = statement("", "");
    quit.command = 1;  // COM_QUIT
    quit.rows_sent = quit.rows_examined = 0;
    EXPECT_EQ(without_timestamp(without_time(r.statement(quit, Account{}))),
              "# User@Host: [] @  []\n"
              "# Thread_id: 12  Schema:   QC_hit: No\n"
              "# Query_time: 0.000152  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0\n"
              "# Rows_affected: 0\n"
              "SET timestamp=T;\n"
              "# administrator command: Quit;\n");
}

}  // namespace
