// SPDX-License-Identifier: GPL-2.0-only
#include <string>

#include "cli/protocol_trace.h"
#include "mysqltrace/java_agent_path.h"

namespace mysqltrace::cli {

namespace {

struct ClientArgs : ProtocolArgs {
    std::vector<pid_t> pids;
    bool follow_forks = false;
    bool no_tls = false;
    bool no_java_agent = false;
};

int run_client(const ClientArgs &a, const GlobalOptions &g) {
    ProtocolSession s;
    s.pids = a.pids;
    s.follow_forks = a.follow_forks;
    s.tls = !a.no_tls;
    s.java_agent = !a.no_java_agent;
    s.banner = "tracing MySQL connections of pid";
    for (pid_t p : a.pids) {
        s.banner += " " + std::to_string(p);
    }
    return run_protocol_trace(a, s, g);
}

}  // namespace

void register_client(CLI::App &app, const GlobalOptions &global, RunFn &run) {
    auto *cmd = app.add_subcommand(
        "client",
        "Trace the MySQL connections of running client processes: every protocol event as a "
        "WL#6226 trace (stage, event, decoded detail), rebuilt from their socket I/O. "
        "Connections open before the trace are joined at their next command.");
    auto a = std::make_shared<ClientArgs>();
    cmd->add_option("-p,--pid", a->pids, "Process id of a client to trace (repeatable)")
        ->required();
    add_protocol_options(cmd, *a);
    cmd->add_flag("--follow-forks", a->follow_forks, "Also trace processes the clients fork");
    cmd->add_flag(
        "--no-tls", a->no_tls,
        "Do not probe OpenSSL/GnuTLS/Go crypto/tls or JVMs for the cleartext of encrypted "
        "connections");
    cmd->add_flag(
        "--no-java-agent", a->no_java_agent,
        "Do not load mysqltrace's Java agent into a traced JVM that lacks it (through "
        "the JDK's attach mechanism; it rewrites two methods of the JDK's TLS sockets "
        "and stays until the JVM exits): the JVM's TLS cleartext is then seen only if "
        "it was started with -javaagent:JAR, where JAR is " MYSQLTRACE_JAVA_JAR_INSTALL_DIR
        "/mysqltrace-agent.jar");
    cmd->callback([&run, &global, a] { run = [a, &global] { return run_client(*a, global); }; });
}

}  // namespace mysqltrace::cli
