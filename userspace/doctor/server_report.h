// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace doctor --pid PID`: what mysqltrace learns about one running
// server from its binary (flavour, version, every hook and THD field found
// or missing) and which `server` modes will therefore work. Nothing is
// attached and the binary is never run.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>
#include <sys/types.h>

namespace mysqltrace::server {
struct ServerTarget;
}

namespace mysqltrace::doctor {

struct ReportLine {
    std::string name;
    bool found = false;
    std::string detail;
};

struct ServerReport {
    std::string flavour;  // "MariaDB", "MySQL", or "" when not recognised
    std::string version;  // as the server reports it, "" when unreadable
    std::string exe;
    std::string error;  // why `server` refuses this pid, "" when it does not
    std::vector<ReportLine> hooks, fields, modes;
    bool statements = false;  // `mysqltrace server` can trace statements
};

ServerReport server_report(pid_t pid);

// The modes and statement columns a resolved server supports (the MODE
// table of the report); `server` names the ones that do not work.
std::vector<ReportLine> server_modes(const server::ServerTarget &t);

// Tables of hooks, fields and modes; the refusal, if any, first.
void print_server_report(const ServerReport &r, std::ostream &out);

}  // namespace mysqltrace::doctor
