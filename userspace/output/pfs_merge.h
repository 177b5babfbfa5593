// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace merge`: puts WL#4878 trace files (output/pfs_sql.h), each in
// TIMER_START order, into one file in TIMER_START order. A streaming k-way
// merge: one current row per file, so files larger than memory work.
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "output/pfs_sql.h"
#include "util/result.h"

namespace mysqltrace::output {

// A checked trace-file row.
struct PfsRow {
    const PfsTable *table = nullptr;
    std::optional<uint64_t> timer_start;  // empty when NULL
};

// Checks one `INSERT INTO events_(statements|stages|waits)_current VALUES
// (...);` line: the value list parsed (quoted strings with backslash escapes
// and '' doubling, an optional _charset introducer, NULL, numbers), as many
// values as the table has columns, strings and numbers in the columns meant
// for them, TIMER_START an unsigned integer or NULL. The error says what is
// wrong, without file or line.
Result<PfsRow> pfs_parse_insert(std::string_view line);

// A trace file's first line: `/* MySQL Trace File for ... */` or a merge's
// `/* mysqltrace merge of ... */` (merges can be merged again).
bool pfs_is_trace_header(std::string_view line);

// `/* mysqltrace merge of N files on <YYYY-MM-DD HH:MM:SS> */\n`.
std::string pfs_merge_header(size_t files, std::time_t when);

// Gets the output piece by piece; false on a write error, with errno set.
using MergeWrite = std::function<bool(std::string_view)>;

// Merges the files into `write`: the merge header, then every row ordered by
// TIMER_START, ties in the order the files are given (a NULL TIMER_START
// counts as the one of the row before it in its file). Errors, as
// "FILE:LINE: what is wrong": a first line that is not a trace-file header, a
// malformed line, TIMER_START going backwards in a file, unreadable files.
// Returns the number of rows. output_name names the output in write errors.
Result<uint64_t> pfs_merge(const std::vector<std::string> &files, const MergeWrite &write,
                           const std::string &output_name = "the merged output");

// pfs_merge into `output` ("" or "-": standard output). A file is written to a
// temporary file (0600) next to it and renamed over it only when the merge
// succeeded, so an error leaves nothing half-written.
Result<uint64_t> pfs_merge_to_path(const std::vector<std::string> &files,
                                   const std::string &output);

}  // namespace mysqltrace::output
