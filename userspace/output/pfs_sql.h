// SPDX-License-Identifier: GPL-2.0-only
// WL#4878 trace files: performance_schema-shaped events as SQL INSERTs into
// ordinary copies of events_statements_current, events_stages_current and
// events_waits_current (share/schema.sql), one file per server thread, so a
// trace can be loaded into any MariaDB and queried like performance_schema.
//
// Every event gives two rows: a start row (END_EVENT_ID, TIMER_END and
// TIMER_WAIT NULL) and an end row. A file is non-decreasing in TIMER_START,
// which `mysqltrace merge` (output/pfs_merge.h) relies on.
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace mysqltrace::output {

enum class PfsColumnType { Number, Text };

struct PfsColumn {
    std::string_view name;
    PfsColumnType type;
    uint32_t max_chars;  // varchar(N) length; 0 for numbers and longtext
};

struct PfsTable {
    std::string_view name;  // events_statements_current
    std::string_view kind;  // the JSON "kind" of its events: statement
    std::span<const PfsColumn> columns;
};

// The three tables, columns in performance_schema order (as share/schema.sql).
std::span<const PfsTable> pfs_tables();
// nullptr when none.
const PfsTable *pfs_table_for_kind(std::string_view kind);
const PfsTable *pfs_table_by_name(std::string_view name);

// TIMER_START is the 6th column (index 5) of all three tables.
inline constexpr size_t kPfsTimerStartColumn = 5;

// A SQL string literal for any bytes: backslash escapes for \ ' " NUL, newline,
// CR and \x1a, invalid UTF-8 replaced by U+FFFD (as the JSON output does),
// and, when it holds non-ASCII, the _utf8mb4 introducer so the row loads
// whatever the client character set. max_chars > 0 cuts it to that many
// characters (strict sql_mode refuses longer strings).
std::string pfs_sql_string(std::string_view s, uint32_t max_chars = 0);

// One `INSERT INTO events_<kind>s_current VALUES (...);\n` line for a
// statement, stage or wait event: every column in order from the JSON key of
// the same name, NULL when absent or null (or, for a number column, not a
// number). at_end=false is the row written when the event starts:
// END_EVENT_ID, TIMER_END and TIMER_WAIT are NULL. Empty for any other kind.
std::string pfs_insert(const nlohmann::ordered_json &event, bool at_end);

// user@host made safe for a file name: anything but [A-Za-z0-9_.@-] becomes
// '_', at most 128 bytes; empty gives "unknown".
std::string pfs_sanitize_actor(std::string_view actor);

// `/* MySQL Trace File for <actor> on <YYYY-MM-DD HH:MM:SS> */` (local time).
std::string pfs_trace_file_header(std::string_view actor, std::time_t when);
// "YYYY-MM-DD HH:MM:SS" in local time, as trace and merge headers show it.
std::string pfs_format_time(std::time_t when);

// Writes trace files DIR/thread.<actor>.<thread_id>, each created 0600 and
// never through a symlink (an existing regular file is appended to). At most
// max_open files are open at once; the least recently used is closed and
// reopened in append mode when needed. A file whose write fails (disk full,
// quota) stops being written after one message on the sink; the others go on.
class PfsSqlWriter {
  public:
    using MessageSink = std::function<void(const std::string &)>;

    // Creates dir 0700 if missing. The default sink writes to stderr.
    static Result<std::unique_ptr<PfsSqlWriter>> open(const std::string &dir, MessageSink sink = {},
                                                      size_t max_open = 64);
    ~PfsSqlWriter();
    PfsSqlWriter(const PfsSqlWriter &) = delete;
    PfsSqlWriter &operator=(const PfsSqlWriter &) = delete;

    // One statement with its stages and waits (or standalone waits) of one
    // thread: a start and an end row per event, sorted by (TIMER_START,
    // start before end, EVENT_ID). Blocks of a thread must come in time
    // order: a block starting before the last row of its file would break the
    // file's order, so it is dropped with a message (counted in
    // dropped_blocks()). Events of other kinds are ignored.
    void write_block(uint64_t thread_id, const std::string &actor,
                     const std::vector<nlohmann::ordered_json> &events);
    // Hands all buffered rows to the kernel (no fsync).
    void flush();

    size_t failed_files() const { return failed_files_; }
    // Rows handed to the kernel: flush() first for a final count.
    uint64_t rows_written() const { return rows_written_; }
    uint64_t dropped_blocks() const { return dropped_blocks_; }
    size_t open_files() const { return lru_.size(); }
    const std::string &dir() const { return dir_; }

  private:
    struct File {
        std::string name;  // thread.<actor>.<id>
        std::string actor;
        int fd = -1;
        bool created = false;  // opened once already: reopen appends
        bool failed = false;
        bool warned_order = false;
        bool has_last = false;
        uint64_t last_start = 0;
        std::string buf;
        uint64_t pending_rows = 0;
        std::list<File *>::iterator lru_pos;
    };

    PfsSqlWriter() = default;
    File &file_for(uint64_t thread_id, const std::string &actor);
    bool ensure_open(File &f);
    void write_out(File &f);
    void close_file(File &f);
    void fail(File &f, const std::string &why);

    std::string dir_;
    int dir_fd_ = -1;
    MessageSink sink_;
    size_t max_open_ = 64;
    std::unordered_map<std::string, std::unique_ptr<File>> files_;
    std::list<File *> lru_;  // open files, most recently used first
    size_t failed_files_ = 0;
    uint64_t rows_written_ = 0;
    uint64_t dropped_blocks_ = 0;
};

}  // namespace mysqltrace::output
