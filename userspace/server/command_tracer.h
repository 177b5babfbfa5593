// SPDX-License-Identifier: GPL-2.0-only
// Commands dispatched by a running mariadbd, from one entry uprobe on
// dispatch_command (bpf/server.bpf.c). The start of server tracing: every
// command with its connection id and statement text, no performance_schema.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <sys/types.h>

#include "bpf/handles.h"
#include "bpf/ring_set.h"
#include "elf/probe_site.h"
#include "util/result.h"

struct server;

namespace mysqltrace::server {

// What mysqltrace learnt about a server binary from its symbols and code.
struct ServerTarget {
    pid_t pid = 0;
    std::string exe;  // /proc/PID/exe: reaches the binary across mount namespaces
    std::string dispatch_symbol;
    elf::ProbeSite dispatch_site;   // file offset and cost of the entry probe
    int64_t thread_id_offset = -1;  // THD::thread_id, from thd_get_thread_id
};

Result<ServerTarget> resolve_server(pid_t pid);

struct CommandEvent {
    uint64_t ts_ns = 0;      // CLOCK_MONOTONIC
    uint32_t tid = 0;        // OS thread
    uint64_t thread_id = 0;  // server connection id
    uint32_t command = 0;
    uint32_t packet_len = 0;
    std::string argument;  // SQL text for COM_QUERY/COM_STMT_PREPARE, db for COM_INIT_DB
    bool truncated = false;
};

// Decodes one ring record; false when it is not a command record.
bool decode_command(std::span<const uint8_t> record, CommandEvent *out);

struct CommandTracerOptions {
    uint32_t max_sql = 4096;
    bpf::RingOptions ring;
};

class CommandTracer {
  public:
    static Result<std::unique_ptr<CommandTracer>> attach(
        const ServerTarget &target, const CommandTracerOptions &opts,
        std::function<void(const CommandEvent &)> sink);
    ~CommandTracer();
    bpf::RingSet &rings() { return *rings_; }
    uint64_t undecodable() const { return undecodable_; }

  private:
    CommandTracer() = default;
    ::server *skel_ = nullptr;
    std::unique_ptr<bpf::RingSet> rings_;
    bpf::Link link_;
    std::function<void(const CommandEvent &)> sink_;
    uint64_t undecodable_ = 0;
};

}  // namespace mysqltrace::server
