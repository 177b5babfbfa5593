// SPDX-License-Identifier: GPL-2.0-only
// What describes a traced server on its OTLP spans (output::OtlpSink): its
// flavour from the version its binary holds, its process, its first TCP
// port.
#pragma once

#include <sys/types.h>

#include "output/otlp.h"
#include "server/server_target.h"

namespace mysqltrace::cli {

output::OtlpResource server_otlp_resource(const server::ServerTarget &target, pid_t pid);

}  // namespace mysqltrace::cli
