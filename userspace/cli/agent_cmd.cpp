// SPDX-License-Identifier: GPL-2.0-only
#include <algorithm>
#include <iostream>

#include "agent/agent.h"
#include "agent/control_socket.h"
#include "cli/command.h"

namespace mysqltrace::cli {

namespace {

struct AgentArgs {
    std::string output_dir = "/var/log/mysqltrace";
    std::vector<std::string> formats = {"json"};
    std::string stages = "sampled";
    int rescan_ms = 1000;
    double duration = 0;
    uint64_t ring_kib = 1024;
    uint64_t rotate_size = 100ull << 20;
    unsigned rotate_keep = 5;
    uint32_t max_sql = 65536;
    bool show_secrets = false;
    std::string socket_prefix;
    std::string control_socket = agent::kDefaultControlSocket;
    std::string metrics_listen;
    size_t max_classes = 500;
};

int run_agent(const AgentArgs &a, const GlobalOptions &g) {
    agent::AgentOptions o;
    o.server.output_dir = a.output_dir;
    o.server.json = std::ranges::count(a.formats, "json") > 0;
    o.server.slowlog = std::ranges::count(a.formats, "slowlog") > 0;
    o.server.rotation = output::Rotation{a.rotate_size, a.rotate_keep};
    o.server.stages = a.stages == "off" ? server::StageMode::off : server::StageMode::sampled;
    o.server.max_sql = a.max_sql;
    o.server.ring_bytes_per_cpu = a.ring_kib << 10;
    o.server.show_secrets = a.show_secrets;
    o.rescan_ms = a.rescan_ms;
    o.socket_prefix = a.socket_prefix;
    o.control_socket = a.control_socket;
    o.metrics_listen = a.metrics_listen;
    o.server.max_classes = a.max_classes;
    o.duration_s = a.duration;
    o.verbose = g.verbose;
    auto ran = agent::run_agent(o, std::cerr);
    if (!ran) {
        std::cerr << "mysqltrace: " << ran.error().message << "\n";
        return kExitFailure;
    }
    return kExitOk;
}

}  // namespace

void register_agent(CLI::App &app, const GlobalOptions &global, RunFn &run) {
    auto *cmd = app.add_subcommand(
        "agent",
        "Trace every MariaDB and MySQL server of this host, each on its own: finds each "
        "mysqld/mariadbd (containers included) within a rescan period of its listening, labels "
        "it (flavour, version, pid, ports, socket, cgroup, container, systemd unit), traces its "
        "statements into files of its own under --output-dir, and detaches when it exits. A "
        "server whose build the analysis does not understand is reported once and left alone.");
    auto a = std::make_shared<AgentArgs>();
    cmd->add_option("--output-dir", a->output_dir,
                    "Each server's files go to a directory here named from its labels: "
                    "[container or systemd unit-]flavour-port (e.g. mariadb-3306), so a "
                    "restarted server writes on in its own directory")
        ->capture_default_str();
    cmd->add_option("-f,--format", a->formats,
                    "json: statements.json, one performance_schema-shaped JSON object per "
                    "statement (and its sampled stages); slowlog: slow.log, MySQL's slow query "
                    "log for pt-query-digest. Both: --format json,slowlog")
        ->delimiter(',')
        ->check(CLI::IsMember({"json", "slowlog"}))
        ->capture_default_str();
    cmd->add_option("--stages", a->stages,
                    "sampled: where statements spent their time by stage, from a CPU timer "
                    "(cheap); off: statements only")
        ->check(CLI::IsMember({"sampled", "off"}))
        ->capture_default_str();
    cmd->add_option("--rescan-ms", a->rescan_ms,
                    "How often /proc is listed for servers started, restarted or listening "
                    "since: a new server is attached within this (plus its analysis, under a "
                    "second)")
        ->check(CLI::Range(100, 60000))
        ->capture_default_str();
    cmd->add_option("--rotate-size", a->rotate_size,
                    "Rotate a server's file before it grows past SIZE (bytes, or with a k/M/G "
                    "suffix): FILE becomes FILE.1 (FILE.1 FILE.2, ...); 0 never rotates")
        ->transform(CLI::AsSizeValue(false))
        ->option_text("SIZE")
        ->capture_default_str();
    cmd->add_option("--rotate-keep", a->rotate_keep, "Rotated files kept per file (FILE.1 ... N)")
        ->check(CLI::Range(0, 1000))
        ->capture_default_str();
    cmd->add_option("--ring-kib", a->ring_kib, "Ring buffer size per CPU and server, KiB")
        ->check(CLI::Range(4, 1 << 20))
        ->capture_default_str();
    cmd->add_option("--max-sql", a->max_sql, "Bytes of statement text kept per statement")
        ->check(CLI::Range(0, 65536))
        ->capture_default_str();
    cmd->add_option("-d,--duration", a->duration,
                    "Stop after this many seconds (default: Ctrl-C or SIGTERM)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--socket-prefix", a->socket_prefix,
                    "Only the servers listening on a unix socket whose path starts with this "
                    "(one instance's directory, or a test's); the others are left alone");
    cmd->add_option("--control-socket", a->control_socket,
                    "The unix socket `mysqltrace top` reads every server's statement classes "
                    "from (root's alone, mode 0600; its directory is made); \"\" for none. A "
                    "socket another agent answers on is an error")
        ->capture_default_str();
    cmd->add_option("--metrics-listen", a->metrics_listen,
                    "Serve Prometheus metrics at http://HOST:PORT/metrics (e.g. "
                    "127.0.0.1:9104, [::1]:9104, :9104 for every address; port 0 picks a free "
                    "one, logged): each server's statements by class (counts, errors, latency "
                    "histogram, rows, stage time), the tracer's health, the agent's CPU and "
                    "memory. Off by default; docs/agent.md lists the metrics")
        ->option_text("HOST:PORT");
    cmd->add_option("--max-classes", a->max_classes,
                    "Statement classes (schema, user, statement kind, digest) kept per server "
                    "with metrics of their own; later classes are counted in one command=\"other\" "
                    "class, so a server's series stay bounded")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    cmd->add_flag("--show-secrets", a->show_secrets,
                  "Do not redact passwords and keys in statement texts");
    cmd->callback([&run, &global, a] { run = [a, &global] { return run_agent(*a, global); }; });
}

}  // namespace mysqltrace::cli
