// SPDX-License-Identifier: GPL-2.0-only
// The streaming JSON writer against nlohmann, the library the renderers used
// before: the same bytes for the same values, any bytes in the strings; and
// `server --format json` lines against the nlohmann events pfs-sql still
// builds (json_rows, the old --format json path).
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "output/json_writer.h"
#include "output/server_render.h"

namespace {

using mysqltrace::output::JsonWriter;
using mysqltrace::output::NamedWait;
using mysqltrace::output::ServerFormat;
using mysqltrace::output::ServerRenderer;
using mysqltrace::server::Statement;

std::string nlohmann_dump(const nlohmann::ordered_json &j) {
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string streamed(std::string_view s) {
    std::string out;
    mysqltrace::output::append_json_string(out, s);
    return out;
}

TEST(JsonWriter, StringsAsNlohmannEscapesThem) {
    const std::vector<std::string> cases = {
        "",
        "select 1",
        "a\"b\\c/d",
        std::string("nul\0byte", 8),
        "\b\f\n\r\t\x01\x1f\x7f",
        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",  // 2, 3 and 4-byte sequences
        "\xff",
        "\xc3",                          // cut at the end
        "\xe2\x82",                      // cut at the end
        "\xe2\x82x",                     // cut by ASCII: x is read again
        "\xc0\xaf",                      // overlong
        "\xe0\x80\xaf",                  // overlong
        "\xed\xa0\x80",                  // surrogate
        "\xf4\x90\x80\x80",              // above U+10FFFF
        "\xf5\x80",                      // no such lead byte
        "\x80\x80\xbf",                  // lone continuation bytes
        "\xf0\x9f\x98\xf0\x9f\x98\x80",  // a cut sequence, then a whole one
        "x = _binary'\x00\x01\xfe\xff'",
    };
    for (const auto &s : cases) {
        EXPECT_EQ(streamed(s), nlohmann_dump(nlohmann::ordered_json(s))) << s;
    }
}

TEST(JsonWriter, RandomBytesAsNlohmannEscapesThem) {
    std::mt19937 rng(4878);
    // Bytes drawn mostly from the interesting ranges: controls, quotes,
    // lead and continuation bytes, so that sequences form and break.
    const std::string pool =
        "ab \"\\\n\t\x01\x1f\x7f"
        "\x80\x8f\x90\x9f\xa0\xbf\xc0\xc1\xc2\xdf\xe0\xe1\xec\xed\xee\xef\xf0\xf1\xf3\xf4\xf5\xff";
    for (int n = 0; n < 20000; n++) {
        std::string s(rng() % 12, ' ');
        for (auto &c : s) {
            c = pool[rng() % pool.size()];
        }
        ASSERT_EQ(streamed(s), nlohmann_dump(nlohmann::ordered_json(s)))
            << nlohmann_dump(nlohmann::ordered_json::binary({s.begin(), s.end()}));
    }
}

// FlatWriter::str(): put_json_string() eight bytes at a time for strings up
// to 128 bytes, append_json_string() past that; both as nlohmann escapes.
TEST(JsonWriter, FlatWriterStringsAsNlohmannEscapesThem) {
    std::mt19937 rng(6226);
    // Mostly plain ASCII, so that whole words copy and words with one byte
    // to escape, or a sequence across two words, come up often.
    const std::string plain = "abcdefghijklmnopqrstuvwxyz0123456789 ,.'()=";
    const std::string care =
        "\"\\\n\x01\x1f\x7f\x80\xbf\xc2\xc3\xa9\xe2\x82\xac\xed\xa0\xf0\x9f\x98\xff";
    for (int n = 0; n < 20000; n++) {
        std::string s(rng() % 200, ' ');
        for (auto &c : s) {
            c = rng() % 8 == 0 ? care[rng() % care.size()] : plain[rng() % plain.size()];
        }
        std::string out = "x";
        {
            mysqltrace::output::FlatWriter f(out);
            f.str(s);
            f.lit(",");
        }
        ASSERT_EQ(out, "x" + nlohmann_dump(nlohmann::ordered_json(s)) + ",")
            << nlohmann_dump(nlohmann::ordered_json::binary({s.begin(), s.end()}));
    }
}

TEST(JsonWriter, ObjectsArraysNumbersAndNull) {
    std::string out;
    JsonWriter j(out);
    j.begin_object();
    j.field("u", uint64_t{18446744073709551615ull});
    j.field("i", -2147483647 - 1);
    j.field("zero", 0u);
    j.field("t", true);
    j.null_field("n");
    j.string_or_null("empty", "");
    j.string_or_null("s", "x");
    j.key("a");
    j.begin_array();
    for (int k = 0; k < 2; k++) {
        j.begin_object();
        j.field("k", k);
        j.end_object();
    }
    j.value("tail");
    j.end_array();
    j.key("e");
    j.begin_array();
    j.end_array();
    // Keys longer than the writer puts together on the stack.
    const std::string long_key(100, 'k');
    j.field(long_key, uint64_t{7});
    j.field(long_key + "s", "v");
    j.end_object();

    nlohmann::ordered_json o;
    o["u"] = uint64_t{18446744073709551615ull};
    o["i"] = -2147483647 - 1;
    o["zero"] = 0u;
    o["t"] = true;
    o["n"] = nullptr;
    o["empty"] = nullptr;
    o["s"] = "x";
    o["a"] = {{{"k", 0}}, {{"k", 1}}, "tail"};
    o["e"] = nlohmann::ordered_json::array();
    o[long_key] = 7;
    o[long_key + "s"] = "v";
    EXPECT_EQ(out, nlohmann_dump(o));
}

// The same statements rendered twice: --format json (streamed) and pfs-sql,
// whose events are those lines read back: dumped again, they are the same
// bytes (nlohmann's dump is what --format json printed before the writer).
class ServerJsonTest : public ::testing::Test {
  protected:
    void SetUp() override {
        sites_.resize(3);
        sites_[0].stage_name = "Opening tables";
        sites_[0].source_file = "./sql/sql_base.cc";
        sites_[0].source_line = 4000;
        sites_[1].stage_name = "Sending data";
        sites_[2].stage_name = "quote\" and \xff";
        sites_[2].source_file = "odd\\file\n.cc";
        sites_[2].source_line = 7;
    }

    // Asserts the two renderings equal and returns the json one.
    std::string both(const Statement &st, const std::vector<NamedWait> &waits = {}) {
        const std::string line = json_.statement(st, waits);
        pfs_.statement(st, waits);
        std::string old;
        for (const auto &e : pfs_.last_events()) {
            old += nlohmann_dump(e) + "\n";
        }
        EXPECT_EQ(line, old);
        return line;
    }
    std::string both(const NamedWait &w) {
        const std::string line = json_.wait(w);
        pfs_.wait(w);
        EXPECT_EQ(pfs_.last_events().size(), 1u);
        EXPECT_EQ(line, nlohmann_dump(pfs_.last_events().at(0)) + "\n");
        return line;
    }

    static Statement statement(std::string text) {
        Statement st;
        st.tid = 77;
        st.thread_id = 12;
        st.query_id = 400;
        st.command = 3;  // COM_QUERY
        st.flags = MT_STMT_ENDED;
        st.start_ns = 1'000'000;
        st.end_ns = 5'000'000;
        st.text_len = static_cast<uint32_t>(text.size());
        st.text = std::move(text);
        st.end.cpu_ns = 3'000'000;
        st.end.utime_ns = 2;
        st.end.stime_ns = 1;
        st.end.nvcsw = 3;
        st.end.read_bytes = 4096;
        return st;
    }
    static NamedWait wait(uint64_t start_ns, uint64_t end_ns, bool in_statement) {
        NamedWait w;
        w.wait.tid = 77;
        w.wait.thread_id = 12;
        w.wait.start_ns = start_ns;
        w.wait.end_ns = end_ns;
        w.wait.bytes = 512;
        w.wait.flags = in_statement ? MT_WAIT_IN_STATEMENT : 0;
        w.name.event_name = "wait/io/file/innodb/innodb_data_file";
        w.name.operation = "read";
        w.name.object_name = "./ibdata1";
        w.name.object_type = "FILE";
        w.name.object_instance = 0x7f00;
        return w;
    }

    std::vector<mysqltrace::server::StageSite> sites_;
    std::function<std::string(uint64_t)> name_at_ = [](uint64_t addr) {
        return addr == 0x10 ? std::string("executing") : std::string("Sending \"data\"");
    };
    ServerRenderer json_{ServerFormat::json, 4242, sites_, name_at_};
    ServerRenderer pfs_{ServerFormat::pfs_sql, 4242, sites_, name_at_};
};

TEST_F(ServerJsonTest, StatementsAsBefore) {
    auto st = statement("select * from t where a = 'x'");
    st.db = "test";
    st.rows_sent = 3;
    st.rows_examined = 10;
    both(st);

    // An error, with odd bytes in the text and the message, no schema.
    auto bad = statement("selec\t\"1\"\n\x01 \xc3(");
    bad.da_status = MT_DA_ERROR;
    bad.error = 1064;
    bad.sqlstate = "42000";
    bad.message = "You have an error near '\"1\"\n\xe2\x82' at line 1";
    both(bad);

    // Cut text, an end not seen, lost stages, a command without text.
    auto cut = statement("insert into t values (1),(2)");
    cut.text_cut = true;
    cut.text_len = 100'000;
    cut.flags = 0;
    cut.stages_lost = 2;
    cut.rows_affected = 2;
    both(cut);
    auto ping = statement("");
    ping.command = 14;  // COM_PING
    both(ping);

    // Sampled stages.
    auto sampled = statement("select sleep(1)");
    sampled.flags |= MT_STMT_SAMPLED;
    sampled.sample_period_us = 1003;
    sampled.samples = {{0x10, 5, 1, 1000}, {0x20, 0, 2, 90}};
    const std::string line = both(sampled);
    EXPECT_NE(line.find("\"stage_samples\":[{\"stage\":\"executing\",\"on_cpu_samples\":5,"),
              std::string::npos);
}

TEST_F(ServerJsonTest, StagesAndWaitsNestedAsBefore) {
    auto st = statement("update t set a = 1");
    st.flags |= MT_STMT_EXACT;
    st.rows_affected = 1;
    st.stages.resize(3);
    st.stages[0].ts_ns = 2'000'000;  // after the statement began: a "starting" row first
    st.stages[0].site = 0;
    st.stages[0].counters.cpu_ns = 1'000'000;
    st.stages[1].ts_ns = 3'000'000;
    st.stages[1].site = 2;
    st.stages[2].ts_ns = 4'000'000;
    st.stages[2].site = 9;  // not in the table
    // One wait in the statement before any stage, one in "Opening tables",
    // one in the unknown site's stage, a socket write ending in an error.
    std::vector<NamedWait> waits = {wait(1'500'000, 1'600'000, true),
                                    wait(2'100'000, 2'200'000, true),
                                    wait(4'500'000, 4'600'000, true)};
    waits[2].name.event_name = "wait/io/socket/sql/client_connection";
    waits[2].name.object_type = "SOCKET";
    waits[2].name.operation = "send";
    waits[2].wait.ret = -32;
    const std::string out = both(st, waits);

    std::vector<nlohmann::json> rows;
    for (size_t p = 0, e; (e = out.find('\n', p)) != std::string::npos; p = e + 1) {
        rows.push_back(nlohmann::json::parse(out.substr(p, e - p)));
    }
    // statement 1; starting 2, wait 3; Opening tables 4, wait 5; quote 6;
    // stage site 9 7, wait 8.
    ASSERT_EQ(rows.size(), 8u);
    EXPECT_EQ(rows[0]["END_EVENT_ID"], 9);  // the next event's id, as before
    EXPECT_EQ(rows[1]["EVENT_NAME"], "stage/sql/starting");
    EXPECT_EQ(rows[2]["kind"], "wait");
    EXPECT_EQ(rows[2]["EVENT_ID"], 3);
    EXPECT_EQ(rows[2]["NESTING_EVENT_ID"], 2);
    EXPECT_EQ(rows[2]["NESTING_EVENT_TYPE"], "STAGE");
    EXPECT_EQ(rows[3]["EVENT_NAME"], "stage/sql/Opening tables");
    EXPECT_EQ(rows[4]["NESTING_EVENT_ID"], 4);
    EXPECT_EQ(rows[5]["SOURCE"], "odd\\file\n.cc:7");
    EXPECT_EQ(rows[6]["EVENT_NAME"], "stage/sql/(stage site 9)");
    EXPECT_EQ(rows[7]["NESTING_EVENT_ID"], 7);
    EXPECT_EQ(rows[7]["errno"], 32);
    EXPECT_EQ(rows[7]["NUMBER_OF_BYTES"], 512);

    // A wait in a statement without stages nests in the statement.
    auto plain = statement("select 2");
    both(plain, {wait(1'100'000, 1'200'000, true)});
}

TEST_F(ServerJsonTest, WaitsOutsideStatementsAsBefore) {
    auto idle = wait(10, 20, false);
    idle.name.event_name = "idle";
    idle.name.operation = "idle";
    idle.name.object_name = {};
    idle.name.object_type = {};
    both(idle);
    auto lock = wait(30, 40, false);
    lock.name.event_name = "wait/synch/mutex/sql/LOCK_open";
    lock.name.operation = "lock";
    lock.name.object_type = {};
    both(lock);
    auto table = wait(50, 60, false);
    table.name.event_name = "wait/io/table/sql/handler";
    table.name.object_schema = "db\xff";
    table.name.object_name = "t";
    table.name.object_type = "TABLE";
    table.name.operation = "fetch";
    const std::string line = both(table);
    EXPECT_NE(line.find("\"NESTING_EVENT_ID\":null,\"NESTING_EVENT_TYPE\":null"),
              std::string::npos);
    // A fetch that found no more rows carries the handler's result.
    auto end_of_rows = table;
    end_of_rows.wait.kind = MT_WAIT_TABLE;
    end_of_rows.wait.ret = 137;
    EXPECT_NE(both(end_of_rows).find(",\"handler_error\":137}"), std::string::npos);
}

// Text shows a statement's waits under it, one line each: name, time,
// operation and object (a table's "schema.table"), as printf's
// "      ~ %-44s %10s %s %s" wrote them.
TEST_F(ServerJsonTest, WaitLinesOfTextOutput) {
    auto st = statement("select 1");
    std::vector<NamedWait> waits = {wait(1'500'000, 1'600'000, true),
                                    wait(2'000'000, 2'000'900, true),
                                    wait(3'000'000, 3'250'000, true)};
    waits[1].name.event_name = "wait/io/socket/sql/client_connection";
    waits[1].name.operation = "send";
    waits[1].name.object_name = {};
    waits[2].name.event_name = "wait/io/table/sql/handler_with_a_name_longer_than_44";
    waits[2].name.object_schema = "shop";
    waits[2].name.object_name = "orders";
    waits[2].name.operation = "fetch";
    ServerRenderer text(ServerFormat::text, 4242, sites_, name_at_);
    const std::string out = text.statement(st, waits);
    const size_t first = out.find('\n') + 1;
    EXPECT_EQ(out.substr(first),
              "      ~ wait/io/file/innodb/innodb_data_file           100.0 us read ./ibdata1\n"
              "      ~ wait/io/socket/sql/client_connection            0.90 us send\n"
              "      ~ wait/io/table/sql/handler_with_a_name_longer_than_44   250.0 us fetch "
              "shop.orders\n");
}

// Failed statements summed by errno and SQLSTATE at the end of a trace, as
// events_errors_summary_global_by_error: json lines, and a text table.
TEST_F(ServerJsonTest, ErrorSummary) {
    auto fail = [&](uint32_t error, const char *sqlstate, const char *message, uint64_t at_ns) {
        auto st = statement("select * from nope");
        st.da_status = MT_DA_ERROR;
        st.error = error;
        st.sqlstate = sqlstate;
        st.message = message;
        st.start_ns = at_ns;
        st.end_ns = at_ns + 1000;
        return st;
    };
    const std::vector<Statement> sts = {
        fail(1146, "42S02", "Table 'x.nope' doesn't exist", 2'000'000),
        statement("select 1"),
        fail(1064, "42000", "You have an error", 3'000'000),
        fail(1146, "42S02", "Table 'x.other' doesn't exist", 4'000'000),
    };
    ServerRenderer text(ServerFormat::text, 3, sites_, name_at_);
    for (const auto &st : sts) {
        json_.statement(st);
        text.statement(st);
    }
    EXPECT_EQ(
        json_.summary(),
        "{\"kind\":\"error_summary\",\"pid\":4242,\"ERROR_NUMBER\":1064,\"SQL_STATE\":\"42000\","
        "\"SUM_ERROR_RAISED\":1,\"FIRST_SEEN_TIMER\":3000000000,\"LAST_SEEN_TIMER\":3000000000,"
        "\"MESSAGE_TEXT\":\"You have an error\"}\n"
        "{\"kind\":\"error_summary\",\"pid\":4242,\"ERROR_NUMBER\":1146,\"SQL_STATE\":\"42S02\","
        "\"SUM_ERROR_RAISED\":2,\"FIRST_SEEN_TIMER\":2000000000,\"LAST_SEEN_TIMER\":4000000000,"
        "\"MESSAGE_TEXT\":\"Table 'x.other' doesn't exist\"}\n");
    const std::string table = text.summary();
    const std::string head =
        "\n---- errors by number (events_errors_summary_global_by_error) ----\n"
        "ERROR_NUMBER SQL_STATE SUM_ERROR_RAISED FIRST_SEEN       LAST_SEEN        "
        "MESSAGE_TEXT (the last)\n";
    ASSERT_EQ(table.substr(0, head.size()), head);
    // Wall-clock times are local: only their shape is fixed.
    const std::string rows = table.substr(head.size());
    const auto first = rows.substr(0, rows.find('\n'));
    EXPECT_EQ(first.substr(0, 40), "        1064 42000                    1 ");
    EXPECT_EQ(first.substr(first.size() - 19), "  You have an error");
    EXPECT_EQ(first.size(), 40u + 15 + 2 + 15 + 19);
    EXPECT_NE(rows.find("        1146 42S02                    2 "), std::string::npos);
    EXPECT_NE(rows.find("  Table 'x.other' doesn't exist\n"), std::string::npos);
}

// The one-probe path never sees a statement's start on its thread: its
// resource counters are unknown (null), never a measured-looking 0.
TEST_F(ServerJsonTest, OneProbeStatementsHaveNoCounters) {
    auto st = statement("select 1");
    st.flags |= MT_STMT_ONEPASS;
    const std::string line = both(st);
    EXPECT_NE(line.find("\"CPU_TIME\":null,\"CPU_user\":null,\"CPU_system\":null,"
                        "\"Context_voluntary\":null,\"Context_involuntary\":null,"
                        "\"Page_faults_major\":null,\"Page_faults_minor\":null,"
                        "\"Block_ops_in\":null,\"Block_ops_out\":null}"),
              std::string::npos)
        << line;
}

}  // namespace
