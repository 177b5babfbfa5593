// SPDX-License-Identifier: GPL-2.0-only
// One server the agent traces: its labels, its statement tracer (the one
// `mysqltrace server` runs) and the rotated files its statements go to, in
// a directory of its own named from its labels.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/discovery.h"
#include "agent/handover.h"
#include "output/otlp_sink.h"
#include "output/output_file.h"
#include "output/server_render.h"
#include "output/slowlog.h"
#include "output/statement_stats.h"
#include "server/locks.h"
#include "server/server_target.h"
#include "server/statement_tracer.h"
#include "top/snapshot.h"
#include "util/result.h"

namespace mysqltrace::agent {

// What the agent reports of a server: /proc's labels and what its binary says.
struct ServerLabels {
    ProcessLabels process;
    std::string flavour;  // "mariadb" or "mysql"
    std::string version;  // as the server reports it, "" when unreadable
};

// The directory name of a server's files: [container id (12 digits) or
// systemd unit-]flavour-(first port | "sock-"socket file name | "pid"PID),
// with only [A-Za-z0-9._@-] kept. Stable across the server's restarts when
// its port (or socket) is.
std::string server_dir_name(const ServerLabels &labels);

// "pid=42 flavour=mariadb version=... port=3306 socket=/run/... cgroup=/...
// unit=... container=docker:<id>": one key=value list, "-" for none.
std::string describe(const ServerLabels &labels);

// A listed server process analysed from its binary: its target, and its
// labels with the flavour and version its binary gives. ESRCH: it is gone.
struct ResolvedServer {
    ServerLabels labels;
    server::ServerTarget target;
};
Result<ResolvedServer> resolve_traced_server(const ProcessLabels &labels);

struct TracedServerOptions {
    // The server's directory is made here (none when neither file is
    // written: `top --pid`).
    std::string output_dir;
    bool json = true;      // statements.json, performance_schema's columns
    bool slowlog = false;  // slow.log, MySQL's slow query log
    output::Rotation rotation;
    server::StageMode stages = server::StageMode::sampled;
    uint32_t max_sql = 65536;
    uint64_t ring_bytes_per_cpu = 1u << 20;
    bool show_secrets = false;
    // Statement classes with totals of their own (stats()); later ones
    // are summed as "other".
    size_t max_classes = 500;
    // Lock waits (server --locks' probes), for live_lock_waits().
    bool locks = false;
    // The OTLP collector's base URL its statements go to as spans, with
    // their durations as a histogram ("": none; output::OtlpSink).
    std::string otlp;
    bool operator==(const TracedServerOptions &) const = default;
};

class TracedServer {
  public:
    // Attaches to `target` (resolved for labels.process.id.pid). Notes about
    // what the build lacks go to `notes`. `before`: the same server's
    // attachment with the settings before, still attached; the files both
    // write are handed over by its finish(), not opened again. Runs on a
    // thread of its own while `before` is drained: it reads only what
    // `before` never changes, its files' names.
    static Result<std::unique_ptr<TracedServer>> start(ServerLabels labels,
                                                       server::ServerTarget target,
                                                       const TracedServerOptions &opts,
                                                       std::vector<std::string> &notes,
                                                       const TracedServer *before = nullptr);
    ~TracedServer();

    const ServerLabels &labels() const { return labels_; }
    const std::string &dir() const { return dir_; }
    size_t probe_count() const { return tracer_->probe_count(); }
    const std::string &path_note() const { return tracer_->path_note(); }
    // Readable when a ring has records.
    int epoll_fd() const;
    // Running totals by statement class, for /metrics and `top`.
    const output::StatementStats &stats() const { return *stats_; }
    // The tracer itself: its rings' counters and the records it could not decode.
    const server::StatementTracer &tracer() const { return *tracer_; }
    // Its rings' counters (drops, records); one BPF map read.
    bpf::RingStats ring_stats() const { return tracer_->rings().stats(); }
    // Its fullest ring's unread share now, or while it was read since the
    // last call (bpf::RingSet::take_fill).
    double ring_fill() { return tracer_->rings().take_fill(); }
    // Lock waits are traced (TracedServerOptions::locks).
    bool locks() const { return locks_ != nullptr; }
    // The lock waits open now, each with its blockers; `now_ns` on
    // CLOCK_MONOTONIC makes the ages.
    std::vector<top::LockWaitRow> live_lock_waits(uint64_t now_ns) const;
    // Its files that stopped after a write error (0, 1 or 2).
    size_t outputs_failed() const;
    // Drains the rings without waiting.
    Result<int> poll();
    // Once a second: the clock offset, the files.
    void tick();
    // Attached again with new settings (Agent::reattach), the attachment
    // before and its heir both attached for a while, each statement of that
    // while written once. The attachment before: track_kept() from before
    // the heir attaches, keep_until() the cut (it writes what ended before),
    // detach_probes(), finish(&heir). The heir holds its statements until
    // then and writes those of each connection that come after the last
    // one the attachment before wrote (by query id; by the cut, keep_from(),
    // on a build whose query ids are not known).
    void track_kept(bool on);
    void keep_from(uint64_t ns) { keep_from_ns_ = ns; }
    void keep_until(uint64_t ns) { keep_until_ns_ = ns; }
    // Its probes out, its rings still read (StatementTracer::detach_probes):
    // may run on another thread while poll() runs.
    void detach_probes() { tracer_->detach_probes(); }
    // Drains everything, hands over held statements, flushes the files;
    // returns "N statements, M records dropped". Call once, at the end.
    // `heir`: the attachment started with this one as its `before`, which
    // then writes on in the files they share.
    std::string finish(TracedServer *heir = nullptr);

  private:
    TracedServer() = default;
    void on_statement(const server::Statement &st);
    // The stage at server address `addr` (its tracer's stage_name_at()).
    std::string stage_name(uint64_t addr) const;
    // To `heir`: the files they share, what this one wrote last; then the
    // heir's held statements go on. Errors are added to `summary`.
    void hand_over(TracedServer &heir, std::string &summary);

    ServerLabels labels_;
    std::string dir_;
    std::unique_ptr<server::ServerTarget> target_;  // the renderer holds its stage table
    std::unique_ptr<output::OutputFile> json_, slowlog_;
    std::unique_ptr<output::ServerRenderer> render_;
    output::SlowlogRenderer slow_;
    std::unique_ptr<output::StatementStats> stats_;
    std::unique_ptr<server::LockTracker> locks_;
    std::unique_ptr<server::StatementTracer> tracer_;
    std::unique_ptr<output::OtlpSink> otlp_;
    uint64_t statements_ = 0, failed_ = 0;
    uint64_t keep_from_ns_ = 0, keep_until_ns_ = UINT64_MAX;
    // The attachment before: what it wrote, while tracking_kept_.
    bool tracking_kept_ = false;
    Handover kept_;
    // The heir: the same, of the attachment before, once handed over; its
    // statements held until then; the files handed over then, with the
    // rotation they take.
    Handover before_;
    uint64_t forget_before_at_ns_ = 0;
    bool holding_ = false;
    std::vector<server::Statement> held_;
    bool json_from_before_ = false, slowlog_from_before_ = false;
    output::Rotation rotation_;
    bool show_secrets_ = false;
};

}  // namespace mysqltrace::agent
