// SPDX-License-Identifier: GPL-2.0-only
// Where a server binary's hooks are: functions found by the start of their
// mangled name (later arguments differ between versions: MySQL 9.7's
// dispatch_sql_command(THD*, Parser_state*, bool) is 8.0's plus a bool),
// the call sites of one function inside another, and the version string.
// Shared by the statement tracer and `doctor --pid`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <sys/types.h>

#include "elf/elf_file.h"
#include "elf/probe_site.h"

namespace mysqltrace::server {

// The first function whose mangled name begins with `prefix`, in name order
// (the symbol table is sorted): `_Z20dispatch_sql_commandP3THDP12Parser_state`
// finds 8.0's `...Parser_state` and 9.7's `...Parser_stateb`.
std::optional<elf::Symbol> find_by_prefix(const elf::ElfFile &file, std::string_view prefix);

// The `call rel32` instructions of `caller`'s body that call `callee`: an
// instruction the kernel emulates (~0.6 us a hit), where the callee's
// arguments are already in their registers. Empty when `caller` has no size.
std::vector<elf::ProbeSite> call_sites(const elf::ElfFile &file, const elf::Symbol &caller,
                                       const elf::Symbol &callee);

// Whether, from `site` on in `caller`'s code (in address order), a direct
// call of `callee` comes before the first `ret`: MySQL's dispatch_command
// calls log_slow_statement inside its multi-statement loop, right before
// dispatch_sql_command runs the next statement, and once more before it
// returns.
bool call_follows(const elf::ElfFile &file, const elf::Symbol &caller, uint64_t site_vaddr,
                  const elf::Symbol &callee);

// The entry probe site of `sym` (after a leading endbr64), or an error.
Result<elf::ProbeSite> entry_probe_site(const elf::ElfFile &file, const elf::Symbol &sym);

// The server's version as it reports it (`SELECT VERSION()`): the exported
// `server_version` array, read from the file where it is initialised data
// (MariaDB) or else from the running server's memory at that symbol (MySQL
// fills it at startup); `load_bias` maps file addresses to the process's.
// Never runs the binary. Empty when neither works.
std::string server_version(const elf::ElfFile &file, pid_t pid, int64_t load_bias);

}  // namespace mysqltrace::server
