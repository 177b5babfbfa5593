// SPDX-License-Identifier: GPL-2.0-only
// What mysqltrace learns about a running server from its binary: which
// server it is (its dispatch_command), where to probe statements, their ends,
// stages and table I/O, and the THD's layout (server/thd_layout.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <sys/types.h>

#include "elf/elf_file.h"
#include "elf/probe_site.h"
#include "server/stage_sites.h"
#include "server/thd_layout.h"
#include "util/result.h"

namespace mysqltrace::server {

// Which server's entry points a binary has, told apart by how its
// dispatch_command is declared.
enum class ServerProfile {
    mariadb,  // dispatch_command(enum_server_command, THD*, char*, uint, bool), mysql_parse
    mysql8,   // dispatch_command(THD*, const COM_DATA*, enum_server_command): MySQL 8.0+
};

struct ProfileSymbols {
    ServerProfile profile = ServerProfile::mariadb;
    std::string dispatch;       // dispatch_command, mangled
    std::string statement;      // mysql_parse (MariaDB, MySQL < 8.0.22) or dispatch_sql_command
    std::string enter_stage;    // MySQL 8: the out-of-line THD::enter_stage, "" when absent
    std::string end_statement;  // log_slow_statement(THD*), "" when absent
};

// The profile of `file`; errors name `who` ("pid 42") and what is missing.
Result<ProfileSymbols> detect_profile(const elf::ElfFile &file, const std::string &who);

// The stage dispatch_command enters once the command is done and answered.
inline constexpr const char *kEndStage = "stage_cleaning_up";

// What mysqltrace learnt about a server binary from its symbols and code.
struct ServerTarget {
    pid_t pid = 0;
    ServerProfile profile = ServerProfile::mariadb;
    std::string exe;               // /proc/PID/exe: reaches the binary across mount namespaces
    std::string dispatch_symbol;   // dispatch_command, mangled as in this binary
    elf::ProbeSite dispatch_site;  // dispatch_command entry
    elf::ProbeSite parse_site;     // mysql_parse (MySQL 8: dispatch_sql_command) entry
    uint64_t end_offset = 0;       // the end-of-command stage site (file offset)
    bool end_is_return = false;    // no such site: a return probe on dispatch_command
    // Without that site (MySQL): the calls of log_slow_statement(THD*) in
    // dispatch_command, after each statement (also of a multi-statement
    // query) and each other command; end_offset is then unused.
    std::vector<elf::ProbeSite> end_sites;
    // Per end site: another statement of the same query follows it (the
    // multi-statement loop's call), so its text is cut where that one's begins.
    std::vector<bool> end_site_more;
    ThdLayout layout;
    // The entry of log_slow_statement(THD*) (after any endbr64), where one
    // probe describes a whole statement; nullopt: none, or one the kernel
    // would single-step.
    std::optional<elf::ProbeSite> statement_end_site;
    // Every stage site found (exact mode): those that name their stage, then
    // those whose stage is read from the THD when they fire.
    std::vector<StageSite> stages;
    size_t static_stages = 0;
    // Then the entries of THD::enter_cond and THD::exit_cond (out of line,
    // reached through virtual calls, e.g. metadata lock waits): the stage is
    // their argument. [cond_sites, exit_cond_sites): enter_cond's, then
    // exit_cond's up to the end.
    size_t cond_sites = 0, exit_cond_sites = 0;
    // MySQL 8: from here on, entries of the out-of-line THD::enter_stage
    // (SIZE_MAX: none).
    size_t stage_call_sites = SIZE_MAX;
    int64_t query_string_offset = -1;
    // Entries of the exported handler::ha_* row methods (--table-io).
    struct TableIoSite {
        uint64_t offset = 0;  // file offset of the probe
        uint32_t op = 0;      // enum mt_table_op
    };
    std::vector<TableIoSite> table_io;
    int64_t load_bias = 0;  // runtime address - file vaddr
    // A thread's current THD is the pointer at this offset from its thread
    // pointer (%fs base); nullopt: not learnt (see current_thd_tp_offset()).
    std::optional<int64_t> current_thd_tp_offset;
    uint64_t text_lo = 0, text_hi = 0;  // the server's code, at run time
    std::shared_ptr<const elf::ElfFile> file;
};

// What `file`'s code tells of a server, without a process: all of
// ServerTarget but pid, exe, load_bias and the text range. `who` names it in
// errors ("pid 42"). The analysis is charged to the file's budget
// (elf/analysis_budget.h): once that is exhausted, the error names the limit
// hit, whatever the analysis found until then.
Result<ServerTarget> analyse_server(std::shared_ptr<const elf::ElfFile> file,
                                    const std::string &who);

// The server running as `pid`, its binary analysed within `limits`.
Result<ServerTarget> resolve_server(
    pid_t pid, const elf::AnalysisLimits &limits = elf::default_analysis_limits());

// Why statements cannot be traced with one probe each on this build ("":
// they can): a missing log_slow_statement entry or THD field.
std::string one_probe_missing(const ServerTarget &target);

}  // namespace mysqltrace::server
