// SPDX-License-Identifier: GPL-2.0-only
#include <iostream>

#include "cli/command.h"
#include "doctor/doctor.h"

namespace mysqltrace::cli {

void register_doctor(CLI::App &app, const GlobalOptions &, RunFn &run) {
    auto *cmd = app.add_subcommand(
        "doctor",
        "Check that this machine can trace: kernel, BTF, privileges, and a real uprobe, USDT "
        "probe and syscall tracepoint each proven to fire through the ring buffers. Exits 0 "
        "only when everything mysqltrace needs works.");
    auto opts = std::make_shared<doctor::DoctorOptions>();
    cmd->add_option("--hits", opts->probe_hits, "Probe hits per proof")
        ->check(CLI::Range(1, 1000000))
        ->capture_default_str();
    cmd->callback([&run, opts] {
        run = [opts] {
            auto checks = doctor::run_checks(*opts);
            doctor::print_report(checks, std::cout);
            return doctor::all_ok(checks) ? kExitOk : kExitFailure;
        };
    });
}

}  // namespace mysqltrace::cli
