// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace agent`: every mysqld/mariadbd of the host traced on its own,
// in one process. Every rescan period the agent lists the server processes
// (agent/discovery.h); one that listens (a client can reach it) is analysed
// from its binary and given a statement tracer (agent/traced_server.h); one
// the analysis refuses is reported once, with why, and left alone. A
// server's exit (its pidfd) detaches it: its rings drained, its files
// flushed, its probes and maps gone. A restart is a new process: attached
// again. Ctrl-C or SIGTERM detaches every server, each with its totals.
// SIGHUP reads the configuration file again (agent/config.h): a server
// whose settings it changes is detached and attached again with them.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/traced_server.h"
#include "util/result.h"

namespace mysqltrace::agent {

struct AgentOptions {
    // Every server's settings but what a [server ...] section or the command
    // line changes for it (output_dir: every server's).
    ServerSettings defaults;
    int rescan_ms = 1000;
    // Only servers listening on a unix socket whose path starts with this
    // ("": every server).
    std::string socket_prefix;
    // HOST:PORT of the Prometheus /metrics page (agent/metrics.h); "": none.
    std::string metrics_listen;
    // The configuration file ("": none, and SIGHUP has nothing to read), its
    // [server ...] sections, and the command line's settings, which are
    // applied over the file's at every (re)load.
    std::string config_path;
    std::vector<ServerSection> sections;
    std::vector<Setting> command_line;
    double duration_s = 0;  // 0: until a signal
    // The control socket `mysqltrace top` asks (agent/control_socket.h);
    // "": none.
    std::string control_socket;
    int verbose = 0;
};

// Runs until SIGINT/SIGTERM (or the duration); reports to `log` (stderr).
// Errors only for what stops every server (no event loop, no /metrics
// address to listen on).
Result<void> run_agent(const AgentOptions &opts, std::ostream &log);

}  // namespace mysqltrace::agent
