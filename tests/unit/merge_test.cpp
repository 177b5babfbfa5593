// SPDX-License-Identifier: GPL-2.0-only
#include "output/pfs_merge.h"

#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace {

using mysqltrace::output::pfs_is_trace_header;
using mysqltrace::output::pfs_merge;
using mysqltrace::output::pfs_merge_to_path;
using mysqltrace::output::pfs_parse_insert;
using json = nlohmann::ordered_json;

constexpr const char *kHeader = "/* MySQL Trace File for u@h on 2024-05-01 10:00:00 */\n";

class MergeTest : public testing::Test {
  protected:
    void SetUp() override { ASSERT_FALSE(dir_.empty()); }

    std::string write(const std::string &name, const std::string &text) {
        std::string path = dir_ + "/" + name;
        std::ofstream(path, std::ios::binary) << text;
        return path;
    }

    mysqltrace::Result<uint64_t> merge(const std::vector<std::string> &files, std::string &out) {
        out.clear();
        return pfs_merge(files, [&](std::string_view s) {
            out.append(s);
            return true;
        });
    }

    std::vector<std::string> entries() {
        std::vector<std::string> out;
        DIR *d = opendir(dir_.c_str());
        while (auto *e = readdir(d)) {
            std::string n = e->d_name;
            if (n != "." && n != "..") {
                out.push_back(n);
            }
        }
        closedir(d);
        std::sort(out.begin(), out.end());
        return out;
    }

    mysqltrace::test::TempDir tmp_{"mysqltrace-merge"};
    std::string dir_ = tmp_.path();
};

// A stage row: (thread, event, start) and a name that tells rows apart.
std::string stage(uint64_t thread, uint64_t id, uint64_t start, const std::string &name = "s") {
    return "INSERT INTO events_stages_current VALUES (" + std::to_string(thread) + "," +
           std::to_string(id) + ",NULL,'" + name + "',NULL," + std::to_string(start) +
           ",NULL,NULL,NULL,NULL,NULL,NULL);\n";
}

std::vector<std::string> rows_of(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string l;
    std::getline(in, l);  // header
    while (std::getline(in, l)) {
        out.push_back(l);
    }
    return out;
}

TEST(PfsParseInsert, AcceptsWhatTheWriterProduces) {
    json st = json::parse(R"js({"kind":"statement","THREAD_ID":1,"EVENT_ID":2,"END_EVENT_ID":3,
        "EVENT_NAME":"statement/sql/insert","TIMER_START":18446744073709551615,
        "SQL_TEXT":"insert into t values ('a,b', ');', 'x\\\\', \"q\", '\u0000\n\u001a', 'é😀')"})js");
    for (bool end : {false, true}) {
        auto r = pfs_parse_insert(mysqltrace::output::pfs_insert(st, end));
        ASSERT_TRUE(r.ok()) << r.error().message;
        EXPECT_EQ(r->table->name, "events_statements_current");
        EXPECT_EQ(r->timer_start, UINT64_MAX);
    }
    json wait = {{"kind", "wait"}, {"EVENT_NAME", "idle"}};
    auto r = pfs_parse_insert(mysqltrace::output::pfs_insert(wait, true));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->table->name, "events_waits_current");
    EXPECT_FALSE(r->timer_start.has_value());
}

TEST(PfsParseInsert, StringsNumbersAndSpacing) {
    auto r = pfs_parse_insert(
        "  insert  into `events_stages_current` values ( 1 , 2, null, 'it''s \\' ), (', "
        "_utf8mb4'x', 7 ,1.5e3,-2,NULL,NULL,NULL,'STAGE' ) ;  ");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->timer_start, 7u);
}

TEST(PfsParseInsert, RejectsMalformedRows) {
    const std::string ok = stage(1, 2, 3);
    ASSERT_TRUE(pfs_parse_insert(ok).ok());
    struct Case {
        std::string line;
        std::string error;
    };
    const std::vector<Case> cases = {
        {"SELECT 1;",
         "not an `INSERT INTO events_(statements|stages|waits)_current VALUES (...);` line"},
        {"INSERT INTO events_transactions_current VALUES (1);",
         "unknown table `events_transactions_current` (expected events_statements_current, "
         "events_stages_current or events_waits_current)"},
        {"INSERT INTO events_stages_current VALUES (1,2,NULL,'s',NULL,3,NULL,NULL,NULL,NULL,"
         "NULL);",
         "events_stages_current has 12 columns, this row has 11 values"},
        {"INSERT INTO events_stages_current VALUES (1,2,NULL,'s,NULL,3,NULL,NULL,NULL,NULL,NULL,"
         "NULL);",
         "value 4: unterminated string"},
        {"INSERT INTO events_stages_current VALUES (1,2,NULL,'s\\',NULL,3);",
         "value 4: unterminated string"},
        {"INSERT INTO events_stages_current VALUES (1,2,NULL,'s',NULL,3,NULL,NULL,NULL,NULL,NULL,"
         "NULL)",
         "missing `;` after the value list"},
        {"INSERT INTO events_stages_current VALUES (1,2,NULL,'s',NULL,3,NULL,NULL,NULL,NULL,NULL,"
         "NULL); DROP TABLE x;",
         "unexpected text after `;`"},
        {"INSERT INTO events_stages_current VALUES (1,2,NULL,s,NULL,3,NULL,NULL,NULL,NULL,NULL,"
         "NULL);",
         "value 4: expected a quoted string, NULL or a number"},
        {"INSERT INTO events_stages_current VALUES (1,2,NULL,4,NULL,3,NULL,NULL,NULL,NULL,NULL,"
         "NULL);",
         "value 4 (EVENT_NAME) should be a string or NULL"},
        {"INSERT INTO events_stages_current VALUES ('1',2,NULL,'s',NULL,3,NULL,NULL,NULL,NULL,"
         "NULL,NULL);",
         "value 1 (THREAD_ID) should be a number or NULL"},
        {"INSERT INTO events_stages_current VALUES (1,2,NULL,'s',NULL,-3,NULL,NULL,NULL,NULL,NULL,"
         "NULL);",
         "value 6 (TIMER_START) is not an unsigned 64-bit integer: -3"},
        {"INSERT INTO events_stages_current VALUES (1,2,NULL,'s',NULL,18446744073709551616,NULL,"
         "NULL,NULL,NULL,NULL,NULL);",
         "value 6 (TIMER_START) is not an unsigned 64-bit integer: 18446744073709551616"},
        {"INSERT INTO events_stages_current VALUES (1,2,NULL,'s',NULL,3x,NULL,NULL,NULL,NULL,NULL,"
         "NULL);",
         "value 6: malformed number"},
        {"INSERT INTO events_stages_current VALUES (1,2,NULL,'s' 'x',NULL,3,NULL,NULL,NULL,NULL,"
         "NULL,NULL);",
         "value 4: expected `,` or `)` after it"},
        {"INSERT INTO events_stages_current VALUES (1,2,", "the value list ends without `);`"},
        {"INSERT INTO events_stages_current VALUES 1,2);", "expected `(` after VALUES"},
    };
    for (const auto &c : cases) {
        auto r = pfs_parse_insert(c.line);
        ASSERT_FALSE(r.ok()) << c.line;
        EXPECT_EQ(r.error().message, c.error) << c.line;
    }
}

TEST(PfsTraceHeader, Recognised) {
    EXPECT_TRUE(pfs_is_trace_header("/* MySQL Trace File for u@h on 2024-05-01 10:00:00 */"));
    EXPECT_TRUE(pfs_is_trace_header("/* mysqltrace merge of 3 files on 2024-05-01 10:00:00 */"));
    EXPECT_FALSE(pfs_is_trace_header("/* something else */"));
    EXPECT_FALSE(pfs_is_trace_header(stage(1, 2, 3)));
}

TEST_F(MergeTest, OrdersRowsAcrossFiles) {
    auto a = write("a", std::string(kHeader) + stage(1, 1, 10, "a1") + stage(1, 2, 30, "a2") +
                            "\n" + stage(1, 3, 50, "a3"));
    auto b = write("b", std::string(kHeader) + stage(2, 1, 20, "b1") + stage(2, 2, 40, "b2") +
                            stage(2, 3, 60, "b3") + stage(2, 4, 70, "b4"));
    auto c = write("c", kHeader);  // header only
    std::string out;
    auto r = merge({a, b, c}, out);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, 7u);
    EXPECT_TRUE(std::regex_match(
        out.substr(0, out.find('\n')),
        std::regex(R"(/\* mysqltrace merge of 3 files on \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \*/)")))
        << out;
    std::vector<std::string> names;
    for (const auto &row : rows_of(out)) {
        names.push_back(row.substr(row.find('\'') + 1, 2));
    }
    EXPECT_EQ(names, (std::vector<std::string>{"a1", "b1", "a2", "b2", "a3", "b3", "b4"}));
}

TEST_F(MergeTest, TiesKeepFileOrderAndNullTimerStartStaysInPlace) {
    std::string null_row =
        "INSERT INTO events_stages_current VALUES (1,9,NULL,'an',NULL,NULL,NULL,NULL,NULL,NULL,"
        "NULL,NULL);\n";
    auto a = write("a", std::string(kHeader) + stage(1, 1, 10, "a1") + stage(1, 2, 20, "a2") +
                            null_row + stage(1, 3, 20, "a3"));
    auto b = write("b", std::string(kHeader) + stage(2, 1, 10, "b1") + stage(2, 2, 20, "b2"));
    std::string out;
    auto r = merge({b, a}, out);
    ASSERT_TRUE(r.ok()) << r.error().message;
    std::vector<std::string> names;
    for (const auto &row : rows_of(out)) {
        names.push_back(row.substr(row.find('\'') + 1, 2));
    }
    EXPECT_EQ(names, (std::vector<std::string>{"b1", "a1", "b2", "a2", "an", "a3"}));
}

TEST_F(MergeTest, MalformedLineReportedWithItsNumber) {
    auto a = write("a", std::string(kHeader) + stage(1, 1, 10) + "\n" + stage(1, 2, 20) +
                            "INSERT INTO events_stages_current VALUES (1,3,NULL,'x);\n");
    std::string out;
    auto r = merge({a}, out);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, a + ":5: value 4: unterminated string");
}

TEST_F(MergeTest, FileGoingBackwardsIsRejected) {
    auto a = write("a", std::string(kHeader) + stage(1, 1, 10) + stage(1, 2, 30) + stage(1, 3, 20));
    std::string out;
    auto r = merge({a}, out);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, a + ":4: TIMER_START 20 goes backwards (line 3 has 30); a trace "
                                     "file must be in TIMER_START order");
}

TEST_F(MergeTest, MissingHeaderIsRejected) {
    auto good = write("good", std::string(kHeader) + stage(1, 1, 10));
    auto bare = write("bare", stage(1, 1, 10));
    auto empty = write("empty", "");
    std::string out;
    auto r = merge({good, bare}, out);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, bare +
                                     ":1: not a trace file: the first line must be its header "
                                     "comment (/* MySQL Trace File for ... */)");
    r = merge({empty}, out);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, empty +
                                     ":1: empty file; a trace file starts with its header "
                                     "comment (/* MySQL Trace File for ... */)");
    r = merge({dir_ + "/nonexistent"}, out);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, dir_ + "/nonexistent: No such file or directory");
}

TEST_F(MergeTest, MergedOutputCanBeMergedAgain) {
    auto a = write("a", std::string(kHeader) + stage(1, 1, 10, "a1") + stage(1, 2, 30, "a2"));
    auto b = write("b", std::string(kHeader) + stage(2, 1, 20, "b1"));
    std::string out;
    ASSERT_TRUE(merge({a, b}, out).ok());
    auto m = write("m", out);
    auto c = write("c", std::string(kHeader) + stage(3, 1, 25, "c1"));
    std::string out2;
    auto r = merge({m, c}, out2);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, 4u);
    EXPECT_NE(out2.find("'c1'"), std::string::npos);
    EXPECT_LT(out2.find("'b1'"), out2.find("'c1'"));
    EXPECT_LT(out2.find("'c1'"), out2.find("'a2'"));
}

TEST_F(MergeTest, ToPathWritesAtomically) {
    auto a = write("a", std::string(kHeader) + stage(1, 1, 10, "a1"));
    auto bad = write("bad", std::string(kHeader) + stage(1, 1, 10) + "garbage\n");
    std::string out = dir_ + "/merged.sql";
    write("merged.sql", "old contents\n");
    auto r = pfs_merge_to_path({a, bad}, out);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message,
              bad +
                  ":3: not an `INSERT INTO events_(statements|stages|waits)_current VALUES "
                  "(...);` line");
    // The old output is untouched and no temporary file is left.
    EXPECT_EQ(entries(), (std::vector<std::string>{"a", "bad", "merged.sql"}));
    std::ifstream old(out);
    std::string l;
    std::getline(old, l);
    EXPECT_EQ(l, "old contents");

    r = pfs_merge_to_path({a}, out);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, 1u);
    EXPECT_EQ(entries(), (std::vector<std::string>{"a", "bad", "merged.sql"}));
    struct stat st {};
    ASSERT_EQ(stat(out.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    std::ifstream in(out);
    std::getline(in, l);
    EXPECT_EQ(l.rfind("/* mysqltrace merge of 1 file on ", 0), 0u);
    std::getline(in, l);
    EXPECT_EQ(l + "\n", stage(1, 1, 10, "a1"));
}

TEST_F(MergeTest, WriterFilesMergeInTimeOrder) {
    std::string trace = dir_ + "/trace";
    {
        auto w = mysqltrace::output::PfsSqlWriter::open(trace);
        ASSERT_TRUE(w.ok());
        for (uint64_t i = 0; i < 50; i++) {
            uint64_t thread = i % 5;
            json st = {{"kind", "statement"},
                       {"THREAD_ID", thread},
                       {"EVENT_ID", i},
                       {"END_EVENT_ID", i + 1},
                       {"EVENT_NAME", "statement/sql/select"},
                       {"TIMER_START", 1000 * i},
                       {"TIMER_END", 1000 * i + 900},
                       {"TIMER_WAIT", 900},
                       {"SQL_TEXT", "select " + std::to_string(i)}};
            json wt = {{"kind", "wait"},
                       {"THREAD_ID", thread},
                       {"EVENT_ID", i + 1},
                       {"EVENT_NAME", "idle"},
                       {"TIMER_START", 1000 * i + 950},
                       {"TIMER_END", 1000 * i + 999},
                       {"OPERATION", "idle"}};
            (*w)->write_block(thread, "app@host" + std::to_string(thread), {st, wt});
        }
    }
    std::vector<std::string> files;
    for (int t = 0; t < 5; t++) {
        files.push_back(trace + "/thread.app@host" + std::to_string(t) + "." + std::to_string(t));
    }
    std::string out;
    auto r = merge(files, out);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, 200u);
    uint64_t last = 0;
    for (const auto &row : rows_of(out)) {
        auto p = pfs_parse_insert(row);
        ASSERT_TRUE(p.ok());
        ASSERT_TRUE(p->timer_start.has_value());
        EXPECT_GE(*p->timer_start, last);
        last = *p->timer_start;
    }
}

}  // namespace
