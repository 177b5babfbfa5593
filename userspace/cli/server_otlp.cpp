// SPDX-License-Identifier: GPL-2.0-only
#include "cli/server_otlp.h"

#include <unistd.h>

#include "agent/discovery.h"
#include "mysqltrace/version.h"
#include "output/otlp_channel.h"
#include "server/hooks.h"

namespace mysqltrace::cli {

output::OtlpResource server_otlp_resource(const server::ServerTarget &target, pid_t pid) {
    output::OtlpResource r;
    const std::string version = server::server_version(*target.file, pid, target.load_bias);
    const bool mariadb = version.find("MariaDB") != std::string::npos;
    r.db_system = mariadb ? "mariadb" : "mysql";
    // The spans describe the traced server: it is the service.
    r.service_name = r.db_system;
    r.pid = static_cast<uint32_t>(pid);
    char exe[4096];
    const ssize_t n =
        readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof(exe) - 1);
    if (n > 0) {
        const std::string path(exe, static_cast<size_t>(n));
        r.executable = path.substr(path.rfind('/') + 1);
    }
    r.host_name = output::otlp_host_name();
    agent::ProcessLabels labels;
    labels.id.pid = pid;
    agent::read_listeners(labels);
    if (!labels.ports.empty()) {
        r.port = labels.ports.front();
    }
    r.version = MYSQLTRACE_VERSION;
    return r;
}

}  // namespace mysqltrace::cli
