// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server --duty PCT` and --format digests / digests-json: the
// statement probe attached in windows (server/duty_cycle.h), statements
// folded per digest, summaries with estimated counts and their bounds
// (output/digest_summary.h).
#pragma once

#include <string>

#include "cli/command.h"
#include "server/server_target.h"
#include "server/statement_tracer.h"

namespace mysqltrace::cli {

struct DutyArgs {
    double duty_pct = 0;    // 0 or 100: probe always on, exact counts
    double period_s = 1;    // one window per period
    double interval_s = 0;  // summaries every this many seconds (0: at the end only)
    bool json = false;      // digests-json
    std::string db, user;   // filtered again here (long names are not decided in BPF)
};

// --duty, --duty-period, --interval.
void add_duty_options(CLI::App *cmd, DutyArgs &d);

// Writes the summaries to `o` (the command's --output).
int run_server_duty(const server::ServerTarget &target, server::StatementTracerOptions opts,
                    const DutyArgs &d, const TraceArgs &t, const GlobalOptions &g,
                    output::OutputFile &o);

}  // namespace mysqltrace::cli
