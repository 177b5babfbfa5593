// SPDX-License-Identifier: GPL-2.0-only
#include "output/pfs_sql.h"

#include <csignal>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace {

using mysqltrace::output::pfs_insert;
using mysqltrace::output::pfs_sanitize_actor;
using mysqltrace::output::pfs_sql_string;
using mysqltrace::output::pfs_table_for_kind;
using mysqltrace::output::pfs_tables;
using mysqltrace::output::PfsColumnType;
using mysqltrace::output::PfsSqlWriter;
using json = nlohmann::ordered_json;

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::string> lines_of(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string l;
    while (std::getline(in, l)) {
        out.push_back(l);
    }
    return out;
}

// What the MariaDB parser makes of a string literal (backslash escapes).
std::string unescape(const std::string &lit) {
    std::string body = lit;
    if (body.rfind("_utf8mb4", 0) == 0) {
        body = body.substr(8);
    }
    EXPECT_GE(body.size(), 2u);
    EXPECT_EQ(body.front(), '\'');
    EXPECT_EQ(body.back(), '\'');
    body = body.substr(1, body.size() - 2);
    std::string out;
    for (size_t i = 0; i < body.size(); i++) {
        char c = body[i];
        if (c == '\'') {
            ADD_FAILURE() << "bare quote inside " << lit;
        }
        if (c != '\\') {
            out += c;
            continue;
        }
        EXPECT_LT(i + 1, body.size()) << "dangling backslash in " << lit;
        char e = body[++i];
        switch (e) {
            case '0':
                out += '\0';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 'Z':
                out += '\x1a';
                break;
            default:
                out += e;
        }
    }
    return out;
}

TEST(PfsSqlString, EscapesSpecialCharacters) {
    std::string in("a'b\"c\\d\0e\nf\rg\x1ah\x01i\tj", 19);
    EXPECT_EQ(pfs_sql_string(in), std::string("'a\\'b\\\"c\\\\d\\0e\\nf\\rg\\Zh\x01i\tj'"));
    EXPECT_EQ(unescape(pfs_sql_string(in)), in);
    EXPECT_EQ(pfs_sql_string(""), "''");
}

TEST(PfsSqlString, EveryAsciiByteRoundTrips) {
    std::string all;
    for (int c = 0; c < 0x80; c++) {
        all += static_cast<char>(c);
    }
    std::string lit = pfs_sql_string(all);
    EXPECT_EQ(lit.find('\n'), std::string::npos);  // one row per line
    EXPECT_EQ(lit.find('\r'), std::string::npos);
    EXPECT_EQ(lit.find('\0'), std::string::npos);
    EXPECT_EQ(lit.find('\x1a'), std::string::npos);
    EXPECT_EQ(unescape(lit), all);
}

TEST(PfsSqlString, Utf8KeptWithIntroducer) {
    std::string in = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 'x'";
    std::string lit = pfs_sql_string(in);
    EXPECT_EQ(lit.rfind("_utf8mb4'", 0), 0u) << lit;
    EXPECT_EQ(unescape(lit), in);
}

TEST(PfsSqlString, InvalidUtf8BecomesReplacementCharacter) {
    const std::string fffd = "\xef\xbf\xbd";
    EXPECT_EQ(unescape(pfs_sql_string("a\xff"
                                      "b")),
              "a" + fffd + "b");
    EXPECT_EQ(unescape(pfs_sql_string("\xc0\xaf")), fffd + fffd);             // overlong '/'
    EXPECT_EQ(unescape(pfs_sql_string("\xed\xa0\x80")), fffd + fffd + fffd);  // surrogate
    EXPECT_EQ(unescape(pfs_sql_string("\xe2\x82")), fffd + fffd);             // cut short
    EXPECT_EQ(unescape(pfs_sql_string("\xf4\x90\x80\x80")), fffd + fffd + fffd + fffd);
    // Every byte value: the literal is valid UTF-8 with nothing raw that
    // could end it or the line.
    for (int c = 0; c < 256; c++) {
        std::string in(1, static_cast<char>(c));
        std::string out = unescape(pfs_sql_string(in));
        EXPECT_EQ(out, c < 0x80 ? in : fffd) << c;
    }
}

TEST(PfsSqlString, CutsToCharactersNotBytes) {
    EXPECT_EQ(pfs_sql_string("abcdef", 3), "'abc'");
    EXPECT_EQ(unescape(pfs_sql_string("\xc3\xa9\xc3\xa9\xc3\xa9", 2)), "\xc3\xa9\xc3\xa9");
    EXPECT_EQ(pfs_sql_string("a\nb", 2), "'a\\n'");
    EXPECT_EQ(pfs_sql_string("ab", 5), "'ab'");
}

// The tables as share/schema.sql declares them: name, type, varchar length.
struct SchemaColumn {
    std::string name;
    PfsColumnType type;
    uint32_t max_chars;
};

std::map<std::string, std::vector<SchemaColumn>> parse_schema(const std::string &sql) {
    std::map<std::string, std::vector<SchemaColumn>> tables;
    std::regex create(R"(^CREATE TABLE (IF NOT EXISTS )?`(\w+)` \($)");
    std::regex column(R"(^\s+`(\w+)` (\w+)(\((\d+)\))?(.*),?$)");
    std::string table;
    for (const auto &l : lines_of(sql)) {
        std::smatch m;
        if (std::regex_match(l, m, create)) {
            table = m[2];
            tables[table];
        } else if (l.rfind(")", 0) == 0) {
            table.clear();
        } else if (!table.empty() && std::regex_match(l, m, column)) {
            std::string type = m[2];
            SchemaColumn c{m[1], PfsColumnType::Number, 0};
            if (type == "varchar") {
                c.type = PfsColumnType::Text;
                c.max_chars = static_cast<uint32_t>(std::stoul(m[4]));
            } else if (type == "longtext") {
                c.type = PfsColumnType::Text;
            } else if (type == "enum") {
                c.type = PfsColumnType::Text;
                std::regex value(R"('(\w+)')");
                std::string rest = l;
                for (std::sregex_iterator it(rest.begin(), rest.end(), value), end; it != end;
                     ++it) {
                    c.max_chars =
                        std::max<uint32_t>(c.max_chars, static_cast<uint32_t>((*it)[1].length()));
                }
            } else {
                EXPECT_TRUE(type == "bigint" || type == "int") << l;
            }
            tables[table].push_back(c);
        } else if (!table.empty()) {
            ADD_FAILURE() << "unparsed schema line: " << l;
        }
    }
    return tables;
}

TEST(PfsColumns, MatchShareSchemaSql) {
    std::string sql = read_file(std::string(MYSQLTRACE_SOURCE_DIR) + "/share/schema.sql");
    ASSERT_FALSE(sql.empty());
    auto schema = parse_schema(sql);
    ASSERT_EQ(schema.size(), pfs_tables().size());
    for (const auto &t : pfs_tables()) {
        SCOPED_TRACE(std::string(t.name));
        auto it = schema.find(std::string(t.name));
        ASSERT_NE(it, schema.end());
        ASSERT_EQ(it->second.size(), t.columns.size());
        for (size_t i = 0; i < t.columns.size(); i++) {
            EXPECT_EQ(it->second[i].name, t.columns[i].name) << i;
            EXPECT_EQ(it->second[i].type, t.columns[i].type) << t.columns[i].name;
            EXPECT_EQ(it->second[i].max_chars, t.columns[i].max_chars) << t.columns[i].name;
        }
    }
}

TEST(PfsColumns, CountsAndTimerStartPosition) {
    EXPECT_EQ(pfs_table_for_kind("statement")->columns.size(), 41u);
    EXPECT_EQ(pfs_table_for_kind("stage")->columns.size(), 12u);
    EXPECT_EQ(pfs_table_for_kind("wait")->columns.size(), 19u);
    EXPECT_EQ(pfs_table_for_kind("transaction"), nullptr);
    for (const auto &t : pfs_tables()) {
        EXPECT_EQ(t.columns[mysqltrace::output::kPfsTimerStartColumn].name, "TIMER_START");
    }
}

json statement_event() {
    return json::parse(R"({"kind":"statement","pid":100,"tid":101,"THREAD_ID":12,"EVENT_ID":5,
      "END_EVENT_ID":9,"EVENT_NAME":"statement/sql/select","TIMER_START":1000,"TIMER_END":5000,
      "TIMER_WAIT":4000,"LOCK_TIME":0,"SQL_TEXT":"select 'a'\n","DIGEST_TEXT":null,
      "CURRENT_SCHEMA":"test","MYSQL_ERRNO":0,"RETURNED_SQLSTATE":null,"MESSAGE_TEXT":null,
      "ERRORS":0,"ROWS_AFFECTED":0,"ROWS_SENT":1,"ROWS_EXAMINED":0,"CPU_user":12.5})");
}

json stage_event(uint64_t id, uint64_t start, uint64_t end) {
    return json{{"kind", "stage"},
                {"THREAD_ID", 12},
                {"EVENT_ID", id},
                {"END_EVENT_ID", id},
                {"EVENT_NAME", "stage/sql/Opening tables"},
                {"SOURCE", "./sql/sql_base.cc:4676"},
                {"TIMER_START", start},
                {"TIMER_END", end},
                {"TIMER_WAIT", end - start},
                {"NESTING_EVENT_ID", 5},
                {"NESTING_EVENT_TYPE", "STATEMENT"}};
}

json wait_event(uint64_t id, uint64_t start, uint64_t end) {
    return json{{"kind", "wait"},
                {"THREAD_ID", 12},
                {"EVENT_ID", id},
                {"END_EVENT_ID", id},
                {"EVENT_NAME", "wait/io/file/innodb/innodb_data_file"},
                {"SOURCE", nullptr},
                {"TIMER_START", start},
                {"TIMER_END", end},
                {"TIMER_WAIT", end - start},
                {"SPINS", nullptr},
                {"OBJECT_SCHEMA", nullptr},
                {"OBJECT_NAME", "/var/lib/mysql/ibdata1"},
                {"INDEX_NAME", nullptr},
                {"OBJECT_TYPE", "FILE"},
                {"OBJECT_INSTANCE_BEGIN", 140234567890u},
                {"NESTING_EVENT_ID", 6},
                {"NESTING_EVENT_TYPE", "STAGE"},
                {"OPERATION", "read"},
                {"NUMBER_OF_BYTES", 16384},
                {"FLAGS", nullptr}};
}

TEST(PfsInsert, StatementStartAndEnd) {
    json ev = statement_event();
    const std::string tail =
        "0,'select \\'a\\'\\n',NULL,NULL,'test',NULL,NULL,NULL,NULL,0,NULL,NULL,0,NULL,0,1,0,"
        "NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);\n";
    EXPECT_EQ(pfs_insert(ev, false),
              "INSERT INTO events_statements_current VALUES (12,5,NULL,'statement/sql/select',"
              "NULL,1000,NULL,NULL," +
                  tail);
    EXPECT_EQ(pfs_insert(ev, true),
              "INSERT INTO events_statements_current VALUES (12,5,9,'statement/sql/select',NULL,"
              "1000,5000,4000," +
                  tail);
}

TEST(PfsInsert, StageStartAndEnd) {
    json ev = stage_event(6, 1100, 1900);
    EXPECT_EQ(pfs_insert(ev, false),
              "INSERT INTO events_stages_current VALUES (12,6,NULL,'stage/sql/Opening tables',"
              "'./sql/sql_base.cc:4676',1100,NULL,NULL,NULL,NULL,5,'STATEMENT');\n");
    EXPECT_EQ(pfs_insert(ev, true),
              "INSERT INTO events_stages_current VALUES (12,6,6,'stage/sql/Opening tables',"
              "'./sql/sql_base.cc:4676',1100,1900,800,NULL,NULL,5,'STATEMENT');\n");
}

TEST(PfsInsert, WaitStartAndEnd) {
    json ev = wait_event(7, 1200, 1300);
    EXPECT_EQ(pfs_insert(ev, false),
              "INSERT INTO events_waits_current VALUES (12,7,NULL,"
              "'wait/io/file/innodb/innodb_data_file',NULL,1200,NULL,NULL,NULL,NULL,"
              "'/var/lib/mysql/ibdata1',NULL,'FILE',140234567890,6,'STAGE','read',16384,NULL);\n");
    EXPECT_EQ(pfs_insert(ev, true),
              "INSERT INTO events_waits_current VALUES (12,7,7,"
              "'wait/io/file/innodb/innodb_data_file',NULL,1200,1300,100,NULL,NULL,"
              "'/var/lib/mysql/ibdata1',NULL,'FILE',140234567890,6,'STAGE','read',16384,NULL);\n");
}

TEST(PfsInsert, ValueConversions) {
    json ev = wait_event(7, 1200, 1300);
    ev["OBJECT_INSTANCE_BEGIN"] = "0x7f00000010";  // address as hex text
    ev["SPINS"] = "many";                          // not a number: NULL
    ev["FLAGS"] = true;
    ev["NUMBER_OF_BYTES"] = -1;
    ev["OBJECT_NAME"] = 42;                  // number in a text column: quoted
    ev["OPERATION"] = std::string(40, 'r');  // varchar(32): cut
    ev.erase("INDEX_NAME");                  // absent: NULL
    std::string row = pfs_insert(ev, true);
    EXPECT_NE(row.find(",NULL,NULL,'42',NULL,'FILE',545460846608,6,'STAGE','" +
                       std::string(32, 'r') + "',-1,1);\n"),
              std::string::npos)
        << row;
    EXPECT_NE(row.find("1300,100,NULL,"), std::string::npos) << row;
}

TEST(PfsInsert, OtherKindsGiveNothing) {
    EXPECT_EQ(pfs_insert(json{{"kind", "packet"}, {"THREAD_ID", 1}}, true), "");
    EXPECT_EQ(pfs_insert(json{{"THREAD_ID", 1}}, true), "");
    EXPECT_EQ(pfs_insert(json::array(), true), "");
}

TEST(PfsActor, Sanitised) {
    EXPECT_EQ(pfs_sanitize_actor("app@10.0.0.7"), "app@10.0.0.7");
    EXPECT_EQ(pfs_sanitize_actor("r o/ot@local*host"), "r_o_ot@local_host");
    EXPECT_EQ(pfs_sanitize_actor("a-b_c@h"), "a-b_c@h");
    EXPECT_EQ(pfs_sanitize_actor(""), "unknown");
    EXPECT_EQ(pfs_sanitize_actor(".."), "__");
    EXPECT_EQ(pfs_sanitize_actor("\xc3\xa9@x"), "__@x");
    EXPECT_EQ(pfs_sanitize_actor(std::string(300, 'a')).size(), 128u);
}

struct Sink {
    std::vector<std::string> messages;
    PfsSqlWriter::MessageSink fn() {
        return [this](const std::string &m) { messages.push_back(m); };
    }
};

uint64_t timer_start_of(const std::string &row) {
    // TIMER_START is the 6th value; the tests' names and sources hold no comma.
    size_t p = row.find('(');
    for (int i = 0; i < 5; i++) {
        p = row.find(',', p + 1);
    }
    return std::stoull(row.substr(p + 1));
}

TEST(PfsSqlWriter, BlockRowsSortedWithStartBeforeEnd) {
    mysqltrace::test::TempDir tmp("mysqltrace-pfs");
    const std::string dir = tmp.file("trace");  // created by open
    Sink sink;
    {
        auto w = PfsSqlWriter::open(dir, sink.fn());
        ASSERT_TRUE(w.ok()) << w.error().message;
        // Handed over out of order: the writer sorts.
        std::vector<json> block = {wait_event(8, 1500, 1600), stage_event(7, 1400, 2000),
                                   statement_event(), stage_event(6, 1000, 1400),
                                   wait_event(9, 1500, 1550)};
        (*w)->write_block(12, "app@localhost", block);
        (*w)->flush();
        EXPECT_EQ((*w)->rows_written(), 10u);
        EXPECT_EQ((*w)->failed_files(), 0u);
    }
    struct stat st {};
    ASSERT_EQ(stat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    std::string path = dir + "/thread.app@localhost.12";
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    auto lines = lines_of(read_file(path));
    ASSERT_EQ(lines.size(), 11u);
    EXPECT_TRUE(std::regex_match(
        lines[0],
        std::regex(
            R"(/\* MySQL Trace File for app@localhost on \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \*/)")))
        << lines[0];
    // (TIMER_START, start before end, EVENT_ID)
    const std::vector<std::pair<std::string, bool>> want = {
        {"statements_current VALUES (12,5,NULL", false},
        {"stages_current VALUES (12,6,NULL", false},
        {"statements_current VALUES (12,5,9", true},
        {"stages_current VALUES (12,6,6", true},
        {"stages_current VALUES (12,7,NULL", false},
        {"stages_current VALUES (12,7,7", true},
        {"waits_current VALUES (12,8,NULL", false},
        {"waits_current VALUES (12,9,NULL", false},
        {"waits_current VALUES (12,8,8", true},
        {"waits_current VALUES (12,9,9", true},
    };
    uint64_t last = 0;
    for (size_t i = 0; i < want.size(); i++) {
        const auto &l = lines[i + 1];
        EXPECT_NE(l.find(want[i].first), std::string::npos) << i << ": " << l;
        uint64_t ts = timer_start_of(l);
        EXPECT_GE(ts, last) << l;
        last = ts;
    }
    EXPECT_TRUE(sink.messages.empty());
}

TEST(PfsSqlWriter, LeastRecentlyUsedFilesAreClosedAndReopened) {
    mysqltrace::test::TempDir tmp("mysqltrace-pfs");
    const std::string &dir = tmp.path();
    Sink sink;
    constexpr int kThreads = 7;
    constexpr int kRounds = 4;
    {
        auto w = PfsSqlWriter::open(dir, sink.fn(), 2);
        ASSERT_TRUE(w.ok());
        for (int round = 0; round < kRounds; round++) {
            for (int t = 0; t < kThreads; t++) {
                uint64_t ts = 1000u * static_cast<uint64_t>(round + 1) + static_cast<uint64_t>(t);
                (*w)->write_block(static_cast<uint64_t>(t), "u@h", {stage_event(1, ts, ts + 5)});
                EXPECT_LE((*w)->open_files(), 2u);
            }
        }
        (*w)->flush();
        EXPECT_EQ((*w)->rows_written(), 2u * kThreads * kRounds);
    }
    for (int t = 0; t < kThreads; t++) {
        auto lines = lines_of(read_file(dir + "/thread.u@h." + std::to_string(t)));
        ASSERT_EQ(lines.size(), 1u + 2 * kRounds) << t;
        EXPECT_EQ(lines[0].rfind("/* MySQL Trace File for u@h on ", 0), 0u);
        for (int round = 0; round < kRounds; round++) {
            EXPECT_EQ(timer_start_of(lines[1 + 2 * round]),
                      1000u * static_cast<uint64_t>(round + 1) + static_cast<uint64_t>(t));
        }
    }
    EXPECT_TRUE(sink.messages.empty());
}

TEST(PfsSqlWriter, AppendsToAnExistingFileWithoutSecondHeader) {
    mysqltrace::test::TempDir tmp("mysqltrace-pfs");
    const std::string &dir = tmp.path();
    std::string path = dir + "/thread.u@h.3";
    { std::ofstream(path) << "/* MySQL Trace File for u@h on 2024-01-01 00:00:00 */\n"; }
    {
        auto w = PfsSqlWriter::open(dir);
        ASSERT_TRUE(w.ok());
        (*w)->write_block(3, "u@h", {stage_event(1, 10, 20)});
    }
    auto lines = lines_of(read_file(path));
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[0], "/* MySQL Trace File for u@h on 2024-01-01 00:00:00 */");
}

TEST(PfsSqlWriter, BlockGoingBackInTimeIsLeftOut) {
    mysqltrace::test::TempDir tmp("mysqltrace-pfs");
    const std::string &dir = tmp.path();
    Sink sink;
    {
        auto w = PfsSqlWriter::open(dir, sink.fn());
        ASSERT_TRUE(w.ok());
        (*w)->write_block(1, "u@h", {stage_event(1, 100, 200)});
        (*w)->write_block(1, "u@h", {stage_event(2, 50, 60)});
        (*w)->write_block(1, "u@h", {stage_event(3, 40, 60)});
        (*w)->write_block(1, "u@h", {stage_event(4, 100, 300)});  // equal start is fine
        (*w)->flush();
        EXPECT_EQ((*w)->dropped_blocks(), 2u);
        EXPECT_EQ((*w)->rows_written(), 4u);
    }
    ASSERT_EQ(sink.messages.size(), 1u);
    EXPECT_EQ(sink.messages[0], "mysqltrace: " + dir +
                                    "/thread.u@h.1: events starting at TIMER_START 50 came after "
                                    "one at 100; such blocks are left out to keep the file in "
                                    "time order");
}

TEST(PfsSqlWriter, SymlinkIsRefusedWithAClearMessage) {
    mysqltrace::test::TempDir tmp("mysqltrace-pfs");
    const std::string &dir = tmp.path();
    std::string target = dir + "/target";
    ASSERT_EQ(symlink(target.c_str(), (dir + "/thread.u@h.1").c_str()), 0);
    ASSERT_EQ(symlink("/dev/full", (dir + "/thread.u@h.2").c_str()), 0);
    Sink sink;
    {
        auto w = PfsSqlWriter::open(dir, sink.fn());
        ASSERT_TRUE(w.ok());
        for (int i = 0; i < 3; i++) {
            uint64_t ts = 10u * static_cast<uint64_t>(i + 1);
            (*w)->write_block(1, "u@h", {stage_event(1, ts, ts + 1)});
            (*w)->write_block(2, "u@h", {stage_event(1, ts, ts + 1)});
            (*w)->write_block(3, "u@h", {stage_event(1, ts, ts + 1)});
        }
        (*w)->flush();
        EXPECT_EQ((*w)->failed_files(), 2u);
        EXPECT_EQ((*w)->rows_written(), 6u);  // thread 3 only
    }
    ASSERT_EQ(sink.messages.size(), 2u);  // once per file
    EXPECT_EQ(sink.messages[0], "mysqltrace: " + dir +
                                    "/thread.u@h.1: is a symbolic link, not followed: trace of "
                                    "this thread stopped");
    EXPECT_EQ(sink.messages[1], "mysqltrace: " + dir +
                                    "/thread.u@h.2: is a symbolic link, not followed: trace of "
                                    "this thread stopped");
    EXPECT_NE(access(target.c_str(), F_OK), 0);
    EXPECT_EQ(lines_of(read_file(dir + "/thread.u@h.3")).size(), 7u);
}

// A real write error without root: RLIMIT_FSIZE makes write(2) fail with
// EFBIG once a file reaches the limit, like a full disk or quota.
TEST(PfsSqlWriter, WriteErrorStopsOnlyThatFile) {
    mysqltrace::test::TempDir tmp("mysqltrace-pfs");
    const std::string &dir = tmp.path();
    Sink sink;
    struct rlimit old {};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    {
        auto w = PfsSqlWriter::open(dir, sink.fn());
        ASSERT_TRUE(w.ok());
        struct rlimit lim = old;
        lim.rlim_cur = 32 * 1024;
        ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
        json big = statement_event();
        big["SQL_TEXT"] = std::string(100 * 1024, 'x');
        (*w)->write_block(12, "big@h", {big});  // 200 KiB: fails on its flush
        (*w)->write_block(13, "small@h", {statement_event()});
        (*w)->write_block(12, "big@h", {big});  // ignored, no second message
        (*w)->flush();
        ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
        EXPECT_EQ((*w)->failed_files(), 1u);
        EXPECT_EQ((*w)->rows_written(), 2u);
        // Later blocks of the other thread still go out.
        json later = statement_event();
        later["TIMER_START"] = 9000;
        (*w)->write_block(13, "small@h", {later});
        (*w)->flush();
        EXPECT_EQ((*w)->rows_written(), 4u);
    }
    std::signal(SIGXFSZ, old_handler);
    ASSERT_EQ(sink.messages.size(), 1u);
    EXPECT_EQ(sink.messages[0], "mysqltrace: " + dir + "/thread.big@h.12: " + std::strerror(EFBIG) +
                                    ": trace of this thread stopped");
    EXPECT_EQ(lines_of(read_file(dir + "/thread.small@h.13")).size(), 5u);
}

TEST(PfsSqlWriter, OpenRefusesUnusableDirectories) {
    mysqltrace::test::TempDir tmp("mysqltrace-pfs");
    const std::string &dir = tmp.path();
    std::string file = dir + "/plain";
    std::ofstream(file) << "x";
    auto w = PfsSqlWriter::open(file);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.error().message, "cannot use trace directory " + file + ": Not a directory");
    auto w2 = PfsSqlWriter::open(dir + "/missing/deeper");
    ASSERT_FALSE(w2.ok());
    EXPECT_EQ(w2.error().message, "cannot create trace directory " + dir +
                                      "/missing/deeper: No such file or directory");
    EXPECT_FALSE(PfsSqlWriter::open("").ok());
}

}  // namespace
