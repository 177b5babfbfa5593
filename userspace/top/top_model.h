// SPDX-License-Identifier: GPL-2.0-only
// What `mysqltrace top` shows, without the terminal: the statement classes
// of the last snapshot with their rates over the time since the one before
// (calls, time and errors per second, the share of the interval's
// statement time), filtered by schema, user or digest text and sorted by
// one column; and the lines of the table, of the header and of one class's
// details, cut to a width. The screen (top_screen.h) and the batch mode
// print these lines.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "top/snapshot.h"

namespace mysqltrace::top {

enum class SortKey { time, calls, mean, p99, errors, rows };

// "total time", "calls/s", ... for the header.
const char *sort_name(SortKey key);
// The key of a command-line name: time, calls, mean, p99, errors, rows.
std::optional<SortKey> sort_key_named(std::string_view name);

struct Filter {
    std::string schema, user;  // exact; "" any
    std::string text;          // in the digest text, case-insensitive; "" any
    bool empty() const { return schema.empty() && user.empty() && text.empty(); }
};

// One class of the last snapshot, with its rates.
struct Row {
    std::string key;  // server, pid and class: stable across snapshots
    const ServerSnapshot *server = nullptr;
    const ClassSnapshot *cls = nullptr;
    // Since the snapshot before (0 for the first one).
    uint64_t d_calls = 0, d_time_ns = 0, d_errors = 0;
    double calls_s = 0, errors_s = 0;
    double time_share = 0;  // of every class's time in the interval, 0..1
    // Over the interval when it had calls, else over every call.
    uint64_t mean_ns = 0;
    // Rows examined per row sent, over every call; per call for a class
    // that sends no rows (a write).
    double examined_per_sent = 0;
};

struct Totals {
    size_t servers = 0;
    double statements_s = 0, errors_s = 0;
    uint64_t statements = 0, errors = 0, dropped = 0, undecodable = 0;
};

class Model {
  public:
    // The next snapshot: the current one becomes the base of the rates.
    void update(Snapshot next);
    bool has_rates() const { return have_previous_; }
    // Seconds between the last two snapshots (0 before the second).
    double interval_s() const;
    const Snapshot &current() const { return current_; }

    // The classes that pass the filter, sorted.
    std::vector<Row> rows() const;
    // The class `key` (filtered out or not), if the last snapshot has it.
    std::optional<Row> find(const std::string &key) const;
    Totals totals() const;
    // More than one server: the table has a SERVER column.
    bool server_column() const { return current_.servers.size() > 1; }

    SortKey sort = SortKey::time;
    Filter filter;

  private:
    std::vector<Row> all_rows() const;

    Snapshot previous_, current_;
    bool have_previous_ = false;
};

// The first bytes of `s` that fit in `width` columns, control characters
// (newlines of a digest) shown as spaces, never a UTF-8 sequence cut in
// half; a cut text ends in "~".
std::string cut(std::string_view s, size_t width);

// "850ns", "12.3us", "45.6ms", "1.23s", "2m03s" (at most 6 columns).
std::string short_duration(uint64_t ns);

// The header: servers, statements and errors per second, totals, health,
// the sort column and the filter.
std::vector<std::string> header_lines(const Model &m, const std::string &source, size_t width);
// The column titles, then one line per row.
std::string table_title(bool server_column, size_t width);
std::string table_line(const Row &r, bool server_column, size_t width);
// One class: its labels and full digest, totals and percentiles, its top
// stages (share of its time) and its recent statements (newest first).
std::vector<std::string> detail_lines(const Row &r, size_t width);

}  // namespace mysqltrace::top
