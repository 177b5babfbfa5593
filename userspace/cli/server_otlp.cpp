// SPDX-License-Identifier: GPL-2.0-only
#include "cli/server_otlp.h"

#include "agent/discovery.h"
#include "output/otlp_channel.h"
#include "server/hooks.h"

namespace mysqltrace::cli {

output::OtlpResource server_otlp_resource(const server::ServerTarget &target, pid_t pid) {
    const std::string version = server::server_version(*target.file, pid, target.load_bias);
    agent::ProcessLabels labels;
    labels.id.pid = pid;
    agent::read_listeners(labels);
    return output::server_resource(
        static_cast<uint32_t>(pid),
        version.find("MariaDB") != std::string::npos ? "mariadb" : "mysql",
        labels.ports.empty() ? 0 : labels.ports.front());
}

}  // namespace mysqltrace::cli
