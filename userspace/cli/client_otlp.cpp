// SPDX-License-Identifier: GPL-2.0-only
#include "cli/client_otlp.h"

#include "mysqltrace/version.h"

namespace mysqltrace::cli {

namespace {

// Spans per batch: the OpenTelemetry SDKs' default export batch size.
constexpr size_t kBatchSpans = 512;

}  // namespace

Result<std::unique_ptr<ClientOtlpSink>> ClientOtlpSink::open(output::OutputFile *file,
                                                             const std::string &url, size_t queue) {
    std::unique_ptr<ClientOtlpSink> s(
        new ClientOtlpSink(output::otlp_host_name(), MYSQLTRACE_VERSION));
    auto c = output::OtlpChannel::open(file, url, queue);
    if (!c) {
        return c.error();
    }
    s->channel_ = std::move(c).value();
    s->spans_.set_metrics(s->channel_->metrics());
    s->batch_started_ = std::chrono::steady_clock::now();
    return s;
}

void ClientOtlpSink::connection(const client::ConnectionInfo &c) {
    conns_[c.id].conn.peer = c.peer;
}

void ClientOtlpSink::event(const protocol::ProtocolEvent &ev) {
    auto it = conns_.find(ev.conn);
    if (it == conns_.end()) {
        return;
    }
    it->second.on_event(ev);
    if (ev.event == protocol::TraceEvent::disconnected) {
        conns_.erase(it);
    }
}

void ClientOtlpSink::summary(const protocol::CommandSummary &sum) {
    auto it = conns_.find(sum.conn);
    if (it == conns_.end()) {
        return;
    }
    auto p = procs_.find(sum.pid);
    if (p == procs_.end()) {
        p = procs_.emplace(sum.pid, output::read_client_process(sum.pid)).first;
    }
    if (spans_.spans() == 0) {
        batch_started_ = std::chrono::steady_clock::now();
    }
    // The span has the schema the command ran in: a `USE` changes it after.
    const auto ctx = spans_.add(sum, it->second.conn, p->second);
    if (on_span) {
        on_span(sum, it->second.conn, ctx);
    }
    it->second.on_summary(sum);
    if (spans_.spans() >= kBatchSpans) {
        flush_batch();
    }
}

void ClientOtlpSink::process_seen(uint32_t pid, const std::string &executable) {
    auto p = output::read_client_process(pid);
    if (!executable.empty()) {
        p.executable = executable;
    }
    procs_[pid] = std::move(p);
}

void ClientOtlpSink::process_forked(uint32_t parent, uint32_t child) {
    // The child runs the parent's program until it execs another.
    auto it = procs_.find(parent);
    output::ClientProcess p = it != procs_.end() ? it->second : output::read_client_process(child);
    p.pid = child;
    procs_[child] = std::move(p);
}

void ClientOtlpSink::process_exit(uint32_t pid) {
    procs_.erase(pid);
}

void ClientOtlpSink::tick() {
    channel_->tick();
    if (spans_.spans() > 0 &&
        std::chrono::steady_clock::now() - batch_started_ >= std::chrono::seconds(1)) {
        flush_batch();
    }
}

void ClientOtlpSink::flush_batch() {
    const size_t n = spans_.spans();
    if (n == 0) {
        return;
    }
    spans_.take(request_);
    channel_->send(request_, n);
}

std::string ClientOtlpSink::finish(std::chrono::milliseconds grace) {
    flush_batch();
    return channel_->finish(grace);
}

}  // namespace mysqltrace::cli
