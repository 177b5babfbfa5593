// SPDX-License-Identifier: GPL-2.0-only
#include <cstdio>
#include <iostream>
#include <map>

#include "cli/command.h"
#include "mysql/commands.h"
#include "output/output_file.h"
#include "output/server_render.h"
#include "server/command_tracer.h"
#include "trace/trace_loop.h"

namespace mysqltrace::cli {

namespace {

struct ServerArgs : TraceArgs {
    pid_t pid = 0;
    uint32_t max_sql = 4096;
};

int run_server(const ServerArgs &a, const GlobalOptions &g) {
    auto target = server::resolve_server(a.pid);
    if (!target) {
        std::cerr << "mysqltrace: " << target.error().message << "\n";
        return kExitFailure;
    }
    if (g.verbose > 0) {
        std::cerr << "mysqltrace: dispatch_command probe at file offset 0x" << std::hex
                  << target->dispatch_site.offset << std::dec << " on `"
                  << target->dispatch_site.instruction << "` ("
                  << elf::probe_cost_name(target->dispatch_site.cost) << "), THD::thread_id at +"
                  << target->thread_id_offset << "\n";
    }
    auto out = output::OutputFile::open(a.output);
    if (!out) {
        std::cerr << "mysqltrace: " << out.error().message << "\n";
        return kExitFailure;
    }
    output::Clock clock;
    std::map<uint32_t, uint64_t> per_command;
    uint64_t commands = 0;
    const bool json = a.format == "json";
    if (!json) {
        (*out)->write(output::command_text_header());
    }
    server::CommandTracerOptions opts;
    opts.max_sql = a.max_sql;
    opts.ring.bytes_per_cpu = a.ring_kib << 10;
    auto &o = **out;
    auto tracer = server::CommandTracer::attach(*target, opts, [&](const server::CommandEvent &ev) {
        commands++;
        per_command[ev.command]++;
        o.write(json ? output::command_json(ev, static_cast<uint32_t>(a.pid))
                     : output::command_text(ev, clock));
    });
    if (!tracer) {
        std::cerr << "mysqltrace: " << tracer.error().message << "\n";
        return kExitFailure;
    }
    std::cerr << "mysqltrace: tracing commands of pid " << a.pid << "; Ctrl-C to stop\n";
    trace::LoopOptions lo;
    lo.duration_s = a.duration;
    lo.targets = {a.pid};
    lo.on_tick = [&] {
        o.flush();
        if (g.verbose > 0) {
            auto st = (*tracer)->rings().stats();
            std::cerr << "mysqltrace: " << commands << " commands, " << st.dropped << " dropped\n";
        }
    };
    auto stop = trace::run_loop((*tracer)->rings(), lo);
    auto flushed = (*tracer)->rings().flush();
    o.flush();
    std::string totals = std::to_string(commands) + " commands";
    std::string by_command;
    for (const auto &[cmd, n] : per_command) {
        by_command +=
            (by_command.empty() ? " (" : ", ") + mysql::command_name(cmd) + " " + std::to_string(n);
    }
    if (!by_command.empty()) {
        totals += by_command + ")";
    }
    return report_end(totals, (*tracer)->rings().stats(), stop, flushed);
}

}  // namespace

void register_server(CLI::App &app, const GlobalOptions &global, RunFn &run) {
    auto *cmd = app.add_subcommand(
        "server",
        "Trace a running MariaDB server: every command its threads dispatch, with the "
        "connection id and statement text. No restart, no performance_schema.");
    auto a = std::make_shared<ServerArgs>();
    cmd->add_option("-p,--pid", a->pid, "Process id of the mariadbd to trace")->required();
    add_trace_options(cmd, *a, {"text", "json"});
    cmd->add_option("--max-sql", a->max_sql, "Bytes of statement text kept per command")
        ->check(CLI::Range(0, 65536))
        ->capture_default_str();
    cmd->callback([&run, &global, a] { run = [a, &global] { return run_server(*a, global); }; });
}

}  // namespace mysqltrace::cli
