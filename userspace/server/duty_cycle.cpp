// SPDX-License-Identifier: GPL-2.0-only
#include "server/duty_cycle.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>

namespace mysqltrace::server {

uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

DutyCycle::DutyCycle(const DutyOptions &opts, std::function<Result<void>(bool)> set_probes,
                     std::function<uint64_t()> drops, QueryId query_id)
    : opts_(opts),
      set_probes_(std::move(set_probes)),
      drops_(std::move(drops)),
      query_id_(std::move(query_id)) {
    opts_.fraction = std::clamp(opts_.fraction, 0.0, 1.0);
    if (query_id_) {
        qid_start_ = query_id_();
        qid_failed_ = !qid_start_;
    }
    start_ns_ = monotonic_ns();
    if (opts_.fraction >= 1.0) {
        // Attached by the caller already: one window from now to stop().
        DutyWindow w;
        w.attach_begin_ns = w.attach_end_ns = start_ns_;
        w.drops = drops_();  // the count before, made a delta at stop()
        windows_.push_back(w);
        return;
    }
    thread_ = std::thread([this] { run(); });
}

DutyCycle::~DutyCycle() {
    stop();
}

bool DutyCycle::sleep_until(uint64_t t) {
    std::unique_lock lock(mu_);
    const auto when = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t));
    cv_.wait_until(lock, when, [&] { return stopping_; });
    return !stopping_;
}

void DutyCycle::run() {
    std::mt19937_64 rng(opts_.seed ? opts_.seed : start_ns_);
    const auto period = opts_.period_ns;
    const auto on = static_cast<uint64_t>(static_cast<double>(period) * opts_.fraction);
    std::uniform_int_distribution<uint64_t> phase(0, period - on);
    for (uint64_t k = 0;; k++) {
        const uint64_t begin = start_ns_ + k * period + phase(rng);
        if (!sleep_until(begin)) {
            return;
        }
        DutyWindow w;
        w.attach_begin_ns = monotonic_ns();
        {
            std::lock_guard lock(mu_);
            windows_.push_back(w);
        }
        const uint64_t drops_before = drops_();
        auto r = set_probes_(true);
        const uint64_t attached = monotonic_ns();
        const auto qid_on = query_id_ ? query_id_() : std::nullopt;
        {
            std::lock_guard lock(mu_);
            windows_.back().attach_end_ns = attached;
            windows_.back().qid_on = qid_on.value_or(0);
            qid_failed_ = qid_failed_ || (query_id_ && !qid_on);
            if (!r) {
                failure_ = r.error();
                windows_.back().detach_begin_ns = windows_.back().detach_end_ns = attached;
                return;
            }
        }
        sleep_until(begin + on);  // on stop(), the window closes now
        {
            // Before the call: a record made in it must not count.
            const auto qid_off = query_id_ ? query_id_() : std::nullopt;
            std::lock_guard lock(mu_);
            windows_.back().detach_begin_ns = monotonic_ns();
            windows_.back().qid_off = qid_off.value_or(0);
            windows_.back().has_qid = qid_on && qid_off;
            qid_failed_ = qid_failed_ || (query_id_ && !qid_off);
        }
        auto d = set_probes_(false);
        const uint64_t detached = monotonic_ns();
        const uint64_t drops = drops_() - drops_before;
        std::lock_guard lock(mu_);
        auto &last = windows_.back();
        last.detach_end_ns = detached;
        last.drops = drops;
        if (!d) {
            failure_ = d.error();
            return;
        }
        if (stopping_) {
            return;
        }
    }
}

void DutyCycle::stop() {
    {
        std::lock_guard lock(mu_);
        if (end_ns_ != 0) {
            return;
        }
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
    const auto qid_end = query_id_ ? query_id_() : std::nullopt;
    std::lock_guard lock(mu_);
    end_ns_ = monotonic_ns();
    qid_end_ = qid_end;
    qid_failed_ = qid_failed_ || (query_id_ && !qid_end);
    if (!windows_.empty() && !windows_.back().closed()) {  // fraction 1
        auto &w = windows_.back();
        w.detach_begin_ns = w.detach_end_ns = end_ns_;
        w.drops = drops_() - w.drops;
    }
}

uint64_t DutyCycle::end_ns() const {
    std::lock_guard lock(mu_);
    return end_ns_ ? end_ns_ : monotonic_ns();
}

long DutyCycle::window_of(uint64_t t) const {
    std::lock_guard lock(mu_);
    auto it =
        std::upper_bound(windows_.begin(), windows_.end(), t,
                         [](uint64_t v, const DutyWindow &w) { return v < w.attach_begin_ns; });
    if (it == windows_.begin()) {
        return -1;
    }
    --it;
    // Only between the attach call's end and the detach call's start, when
    // the probe is sure to be in (on_ns()).
    if (it->attach_end_ns == 0 || t < it->attach_end_ns ||
        (it->detach_begin_ns != 0 && t > it->detach_begin_ns)) {
        return -1;
    }
    return it - windows_.begin();
}

std::optional<uint64_t> DutyCycle::query_id_start() const {
    std::lock_guard lock(mu_);
    return qid_failed_ ? std::nullopt : qid_start_;
}

std::optional<uint64_t> DutyCycle::query_id_end() const {
    {
        std::lock_guard lock(mu_);
        if (qid_failed_ || !query_id_) {
            return std::nullopt;
        }
        if (end_ns_ != 0) {
            return qid_end_;
        }
    }
    auto now = query_id_();
    std::lock_guard lock(mu_);
    qid_failed_ = qid_failed_ || !now;
    return now;
}

std::vector<DutyWindow> DutyCycle::windows() const {
    std::lock_guard lock(mu_);
    return windows_;
}

std::optional<Error> DutyCycle::failure() const {
    std::lock_guard lock(mu_);
    return failure_;
}

}  // namespace mysqltrace::server
