// SPDX-License-Identifier: GPL-2.0-only
// The tables a statement names (sql/tables.h), and the one table of a row
// lock wait's statement: single-table DML and locking reads name theirs;
// joins, subqueries, INSERT ... SELECT and cut texts name none for sure.
#include <gtest/gtest.h>

#include "sql/tables.h"

namespace mysqltrace::sql {
namespace {

std::vector<std::string> names(std::string_view sql) {
    std::vector<std::string> v;
    for (const auto &t : statement_tables(sql)) {
        v.push_back(t.schema.empty() ? t.name : t.schema + "." + t.name);
    }
    return v;
}

using V = std::vector<std::string>;

TEST(StatementTables, SingleTableStatements) {
    EXPECT_EQ(names("UPDATE t SET v = v + 1 WHERE id = 1"), V{"t"});
    EXPECT_EQ(names("update LOW_PRIORITY ignore `mt_db`.`t 1` set v=1"), V{"mt_db.t 1"});
    EXPECT_EQ(names("DELETE FROM shop.orders WHERE id < 10"), V{"shop.orders"});
    EXPECT_EQ(names("INSERT INTO t (a, b) VALUES (1, 2), (3, 4)"), V{"t"});
    EXPECT_EQ(names("insert ignore into t values (1) on duplicate key update a = 2"), V{"t"});
    EXPECT_EQ(names("REPLACE INTO t SET a = 1"), V{"t"});
    EXPECT_EQ(names("SELECT * FROM t AS x WHERE id = 1 FOR UPDATE"), V{"t"});
    EXPECT_EQ(names("SELECT c FROM t x WHERE id = 1 LOCK IN SHARE MODE"), V{"t"});
    EXPECT_EQ(names("SELECT 1 FROM DUAL"), V{});
    EXPECT_EQ(names("SELECT 1"), V{});
    EXPECT_EQ(names("SELECT a INTO @v FROM t"), V{"t"});
    EXPECT_EQ(names("SELECT a FROM t INTO OUTFILE '/tmp/x'"), V{"t"});
}

TEST(StatementTables, SeveralTables) {
    EXPECT_EQ(names("SELECT * FROM a, b AS y, c WHERE a.id = b.id"), (V{"a", "b", "c"}));
    EXPECT_EQ(names("UPDATE a JOIN b ON a.id = b.id SET a.v = b.v"), (V{"a", "b"}));
    EXPECT_EQ(names("UPDATE a, s.b SET a.v = 1"), (V{"a", "s.b"}));
    EXPECT_EQ(names("DELETE a FROM a LEFT JOIN b USING (id)"), (V{"a", "b"}));
    EXPECT_EQ(names("INSERT INTO a SELECT * FROM b"), (V{"a", "b"}));
    EXPECT_EQ(names("SELECT * FROM t WHERE id IN (SELECT id FROM u) FOR UPDATE"), (V{"t", "u"}));
    EXPECT_EQ(names("SELECT * FROM (SELECT id FROM u) d"), (V{"u"}));
}

TEST(StatementTables, QuotesAndCommentsHideNothingAndInventNothing) {
    EXPECT_EQ(names("SELECT 'FROM x' FROM t -- FROM y\n WHERE a = \"JOIN z\""), V{"t"});
    EXPECT_EQ(names("SELECT /* FROM x */ a FROM t # JOIN y"), V{"t"});
    EXPECT_EQ(names("SELECT a /*!50000 FROM t */"), V{"t"});
    EXPECT_EQ(names("SELECT a FROM `we``ird` WHERE b = 'it''s'"), V{"we`ird"});
    EXPECT_EQ(names("SELECT a FROM t WHERE b = 'unterminated"), V{"t"});
    EXPECT_EQ(names("UPDATE"), V{});
    EXPECT_EQ(names("SELECT a FROM"), V{});
    EXPECT_EQ(names(""), V{});
    // UPDATE names a table only as the statement's first word.
    EXPECT_EQ(names("SELECT a FROM t FOR UPDATE"), V{"t"});
}

TEST(OnlyTable, OneTableAfterTheDefaultSchema) {
    TableName t;
    ASSERT_TRUE(only_table("UPDATE t SET v = 1", "mt_db", true, &t));
    EXPECT_EQ(t, (TableName{"mt_db", "t"}));
    ASSERT_TRUE(only_table("UPDATE mt_db.t JOIN t AS x ON 1 SET t.v = 1", "mt_db", true, &t));
    EXPECT_EQ(t, (TableName{"mt_db", "t"}));
    EXPECT_FALSE(only_table("UPDATE t SET v = 1", "", true, &t));        // no schema to fill in
    EXPECT_FALSE(only_table("UPDATE t SET v = 1", "mt_db", false, &t));  // cut text
    EXPECT_FALSE(only_table("INSERT INTO a SELECT * FROM b", "mt_db", true, &t));
    EXPECT_FALSE(only_table("SELECT 1", "mt_db", true, &t));
}

}  // namespace
}  // namespace mysqltrace::sql
