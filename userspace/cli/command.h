// SPDX-License-Identifier: GPL-2.0-only
// The CLI is a table of subcommands. Each registers its options on the CLI11
// app and, when selected, leaves the function that runs it in `run`.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bpf/ring_set.h"
#include "output/output_file.h"
#include "trace/trace_loop.h"
#include "util/result.h"

namespace mysqltrace::cli {

struct GlobalOptions {
    int verbose = 0;
};

using RunFn = std::function<int()>;
using RegisterFn = void (*)(CLI::App &app, const GlobalOptions &global, RunFn &run);

void register_doctor(CLI::App &app, const GlobalOptions &global, RunFn &run);
void register_server(CLI::App &app, const GlobalOptions &global, RunFn &run);
void register_client(CLI::App &app, const GlobalOptions &global, RunFn &run);
void register_run(CLI::App &app, const GlobalOptions &global, RunFn &run);
void register_merge(CLI::App &app, const GlobalOptions &global, RunFn &run);
void register_calls(CLI::App &app, const GlobalOptions &global, RunFn &run);
void register_agent(CLI::App &app, const GlobalOptions &global, RunFn &run);
void register_top(CLI::App &app, const GlobalOptions &global, RunFn &run);

// Options every tracing command takes.
struct TraceArgs {
    std::string format = "text";
    std::string output;
    double duration = 0;
    uint64_t ring_kib = 4096;
    uint64_t rotate_size = 0;  // bytes; 0: --output is never rotated
    unsigned rotate_keep = 5;
    std::optional<int> reader_nice;  // unset: raised only while the reader is behind
};

// Registers --format (one of `formats`), --output, --duration, --ring-kib,
// --rotate-size, --rotate-keep, --reader-nice.
void add_trace_options(CLI::App *cmd, TraceArgs &args, const std::vector<std::string> &formats);

// Opens --output (stdout, or stderr with to_stderr, when none) with the
// rotation the options ask for.
Result<std::unique_ptr<output::OutputFile>> open_trace_output(const TraceArgs &args,
                                                              bool to_stderr = false);

// Ends a trace on stderr: "mysqltrace: <totals>, <drops>; <why it stopped>",
// then any error on its own line. Returns the exit code.
int report_end(const std::string &totals, const bpf::RingStats &stats,
               const Result<trace::StopReason> &stop, const Result<void> &flushed);

// Exit codes shared by all subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the trace could not run (one clear line on stderr)
inline constexpr int kExitUsage = 2;    // bad command line

}  // namespace mysqltrace::cli
