// SPDX-License-Identifier: GPL-2.0-only
// Server statements as OTLP spans (`server --format otlp` / `--otlp URL`,
// `client --server-pid`, the agent's `otlp` key): batched, written as JSON
// lines to a trace's output and/or posted to a collector (OtlpChannel).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "output/otlp.h"
#include "output/otlp_channel.h"
#include "output/output_file.h"
#include "output/server_render.h"
#include "util/result.h"

namespace mysqltrace::output {

class OtlpSink {
  public:
    // `file`: where --format otlp writes (null: no file); `url`: --otlp
    // ("": no export), with at most `queue` batches waiting.
    static Result<std::unique_ptr<OtlpSink>> open(OtlpResource resource, OutputFile *file,
                                                  const std::string &url, size_t queue);
    // The same, into a channel other spans go to as well.
    static std::unique_ptr<OtlpSink> open(OtlpResource resource,
                                          std::shared_ptr<OtlpChannel> channel);
    // The statement's spans, into the batch; a full batch goes out.
    // `client`: the client command's span this statement served (a trace
    // of both sides), else null.
    void statement(const server::Statement &st, ServerRenderer &render,
                   const std::vector<NamedWait> &waits, const TraceParent *client = nullptr);
    // The flush tick: a batch older than a second goes out.
    void tick();
    // The batch out now (the channel stays open).
    void flush() { flush_batch(); }
    // The last batch out, the exporter stopped (waiting at most `grace` for
    // the collector); what was sent, dropped and failed, for the end line.
    std::string finish(std::chrono::milliseconds grace);
    const std::string &endpoint() const;
    const OtlpChannel &channel() const { return *channel_; }

  private:
    OtlpSink(OtlpResource r) : spans_(std::move(r)) {}
    void flush_batch();

    OtlpSpans spans_;
    std::shared_ptr<OtlpChannel> channel_;
    std::string request_;
    std::vector<OtlpStage> stages_;
    std::vector<OtlpSampledStage> sampled_;
    std::chrono::steady_clock::time_point batch_started_;
};

}  // namespace mysqltrace::output
