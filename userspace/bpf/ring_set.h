// SPDX-License-Identifier: GPL-2.0-only
// Consumer side of the per-CPU ring buffers declared in bpf/ring.bpf.h.
//
// RingSet creates one BPF ring buffer per possible CPU, plugs them into a
// loaded object's `mt_rings` array, drains all of them through one epoll set,
// and hands records to a sink in timestamp order: records wait in a reorder
// buffer (bpf/reorder.h) until they are older than the reorder window, so
// events from different CPUs (one connection's thread migrating between CPUs)
// come out in order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "bpf/handles.h"
#include "bpf/reorder.h"
#include "util/result.h"

struct bpf_object;
struct ring_buffer;

namespace mysqltrace::bpf {

struct RingOptions {
    // Bytes per CPU ring; rounded up to a power of two of at least a page.
    uint64_t bytes_per_cpu = 4u << 20;
    // Records younger than this stay in the reorder buffer.
    uint64_t reorder_window_ns = 50'000'000;
    // Records the buffer may hold before the oldest are released regardless of
    // age (bounded memory when a burst arrives faster than the window).
    size_t max_pending = 1u << 20;
};

struct RingStats {
    // From the BPF side, summed over CPUs.
    uint64_t produced = 0;       // records written into a ring
    uint64_t dropped = 0;        // records lost because a ring was full
    uint64_t dropped_bytes = 0;  // their size
    uint64_t busy_drops = 0;     // of `dropped`: no free scratch slot on the CPU
    std::vector<uint64_t> dropped_per_cpu;
    // From the consumer.
    uint64_t delivered = 0;  // records handed to the sink
    uint64_t malformed = 0;  // records whose header did not match their size
    uint64_t late = 0;       // records older than one already delivered
};

// Receives one whole record (header included). The span is only valid during
// the call.
using RecordSink = std::function<void(std::span<const uint8_t> record)>;

class RingSet {
  public:
    // `obj` must be loaded and declare the maps of bpf/ring.bpf.h.
    static Result<std::unique_ptr<RingSet>> create(bpf_object *obj, const RingOptions &opts,
                                                   RecordSink sink);
    ~RingSet();
    RingSet(const RingSet &) = delete;
    RingSet &operator=(const RingSet &) = delete;

    // Waits up to timeout_ms for a wakeup, drains every ring and delivers
    // what has aged past the reorder window. Returns the number of records read
    // from the rings; an interrupted wait (signal) returns 0.
    Result<int> poll(int timeout_ms);
    // Drains every ring and delivers everything still held, in order. Call at
    // the end of a trace.
    Result<void> flush();

    // The epoll fd that becomes readable when a ring has data, for callers
    // that wait on more than the rings (signals, target exit).
    int epoll_fd() const;
    int cpu_count() const { return static_cast<int>(rings_.size()); }
    RingStats stats() const;
    // The unread share (0 to 1) of the fullest ring now: how far the reader
    // is behind its producers. 0 where a ring's positions could not be mapped.
    double fill() const;
    // The higher of fill() now and the highest seen while poll() copied in
    // or delivered records since the last call: a reader long at work (or
    // kept off its CPU mid-drain) falls behind there, not at a wakeup.
    double take_fill() { return std::max(fill(), std::exchange(peak_fill_, 0.0)); }

  private:
    RingSet(RecordSink sink, const RingOptions &opts) : sink_(std::move(sink)), opts_(opts) {}
    static int on_record(void *ctx, void *data, size_t size);
    void accept(const uint8_t *data, size_t size);
    void release(uint64_t up_to_ts, bool all);

    RecordSink sink_;
    RingOptions opts_;
    std::vector<Fd> rings_;
    // Each ring's consumer and producer positions, mapped read-only (the
    // pages libbpf maps for itself; their layout is the kernel's ABI).
    struct Positions {
        const uint64_t *consumer = nullptr;
        const uint64_t *producer = nullptr;
    };
    static Positions map_positions(int fd);
    std::vector<Positions> positions_;
    uint64_t ring_bytes_ = 0;
    ring_buffer *rb_ = nullptr;
    int stats_fd_ = -1;
    std::unique_ptr<ReorderBuffer> reorder_;
    uint64_t delivered_ = 0;
    uint64_t malformed_ = 0;
    // Records delivered since the rings were last read. Delivering (decoding,
    // rendering) a large batch takes a while, hundreds of ms on CPUs the
    // traced programs saturate; the rings are read again every
    // kConsumeEvery records meanwhile, so that they do not fill behind it.
    static constexpr unsigned kConsumeEvery = 256;
    unsigned since_consume_ = 0;
    unsigned since_fill_ = 0;  // records copied in since fill() was last taken
    double peak_fill_ = 0;
};

// Sizes an object's scratch slots (maps `scratch`, if any, and
// `mt_scratch_busy`) for the possible CPUs. Call between open and load.
Result<void> size_scratch_slots(bpf_object *obj);

// The unread bytes of a ring at which its producers wake the reader (the
// objects' mt_wakeup_bytes, set between open and load): an eighth of the
// ring. A wakeup is an interrupt on the producer's CPU and a switch to the
// reader (~10 us on the project's VM); at 64 KiB, three-KiB statement
// records with exact stages woke it every twenty statements. An eighth
// leaves the reader seven eighths of the ring to wake up in.
uint64_t wakeup_bytes(const RingOptions &opts);

// CLOCK_MONOTONIC in ns: the clock bpf_ktime_get_ns() reads.
uint64_t monotonic_ns();

}  // namespace mysqltrace::bpf
