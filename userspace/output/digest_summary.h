// SPDX-License-Identifier: GPL-2.0-only
// --format digests / digests-json: statements folded per digest (event name
// and digest text, as the profile's classes), counts estimated from the
// --duty windows (output/duty_estimate.h) with their 95% interval, latency
// percentiles, rows and stages from the statements the windows saw.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "output/duty_estimate.h"
#include "server/duty_cycle.h"
#include "server/statement.h"
#include "server/text_classes.h"

namespace mysqltrace::output {

// Durations in buckets of 1/16 octave: a percentile read from it is within
// ~2.2% of the value.
class LogHistogram {
  public:
    void add(uint64_t ns);
    uint64_t count() const { return count_; }
    // The value at quantile q (0..1): its bucket's geometric middle.
    uint64_t quantile(double q) const;

  private:
    std::vector<uint64_t> buckets_;
    uint64_t count_ = 0;
};

struct DigestTotals {
    std::string event_name, digest;
    WindowedCounter count, errors;
    uint64_t seen = 0, failed = 0;
    LogHistogram latency;
    double latency_sum_ns = 0;
    uint64_t rows_sent = 0, rows_examined = 0, rows_affected = 0;
    // Sampled stages: on-CPU samples and off-CPU time by stage name address.
    struct StageTime {
        uint64_t on_cpu = 0, off_cpu_ns = 0;
    };
    std::unordered_map<uint64_t, StageTime> stages;
    uint64_t period_us = 0, samples_lost = 0;
};

// What a summary says about the windows, besides the digests.
struct WindowReport {
    WindowSet set;
    size_t drop_windows = 0;  // windows in which the rings lost records
    uint64_t drops = 0;
    uint64_t attach_ns_sum = 0, attach_ns_max = 0, detach_ns_sum = 0, detach_ns_max = 0;
    size_t switches = 0;  // attach and detach calls measured
    // Query-id scaling (set.by_query_id): the exact number of query ids the
    // server took over the elapsed time is set.q_total. Otherwise, why not
    // ("" with the probe always on).
    std::string no_query_id;
};

// The complete windows of `windows` (closed before `settled_ns`) over the
// time from `start_ns` to `end_ns`; with the query id counter at the start
// and at `end_ns` (both read, and every complete window's edges read),
// scaled by query ids.
WindowReport report_windows(const std::vector<server::DutyWindow> &windows, uint64_t start_ns,
                            uint64_t end_ns, uint64_t settled_ns, bool always_on, size_t *complete,
                            std::optional<uint64_t> qid_start = std::nullopt,
                            std::optional<uint64_t> qid_end = std::nullopt);

class DigestSummary {
  public:
    // name_at(addr): a stage name from its server address.
    explicit DigestSummary(std::function<std::string(uint64_t)> name_at)
        : name_at_(std::move(name_at)) {}
    // A statement a window saw.
    void add(const server::Statement &st, size_t window);
    // Folds the counts of windows below `complete`.
    void settle(size_t complete, const std::vector<server::DutyWindow> &windows);
    // The summary: text, or JSON lines (one "digest_summary" line, then one
    // "digest" line per digest, most frequent first).
    std::string text(const WindowReport &r) const;
    std::string json(const WindowReport &r, uint64_t pid) const;
    size_t digests() const { return classes_.size(); }

  private:
    std::vector<const DigestTotals *> by_count(const WindowReport &r) const;
    std::vector<std::pair<std::string, double>> stage_shares(const DigestTotals &d) const;
    std::function<std::string(uint64_t)> name_at_;
    std::map<std::string, DigestTotals> classes_;  // by event name and digest
    server::TextClasses<DigestTotals *> text_classes_;
    mutable std::unordered_map<uint64_t, std::string> names_;
};

}  // namespace mysqltrace::output
