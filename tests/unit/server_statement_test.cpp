// SPDX-License-Identifier: GPL-2.0-only
// Statement records from bpf/server.bpf.c: decoding, names, digests and the
// renderings built from them.
#include <cstring>
#include <vector>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "output/server_render.h"
#include "server/accounts.h"
#include "server/statement.h"

namespace {

using mysqltrace::server::Statement;

// A record as the BPF side writes it: fixed part, marks, samples, message,
// db, text.
std::vector<uint8_t> record(mt_server_statement_event ev, const std::vector<mt_stage_mark> &marks,
                            const std::string &message, const std::string &db,
                            const std::string &text,
                            const std::vector<mt_stage_samples> &samples = {}) {
    ev.hdr.type = MT_EV_SERVER_STATEMENT;
    ev.n_stages = static_cast<uint16_t>(marks.size());
    ev.n_samples = static_cast<uint16_t>(samples.size());
    ev.message_len = static_cast<uint16_t>(message.size());
    ev.db_len = static_cast<uint16_t>(db.size());
    ev.text_copied = static_cast<uint32_t>(text.size());
    std::vector<uint8_t> r(sizeof(ev));
    for (const auto &m : marks) {
        const auto *p = reinterpret_cast<const uint8_t *>(&m);
        r.insert(r.end(), p, p + sizeof(m));
    }
    for (const auto &smp : samples) {
        const auto *p = reinterpret_cast<const uint8_t *>(&smp);
        r.insert(r.end(), p, p + sizeof(smp));
    }
    for (const std::string *s : {&message, &db, &text}) {
        r.insert(r.end(), s->begin(), s->end());
    }
    ev.hdr.size = static_cast<uint32_t>(r.size());
    std::memcpy(r.data(), &ev, sizeof(ev));
    return r;
}

mt_server_statement_event base_event() {
    mt_server_statement_event ev{};
    ev.hdr.tid = 77;
    ev.hdr.ts_ns = 5'000'000;
    ev.start_ns = 1'000'000;
    ev.thread_id = 12;
    ev.command = 3;
    ev.flags = MT_STMT_ENDED;
    return ev;
}

TEST(ServerStatement, DecodesEveryPart) {
    auto ev = base_event();
    ev.da_status = 5;
    ev.error = 1146;
    std::memcpy(ev.sqlstate, "42S02", 6);
    ev.text_len = 20;
    ev.rows_examined = 3;
    ev.begin.cpu_ns = 100;
    ev.end.cpu_ns = 400;
    ev.end.utime_ns = 3;
    ev.end.stime_ns = 1;
    mt_stage_mark m{};
    m.ts_ns = 2'000'000;
    m.site = 7;
    m.c.cpu_ns = 150;
    auto rec =
        record(ev, {m}, "Table 'x.t' doesn't exist", "x", "select * from t", {{0x1000, 4, 1, 250}});

    Statement st;
    ASSERT_TRUE(mysqltrace::server::decode_statement(rec, &st));
    EXPECT_EQ(st.tid, 77u);
    EXPECT_EQ(st.thread_id, 12u);
    EXPECT_EQ(st.start_ns, 1'000'000u);
    EXPECT_EQ(st.end_ns, 5'000'000u);
    EXPECT_TRUE(st.failed());
    EXPECT_EQ(st.error, 1146u);
    EXPECT_EQ(st.sqlstate, "42S02");
    EXPECT_EQ(st.message, "Table 'x.t' doesn't exist");
    EXPECT_EQ(st.db, "x");
    EXPECT_EQ(st.text, "select * from t");
    EXPECT_TRUE(st.truncated());  // 15 of 20 bytes
    ASSERT_EQ(st.stages.size(), 1u);
    EXPECT_EQ(st.stages[0].site, 7u);
    EXPECT_EQ(st.stages[0].counters.cpu_ns, 150u);
    ASSERT_EQ(st.samples.size(), 1u);
    EXPECT_EQ(st.samples[0].stage, 0x1000u);
    EXPECT_EQ(st.samples[0].on_cpu, 4u);
    EXPECT_EQ(st.samples[0].switches, 1u);
    EXPECT_EQ(st.samples[0].off_cpu_ns, 250u);
    const auto used = st.begin.until(st.end);
    EXPECT_EQ(used.cpu_ns, 300u);
    EXPECT_EQ(used.user_ns(), 225u);  // 3:1 as the sampled utime:stime
    EXPECT_EQ(used.system_ns(), 75u);
}

TEST(ServerStatement, RejectsMalformedRecords) {
    auto rec = record(base_event(), {}, "", "", "select 1");
    Statement st;
    EXPECT_FALSE(mysqltrace::server::decode_statement(
        std::span<const uint8_t>(rec.data(), rec.size() - 1), &st));
    auto bad = rec;
    reinterpret_cast<mt_server_statement_event *>(bad.data())->text_copied = 100;
    EXPECT_FALSE(mysqltrace::server::decode_statement(bad, &st));
    bad = rec;
    reinterpret_cast<mt_server_statement_event *>(bad.data())->hdr.type = MT_EV_SOCK;
    EXPECT_FALSE(mysqltrace::server::decode_statement(bad, &st));
    // More stage sample slots than a statement can fill.
    std::vector<mt_stage_samples> many(MT_STAGE_SLOTS + 1);
    bad = record(base_event(), {}, "", "", "", many);
    EXPECT_FALSE(mysqltrace::server::decode_statement(bad, &st));
    EXPECT_TRUE(mysqltrace::server::decode_statement(rec, &st));
}

TEST(ServerAccount, DecodesNamesAndRejectsGarbage) {
    mt_server_account_event ev{};
    ev.hdr.type = MT_EV_SERVER_ACCOUNT;
    ev.hdr.size = sizeof(ev);
    ev.thread_id = 42;
    std::strcpy(ev.user, "app");
    std::strcpy(ev.host, "10.0.0.7");
    auto bytes = [](const mt_server_account_event &e) {
        const auto *p = reinterpret_cast<const uint8_t *>(&e);
        return std::vector<uint8_t>(p, p + sizeof(e));
    };
    mysqltrace::server::Account a;
    ASSERT_TRUE(mysqltrace::server::decode_account(bytes(ev), &a));
    EXPECT_EQ(a.thread_id, 42u);
    EXPECT_EQ(a.actor(), "app@10.0.0.7");
    // A system thread has no user; a name with control bytes or no
    // terminator is not trusted.
    ev.user[0] = '\0';
    ASSERT_TRUE(mysqltrace::server::decode_account(bytes(ev), &a));
    EXPECT_EQ(a.actor(), "");
    std::strcpy(ev.user, "a\x01b");
    std::memset(ev.host, 'h', sizeof(ev.host));
    ASSERT_TRUE(mysqltrace::server::decode_account(bytes(ev), &a));
    EXPECT_EQ(a.user, "");
    EXPECT_EQ(a.host, "");
    auto rec = bytes(ev);
    EXPECT_FALSE(mysqltrace::server::decode_account(
        std::span<const uint8_t>(rec.data(), rec.size() - 1), &a));
    ev.hdr.type = MT_EV_SERVER_WAIT;
    EXPECT_FALSE(mysqltrace::server::decode_account(bytes(ev), &a));

    mysqltrace::server::Accounts accounts;
    accounts.add({7, "root", "localhost"});
    EXPECT_EQ(accounts.of(7).actor(), "root@localhost");
    EXPECT_EQ(accounts.of(8).actor(), "");
    accounts.add({7, "app", ""});  // after COM_CHANGE_USER
    EXPECT_EQ(accounts.of(7).actor(), "app");
}

TEST(ServerStatement, SplitStatementsLoseTheirDelimiter) {
    auto ev = base_event();
    ev.flags = MT_STMT_SPLIT;
    ev.text_len = 11;
    auto rec = record(ev, {}, "", "", "select 1;  ");
    Statement st;
    ASSERT_TRUE(mysqltrace::server::decode_statement(rec, &st));
    EXPECT_EQ(st.text, "select 1");
    EXPECT_FALSE(st.truncated());
}

TEST(ServerStatement, FirstStatementEnd) {
    using mysqltrace::server::first_statement_end;
    EXPECT_EQ(first_statement_end("select 1; select 2"), 8u);
    EXPECT_EQ(first_statement_end("select 1;"), 9u);  // nothing follows: the whole text
    EXPECT_EQ(first_statement_end("select ';' ; select 2"), 11u);
    EXPECT_EQ(first_statement_end("select \"a;\", `b;` ; x"), 18u);
    EXPECT_EQ(first_statement_end("select 'it\\'s;' ; x"), 16u);
    EXPECT_EQ(first_statement_end("select 1 /* ; */ -- ;\n; x"), 22u);
    EXPECT_EQ(first_statement_end("select 1 # ;\n"), 13u);
}

TEST(ServerStatement, FailedStatementOfAMultiQueryKeepsItsOwnText) {
    auto ev = base_event();
    ev.da_status = 5;
    ev.error = 1146;
    const std::string text = "select * from nosuch; select 4";
    ev.text_len = static_cast<uint32_t>(text.size());
    auto rec = record(ev, {}, "Table 'x.nosuch' doesn't exist", "x", text);
    Statement st;
    ASSERT_TRUE(mysqltrace::server::decode_statement(rec, &st));
    EXPECT_EQ(st.text, "select * from nosuch");
    EXPECT_FALSE(st.truncated());
}

// The one-probe path: the THD's text at log_slow_statement may run on to
// the end of a multi-statement query; each statement keeps its own text,
// its Lock_time and the start the probe read.
TEST(ServerStatement, OneProbeRecordsCutTheirTextAndKeepLockTime) {
    auto ev = base_event();
    ev.flags = MT_STMT_ENDED | MT_STMT_ONEPASS;
    ev.lock_ns = 42'000;
    ev.rows_sent = 1;
    const std::string text = "select count(*) from t ;\n delete from t where a = ';'";
    ev.text_len = static_cast<uint32_t>(text.size());
    auto rec = record(ev, {}, "", "db", text);
    Statement st;
    ASSERT_TRUE(mysqltrace::server::decode_statement(rec, &st));
    EXPECT_TRUE(st.one_probe());
    EXPECT_EQ(st.text, "select count(*) from t");
    EXPECT_EQ(st.text_len, st.text.size());
    EXPECT_FALSE(st.truncated());
    EXPECT_EQ(st.lock_ns, 42'000u);
    EXPECT_EQ(st.start_ns, 1'000'000u);
    EXPECT_EQ(st.end_ns, 5'000'000u);
    EXPECT_EQ(st.db, "db");
    EXPECT_EQ(st.rows_sent, 1u);

    // The last statement of the query, or a single one: as it is.
    ev.text_len = 30;
    rec = record(ev, {}, "", "db", "delete from t where a = ';' ; ");
    ASSERT_TRUE(mysqltrace::server::decode_statement(rec, &st));
    EXPECT_EQ(st.text, "delete from t where a = ';' ; ");

    // Cut by --max-sql before the delimiter: still marked as cut.
    ev.text_len = 100;
    rec = record(ev, {}, "", "db", "select 'a;b'");
    ASSERT_TRUE(mysqltrace::server::decode_statement(rec, &st));
    EXPECT_EQ(st.text, "select 'a;b'");
    EXPECT_TRUE(st.truncated());
}

TEST(ServerStatement, CutToFirstStatement) {
    using mysqltrace::server::cut_to_first_statement;
    std::string t = "select 1;  select 2";
    uint32_t len = 19;
    EXPECT_TRUE(cut_to_first_statement(t, &len));
    EXPECT_EQ(t, "select 1");
    EXPECT_EQ(len, 8u);
    t = "select 1 \t;select 2";
    EXPECT_TRUE(cut_to_first_statement(t, &len));
    EXPECT_EQ(t, "select 1");
    t = "select 1;";
    len = 9;
    EXPECT_FALSE(cut_to_first_statement(t, &len));
    EXPECT_EQ(t, "select 1;");
    EXPECT_EQ(len, 9u);
}

TEST(ServerStatement, SqlCommandNamesFollowTheServersInstruments) {
    using mysqltrace::server::sql_command_name;
    EXPECT_EQ(sql_command_name("select 1"), "select");
    EXPECT_EQ(sql_command_name("  /* hint */ SELECT 1"), "select");
    EXPECT_EQ(sql_command_name("(select 1) union (select 2)"), "select");
    EXPECT_EQ(sql_command_name("insert into t values (1)"), "insert");
    EXPECT_EQ(sql_command_name("INSERT INTO t SELECT * FROM u"), "insert_select");
    EXPECT_EQ(sql_command_name("replace into t values (1)"), "replace");
    EXPECT_EQ(sql_command_name("update t set a = 1"), "update");
    EXPECT_EQ(sql_command_name("delete from t"), "delete");
    EXPECT_EQ(sql_command_name("create table t (a int)"), "create_table");
    EXPECT_EQ(sql_command_name("CREATE OR REPLACE TABLE t (a int)"), "create_table");
    EXPECT_EQ(sql_command_name("create temporary table t (a int)"), "create_table");
    EXPECT_EQ(sql_command_name("create database d"), "create_db");
    EXPECT_EQ(sql_command_name("drop table t"), "drop_table");
    EXPECT_EQ(sql_command_name("alter table t add b int"), "alter_table");
    EXPECT_EQ(sql_command_name("set @a = 1"), "set_option");
    EXPECT_EQ(sql_command_name("show variables like 'x'"), "show_variables");
    EXPECT_EQ(sql_command_name("show full processlist"), "show_processlist");
    EXPECT_EQ(sql_command_name("show global status"), "show_status");
    EXPECT_EQ(sql_command_name("show columns from t"), "show_fields");
    EXPECT_EQ(sql_command_name("start transaction"), "begin");
    EXPECT_EQ(sql_command_name("use mysql"), "change_db");
    EXPECT_EQ(sql_command_name("prepare s from 'select 1'"), "prepare_sql");
    EXPECT_EQ(sql_command_name("execute s"), "execute_sql");
    EXPECT_EQ(sql_command_name("deallocate prepare s"), "dealloc_sql");
    EXPECT_EQ(sql_command_name("explain select 1"), "select");
    EXPECT_EQ(sql_command_name("xyzzy"), "");
    EXPECT_EQ(sql_command_name(""), "");
}

TEST(ServerStatement, EventNames) {
    Statement st;
    st.command = 3;
    st.text = "select 1";
    EXPECT_EQ(mysqltrace::server::statement_event_name(st), "statement/sql/select");
    st.text = "selec 1";
    EXPECT_EQ(mysqltrace::server::statement_event_name(st), "statement/sql/error");
    st.command = 14;
    EXPECT_EQ(mysqltrace::server::statement_event_name(st), "statement/com/Ping");
}

TEST(ServerStatement, DigestTextReplacesLiterals) {
    using mysqltrace::server::digest_text;
    EXPECT_EQ(digest_text("SELECT c FROM sbtest1 WHERE id=4242"),
              "SELECT c FROM sbtest1 WHERE id=?");
    EXPECT_EQ(digest_text("select  'a''b' ,\n 1.5e3 from t;"), "select ? , ? from t");
    EXPECT_EQ(digest_text("select * from t2 where a in (1, 2, 3)"),
              "select * from t2 where a in (?)");
    EXPECT_EQ(digest_text("select sleep(0.3)"), digest_text("select sleep(0.25)"));
}

TEST(ServerRender, JsonStatementWithNestedStages) {
    std::vector<mysqltrace::server::StageSite> sites(2);
    sites[0].stage_name = "Opening tables";
    sites[0].source_file = "sql_base.cc";
    sites[0].source_line = 4000;
    sites[1].stage_name = "Sending data";
    auto ev = base_event();
    ev.rows_sent = 1;
    ev.text_len = 8;
    ev.end.cpu_ns = 4'000'000;
    std::vector<mt_stage_mark> marks(2);
    marks[0].ts_ns = 2'000'000;
    marks[0].site = 0;
    marks[0].c.cpu_ns = 1'000'000;
    marks[1].ts_ns = 3'000'000;
    marks[1].site = 1;
    marks[1].c.cpu_ns = 1'500'000;
    marks[1].c.nvcsw = 0;
    auto rec = record(ev, marks, "", "test", "select 1");
    Statement st;
    ASSERT_TRUE(mysqltrace::server::decode_statement(rec, &st));

    mysqltrace::output::ServerRenderer r(mysqltrace::output::ServerFormat::json, 99, sites,
                                         [](uint64_t) { return std::string("x"); });
    std::string out = r.statement(st);
    std::vector<nlohmann::json> rows;
    for (size_t p = 0, e; (e = out.find('\n', p)) != std::string::npos; p = e + 1) {
        rows.push_back(nlohmann::json::parse(out.substr(p, e - p)));
    }
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0]["kind"], "statement");
    EXPECT_EQ(rows[0]["EVENT_ID"], 1);
    EXPECT_EQ(rows[0]["END_EVENT_ID"], 4);
    EXPECT_EQ(rows[0]["EVENT_NAME"], "statement/sql/select");
    EXPECT_EQ(rows[0]["TIMER_WAIT"], 4'000'000'000ull);
    EXPECT_EQ(rows[0]["CURRENT_SCHEMA"], "test");
    EXPECT_EQ(rows[0]["ROWS_SENT"], 1);
    EXPECT_EQ(rows[0]["MYSQL_ERRNO"], 0);
    EXPECT_TRUE(rows[0]["RETURNED_SQLSTATE"].is_null());
    EXPECT_EQ(rows[1]["kind"], "stage");
    EXPECT_EQ(rows[1]["EVENT_ID"], 2);
    EXPECT_EQ(rows[1]["EVENT_NAME"], "stage/sql/Opening tables");
    EXPECT_EQ(rows[1]["SOURCE"], "sql_base.cc:4000");
    EXPECT_EQ(rows[1]["TIMER_WAIT"], 1'000'000'000ull);
    EXPECT_EQ(rows[1]["NESTING_EVENT_ID"], 1);
    EXPECT_EQ(rows[1]["CPU_user"].get<uint64_t>() + rows[1]["CPU_system"].get<uint64_t>(),
              500'000'000ull);
    EXPECT_EQ(rows[2]["EVENT_NAME"], "stage/sql/Sending data");
    EXPECT_TRUE(rows[2]["SOURCE"].is_null());
    EXPECT_EQ(rows[2]["TIMER_END"], 5'000'000'000ull);  // the last stage ends with the statement
    EXPECT_EQ(rows[2]["CPU_user"].get<uint64_t>() + rows[2]["CPU_system"].get<uint64_t>(),
              2'500'000'000ull);
    // Event ids go on per connection: END_EVENT_ID is the next event's id.
    out = r.statement(st);
    EXPECT_EQ(nlohmann::json::parse(out.substr(0, out.find('\n')))["EVENT_ID"], 4);
}

TEST(ServerRender, TextLinesUpStagesUnderTheirStatement) {
    std::vector<mysqltrace::server::StageSite> sites(2);
    sites[0].stage_name = "Opening tables";
    sites[1].stage_name = "Sending data";
    auto ev = base_event();
    ev.rows_sent = 3;
    ev.text_len = 12;
    ev.da_status = 5;
    ev.error = 1054;
    std::memcpy(ev.sqlstate, "42S22", 6);
    ev.end.cpu_ns = 3'500'000;
    std::vector<mt_stage_mark> marks(3);
    marks[0].ts_ns = 1'000'000;
    marks[1].ts_ns = 1'000'850;
    marks[1].site = 7;  // not in the table
    marks[1].c.cpu_ns = 850;
    marks[2].ts_ns = 1'020'000;
    marks[2].site = 1;
    marks[2].c.cpu_ns = 20'000;
    auto rec = record(ev, marks, "Unknown column\tx", "", "select 'a\nb'");
    Statement st;
    ASSERT_TRUE(mysqltrace::server::decode_statement(rec, &st));
    mysqltrace::output::ServerRenderer r(mysqltrace::output::ServerFormat::text, 99, sites,
                                         [](uint64_t) { return std::string("x"); });
    std::string out = r.statement(st);
    ASSERT_GT(out.size(), 16u);
    EXPECT_EQ(out[15], ' ');  // after the wall-clock time, which depends on the host
    EXPECT_EQ(out.substr(16),
              "       12  4000.0 us statement/sql/select               3 select 'a\\nb'\n"
              "    ERROR 1054 (42S22): Unknown column\\tx\n"
              "    stage/sql/Opening tables                    0.85 us  cpu 0.85 us\n"
              "    stage/sql/(stage site 7)                    19.2 us  cpu 19.2 us\n"
              "    stage/sql/Sending data                    3980.0 us  cpu 3480.0 us\n");
}

TEST(ServerRender, SampledSharesPerStatementClass) {
    std::vector<mysqltrace::server::StageSite> sites;
    auto ev = base_event();
    ev.flags |= MT_STMT_SAMPLED;
    ev.sample_period_us = 1000;
    ev.text_len = 15;
    auto rec = record(ev, {}, "", "", "select sleep(1)",
                      {{0x10, 30, 0, 0},            // 30 ms on CPU
                       {0x20, 0, 1, 90'000'000}});  // 90 ms switched out
    Statement st;
    ASSERT_TRUE(mysqltrace::server::decode_statement(rec, &st));
    mysqltrace::output::ServerRenderer r(
        mysqltrace::output::ServerFormat::json, 99, sites,
        [](uint64_t a) { return std::string(a == 0x10 ? "Executing" : "User sleep"); });
    r.statement(st);
    st.text = "select sleep(2)";
    r.statement(st);
    std::string out = r.summary();
    auto j = nlohmann::json::parse(out.substr(0, out.find('\n')));
    EXPECT_EQ(j["kind"], "stage_profile");
    EXPECT_EQ(j["COUNT_STAR"], 2);
    EXPECT_EQ(j["DIGEST_TEXT"], "select sleep(?)");
    ASSERT_EQ(j["stages"].size(), 2u);
    EXPECT_EQ(j["stages"][0]["EVENT_NAME"], "stage/sql/User sleep");
    EXPECT_DOUBLE_EQ(j["stages"][0]["share"].get<double>(), 0.75);
    EXPECT_EQ(j["stages"][1]["on_cpu_samples"], 60);
}

// The text summary says what its shares rest on: samples, switches, or nothing.
TEST(ServerRender, SampledSummaryTextSaysWhatTheSharesRestOn) {
    std::vector<mysqltrace::server::StageSite> sites;
    mysqltrace::output::ServerRenderer r(
        mysqltrace::output::ServerFormat::text, 99, sites,
        [](uint64_t a) { return std::string(a == 0x10 ? "Executing" : "User sleep"); });
    auto sampled = [&](uint32_t command, uint64_t end_ns, const std::string &text,
                       const std::vector<mt_stage_samples> &samples) {
        auto ev = base_event();
        ev.command = command;
        ev.hdr.ts_ns = end_ns;
        ev.flags |= MT_STMT_SAMPLED;
        ev.sample_period_us = 1000;
        ev.text_len = static_cast<uint32_t>(text.size());
        auto rec = record(ev, {}, "", "", text, samples);
        Statement st;
        ASSERT_TRUE(mysqltrace::server::decode_statement(rec, &st));
        r.statement(st);
    };
    sampled(3, 401'000'000, "select benchmark(9, 1)",
            {{0x10, 300, 0, 0}, {0x20, 0, 1, 100'000'000}});
    sampled(3, 201'000'000, "select sleep(0.2)", {{0x20, 0, 1, 200'000'000}});
    sampled(1, 1'002'000, "", {});  // COM_QUIT: 2 us, no text
    EXPECT_EQ(r.summary(),
              "\n---- where the time went, by statement class and stage (sampled) ----\n"
              "# statement/sql/select x1, 0.400000 s total: select benchmark(?)\n"
              "   75.0%  Executing                               300 samples  off-CPU 0.00 us\n"
              "   25.0%  User sleep                                0 samples  off-CPU 100.00 ms\n"
              "  (300 on-CPU samples every 1000 us, share of on-CPU time +-6%; off-CPU time "
              "measured at each switch)\n"
              "# statement/sql/select x1, 0.200000 s total: select sleep(?)\n"
              "  100.0%  User sleep                                0 samples  off-CPU 200.00 ms\n"
              "  (no on-CPU sample every 1000 us: the shares are of the off-CPU time, measured "
              "at each switch)\n"
              "# statement/com/Quit x1, 0.000002 s total\n"
              "  (no sample: a timer every 1000 us found none of them running, and none was "
              "switched out)\n");
}

}  // namespace

namespace {

TEST(ServerWaits, FileEventNamesFollowTheServersInstruments) {
    using mysqltrace::server::file_event_name;
    EXPECT_EQ(file_event_name("/var/lib/mysql/ib_logfile0"), "wait/io/file/innodb/innodb_log_file");
    EXPECT_EQ(file_event_name("/var/lib/mysql/ibdata1"), "wait/io/file/innodb/innodb_data_file");
    EXPECT_EQ(file_event_name("/var/lib/mysql/db/t.ibd"), "wait/io/file/innodb/innodb_data_file");
    EXPECT_EQ(file_event_name("/var/lib/mysql/undo001"), "wait/io/file/innodb/innodb_data_file");
    EXPECT_EQ(file_event_name("/var/lib/mysql/ibtmp1"), "wait/io/file/innodb/innodb_temp_file");
    EXPECT_EQ(file_event_name("/var/lib/mysql/db/t.frm"), "wait/io/file/sql/FRM");
    EXPECT_EQ(file_event_name("/var/lib/mysql/mysql-bin.000001"), "wait/io/file/sql/binlog");
    EXPECT_EQ(file_event_name("/var/lib/mysql/aria_log.00000001"), "wait/io/file/aria/log");
    EXPECT_EQ(file_event_name("/var/lib/mysql/ddl_recovery.log"), "wait/io/file/sql/misc");
}

// MySQL 9.7's names, as its performance_schema.file_instances lists the
// files of a fresh data directory.
TEST(ServerWaits, MysqlFileEventNames) {
    using mysqltrace::server::file_event_name;
    using mysqltrace::server::FileNaming;
    auto name = [](const char *path) { return file_event_name(path, FileNaming::mysql); };
    EXPECT_EQ(name("/d/#innodb_redo/#ib_redo5"), "wait/io/file/innodb/innodb_log_file");
    EXPECT_EQ(name("/d/#innodb_redo/#ib_redo12_tmp"), "wait/io/file/innodb/innodb_log_file");
    EXPECT_EQ(name("/d/#innodb_temp/temp_3.ibt"), "wait/io/file/innodb/innodb_temp_file");
    EXPECT_EQ(name("/d/#ib_16384_0.dblwr"), "wait/io/file/innodb/innodb_dblwr_file");
    EXPECT_EQ(name("/d/ibtmp1"), "wait/io/file/innodb/innodb_data_file");
    EXPECT_EQ(name("/d/ibdata1"), "wait/io/file/innodb/innodb_data_file");
    EXPECT_EQ(name("/d/undo_002"), "wait/io/file/innodb/innodb_data_file");
    EXPECT_EQ(name("/d/mysql.ibd"), "wait/io/file/innodb/innodb_data_file");
    EXPECT_EQ(name("/d/db/t.ibd"), "wait/io/file/innodb/innodb_data_file");
    EXPECT_EQ(name("/d/binlog.000001"), "wait/io/file/sql/binlog");
    EXPECT_EQ(name("/d/binlog.index"), "wait/io/file/sql/binlog_index");
    EXPECT_EQ(name("/d/auto.cnf"), "wait/io/file/sql/misc");
}

TEST(ServerWaits, DecodeRejectsOtherRecords) {
    mt_server_wait_event ev{};
    ev.hdr.type = MT_EV_SERVER_WAIT;
    ev.hdr.size = sizeof(ev);
    ev.hdr.ts_ns = 200;
    ev.start_ns = 100;
    ev.kind = MT_WAIT_SYNC;
    ev.object = 7;
    std::vector<uint8_t> rec(sizeof(ev));
    std::memcpy(rec.data(), &ev, sizeof(ev));
    mysqltrace::server::Wait w;
    ASSERT_TRUE(mysqltrace::server::decode_wait(rec, &w));
    EXPECT_EQ(w.end_ns, 200u);
    EXPECT_EQ(w.object, 7u);
    ev.kind = 99;
    std::memcpy(rec.data(), &ev, sizeof(ev));
    EXPECT_FALSE(mysqltrace::server::decode_wait(rec, &w));
    rec.pop_back();
    EXPECT_FALSE(mysqltrace::server::decode_wait(rec, &w));
}

TEST(ServerWaits, TableIoRecordsAreHandlerWaits) {
    mt_server_table_io_event ev{};
    ev.hdr.type = MT_EV_SERVER_TABLE_IO;
    ev.hdr.size = sizeof(ev);
    ev.hdr.ts_ns = 900;
    ev.start_ns = 400;
    ev.thread_id = 12;
    ev.handler = 0x7f0000001000;
    ev.op = MT_TABLE_UPDATE_ROW;
    ev.flags = MT_WAIT_IN_STATEMENT;
    std::memcpy(ev.db, "shop", 4);
    ev.db_len = 4;
    std::memcpy(ev.name, "orders", 6);
    ev.name_len = 6;
    std::vector<uint8_t> rec(sizeof(ev));
    std::memcpy(rec.data(), &ev, sizeof(ev));
    mysqltrace::server::Wait w;
    EXPECT_FALSE(mysqltrace::server::decode_wait(rec, &w));
    ASSERT_TRUE(mysqltrace::server::decode_table_io(rec, &w));
    EXPECT_EQ(w.kind, static_cast<uint32_t>(MT_WAIT_TABLE));
    EXPECT_EQ(w.start_ns, 400u);
    EXPECT_EQ(w.end_ns, 900u);
    EXPECT_TRUE(w.in_statement());
    EXPECT_EQ(w.schema, "shop");
    EXPECT_EQ(w.table, "orders");
    mysqltrace::server::WaitNamer namer(getpid(), nullptr, 0);
    auto n = namer.name(w);
    EXPECT_EQ(n.event_name, "wait/io/table/sql/handler");
    EXPECT_EQ(n.operation, "update");
    EXPECT_EQ(n.object_type, "TABLE");
    EXPECT_EQ(n.object_schema, "shop");
    EXPECT_EQ(n.object_name, "orders");
    EXPECT_EQ(n.object_instance, 0x7f0000001000u);
    w.schema = "gone";  // the record's text is not borrowed
    w.table.clear();
    EXPECT_EQ(n.object_schema, "shop");
    EXPECT_EQ(n.object_name, "orders");
    for (uint32_t op : {MT_TABLE_RND_NEXT, MT_TABLE_INDEX_READ_MAP, MT_TABLE_INDEX_NEXT_SAME}) {
        EXPECT_STREQ(mysqltrace::server::table_op_operation(op), "fetch");
    }
    EXPECT_STREQ(mysqltrace::server::table_op_operation(MT_TABLE_WRITE_ROW), "insert");
    EXPECT_STREQ(mysqltrace::server::table_op_operation(MT_TABLE_DELETE_ROW), "delete");
    EXPECT_STREQ(mysqltrace::server::table_op_method(MT_TABLE_INDEX_READ_IDX_MAP),
                 "index_read_idx_map");
    // An unknown method, or a name longer than its buffer, is not a record.
    ev.op = 99;
    std::memcpy(rec.data(), &ev, sizeof(ev));
    EXPECT_FALSE(mysqltrace::server::decode_table_io(rec, &w));
    ev.op = MT_TABLE_RND_NEXT;
    ev.name_len = sizeof(ev.name);
    std::memcpy(rec.data(), &ev, sizeof(ev));
    EXPECT_FALSE(mysqltrace::server::decode_table_io(rec, &w));
}

}  // namespace

// A file's name outlives its descriptor: a read named before the close still
// names the file after it, while it waits for its statement to be shown.
TEST(ServerWaits, FileNamesOutliveTheirDescriptor) {
    char path[] = "/tmp/mt-waits-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    mysqltrace::server::WaitNamer namer(getpid(), nullptr, 0);
    mysqltrace::server::Wait w;
    w.kind = MT_WAIT_READ;
    w.flags = MT_WAIT_FILE | MT_WAIT_IN_STATEMENT;
    w.object = static_cast<uint64_t>(fd);
    auto read = namer.name(w);
    EXPECT_EQ(read.event_name, "wait/io/file/sql/misc");
    EXPECT_EQ(read.operation, "read");
    EXPECT_EQ(read.object_type, "FILE");
    EXPECT_EQ(read.object_name, path);
    w.kind = MT_WAIT_CLOSE;
    auto closed = namer.name(w);
    EXPECT_EQ(closed.operation, "close");
    close(fd);
    unlink(path);
    w.kind = MT_WAIT_READ;  // the descriptor is gone: not named any more
    EXPECT_FALSE(namer.name(w).report);
    EXPECT_EQ(read.object_name, path);
    EXPECT_EQ(closed.object_name, path);
}
