// SPDX-License-Identifier: GPL-2.0-only
// What a statement trace of one analysed server will be, before it is
// attached: the stage mode its build allows for the one asked for, and what
// the user is told about what the build lacks. `mysqltrace server` and
// `mysqltrace agent` attach the same way.
#pragma once

#include <string>
#include <vector>
#include <sys/types.h>

#include "server/statement_tracer.h"

namespace mysqltrace::doctor {

struct TracePlan {
    // The stage mode to hand to the tracer.
    server::StageMode stages = server::StageMode::off;
    // Notes, one each, for stderr after "mysqltrace: " (a note may span
    // lines, each continued with "mysqltrace:   ").
    std::vector<std::string> notes;
};

// `pid` names the server in the notes (doctor --pid).
TracePlan plan_trace(const server::ServerTarget &target, server::StageMode requested, pid_t pid);

// "MariaDB" or "MySQL": by how its dispatch_command is declared, unless its
// version string (server::server_version) says MariaDB.
std::string server_flavour(server::ServerProfile profile, const std::string &version);

}  // namespace mysqltrace::doctor
