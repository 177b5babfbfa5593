// SPDX-License-Identifier: GPL-2.0-only
#include <iostream>

#include "bpf/libbpf_log.h"
#include "cli/command.h"
#include "mysqltrace/version.h"

namespace {

constexpr mysqltrace::cli::RegisterFn kCommands[] = {
    mysqltrace::cli::register_doctor, mysqltrace::cli::register_client,
    mysqltrace::cli::register_run,    mysqltrace::cli::register_server,
    mysqltrace::cli::register_merge,  mysqltrace::cli::register_calls,
    mysqltrace::cli::register_agent,  mysqltrace::cli::register_top,
};

}  // namespace

int main(int argc, char **argv) {
    using namespace mysqltrace::cli;
    CLI::App app{
        "mysqltrace: see what MySQL/MariaDB clients and servers are doing right now, with eBPF.\n"
        "Attaches to running processes; no restart, no performance_schema, no recompiling.",
        "mysqltrace"};
    app.set_version_flag("--version", std::string("mysqltrace ") + MYSQLTRACE_VERSION);
    app.require_subcommand(1);
    app.fallthrough();
    GlobalOptions global;
    app.add_flag("-v,--verbose", global.verbose,
                 "More detail on stderr: -v live counters and libbpf warnings, -vv libbpf debug");
    RunFn run;
    for (auto reg : kCommands) {
        reg(app, global, run);
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        int rc = app.exit(e);
        return rc == 0 ? kExitOk : kExitUsage;
    }
    mysqltrace::bpf::set_libbpf_verbosity(global.verbose);
    return run ? run() : kExitUsage;
}
