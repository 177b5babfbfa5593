// SPDX-License-Identifier: GPL-2.0-only
// The agent's /metrics page: Prometheus's text exposition format 0.0.4 of
// every traced server's statement classes (output/statement_stats.h), its
// tracer's health and the agent's own. Rendering only: what is rendered is
// handed in as plain values (ServerSample, AgentSample), so a unit test
// checks the exact text without BPF or servers; agent.cpp fills them under
// the lock that keeps the event loop out meanwhile.
//
// Every series of a server carries server (its directory's name), flavour,
// version, pid and port; a statement class's series add schema, user,
// command (performance_schema's event name) and digest (the digest text).
// mysqltrace_server_info adds the server's sockets, unit, container and
// cgroup. docs/agent.md lists every metric.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/traced_server.h"
#include "bpf/ring_set.h"
#include "output/statement_stats.h"

namespace mysqltrace::agent {

// The Content-Type of the page.
inline constexpr const char *kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// What one traced server contributes.
struct ServerSample {
    const ServerLabels *labels = nullptr;
    const output::StatementStats *stats = nullptr;
    bpf::RingStats rings;
    uint64_t undecodable = 0;
    size_t probes = 0;
    size_t outputs_failed = 0;  // its files that stopped after a write error
};

// What `server` contributes now (under the lock that keeps its event loop out).
ServerSample sample_of(const TracedServer &server);

// The agent's own process, as Prometheus's client libraries name it.
struct ProcessSample {
    double cpu_seconds = 0;  // user + system
    uint64_t resident_bytes = 0, virtual_bytes = 0;
    double start_time_seconds = 0;  // since the epoch
    uint64_t open_fds = 0, max_fds = 0;
};

// Reads /proc/self/stat, /proc/stat's btime, /proc/self/fd and the fd limit;
// nullopt when /proc/self/stat cannot be read.
std::optional<ProcessSample> read_process_sample();
// The part of a /proc/PID/stat line it uses: utime, stime, starttime,
// vsize and rss (fields 14, 15, 22, 23, 24), turned into seconds and bytes
// with the clock tick rate, page size and boot time (/proc/stat's btime)
// given. nullopt when the line is too short.
std::optional<ProcessSample> parse_process_stat(std::string_view stat, long ticks_per_second,
                                                long page_size, uint64_t boot_time);

struct AgentSample {
    uint64_t attaches = 0;          // servers attached since the start
    uint64_t detaches = 0;          // ... and detached since
    uint64_t refused_analysis = 0;  // refused by the analysis of its binary
    uint64_t refused_attach = 0;    // analysed, but its probes or files failed
    size_t refused_now = 0;         // running servers not traced
    double last_render_seconds = 0;
    std::optional<ProcessSample> process;
};

// The whole page. Metrics with no sample (no server attached) still have
// their HELP and TYPE lines.
std::string render_metrics(const std::vector<ServerSample> &servers, const AgentSample &agent);

// A label value as the format spells it between its quotes: \ " and newline
// escaped, and bytes that are not UTF-8 (a digest's binary literal, a
// schema's name in another charset) replaced by U+FFFD, which a scrape
// would otherwise reject whole.
void append_label_value(std::string &out, std::string_view value);

}  // namespace mysqltrace::agent
