// SPDX-License-Identifier: GPL-2.0-only
// Where OTLP span batches go, for every command that writes them: as JSON
// lines to the trace's output (--format otlp) and/or to a collector
// (--otlp URL) from the exporter's thread. Counts what it sent for the end
// line.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "output/otlp_export.h"
#include "output/output_file.h"
#include "util/result.h"

namespace mysqltrace::cli {

class OtlpChannel {
  public:
    // `file`: where --format otlp writes (null: no file); `url`: --otlp
    // ("": no export), with at most `queue` batches waiting.
    static Result<std::unique_ptr<OtlpChannel>> open(output::OutputFile *file,
                                                     const std::string &url, size_t queue);
    // One ExportTraceServiceRequest of `spans` spans out; `request` is
    // consumed.
    void send(std::string &request, size_t spans);
    // The exporter stopped (waiting at most `grace` for the collector); what
    // was written, sent, dropped and failed, for the end line.
    std::string finish(std::chrono::milliseconds grace);
    const std::string &endpoint() const;
    uint64_t spans() const { return spans_total_; }

  private:
    OtlpChannel() = default;
    output::OutputFile *file_ = nullptr;
    std::unique_ptr<output::OtlpExporter> exporter_;
    uint64_t spans_total_ = 0;
};

// The host's name (host.name), "" when unknown.
std::string otlp_host_name();

}  // namespace mysqltrace::cli
