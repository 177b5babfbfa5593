// SPDX-License-Identifier: GPL-2.0-only
// What `client` and `run` share: capture a set of processes' MySQL
// connections, rebuild their WL#6226 traces and write them out. They differ
// in where the bytes come from (syscall probes or the shim's USDT probes)
// and in how the trace starts and ends.
#pragma once

#include <functional>
#include <string>
#include <vector>
#include <sys/types.h>

#include "cli/command.h"

namespace mysqltrace::cli {

struct ProtocolArgs : TraceArgs {
    uint32_t snaplen = 16384;
    bool dump = false;
    bool show_secrets = false;
    bool no_summary = false;
    bool summary_only = false;
    std::string otlp;  // the collector's base URL
    size_t otlp_queue = 64;
    pid_t server_pid = 0;  // --server-pid: its statements as children of the client spans
};

// --format text|json|otlp, --output, --duration, --ring-kib, --snaplen,
// --dump, --show-secrets, --no-summary, --summary-only, --otlp,
// --otlp-queue, --server-pid.
void add_protocol_options(CLI::App *cmd, ProtocolArgs &a);

struct ProtocolSession {
    std::vector<pid_t> pids;
    bool follow_forks = false;
    bool tls = true;
    bool java_agent = true;  // load the Java agent into JVMs (client/java_agent.h)
    std::string shim_path;   // non-empty: the shim's probes (`run`)
    bool shim_api = true;    // with the shim: its API call probes too
    std::string banner;      // "tracing MySQL connections of pid 42"
    // The program of pids.front(), when /proc does not say it yet (`run`'s
    // command before its exec): its spans' service.name.
    std::string executable;
    bool to_stderr = false;  // without --output: events to stderr, not stdout
    // End when the first pid exits, even if followed children live on.
    bool end_with_first = false;
    // Called once the probes are attached (`run` lets its command start).
    std::function<Result<void>()> started;
    std::function<bool(int signo)> on_signal;  // as trace::LoopOptions::on_signal
};

// Runs the trace to its end; returns the exit code (report_end()).
int run_protocol_trace(const ProtocolArgs &a, const ProtocolSession &s, const GlobalOptions &g);

}  // namespace mysqltrace::cli
