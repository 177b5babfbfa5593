// SPDX-License-Identifier: GPL-2.0-only
// Running totals of a server's statements by class, as
// events_statements_summary_by_digest keeps them (schema, digest text,
// and here also the account): calls, errors, latency (a Prometheus
// histogram and percentiles), rows, where the time went by stage (sampled
// stages) and the class's last statements. The agent's /metrics and
// `mysqltrace top` read them; nothing here is ever reset, so every count is
// a Prometheus counter.
//
// Memory is bounded: the first `max_classes` classes seen have totals of
// their own, every later one is added to other() (a class stays where it
// was first put, so no count ever moves from one series to another).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "output/digest_summary.h"
#include "server/statement.h"
#include "server/text_classes.h"

namespace mysqltrace::output {

// The upper bounds of the latency histogram's buckets, seconds (Prometheus
// `le`), a last +Inf bucket implied.
inline constexpr std::array<double, 16> kLatencyBounds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};

struct RecentStatement {
    uint64_t end_ns = 0;  // CLOCK_MONOTONIC
    uint64_t duration_ns = 0;
    uint64_t thread_id = 0;
    uint64_t rows_sent = 0, rows_examined = 0;
    uint32_t error = 0;
    std::string text;  // redacted as in every output, cut to kRecentText bytes
};

struct StatementClass {
    std::string event_name;  // statement/sql/select, statement/com/Ping ...
    std::string digest;      // digest text ("" for other())
    std::string schema, user;
    uint64_t calls = 0, errors = 0;
    uint64_t time_ns = 0, max_ns = 0, lock_ns = 0;
    // buckets[i]: statements of at most kLatencyBounds[i] seconds and more
    // than the bound before (not cumulative); the last: above every bound.
    std::array<uint64_t, kLatencyBounds.size() + 1> buckets{};
    LogHistogram latency;
    uint64_t rows_sent = 0, rows_examined = 0, rows_affected = 0;
    // Sampled stages: time by stage name (on-CPU samples times the period,
    // plus off-CPU time), nanoseconds.
    std::unordered_map<std::string, uint64_t> stage_ns;
    uint64_t first_ns = 0, last_ns = 0;  // ends of the first and last statement
    std::deque<RecentStatement> recent;  // newest last, at most kRecent
};

class StatementStats {
  public:
    static constexpr size_t kRecent = 16;
    static constexpr size_t kRecentText = 1024;

    // stage_name(addr): a sampled stage's name from its server address.
    StatementStats(size_t max_classes, std::function<std::string(uint64_t)> stage_name);
    // Another tracer of the same server names the stages from now on.
    void set_stage_name(std::function<std::string(uint64_t)> stage_name) {
        stage_name_ = std::move(stage_name);
    }

    // One statement, run by account `user` ("" when not known).
    void add(const server::Statement &st, std::string_view user);

    // The classes with totals of their own, in the order first seen.
    const std::vector<std::unique_ptr<StatementClass>> &classes() const { return classes_; }
    // Every statement of a class seen after the cap was reached.
    const StatementClass &other() const { return other_; }
    size_t max_classes() const { return max_classes_; }
    uint64_t statements() const { return statements_; }
    uint64_t errors() const { return errors_; }

  private:
    void fold(StatementClass &c, const server::Statement &st, std::string_view user);

    size_t max_classes_;
    std::function<std::string(uint64_t)> stage_name_;
    std::vector<std::unique_ptr<StatementClass>> classes_;
    std::unordered_map<std::string, StatementClass *> by_key_;
    std::unordered_map<uint64_t, std::string> names_;  // stage names by address
    StatementClass other_;
    uint64_t statements_ = 0, errors_ = 0;
    std::string key_;
    // Event name and digest per command and text (nothing else kept there).
    struct NoExtra {};
    server::TextClasses<NoExtra> text_classes_;
};

}  // namespace mysqltrace::output
