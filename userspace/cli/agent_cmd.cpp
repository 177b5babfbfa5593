// SPDX-License-Identifier: GPL-2.0-only
#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>
#include <tuple>

#include "agent/agent.h"
#include "agent/control_socket.h"
#include "cli/command.h"

namespace mysqltrace::cli {

namespace {

// The options' defaults are the configuration's (agent_defaults()), so
// that --help shows what applies without a file.
struct AgentArgs {
    std::string config;
    bool check_config = false;
    std::string output_dir;
    std::vector<std::string> formats;
    std::string stages;
    int rescan_ms = 0;
    double duration = 0;
    uint64_t ring_kib = 0;
    uint64_t rotate_size = 0;
    unsigned rotate_keep = 0;
    uint32_t max_sql = 0;
    bool show_secrets = false;
    bool locks = false;
    std::string socket_prefix;
    std::string control_socket = agent::kDefaultControlSocket;
    std::string metrics_listen;
    size_t max_classes = 500;
    // The options given, as the configuration's keys: they override the file.
    std::vector<agent::Setting> given;
};

AgentArgs defaults() {
    const agent::AgentOptions d = agent::agent_defaults();
    const auto &o = d.defaults.opts;
    AgentArgs a;
    a.output_dir = o.output_dir;
    a.formats = {"json"};
    a.stages = "sampled";
    a.rescan_ms = d.rescan_ms;
    a.ring_kib = o.ring_bytes_per_cpu >> 10;
    a.rotate_size = o.rotation.max_bytes;
    a.rotate_keep = o.rotation.keep;
    a.max_sql = o.max_sql;
    a.control_socket = d.control_socket;
    a.max_classes = o.max_classes;
    return a;
}

int run_agent(const AgentArgs &a, const GlobalOptions &g) {
    agent::AgentOptions base = agent::agent_defaults();
    base.command_line = a.given;
    base.duration_s = a.duration;
    base.verbose = g.verbose;
    auto loaded = agent::load_agent_config(a.config, base);
    if (!loaded) {
        // As a bad command line: the agent does not start.
        std::cerr << "mysqltrace: " << loaded.error().message << "\n";
        return kExitUsage;
    }
    if (a.check_config) {
        std::cout << agent::effective_config(*loaded);
        return kExitOk;
    }
    auto ran = agent::run_agent(*loaded, std::cerr);
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
        "server whose build the analysis does not understand is reported once and left alone. "
        "A --config file sets the outputs and, per server, its modes; SIGHUP reads it again "
        "and attaches again the servers whose settings changed.");
    auto a = std::make_shared<AgentArgs>(defaults());
    // Each option given becomes the configuration key `key`, its value as
    // the file would spell it, once the command line is parsed.
    using Key = std::tuple<CLI::Option *, std::string, std::function<std::string()>>;
    auto keys = std::make_shared<std::vector<Key>>();
    auto given = [keys](CLI::Option *opt, std::string key, std::function<std::string()> value) {
        keys->emplace_back(opt, std::move(key), std::move(value));
        return opt;
    };
    cmd->add_option("-c,--config", a->config,
                    "INI file of the outputs and of modes per server ([agent], [server "
                    "port=3307], ...: see mysqltrace-agent(8)). The options below override its "
                    "settings; SIGHUP reads it again")
        ->option_text("FILE");
    cmd->add_flag("--check-config", a->check_config,
                  "Check the configuration (--config and the options), print the settings that "
                  "apply and exit: 0 valid, 2 not");
    given(cmd->add_option("--output-dir", a->output_dir,
                          "Each server's files go to a directory here named from its labels: "
                          "[container or systemd unit-]flavour-port (e.g. mariadb-3306), so a "
                          "restarted server writes on in its own directory")
              ->capture_default_str(),
          "output_dir", [a] { return a->output_dir; });
    given(
        cmd->add_option("-f,--format", a->formats,
                        "json: statements.json, one performance_schema-shaped JSON object per "
                        "statement (and its sampled stages); slowlog: slow.log, MySQL's slow query "
                        "log for pt-query-digest. Both: --format json,slowlog")
            ->delimiter(',')
            ->check(CLI::IsMember({"json", "slowlog"}))
            ->capture_default_str(),
        "formats", [a] {
            std::string f;
            for (const auto &x : a->formats) {
                f += (f.empty() ? "" : ",") + x;
            }
            return f;
        });
    given(cmd->add_option("--stages", a->stages,
                          "sampled: where statements spent their time by stage, from a CPU timer "
                          "(cheap); off: statements only")
              ->check(CLI::IsMember({"sampled", "off"}))
              ->capture_default_str(),
          "stages", [a] { return a->stages; });
    given(cmd->add_option("--rescan-ms", a->rescan_ms,
                          "How often /proc is listed for servers started, restarted or listening "
                          "since: a new server is attached within this (plus its analysis, under a "
                          "second)")
              ->check(CLI::Range(100, 60000))
              ->capture_default_str(),
          "rescan_ms", [a] { return std::to_string(a->rescan_ms); });
    given(
        cmd->add_option("--rotate-size", a->rotate_size,
                        "Rotate a server's file before it grows past SIZE (bytes, or with a k/M/G "
                        "suffix): FILE becomes FILE.1 (FILE.1 FILE.2, ...); 0 never rotates")
            ->transform(CLI::AsSizeValue(false))
            ->option_text("SIZE")
            ->capture_default_str(),
        "rotate_size", [a] { return std::to_string(a->rotate_size); });
    given(cmd->add_option("--rotate-keep", a->rotate_keep,
                          "Rotated files kept per file (FILE.1 ... N)")
              ->check(CLI::Range(0, 1000))
              ->capture_default_str(),
          "rotate_keep", [a] { return std::to_string(a->rotate_keep); });
    given(cmd->add_option("--ring-kib", a->ring_kib, "Ring buffer size per CPU and server, KiB")
              ->check(CLI::Range(4, 1 << 20))
              ->capture_default_str(),
          "ring_kib", [a] { return std::to_string(a->ring_kib); });
    given(cmd->add_option("--max-sql", a->max_sql, "Bytes of statement text kept per statement")
              ->check(CLI::Range(0, 65536))
              ->capture_default_str(),
          "max_sql", [a] { return std::to_string(a->max_sql); });
    cmd->add_option("-d,--duration", a->duration,
                    "Stop after this many seconds (default: Ctrl-C or SIGTERM)")
        ->check(CLI::NonNegativeNumber);
    given(cmd->add_option("--socket-prefix", a->socket_prefix,
                          "Only the servers listening on a unix socket whose path starts with this "
                          "(one instance's directory, or a test's); the others are left alone"),
          "socket_prefix", [a] { return a->socket_prefix; });
    given(cmd->add_option("--control-socket", a->control_socket,
                          "The unix socket `mysqltrace top` reads every server's statement "
                          "classes from (root's alone, mode 0600; its directory is made); \"\" "
                          "for none. A socket another agent answers on is an error")
              ->capture_default_str(),
          "control_socket", [a] { return a->control_socket; });
    given(cmd->add_option("--metrics-listen", a->metrics_listen,
                          "Serve Prometheus metrics at http://HOST:PORT/metrics (e.g. "
                          "127.0.0.1:9715, [::1]:9715, :9715 for every address; port 0 picks a "
                          "free one, logged): each server's statements by class (counts, errors, "
                          "latency histogram, rows, stage time), the tracer's health, the "
                          "agent's CPU and memory. Off by default; docs/agent.md lists the "
                          "metrics")
              ->option_text("HOST:PORT"),
          "metrics_listen", [a] { return a->metrics_listen; });
    given(cmd->add_option("--max-classes", a->max_classes,
                          "Statement classes (schema, user, statement kind, digest) kept per "
                          "server with metrics of their own; later classes are counted in one "
                          "command=\"other\" class, so a server's series stay bounded")
              ->check(CLI::Range(1, 100000))
              ->capture_default_str(),
          "max_classes", [a] { return std::to_string(a->max_classes); });
    given(cmd->add_flag("--show-secrets", a->show_secrets,
                        "Do not redact passwords and keys in statement texts"),
          "show_secrets", [a] { return std::string(a->show_secrets ? "yes" : "no"); });
    given(cmd->add_flag("--locks", a->locks,
                        "Trace every server's lock waits too (server --locks' probes, on paths "
                        "only a waiting thread takes), for `mysqltrace top`'s blocking tree"),
          "locks", [a] { return std::string(a->locks ? "yes" : "no"); });
    cmd->callback([&run, &global, a, keys] {
        for (const auto &[opt, key, value] : *keys) {
            if (opt->count() > 0) {
                a->given.push_back(agent::Setting{key, value(), 0});
            }
        }
        run = [a, &global] { return run_agent(*a, global); };
    });
}

}  // namespace mysqltrace::cli
