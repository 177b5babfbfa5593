// SPDX-License-Identifier: GPL-2.0-only
// `client --format otlp` / `--otlp URL` and the same on `run`: one CLIENT
// span per command of a traced connection, batched, written as JSON lines
// to the trace's output and/or posted to a collector (OtlpChannel).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "output/otlp_channel.h"
#include "client/connection_table.h"
#include "output/otlp_client.h"
#include "util/result.h"

namespace mysqltrace::cli {

class ClientOtlpSink {
  public:
    static Result<std::unique_ptr<ClientOtlpSink>> open(output::OutputFile *file,
                                                        const std::string &url, size_t queue);
    void connection(const client::ConnectionInfo &c);
    void event(const protocol::ProtocolEvent &ev);
    // The command's span, into the batch; a full batch goes out.
    void summary(const protocol::CommandSummary &sum);
    // A traced process, described now (`executable` "": as /proc says): its
    // commands' spans often come after it has exited.
    void process_seen(uint32_t pid, const std::string &executable = "");
    void process_forked(uint32_t parent, uint32_t child);
    void process_exit(uint32_t pid);
    // The flush tick: a batch older than a second goes out.
    void tick();
    std::string finish(std::chrono::milliseconds grace);
    const std::string &endpoint() const { return channel_->endpoint(); }
    const std::shared_ptr<output::OtlpChannel> &channel() const { return channel_; }

    // Each span written, with the command it describes and its connection
    // (the server side's join, cli/joined_trace.h).
    std::function<void(const protocol::CommandSummary &, const output::ClientConnection &,
                       const output::SpanContext &)>
        on_span;

  private:
    ClientOtlpSink(std::string host, std::string version) : spans_(host, version) {}
    void flush_batch();

    output::OtlpClientSpans spans_;
    std::shared_ptr<output::OtlpChannel> channel_;
    std::unordered_map<uint64_t, output::ClientConnectionState> conns_;
    std::unordered_map<uint32_t, output::ClientProcess> procs_;
    std::string request_;
    std::chrono::steady_clock::time_point batch_started_;
};

}  // namespace mysqltrace::cli
