// SPDX-License-Identifier: GPL-2.0-only
// The tables a statement names, read from its text: what a row lock wait's
// OBJECT_SCHEMA / OBJECT_NAME are when the waiting statement names one
// table (InnoDB's own lock object is not read by the tracer). Table
// references are taken after FROM, JOIN, INTO, UPDATE and in FROM's comma
// lists; quotes, backticks and comments are understood (executable
// /*! ... */ comments are read as SQL). A subquery's or a derived table's
// tables count too, so a statement that reads one table and locks another
// names two, and the caller treats it as unknown.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mysqltrace::sql {

struct TableName {
    std::string schema;  // "" when the statement does not qualify it
    std::string name;
    bool operator==(const TableName &) const = default;
};

// Every table reference, in order of appearance (duplicates kept).
std::vector<TableName> statement_tables(std::string_view sql);

// The one table the statement names (each reference the same table after
// `default_schema` fills in the unqualified ones); false when it names none
// or several, or its text was cut (`complete` false) and the rest could
// name more.
bool only_table(std::string_view sql, std::string_view default_schema, bool complete,
                TableName *out);

}  // namespace mysqltrace::sql
