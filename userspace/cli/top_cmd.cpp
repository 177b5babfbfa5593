// SPDX-License-Identifier: GPL-2.0-only
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "agent/control_socket.h"
#include "cli/command.h"
#include "top/source.h"
#include "top/top_screen.h"

namespace mysqltrace::cli {

namespace {

struct TopArgs {
    int pid = 0;
    std::string control_socket = agent::kDefaultControlSocket;
    double interval = 1;
    double duration = 0;
    bool batch = false;
    bool locks = false;
    std::string sort = "time";
    std::string db, user;
};

int run_top(const TopArgs &a) {
    if (!a.batch && (::isatty(STDOUT_FILENO) == 0 || ::isatty(STDIN_FILENO) == 0)) {
        std::cerr << "mysqltrace: top needs a terminal on stdin and stdout; --batch (-b) prints "
                     "the table as text every interval instead\n";
        return kExitUsage;
    }
    // A Ctrl-C while attaching still detaches cleanly.
    trace::block_stop_signals();
    if (a.locks && a.pid == 0) {
        std::cerr << "mysqltrace: top --locks is for --pid; the agent traces lock waits with "
                     "`locks = yes` in its configuration\n";
        return kExitUsage;
    }
    auto source =
        a.pid > 0 ? top::attach_source(a.pid, a.locks) : top::agent_source(a.control_socket);
    if (!source) {
        std::cerr << "mysqltrace: " << source.error().message << "\n";
        return kExitFailure;
    }
    top::Model model;
    model.sort = top::sort_key_named(a.sort).value_or(top::SortKey::time);
    model.filter.schema = a.db;
    model.filter.user = a.user;
    top::TopOptions o;
    o.interval_s = a.interval;
    o.duration_s = a.duration;
    if (const char *cols = std::getenv("COLUMNS"); cols != nullptr && std::atoi(cols) > 0) {
        o.batch_width = static_cast<size_t>(std::atoi(cols));
    }
    Result<void> ran;
    if (a.batch) {
        for (const auto &n : (*source)->notes()) {
            std::cerr << "mysqltrace: " << n << "\n";
        }
        std::cerr << "mysqltrace: top of " << (*source)->describe() << "; Ctrl-C to stop\n";
        ran = top::run_batch(**source, model, o, std::cout);
    } else {
        ran = top::run_screen(**source, model, o);
    }
    if (!ran) {
        std::cerr << "mysqltrace: " << ran.error().message << "\n";
        return kExitFailure;
    }
    return kExitOk;
}

}  // namespace

void register_top(CLI::App &app, const GlobalOptions &, RunFn &run) {
    auto *cmd = app.add_subcommand(
        "top",
        "A live view of the statement classes (schema, user, digest) that take the servers' "
        "time: calls/s, share of the time, mean and p99 latency, rows examined per row sent, "
        "errors; a class's stages and last statements on Enter; on l, who waits for a lock and who "
        "blocks it. Reads every server the local "
        "`mysqltrace agent` traces from its control socket, or with --pid traces one server "
        "itself.");
    auto a = std::make_shared<TopArgs>();
    cmd->add_option("--pid", a->pid,
                    "Trace this mysqld/mariadbd directly (no agent needed; writes no file)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--control-socket", a->control_socket,
                    "The agent's control socket (its --control-socket), when not --pid")
        ->capture_default_str();
    cmd->add_option("--interval", a->interval, "Seconds between refreshes; rates are over this")
        ->check(CLI::Range(0.1, 3600.0))
        ->capture_default_str();
    cmd->add_option("-d,--duration", a->duration, "Stop after this many seconds (default: q)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_flag("-b,--batch", a->batch,
                  "No screen: print the header and the whole table as text every interval, as "
                  "top -b does (width: $COLUMNS, else 200)");
    cmd->add_flag("--locks", a->locks,
                  "With --pid: trace lock waits too (server --locks' probes, on paths only a "
                  "waiting thread takes), for the blocking tree (l; --batch prints it)");
    cmd->add_option("--sort", a->sort, "The column sorted on at the start")
        ->check(CLI::IsMember({"time", "calls", "mean", "p99", "errors", "rows"}))
        ->capture_default_str();
    cmd->add_option("--db", a->db, "Show this schema's classes only (d changes it)");
    cmd->add_option("--user", a->user, "Show this user's classes only (u changes it)");
    cmd->callback([&run, a] { run = [a] { return run_top(*a); }; });
}

}  // namespace mysqltrace::cli
