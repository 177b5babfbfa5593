// SPDX-License-Identifier: GPL-2.0-only
// One statement a server thread ran, as bpf/server.bpf.c reports it, and
// the performance_schema names derived from it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mysqltrace/abi/event.h"

namespace mysqltrace::server {

// Per-thread resource counters (struct mt_task_counters), in one place.
struct TaskCounters {
    uint64_t cpu_ns = 0, utime_ns = 0, stime_ns = 0;
    uint64_t nvcsw = 0, nivcsw = 0, min_flt = 0, maj_flt = 0;
    uint64_t read_bytes = 0, write_bytes = 0;

    static TaskCounters from(const mt_task_counters &c);
    // `later - *this`, never negative.
    TaskCounters until(const TaskCounters &later) const;
    // CPU time split into user and system the way getrusage() does: the
    // scheduler's exact runtime, in the proportion of the sampled utime/stime.
    uint64_t user_ns() const;
    uint64_t system_ns() const;
};

struct StageMark {
    uint64_t ts_ns = 0;
    uint32_t site = 0;   // index into the target's stage-site table
    uint64_t stage = 0;  // THD::proc_info, at sites whose stage is known only then
    TaskCounters counters;
    // MySQL 8's THD::enter_stage calls: the caller's source (file: a server
    // address), 0 elsewhere (the site table has it).
    uint64_t file = 0;
    uint32_t line = 0;
};

struct StageSample {
    uint64_t stage = 0;  // address of the stage name in the server
    uint32_t on_cpu = 0;
    uint32_t switches = 0;
    uint64_t off_cpu_ns = 0;
};

struct Statement {
    uint32_t tid = 0;                   // OS thread
    uint64_t start_ns = 0, end_ns = 0;  // CLOCK_MONOTONIC
    uint64_t thread_id = 0;             // connection id
    uint64_t query_id = 0;
    uint64_t text_addr = 0;
    uint32_t command = 0;
    uint32_t seq = 0;
    uint32_t flags = 0;  // enum mt_statement_flags
    uint32_t error = 0;
    uint32_t da_status = 0;
    std::string sqlstate, message, db, text;
    uint32_t text_len = 0;  // true length (text may be cut to --max-sql)
    bool text_cut = false;  // text is shorter than text_len (redaction may change its size)
    uint64_t rows_sent = 0, rows_examined = 0, rows_affected = 0;
    uint64_t lock_ns = 0;  // the slow log's Lock_time (0: not known in this build)
    // The connection's memory at the end and its high-water mark
    // (MT_STMT_MEMORY; MT_STMT_MEMORY_PER_COMMAND: the mark is the command's).
    uint64_t mem_used = 0, mem_max = 0;
    // --transactions: the EVENT_ID of the transaction it ran in (0: none).
    uint64_t transaction_event_id = 0;
    TaskCounters begin, end;
    std::vector<StageMark> stages;
    uint32_t stages_lost = 0;
    std::vector<StageSample> samples;
    uint32_t samples_lost = 0;
    uint32_t sample_period_us = 0;

    bool failed() const { return da_status == MT_DA_ERROR; }
    // Described by the one probe at its end: no per-thread counters.
    bool one_probe() const { return (flags & MT_STMT_ONEPASS) != 0; }
    bool truncated() const { return text_cut; }
    bool has_memory() const { return (flags & MT_STMT_MEMORY) != 0; }
};

// Decodes one ring record; false when it is not a well-formed statement.
bool decode_statement(std::span<const uint8_t> record, Statement *out);

// A statement of a multi-statement query whose text runs on to the end of
// the query (the THD's text at log_slow_statement): cut to its own, without
// the delimiter and the blanks before it. True when something was cut.
bool cut_to_first_statement(std::string &text, uint32_t *text_len);

// Where the first statement of `sql` ends: at a top-level `;` that another
// statement follows (quotes and comments respected), else its size.
size_t first_statement_end(std::string_view sql);

// performance_schema's EVENT_NAME: statement/sql/<command> for SQL
// statements (from the statement's leading keywords, as the server names
// its SQLCOM_* instruments), statement/com/<name> for other commands.
std::string statement_event_name(const Statement &st);
// "select", "create_table", "set_option", ...; "" when not recognised.
std::string sql_command_name(std::string_view sql);

// The statement with literals replaced by `?` and runs of white space made
// one space: statements that differ only in values share a digest text.
std::string digest_text(std::string_view sql);

}  // namespace mysqltrace::server
