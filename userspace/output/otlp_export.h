// SPDX-License-Identifier: GPL-2.0-only
// OTLP/HTTP export of span batches (ExportTraceServiceRequest, JSON) from a
// thread of its own: the trace hands a batch to a bounded queue and goes on;
// a full queue drops the batch (its spans counted) instead of waiting, so a
// collector that is down or slow never stalls tracing. Connection errors,
// 429 and 502-504 are retried with backoff (Retry-After honoured up to a
// cap); other answers and a batch out of tries count as failed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "util/result.h"

namespace httplib {
class Client;
}

namespace mysqltrace::output {

struct OtlpExportOptions {
    size_t max_queued = 64;  // batches waiting to be sent
    unsigned tries = 4;      // sends of one batch before it counts as failed
    std::chrono::milliseconds first_backoff{500};
    std::chrono::milliseconds max_backoff{5000};  // also caps Retry-After
    std::chrono::milliseconds connect_timeout{2000};
    std::chrono::milliseconds io_timeout{5000};
    // Appended to the collector's base URL: the signal's OTLP/HTTP path.
    std::string signal_path = "/v1/traces";
};

struct OtlpExportStats {
    uint64_t sent = 0;     // spans the collector accepted (2xx)
    uint64_t dropped = 0;  // spans of batches the full queue refused
    uint64_t failed = 0;   // spans of batches refused, out of tries, or unsent at the end
    uint64_t retries = 0;  // sends repeated
    std::string last_error;
};

// The queue alone, for the tracer's side and its tests: a batch either
// goes in or is dropped and counted; never waits.
class BatchQueue {
  public:
    explicit BatchQueue(size_t max_batches) : max_(max_batches) {}
    struct Batch {
        std::string body;
        size_t spans = 0;
    };
    // False (and the spans counted as dropped) when the queue is full.
    bool push(std::string body, size_t spans);
    // Waits until a batch is there or close() was called, at most until
    // `deadline`; false when none came.
    bool pop(Batch *out, std::chrono::steady_clock::time_point deadline);
    void close();
    bool closed() const;
    // Spans dropped so far, spans still queued.
    uint64_t dropped() const;
    uint64_t queued_spans() const;
    // Waits up to `d` for close(); true when closed.
    bool wait_closed(std::chrono::milliseconds d);

  private:
    const size_t max_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Batch> q_;
    uint64_t dropped_ = 0;
    bool closed_ = false;
};

class OtlpExporter {
  public:
    // `url`: the collector's base URL, http:// or https://, with an optional
    // path prefix; opts.signal_path ("/v1/traces") is appended. Starts the
    // sending thread.
    static Result<std::unique_ptr<OtlpExporter>> start(const std::string &url,
                                                       const OtlpExportOptions &opts = {});
    ~OtlpExporter();
    OtlpExporter(const OtlpExporter &) = delete;
    OtlpExporter &operator=(const OtlpExporter &) = delete;

    // Queues a request body of `spans` spans; never blocks.
    void send(std::string body, size_t spans) { queue_.push(std::move(body), spans); }
    // Sends what is queued for at most `grace`, then stops the thread;
    // batches left count as failed.
    void stop(std::chrono::milliseconds grace);
    OtlpExportStats stats() const;
    const std::string &endpoint() const { return endpoint_; }

  private:
    OtlpExporter(const OtlpExportOptions &opts) : opts_(opts), queue_(opts.max_queued) {}
    void run();
    // Sends one batch with its retries; true when the collector took it.
    bool post(const BatchQueue::Batch &b);

    OtlpExportOptions opts_;
    std::string scheme_host_port_, path_, endpoint_;
    BatchQueue queue_;
    std::thread thread_;
    mutable std::mutex stats_mu_;
    OtlpExportStats stats_;
    // Set by stop() once the grace time is over: no more retries or waits.
    std::chrono::steady_clock::time_point give_up_at_ =
        std::chrono::steady_clock::time_point::max();
    // Guards give_up_at_, done_ and client_ (stop() may cut the running
    // request short from another thread).
    std::mutex stop_mu_;
    std::condition_variable stop_cv_;
    bool done_ = false;  // the thread has sent or failed every batch
    httplib::Client *client_ = nullptr;
};

}  // namespace mysqltrace::output
