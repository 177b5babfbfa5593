// SPDX-License-Identifier: GPL-2.0-only
// Where OTLP span batches go, for every command and the agent: as JSON
// lines to the trace's output (--format otlp) and/or to a collector
// (--otlp URL) from the exporter's thread. With a collector, the operation
// duration histograms too (/v1/metrics), every OTEL_METRIC_EXPORT_INTERVAL
// milliseconds (60000 by default, as the SDKs) and at the end. Counts what
// it sent for the end line.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "output/otlp.h"
#include "output/otlp_export.h"
#include "output/otlp_metrics.h"
#include "output/output_file.h"
#include "util/result.h"

namespace mysqltrace::output {

class OtlpChannel {
  public:
    // `file`: where --format otlp writes (null: no file); `url`: --otlp
    // ("": no export), with at most `queue` batches waiting.
    static Result<std::unique_ptr<OtlpChannel>> open(OutputFile *file, const std::string &url,
                                                     size_t queue);
    // One ExportTraceServiceRequest of `spans` spans out; `request` is
    // consumed.
    void send(std::string &request, size_t spans);
    // The exporter stopped (waiting at most `grace` for the collector); what
    // was written, sent, dropped and failed, for the end line.
    std::string finish(std::chrono::milliseconds grace);
    const std::string &endpoint() const;
    uint64_t spans() const { return spans_total_; }
    // The histograms (null without a collector), the metrics' endpoint and
    // export interval.
    OtlpMetrics *metrics() { return metrics_.get(); }
    const std::string &metrics_endpoint() const;
    std::chrono::milliseconds metrics_interval() const { return interval_; }
    // The metrics out when their interval is over.
    void tick();

  private:
    OtlpChannel() = default;
    void export_metrics();

    OutputFile *file_ = nullptr;
    std::unique_ptr<OtlpExporter> exporter_;
    uint64_t spans_total_ = 0;
    std::unique_ptr<OtlpMetrics> metrics_;
    std::unique_ptr<OtlpExporter> metrics_exporter_;
    std::chrono::milliseconds interval_{60000};
    std::chrono::steady_clock::time_point last_export_;
    uint64_t metric_exports_ = 0;
    std::string metrics_request_;
};

// What a trace with a collector says when it starts: "mysqltrace:
// exporting spans to URL/v1/traces (OTLP/HTTP JSON)" and the metrics' line.
std::string otlp_export_lines(const OtlpChannel &c);

// The host's name (host.name), "" when unknown.
std::string otlp_host_name();

// The file name of process `pid`'s executable (process.executable.name;
// "" when unknown, a deleted file's without " (deleted)").
std::string process_executable(uint32_t pid);

// The resource of a traced server's spans: `db_system` ("mysql" or
// "mariadb") as db.system.name and as service.name (the spans describe the
// server), its process, this host, `port` (a TCP port it listens on, 0:
// none) and this tracer's version.
OtlpResource server_resource(uint32_t pid, const std::string &db_system, uint16_t port);

}  // namespace mysqltrace::output
