// SPDX-License-Identifier: GPL-2.0-only
// `server --format otlp` and `server --otlp URL`: statements as OTLP spans,
// batched, written as JSON lines to the trace's output and/or posted to a
// collector from a thread of their own.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "output/otlp.h"
#include "cli/otlp_channel.h"
#include "output/output_file.h"
#include "output/server_render.h"
#include "server/server_target.h"
#include "util/result.h"

namespace mysqltrace::cli {

class OtlpSink {
  public:
    // `file`: where --format otlp writes (null: no file); `url`: --otlp
    // ("": no export), with at most `queue` batches waiting.
    static Result<std::unique_ptr<OtlpSink>> open(const server::ServerTarget &target, pid_t pid,
                                                  output::OutputFile *file, const std::string &url,
                                                  size_t queue);
    // The same, into a channel the client's spans go to as well.
    static std::unique_ptr<OtlpSink> open(const server::ServerTarget &target, pid_t pid,
                                          std::shared_ptr<OtlpChannel> channel);
    // The statement's spans, into the batch; a full batch goes out.
    // `client`: the client command's span this statement served (a trace
    // of both sides), else null.
    void statement(const server::Statement &st, output::ServerRenderer &render,
                   const std::vector<output::NamedWait> &waits,
                   const output::TraceParent *client = nullptr);
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
    OtlpSink(output::OtlpResource r) : spans_(std::move(r)) {}
    void flush_batch();

    output::OtlpSpans spans_;
    std::shared_ptr<OtlpChannel> channel_;
    std::string request_;
    std::vector<output::OtlpStage> stages_;
    std::vector<output::OtlpSampledStage> sampled_;
    std::chrono::steady_clock::time_point batch_started_;
};

}  // namespace mysqltrace::cli
