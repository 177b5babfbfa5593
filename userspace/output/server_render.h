// SPDX-License-Identifier: GPL-2.0-only
// Server statements and stages as text rows, performance_schema-shaped JSON
// (server_json.cpp), or SHOW PROFILE-like tables (shared/DESIGN.md "Output
// formats").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "output/clock.h"
#include "server/stage_sites.h"
#include "server/statement.h"
#include "server/text_classes.h"
#include "server/waits.h"

#include <nlohmann/json.hpp>

namespace mysqltrace::output {

enum class ServerFormat { text, json, profile, pfs_sql };

// A wait with the name performance_schema would give it.
struct NamedWait {
    server::Wait wait;
    server::WaitName name;
};

class ServerRenderer {
  public:
    // Commands whose argument is text worth showing as SQL_TEXT.
    static bool has_text(const server::Statement &st);
    // `sites`: the stage-site table exact marks index; `name_at`: the stage
    // name at a server address (sampled stages), asked once per address.
    ServerRenderer(ServerFormat format, uint32_t pid, const std::vector<server::StageSite> &sites,
                   std::function<std::string(uint64_t)> name_at);

    std::string header() const;
    // The rows of one statement, its stages and the waits that began in it;
    // also feeds the summaries. The text stays valid until the next call:
    // one buffer serves a whole trace.
    const std::string &statement(const server::Statement &st,
                                 const std::vector<NamedWait> &waits = {});
    // performance_schema's EVENT_NAME of a statement
    // (server::statement_event_name), remembered by command and text: a busy
    // server runs the same texts over and over. Valid until the next call.
    const std::string &event_name(const server::Statement &st);
    // The next EVENT_ID of connection `thread_id`, for an event rendered
    // elsewhere (a transaction).
    uint64_t take_event_id(uint64_t thread_id);
    // A wait outside any statement (idle time, I/O between commands).
    std::string wait(const NamedWait &w);
    // The performance_schema events behind the last statement() or wait()
    // call, in json and pfs_sql formats (for the WL#4878 trace writer).
    const std::vector<nlohmann::ordered_json> &last_events() const { return last_; }
    // Sampled stage shares per statement class, and waits by event name
    // (events_waits_summary_global_by_event_name), at the end of a trace.
    std::string summary();

    // A statement's stages as rows (exact stages: each with its times).
    // Names point into the site table or into this renderer; valid until
    // the next call.
    struct StageRow {
        std::string_view name, function, file;
        uint32_t line = 0;
        uint64_t start_ns = 0, end_ns = 0;
        server::TaskCounters used;
    };
    const std::vector<StageRow> &stage_rows(const server::Statement &st);
    // The stage name at a server address (sampled stages), asked once per
    // address.
    const std::string &name_of(uint64_t addr);

  private:
    struct StageTotals {
        uint64_t on_cpu = 0;
        uint64_t off_cpu_ns = 0;
        uint64_t switches = 0;
    };
    struct ClassTotals {
        std::string event_name;
        uint64_t count = 0;
        uint64_t wait_ns = 0;
        uint64_t cpu_ns = 0;
        uint64_t period_us = 0;
        uint64_t samples_lost = 0;
        std::map<std::string, StageTotals> stages;
    };
    // Per command and text: the event name, the digest, (sampled
    // statements) the totals of their digest, and for --format json the
    // strings of a statement line that depend on nothing else, rendered.
    struct ClassExtra {
        ClassTotals *totals = nullptr;
        std::string name_json;     // EVENT_NAME (empty: none of these rendered yet)
        std::string text_json;     // SQL_TEXT
        std::string digest_json;   // DIGEST_TEXT
        std::string command_json;  // command
    };
    using TextClass = server::TextClasses<ClassExtra>::Class;
    void text_rows(std::string &out, const server::Statement &st, const std::vector<StageRow> &rows,
                   const std::vector<NamedWait> &waits);
    // The statement's events as JSON lines, written straight into `out`
    // (--format json: no tree per event).
    void json_lines(std::string &out, const server::Statement &st,
                    const std::vector<StageRow> &rows, const std::vector<NamedWait> &waits,
                    uint64_t event_id);
    // nesting_id 0: none (a wait outside any statement).
    void wait_line(std::string &out, const NamedWait &w, uint64_t event_id, uint64_t nesting_id,
                   const char *nesting_type);
    // pfs-sql: the lines json_lines/wait_line wrote, parsed into last_ (one
    // field list for both formats); `lines` is emptied.
    void as_events(std::string &lines);
    // The nested events of a statement in the order they began, numbered
    // from event_id + 1, each wait with the event it nests in.
    struct Nested {
        size_t index;  // into rows, then waits
        uint64_t id;
        uint64_t nesting_id;
        const char *nesting_type;
    };
    const std::vector<Nested> &nested(const std::vector<StageRow> &rows,
                                      const std::vector<NamedWait> &waits, uint64_t event_id);
    std::string wait_summary();
    // Failed statements by errno and SQLSTATE.
    std::string error_summary();
    void count_wait(const NamedWait &w);
    std::string profile_rows(const server::Statement &st, const std::vector<StageRow> &rows);

    ServerFormat format_;
    uint32_t pid_;
    const std::vector<server::StageSite> &sites_;
    std::function<std::string(uint64_t)> name_at_;
    Clock clock_;
    std::map<uint64_t, uint64_t> next_event_id_;  // per THREAD_ID
    std::map<std::string, ClassTotals> classes_;  // by digest text
    struct WaitTotals {
        uint64_t count = 0, sum_ns = 0, min_ns = UINT64_MAX, max_ns = 0;
    };
    std::map<std::string, WaitTotals, std::less<>> wait_totals_;  // by EVENT_NAME
    struct ErrorTotals {
        uint64_t count = 0, first_ns = 0, last_ns = 0;
        std::string message;  // the last one's (redacted as its statement)
    };
    std::map<std::pair<uint32_t, std::string>, ErrorTotals> errors_;  // by errno, SQLSTATE
    std::vector<nlohmann::ordered_json> last_;
    std::unordered_map<uint64_t, std::string> names_;  // by server address
    server::TextClasses<ClassExtra> text_classes_;
    std::string key_;
    std::map<uint32_t, std::string> unknown_sites_;
    std::vector<StageRow> rows_;  // of the current statement
    std::string out_;             // what statement() returns
    std::vector<Nested> nested_;  // of the current statement
    std::vector<std::pair<uint64_t, size_t>> order_;
};

}  // namespace mysqltrace::output
