// SPDX-License-Identifier: GPL-2.0-only
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "output/pfs_merge.h"

namespace mysqltrace::cli {

namespace {

struct MergeArgs {
    std::vector<std::string> files;
    std::string output;
};

}  // namespace

void register_merge(CLI::App &app, const GlobalOptions &global, RunFn &run) {
    auto *cmd = app.add_subcommand(
        "merge",
        "Merge WL#4878 trace files (one per server thread, DIR/thread.<user@host>.<id>) into one "
        "SQL file in TIMER_START order, to load into the tables of share/schema.sql.");
    auto args = std::make_shared<MergeArgs>();
    cmd->add_option("files", args->files, "Trace files to merge")->required();
    cmd->add_option("-o,--output", args->output,
                    "Write the merge to this file (created 0600, replaced only when the merge "
                    "succeeds) instead of standard output");
    cmd->callback([&run, &global, args] {
        run = [&global, args] {
            auto rows = output::pfs_merge_to_path(args->files, args->output);
            if (!rows) {
                std::cerr << "mysqltrace: " << rows.error().message << "\n";
                return kExitFailure;
            }
            if (global.verbose > 0 || !(args->output.empty() || args->output == "-")) {
                std::cerr << "mysqltrace: merged " << *rows << " rows from " << args->files.size()
                          << (args->files.size() == 1 ? " file" : " files") << "\n";
            }
            return kExitOk;
        };
    });
}

}  // namespace mysqltrace::cli
