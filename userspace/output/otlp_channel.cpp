// SPDX-License-Identifier: GPL-2.0-only
#include "output/otlp_channel.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "mysqltrace/version.h"

namespace mysqltrace::output {

std::string otlp_host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof(buf) - 1) != 0) {
        return "";
    }
    return buf;
}

std::string process_executable(uint32_t pid) {
    char exe[4096];
    const ssize_t n =
        readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof(exe) - 1);
    if (n <= 0) {
        return "";
    }
    const std::string path(exe, static_cast<size_t>(n));
    std::string name = path.substr(path.rfind('/') + 1);
    if (name.ends_with(" (deleted)")) {
        name.resize(name.size() - 10);
    }
    return name;
}

OtlpResource server_resource(uint32_t pid, const std::string &db_system, uint16_t port) {
    OtlpResource r;
    r.db_system = db_system;
    r.service_name = db_system;
    r.pid = pid;
    r.executable = process_executable(pid);
    r.host_name = otlp_host_name();
    r.port = port;
    r.version = MYSQLTRACE_VERSION;
    return r;
}

Result<std::unique_ptr<OtlpChannel>> OtlpChannel::open(OutputFile *file, const std::string &url,
                                                       size_t queue) {
    std::unique_ptr<OtlpChannel> c(new OtlpChannel());
    c->file_ = file;
    if (!url.empty()) {
        OtlpExportOptions opts;
        opts.max_queued = queue;
        auto e = OtlpExporter::start(url, opts);
        if (!e) {
            return e.error();
        }
        c->exporter_ = std::move(e).value();
        opts.signal_path = "/v1/metrics";
        // One request holds every series: a few may wait.
        opts.max_queued = 4;
        auto me = OtlpExporter::start(url, opts);
        if (!me) {
            return me.error();
        }
        c->metrics_exporter_ = std::move(me).value();
        timespec now{};
        clock_gettime(CLOCK_REALTIME, &now);
        c->metrics_ = std::make_unique<OtlpMetrics>(
            MYSQLTRACE_VERSION, static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull +
                                    static_cast<uint64_t>(now.tv_nsec));
        // The SDKs' variable for their periodic metric reader.
        if (const char *v = std::getenv("OTEL_METRIC_EXPORT_INTERVAL"); v != nullptr) {
            char *end = nullptr;
            const long ms = std::strtol(v, &end, 10);
            if (end != v && *end == 0 && ms > 0) {
                c->interval_ = std::chrono::milliseconds(ms);
            }
        }
        c->last_export_ = std::chrono::steady_clock::now();
    }
    return c;
}

std::string otlp_export_lines(const OtlpChannel &c) {
    return "mysqltrace: exporting spans to " + c.endpoint() +
           " (OTLP/HTTP JSON)\nmysqltrace: exporting operation duration histograms to " +
           c.metrics_endpoint() + " every " + std::to_string(c.metrics_interval().count()) +
           " ms (OTEL_METRIC_EXPORT_INTERVAL) and at the end\n";
}

const std::string &OtlpChannel::metrics_endpoint() const {
    static const std::string none;
    return metrics_exporter_ ? metrics_exporter_->endpoint() : none;
}

void OtlpChannel::export_metrics() {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    const size_t points =
        metrics_->take(metrics_request_, static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull +
                                             static_cast<uint64_t>(now.tv_nsec));
    last_export_ = std::chrono::steady_clock::now();
    if (points == 0) {
        return;
    }
    metric_exports_++;
    metrics_exporter_->send(std::move(metrics_request_), points);
    metrics_request_ = std::string();
}

void OtlpChannel::tick() {
    if (metrics_ && std::chrono::steady_clock::now() - last_export_ >= interval_) {
        export_metrics();
    }
}

const std::string &OtlpChannel::endpoint() const {
    static const std::string none;
    return exporter_ ? exporter_->endpoint() : none;
}

void OtlpChannel::send(std::string &request, size_t spans) {
    if (spans == 0) {
        return;
    }
    spans_total_ += spans;
    if (file_ != nullptr) {
        request += '\n';
        file_->write(request);
        request.pop_back();
    }
    if (exporter_) {
        exporter_->send(std::move(request), spans);
        request = std::string();
    }
}

std::string OtlpChannel::finish(std::chrono::milliseconds grace) {
    std::string out = std::to_string(spans_total_) + " spans";
    if (!exporter_) {
        return out;
    }
    // The last histograms, then both exporters stopped within the one grace.
    export_metrics();
    const auto until = std::chrono::steady_clock::now() + grace;
    exporter_->stop(grace);
    metrics_exporter_->stop(std::max(std::chrono::milliseconds(0),
                                     std::chrono::duration_cast<std::chrono::milliseconds>(
                                         until - std::chrono::steady_clock::now())));
    const auto s = exporter_->stats();
    out += " (OTLP " + exporter_->endpoint() + ": " + std::to_string(s.sent) + " sent, " +
           std::to_string(s.dropped) + " dropped (queue full), " + std::to_string(s.failed) +
           " failed";
    if (s.retries) {
        out += ", " + std::to_string(s.retries) + " retries";
    }
    if (!s.last_error.empty() && s.sent < spans_total_) {
        out += "; last error: " + s.last_error;
    }
    out += ")";
    const auto m = metrics_exporter_->stats();
    out += ", " + std::to_string(metric_exports_) + " metric exports (OTLP " +
           metrics_exporter_->endpoint() + ": " + std::to_string(m.sent) + " points sent, " +
           std::to_string(m.dropped) + " dropped, " + std::to_string(m.failed) + " failed)";
    return out;
}

}  // namespace mysqltrace::output
