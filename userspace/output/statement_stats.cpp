// SPDX-License-Identifier: GPL-2.0-only
#include "output/statement_stats.h"

#include <algorithm>

#include "output/server_render.h"

namespace mysqltrace::output {

namespace {
const std::string kNoDigest;
}  // namespace

StatementStats::StatementStats(size_t max_classes, std::function<std::string(uint64_t)> stage_name)
    : max_classes_(max_classes), stage_name_(std::move(stage_name)) {
    other_.event_name = "other";
}

void StatementStats::add(const server::Statement &st, std::string_view user) {
    statements_++;
    errors_ += st.failed() ? 1 : 0;
    const bool text = ServerRenderer::has_text(st);
    auto &tc = text_classes_.of(st);
    const std::string &event = tc.event_name;
    const std::string &digest = text ? tc.digest(st) : kNoDigest;
    key_.clear();
    key_.append(st.db).push_back('\x1f');
    key_.append(user).push_back('\x1f');
    key_.append(event).push_back('\x1f');
    key_.append(digest);
    auto it = by_key_.find(key_);
    StatementClass *c = nullptr;
    if (it != by_key_.end()) {
        c = it->second;
    } else if (classes_.size() < max_classes_) {
        auto owned = std::make_unique<StatementClass>();
        owned->event_name = event;
        owned->digest = digest;
        owned->schema = st.db;
        owned->user = user;
        c = owned.get();
        classes_.push_back(std::move(owned));
        by_key_.emplace(key_, c);
    } else {
        c = &other_;
    }
    fold(*c, st, user);
}

void StatementStats::fold(StatementClass &c, const server::Statement &st, std::string_view) {
    const uint64_t ns = st.end_ns > st.start_ns ? st.end_ns - st.start_ns : 0;
    c.calls++;
    c.errors += st.failed() ? 1 : 0;
    c.time_ns += ns;
    c.max_ns = std::max(c.max_ns, ns);
    c.lock_ns += st.lock_ns;
    const double s = static_cast<double>(ns) / 1e9;
    size_t b = 0;
    while (b < kLatencyBounds.size() && s > kLatencyBounds[b]) {
        b++;
    }
    c.buckets[b]++;
    c.latency.add(ns);
    c.rows_sent += st.rows_sent;
    c.rows_examined += st.rows_examined;
    c.rows_affected += st.rows_affected;
    for (const auto &sample : st.samples) {
        auto name = names_.find(sample.stage);
        if (name == names_.end()) {
            name = names_.emplace(sample.stage, stage_name_ ? stage_name_(sample.stage) : "").first;
        }
        if (name->second.empty()) {
            continue;
        }
        c.stage_ns[name->second] +=
            uint64_t{sample.on_cpu} * st.sample_period_us * 1000 + sample.off_cpu_ns;
    }
    if (c.first_ns == 0) {
        c.first_ns = st.end_ns;
    }
    c.last_ns = st.end_ns;
    RecentStatement r;
    r.end_ns = st.end_ns;
    r.duration_ns = ns;
    r.thread_id = st.thread_id;
    r.rows_sent = st.rows_sent;
    r.rows_examined = st.rows_examined;
    r.error = st.failed() ? st.error : 0;
    r.text = st.text.substr(0, kRecentText);
    c.recent.push_back(std::move(r));
    if (c.recent.size() > kRecent) {
        c.recent.pop_front();
    }
}

}  // namespace mysqltrace::output
