// SPDX-License-Identifier: GPL-2.0-only
// --duty: the statement probe attached for a fraction of the time, in one
// window per period at a random phase inside it (a workload that repeats
// with the period is not seen at the same phase each time). A trap per
// statement costs ~1 us of a ~15 us point select (docs/PERFORMANCE.md), so
// a probe left on can never cost under ~8%; one on 10% of the time costs a
// tenth of that. Each window keeps the times around its attach and detach
// calls as they happened (not the nominal ones) and the records the rings
// lost while it was open: the estimates scale by the measured on-time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "util/result.h"

namespace mysqltrace::server {

struct DutyWindow {
    // CLOCK_MONOTONIC (bpf_ktime_get_ns()'s clock), read before and after
    // the attach and the detach call. detach_end_ns 0: still open.
    uint64_t attach_begin_ns = 0, attach_end_ns = 0;
    uint64_t detach_begin_ns = 0, detach_end_ns = 0;
    uint64_t drops = 0;  // ring records lost while it was open
    // The server's query id counter (server/query_counter.h) read right
    // after the attach call returned and right before the detach call:
    // the statements the server ran in on_ns(). has_qid false: not read.
    uint64_t qid_on = 0, qid_off = 0;
    bool has_qid = false;
    uint64_t qids() const { return has_qid && qid_off > qid_on ? qid_off - qid_on : 0; }
    bool closed() const { return detach_end_ns != 0; }
    // From the end of the attach call to the start of the detach call:
    // the probe is in for all of it, and only the records made in it count
    // (DutyCycle::window_of). The kernel may write the breakpoint some time
    // before an attach call returns and remove it some time into a detach
    // call: records from those edges are left out, never scaled.
    uint64_t on_ns() const {
        return detach_begin_ns > attach_end_ns ? detach_begin_ns - attach_end_ns : 0;
    }
};

struct DutyOptions {
    double fraction = 1;  // of each period the probe is attached, (0, 1]
    uint64_t period_ns = 1'000'000'000;
    uint64_t seed = 0;  // 0: from the clock
};

class DutyCycle {
  public:
    // set_probes(false) takes the probes out, set_probes(true) puts them
    // back; the caller has them out when this starts, or with fraction 1
    // in (one window, never switched). drops(): the rings' drop counter now.
    // query_id(): the server's query id counter now, nullopt when it cannot
    // be read (an empty function: not read at all); read at the start, at
    // each window's edges and at stop().
    using QueryId = std::function<std::optional<uint64_t>()>;
    DutyCycle(const DutyOptions &opts, std::function<Result<void>(bool)> set_probes,
              std::function<uint64_t()> drops, QueryId query_id = {});
    ~DutyCycle();
    DutyCycle(const DutyCycle &) = delete;
    DutyCycle &operator=(const DutyCycle &) = delete;

    // Ends the cycle; an open window is closed (the probe stays out after).
    void stop();
    uint64_t start_ns() const { return start_ns_; }
    // When stop() ended the cycle, or now while it runs.
    uint64_t end_ns() const;
    // The window whose on-time (DutyWindow::on_ns) holds a probe firing at
    // `t`, or -1 (before the first window, between windows, or in an attach
    // or detach call).
    long window_of(uint64_t t) const;
    std::vector<DutyWindow> windows() const;
    // The query id counter at the start and at stop() (or now while the
    // cycle runs); nullopt when any read of it failed.
    std::optional<uint64_t> query_id_start() const;
    std::optional<uint64_t> query_id_end() const;
    // The first attach or detach that failed (the cycle then stopped).
    std::optional<Error> failure() const;

  private:
    void run();
    // Waits until `t` or stop(); false on stop().
    bool sleep_until(uint64_t t);

    DutyOptions opts_;
    std::function<Result<void>(bool)> set_probes_;
    std::function<uint64_t()> drops_;
    QueryId query_id_;
    uint64_t start_ns_ = 0, end_ns_ = 0;
    std::optional<uint64_t> qid_start_, qid_end_;
    mutable bool qid_failed_ = false;  // a read failed: the counter is not used
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool stopping_ = false;
    std::vector<DutyWindow> windows_;
    std::optional<Error> failure_;
    std::thread thread_;
};

uint64_t monotonic_ns();

}  // namespace mysqltrace::server
