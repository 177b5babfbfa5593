// SPDX-License-Identifier: GPL-2.0-only
// The CLI is a table of subcommands. Each registers its options on the CLI11
// app and, when selected, leaves the function that runs it in `run`.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace mysqltrace::cli {

struct GlobalOptions {
    int verbose = 0;
};

using RunFn = std::function<int()>;
using RegisterFn = void (*)(CLI::App &app, const GlobalOptions &global, RunFn &run);

void register_doctor(CLI::App &app, const GlobalOptions &global, RunFn &run);
void register_server(CLI::App &app, const GlobalOptions &global, RunFn &run);
void register_client(CLI::App &app, const GlobalOptions &global, RunFn &run);

// Exit codes shared by all subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the trace could not run (one clear line on stderr)
inline constexpr int kExitUsage = 2;    // bad command line

}  // namespace mysqltrace::cli
