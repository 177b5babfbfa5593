// SPDX-License-Identifier: GPL-2.0-only
#include "output/otlp_sink.h"

namespace mysqltrace::output {

namespace {

// Spans per batch: the OpenTelemetry SDKs' default export batch size.
constexpr size_t kBatchSpans = 512;

}  // namespace

std::unique_ptr<OtlpSink> OtlpSink::open(OtlpResource resource,
                                         std::shared_ptr<OtlpChannel> channel) {
    std::unique_ptr<OtlpSink> s(new OtlpSink(std::move(resource)));
    s->channel_ = std::move(channel);
    s->spans_.set_metrics(s->channel_->metrics());
    s->batch_started_ = std::chrono::steady_clock::now();
    return s;
}

Result<std::unique_ptr<OtlpSink>> OtlpSink::open(OtlpResource resource, OutputFile *file,
                                                 const std::string &url, size_t queue) {
    auto c = OtlpChannel::open(file, url, queue);
    if (!c) {
        return c.error();
    }
    return open(std::move(resource), std::shared_ptr<OtlpChannel>(std::move(c).value()));
}

const std::string &OtlpSink::endpoint() const {
    return channel_->endpoint();
}

void OtlpSink::statement(const server::Statement &st, ServerRenderer &render,
                         const std::vector<NamedWait> &waits, const TraceParent *client) {
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

}  // namespace mysqltrace::output
