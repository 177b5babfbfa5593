// SPDX-License-Identifier: GPL-2.0-only
#include "cli/server_otlp.h"

#include <unistd.h>

#include "agent/discovery.h"
#include "mysqltrace/version.h"
#include "server/hooks.h"

namespace mysqltrace::cli {

namespace {

// Spans per batch: the OpenTelemetry SDKs' default export batch size.
constexpr size_t kBatchSpans = 512;

}  // namespace

std::unique_ptr<OtlpSink> OtlpSink::open(const server::ServerTarget &target, pid_t pid,
                                         std::shared_ptr<OtlpChannel> channel) {
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
    r.host_name = otlp_host_name();
    agent::ProcessLabels labels;
    labels.id.pid = pid;
    agent::read_listeners(labels);
    if (!labels.ports.empty()) {
        r.port = labels.ports.front();
    }
    r.version = MYSQLTRACE_VERSION;
    std::unique_ptr<OtlpSink> s(new OtlpSink(std::move(r)));
    s->channel_ = std::move(channel);
    s->spans_.set_metrics(s->channel_->metrics());
    s->batch_started_ = std::chrono::steady_clock::now();
    return s;
}

Result<std::unique_ptr<OtlpSink>> OtlpSink::open(const server::ServerTarget &target, pid_t pid,
                                                 output::OutputFile *file, const std::string &url,
                                                 size_t queue) {
    auto c = OtlpChannel::open(file, url, queue);
    if (!c) {
        return c.error();
    }
    return open(target, pid, std::shared_ptr<OtlpChannel>(std::move(c).value()));
}

const std::string &OtlpSink::endpoint() const {
    return channel_->endpoint();
}

void OtlpSink::statement(const server::Statement &st, output::ServerRenderer &render,
                         const std::vector<output::NamedWait> &waits,
                         const output::TraceParent *client) {
    stages_.clear();
    for (const auto &r : render.stage_rows(st)) {
        stages_.push_back({r.name, r.start_ns, r.end_ns});
    }
    sampled_.clear();
    for (const auto &s : st.samples) {
        sampled_.push_back({render.name_of(s.stage), s.on_cpu, s.switches, s.off_cpu_ns});
    }
    if (spans_.spans() == 0) {
        batch_started_ = std::chrono::steady_clock::now();
    }
    spans_.add(st, render.event_name(st), stages_, sampled_, waits, client);
    if (spans_.spans() >= kBatchSpans) {
        flush_batch();
    }
}

void OtlpSink::tick() {
    channel_->tick();
    if (spans_.spans() > 0 &&
        std::chrono::steady_clock::now() - batch_started_ >= std::chrono::seconds(1)) {
        flush_batch();
    }
}

void OtlpSink::flush_batch() {
    const size_t n = spans_.spans();
    if (n == 0) {
        return;
    }
    spans_.take(request_);
    channel_->send(request_, n);
}

std::string OtlpSink::finish(std::chrono::milliseconds grace) {
    flush_batch();
    return channel_->finish(grace);
}

}  // namespace mysqltrace::cli
