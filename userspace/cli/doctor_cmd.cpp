// SPDX-License-Identifier: GPL-2.0-only
#include <iostream>

#include "cli/command.h"
#include "doctor/doctor.h"
#include "doctor/server_report.h"

namespace mysqltrace::cli {

void register_doctor(CLI::App &app, const GlobalOptions &, RunFn &run) {
    auto *cmd = app.add_subcommand(
        "doctor",
        "Check that this machine can trace: kernel, BTF, privileges, and a real uprobe, USDT "
        "probe and syscall tracepoint each proven to fire through the ring buffers. Exits 0 "
        "only when everything mysqltrace needs works. With --pid: what mysqltrace learns "
        "about that MySQL/MariaDB server (flavour, version, hooks, THD fields) and which "
        "`server` modes will work; exits 0 when its statements can be traced.");
    auto opts = std::make_shared<doctor::DoctorOptions>();
    cmd->add_option("--hits", opts->probe_hits, "Probe hits per proof")
        ->check(CLI::Range(1, 1000000))
        ->capture_default_str();
    auto pid = std::make_shared<int>(0);
    cmd->add_option("--pid", *pid, "Report on this server process instead of the machine")
        ->check(CLI::Range(1, 1 << 30));
    cmd->callback([&run, opts, pid] {
        run = [opts, pid] {
            if (*pid > 0) {
                auto r = doctor::server_report(*pid);
                doctor::print_server_report(r, std::cout);
                return r.statements ? kExitOk : kExitFailure;
            }
            auto checks = doctor::run_checks(*opts);
            doctor::print_report(checks, std::cout);
            return doctor::all_ok(checks) ? kExitOk : kExitFailure;
        };
    });
}

}  // namespace mysqltrace::cli
