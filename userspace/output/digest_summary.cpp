// SPDX-License-Identifier: GPL-2.0-only
#include "output/digest_summary.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

#include "output/json_writer.h"
#include "output/units.h"

namespace mysqltrace::output {

namespace {

constexpr int kSteps = 16;  // buckets per octave

size_t bucket_of(uint64_t ns) {
    if (ns < 2) {
        return 0;
    }
    return static_cast<size_t>(std::log2(static_cast<double>(ns)) * kSteps);
}

double per_statement(uint64_t total, uint64_t n) {
    return n ? static_cast<double>(total) / static_cast<double>(n) : 0;
}

std::string fixed(double v, int decimals) {
    char buf[48];
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
    return buf;
}

// 12 -> "12", 12345.6 -> "12346".
std::string count_text(double v) {
    return fixed(v, 0);
}

}  // namespace

void LogHistogram::add(uint64_t ns) {
    const size_t b = bucket_of(ns);
    if (b >= buckets_.size()) {
        buckets_.resize(b + 1);
    }
    buckets_[b]++;
    count_++;
}

uint64_t LogHistogram::quantile(double q) const {
    if (count_ == 0) {
        return 0;
    }
    // The smallest value with at least q of the values at or below it.
    const auto rank =
        std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
    uint64_t seen = 0;
    for (size_t b = 0; b < buckets_.size(); b++) {
        seen += buckets_[b];
        if (seen >= rank) {
            return static_cast<uint64_t>(std::exp2((static_cast<double>(b) + 0.5) / kSteps));
        }
    }
    return 0;
}

WindowReport report_windows(const std::vector<server::DutyWindow> &windows, uint64_t start_ns,
                            uint64_t end_ns, uint64_t settled_ns, bool always_on, size_t *complete,
                            std::optional<uint64_t> qid_start, std::optional<uint64_t> qid_end) {
    WindowReport r;
    size_t n = 0;
    while (n < windows.size() && windows[n].closed() && windows[n].detach_end_ns <= settled_ns) {
        n++;
    }
    *complete = n;
    for (size_t i = 0; i < n; i++) {
        const auto &w = windows[i];
        r.set.add(static_cast<double>(w.on_ns()) / 1e9);
        if (w.drops) {
            r.drop_windows++;
            r.drops += w.drops;
        }
        if (!always_on) {
            const uint64_t a = w.attach_end_ns - w.attach_begin_ns;
            const uint64_t d = w.detach_end_ns - w.detach_begin_ns;
            r.attach_ns_sum += a;
            r.detach_ns_sum += d;
            r.set.swap_s += static_cast<double>(a + d) / 1e9;
            r.attach_ns_max = std::max(r.attach_ns_max, a);
            r.detach_ns_max = std::max(r.detach_ns_max, d);
            r.switches++;
        }
    }
    // The time the complete windows stand for: to the end of the last one's
    // period is not known (its phase was random), so to `end_ns` when every
    // window is complete, else to the start of the first incomplete one.
    const uint64_t until = n == windows.size() ? end_ns : windows[n].attach_begin_ns;
    r.set.elapsed_s = until > start_ns ? static_cast<double>(until - start_ns) / 1e9 : 0;
    r.set.always_on = always_on;
    if (always_on) {
        return r;
    }
    // The same span in query ids: to the first incomplete window's attach
    // (the id read when that call returned) or to `qid_end`.
    std::optional<uint64_t> q_until = qid_end;
    if (n < windows.size()) {
        q_until = windows[n].attach_end_ns != 0 && windows[n].qid_on != 0
                      ? std::optional<uint64_t>(windows[n].qid_on)
                      : std::nullopt;
    }
    bool all_read = qid_start && q_until && *q_until >= *qid_start;
    for (size_t i = 0; i < n && all_read; i++) {
        all_read =
            windows[i].has_qid && windows[i].qid_on >= *qid_start && windows[i].qid_off <= *q_until;
    }
    if (all_read) {
        r.set.by_query_id = true;
        r.set.q_total = static_cast<double>(*q_until - *qid_start);
        for (size_t i = 0; i < n; i++) {
            r.set.add_qids(static_cast<double>(windows[i].qids()));
        }
    } else {
        r.no_query_id = qid_start ? "the query id counter was not read at every window's edges"
                                  : "the query id counter could not be read";
    }
    return r;
}

void DigestSummary::add(const server::Statement &st, size_t window) {
    auto &tc = text_classes_.of(st);
    if (tc.extra == nullptr) {
        const std::string &digest = tc.digest(st);
        tc.extra = &classes_[tc.event_name + "\x1f" + digest];
        if (tc.extra->event_name.empty()) {
            tc.extra->event_name = tc.event_name;
            tc.extra->digest = digest;
        }
    }
    DigestTotals *d = tc.extra;
    d->count.add(window);
    d->seen++;
    if (st.failed()) {
        d->errors.add(window);
        d->failed++;
    }
    const uint64_t ns = st.end_ns > st.start_ns ? st.end_ns - st.start_ns : 0;
    d->latency.add(ns);
    d->latency_sum_ns += static_cast<double>(ns);
    d->rows_sent += st.rows_sent;
    d->rows_examined += st.rows_examined;
    d->rows_affected += st.rows_affected;
    if (st.sample_period_us) {
        d->period_us = st.sample_period_us;
        d->samples_lost += st.samples_lost;
        for (const auto &s : st.samples) {
            auto &t = d->stages[s.stage];
            t.on_cpu += s.on_cpu;
            t.off_cpu_ns += s.off_cpu_ns;
        }
    }
}

void DigestSummary::settle(size_t complete, const std::vector<server::DutyWindow> &windows) {
    auto on_s = [&](size_t i) {
        return i < windows.size() ? static_cast<double>(windows[i].on_ns()) / 1e9 : 0.0;
    };
    auto qids = [&](size_t i) {
        return i < windows.size() ? static_cast<double>(windows[i].qids()) : 0.0;
    };
    for (auto &[key, d] : classes_) {
        d.count.settle(complete, on_s, qids);
        d.errors.settle(complete, on_s, qids);
    }
}

std::vector<const DigestTotals *> DigestSummary::by_count(const WindowReport &) const {
    std::vector<const DigestTotals *> order;
    for (const auto &[key, d] : classes_) {
        order.push_back(&d);
    }
    std::stable_sort(order.begin(), order.end(), [](const auto *a, const auto *b) {
        return a->count.folded().sum > b->count.folded().sum;
    });
    return order;
}

std::vector<std::pair<std::string, double>> DigestSummary::stage_shares(
    const DigestTotals &d) const {
    // On-CPU time from samples, off-CPU time measured at each switch.
    std::map<std::string, double> by_name;
    double total = 0;
    for (const auto &[addr, t] : d.stages) {
        auto it = names_.find(addr);
        if (it == names_.end()) {
            it = names_.emplace(addr, name_at_ ? name_at_(addr) : std::string()).first;
        }
        const double ns = static_cast<double>(t.on_cpu) * static_cast<double>(d.period_us) * 1e3 +
                          static_cast<double>(t.off_cpu_ns);
        by_name[it->second] += ns;
        total += ns;
    }
    std::vector<std::pair<std::string, double>> shares;
    for (const auto &[name, ns] : by_name) {
        shares.emplace_back(name, total > 0 ? ns / total : 0);
    }
    std::stable_sort(shares.begin(), shares.end(),
                     [](const auto &a, const auto &b) { return a.second > b.second; });
    if (shares.size() > 5) {
        shares.resize(5);
    }
    return shares;
}

std::string DigestSummary::text(const WindowReport &r) const {
    const auto &w = r.set;
    std::string out;
    if (w.always_on) {
        out += "# digest summary: EXACT counts, the probe was attached all of " +
               fixed(w.elapsed_s, 2) + " s\n";
    } else {
        out += "# digest summary: ESTIMATES. The probe was attached " +
               fixed(100 * w.fraction(), 2) + "% of " + fixed(w.elapsed_s, 2) + " s (" +
               std::to_string(w.n) +
               " windows, measured); +- is a 95% "
               "interval from the spread between windows (at least the steady-rate one).\n";
        if (w.by_query_id) {
            out += "# scaling: by query ids. The server took exactly " + count_text(w.q_total) +
                   " query ids in this time, " + count_text(w.q_on) +
                   " of them in the windows: each digest's share of the statements seen, times " +
                   count_text(w.q_total) + "\n";
        } else {
            out += "# scaling: by time (" + r.no_query_id +
                   "): counts are low when the server runs slower while the probe is in\n";
        }
        if (r.switches) {
            const std::string swap_note =
                w.by_query_id
                    ? "% of the time (its query ids are in the total)\n"
                    : "% of the time, counted at half the rate, +- half (in the bounds)\n";
            out += "# attach " + human_duration(r.attach_ns_sum / r.switches) + " mean, " +
                   human_duration(r.attach_ns_max) + " max; detach " +
                   human_duration(r.detach_ns_sum / r.switches) + " mean, " +
                   human_duration(r.detach_ns_max) +
                   " max: " + fixed(w.elapsed_s > 0 ? 100 * w.swap_s / w.elapsed_s : 0, 1) +
                   swap_note;
        }
        if (w.n > 0) {
            out += "# a digest not listed ran fewer than ~" + count_text(unseen_bound(w)) +
                   " times (95%, if at a steady rate)\n";
        }
    }
    if (r.drop_windows) {
        out += "# DROPS: " + std::to_string(r.drop_windows) + " windows lost " +
               std::to_string(r.drops) + " records: counts are low (--ring-kib)\n";
    }
    for (const DigestTotals *d : by_count(r)) {
        const Estimate e = estimate(d->count.folded(), w);
        if (!e.exact && w.n == 0) {
            continue;
        }
        out += "\n" + d->event_name + "  " + (d->digest.empty() ? "-" : d->digest) + "\n";
        out += "  count " + std::string(e.exact ? "" : "~") + count_text(e.count);
        if (!e.exact) {
            out += " +- " + count_text(e.bound) + (e.steady_bound ? " (steady-rate bound)" : "");
        }
        out += ", " + fixed(e.rate, 1) + "/s; " + std::to_string(d->seen) + " seen\n";
        out += "  latency mean " +
               human_duration(static_cast<uint64_t>(
                   d->latency_sum_ns / static_cast<double>(std::max<uint64_t>(1, d->seen)))) +
               ", p50 " + human_duration(d->latency.quantile(0.5)) + ", p95 " +
               human_duration(d->latency.quantile(0.95)) + ", p99 " +
               human_duration(d->latency.quantile(0.99)) + "\n";
        out += "  rows per statement: sent " + fixed(per_statement(d->rows_sent, d->seen), 2) +
               ", examined " + fixed(per_statement(d->rows_examined, d->seen), 2) + ", affected " +
               fixed(per_statement(d->rows_affected, d->seen), 2) + "\n";
        if (d->failed) {
            const Estimate f = estimate(d->errors.folded(), w);
            out += "  errors " + std::string(f.exact ? "" : "~") + count_text(f.count) +
                   (f.exact ? "" : " +- " + count_text(f.bound)) + " (" +
                   std::to_string(d->failed) + " seen)\n";
        }
        const auto shares = stage_shares(*d);
        if (!shares.empty()) {
            out += "  stages:";
            for (const auto &[name, share] : shares) {
                out += " " + name + " " + fixed(100 * share, 0) + "%";
            }
            out += "\n";
        }
    }
    return out;
}

std::string DigestSummary::json(const WindowReport &r, uint64_t pid) const {
    const auto &w = r.set;
    std::string out;
    JsonWriter j(out);
    j.begin_object();
    j.field("kind", "digest_summary");
    j.field("pid", pid);
    j.field("estimate", !w.always_on);
    j.field("confidence", 0.95);
    j.field("elapsed_s", w.elapsed_s);
    j.field("windows", static_cast<uint64_t>(w.n));
    j.field("on_s", w.on_s);
    j.field("on_fraction", w.always_on ? 1.0 : w.fraction());
    if (!w.always_on) {
        j.field("scaling", w.by_query_id ? "query_id" : "time");
        if (w.by_query_id) {
            j.field("query_ids", static_cast<uint64_t>(w.q_total));
            j.field("query_ids_on", static_cast<uint64_t>(w.q_on));
        } else {
            j.field("scaling_note", r.no_query_id);
        }
    }
    j.field("drop_windows", static_cast<uint64_t>(r.drop_windows));
    j.field("drops", r.drops);
    if (r.switches) {
        j.field("attach_ns_mean", r.attach_ns_sum / r.switches);
        j.field("attach_ns_max", r.attach_ns_max);
        j.field("detach_ns_mean", r.detach_ns_sum / r.switches);
        j.field("detach_ns_max", r.detach_ns_max);
        j.field("swap_s", w.swap_s);
    }
    j.field("unseen_max", std::round(unseen_bound(w)));
    j.field("digests", static_cast<uint64_t>(classes_.size()));
    j.end_object();
    out += '\n';
    for (const DigestTotals *d : by_count(r)) {
        const Estimate e = estimate(d->count.folded(), w);
        const Estimate f = estimate(d->errors.folded(), w);
        JsonWriter k(out);
        k.begin_object();
        k.field("kind", "digest");
        k.field("event_name", d->event_name);
        k.string_or_null("digest", d->digest);
        k.field("count", std::round(e.count));
        k.field("count_bound", std::round(e.bound));
        k.field("bound_from", e.exact ? "exact" : e.steady_bound ? "steady_rate" : "windows");
        k.field("swap_bound", std::round(e.swap_bound));
        k.field("rate", e.rate);
        k.field("seen", d->seen);
        k.field("errors", std::round(f.count));
        k.field("errors_bound", std::round(f.bound));
        k.field("errors_seen", d->failed);
        k.key("latency_ns");
        k.begin_object();
        k.field("mean", static_cast<uint64_t>(d->latency_sum_ns /
                                              static_cast<double>(std::max<uint64_t>(1, d->seen))));
        k.field("p50", d->latency.quantile(0.5));
        k.field("p95", d->latency.quantile(0.95));
        k.field("p99", d->latency.quantile(0.99));
        k.end_object();
        k.field("rows_sent_avg", per_statement(d->rows_sent, d->seen));
        k.field("rows_examined_avg", per_statement(d->rows_examined, d->seen));
        k.field("rows_affected_avg", per_statement(d->rows_affected, d->seen));
        const auto shares = stage_shares(*d);
        if (!shares.empty()) {
            k.key("stages");
            k.begin_array();
            for (const auto &[name, share] : shares) {
                k.begin_object();
                k.field("name", name);
                k.field("share", share);
                k.end_object();
            }
            k.end_array();
            k.field("samples_lost", d->samples_lost);
        }
        k.end_object();
        out += '\n';
    }
    return out;
}

}  // namespace mysqltrace::output
