// SPDX-License-Identifier: GPL-2.0-only
// The --duty estimator (output/duty_estimate.h): scaling by the on-time, the
// 95% interval from the windows' spread and from steady arrivals, and what
// it does with no window, one window and a class seen in none; the window
// bookkeeping of report_windows() and the summary's JSON lines.
#include <array>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "output/digest_summary.h"
#include "output/duty_estimate.h"
#include "server/duty_cycle.h"

namespace mysqltrace::output {
namespace {

WindowedCount counts(const std::vector<std::pair<double, double>> &c_w) {
    WindowedCount c;
    for (auto [ci, wi] : c_w) {
        c.sum += ci;
        c.sum_sq += ci * ci;
        c.sum_cw += ci * wi;
    }
    return c;
}

TEST(DutyEstimate, ScalesByTheMeasuredOnTime) {
    WindowSet w;
    for (int i = 0; i < 10; i++) {
        w.add(0.2);
    }
    w.elapsed_s = 10;  // on 2 s of 10
    // 100 per window of 0.2 s, every window alike: 500/s.
    std::vector<std::pair<double, double>> cw(10, {100.0, 0.2});
    const Estimate e = estimate(counts(cw), w);
    EXPECT_DOUBLE_EQ(e.rate, 500);
    EXPECT_DOUBLE_EQ(e.count, 5000);
    EXPECT_FALSE(e.exact);
    // No spread between windows: the steady-rate (Poisson) term is the
    // floor, C (T - W) T / W^2 = 1000 * 8 * 10 / 4 = 20000.
    EXPECT_TRUE(e.steady_bound);
    EXPECT_NEAR(e.bound, 1.96 * std::sqrt(20000.0), 1e-9);
}

TEST(DutyEstimate, BurstyWindowsWidenTheBound) {
    WindowSet w;
    for (int i = 0; i < 10; i++) {
        w.add(0.2);
    }
    w.elapsed_s = 10;
    // The same 1000 statements, all in two windows.
    std::vector<std::pair<double, double>> cw(8, {0.0, 0.2});
    cw.push_back({500, 0.2});
    cw.push_back({500, 0.2});
    const Estimate e = estimate(counts(cw), w);
    EXPECT_DOUBLE_EQ(e.count, 5000);
    EXPECT_FALSE(e.steady_bound);
    // s^2 = (8 * 100^2 + 2 * 400^2) / 9; Var = T^2 (1 - f) s^2 / (n wbar^2).
    const double s2 = (8 * 100.0 * 100 + 2 * 400.0 * 400) / 9;
    const double var = 100 * 0.8 * s2 / (10 * 0.04);
    EXPECT_NEAR(e.bound, t975(9) * std::sqrt(var), 1e-6);
    EXPECT_GT(e.bound, 1.96 * std::sqrt(20000.0));
}

TEST(DutyEstimate, UnequalWindowsUseTheRatio) {
    WindowSet w;
    w.add(0.1);
    w.add(0.3);
    w.elapsed_s = 4;
    // 1000/s in both: 100 and 300.
    const Estimate e = estimate(counts({{100, 0.1}, {300, 0.3}}), w);
    EXPECT_DOUBLE_EQ(e.rate, 1000);
    EXPECT_DOUBLE_EQ(e.count, 4000);
    EXPECT_TRUE(e.steady_bound);  // the ratio fits both exactly: no spread
}

// Time inside attach and detach calls counts at half the window rate, and
// half of it goes into the bound as a systematic term.
TEST(DutyEstimate, SwapTimeIsHalfCountedAndBounded) {
    WindowSet w;
    for (int i = 0; i < 10; i++) {
        w.add(0.2);
    }
    w.elapsed_s = 11;
    w.swap_s = 1;  // 10 s outside swaps, as in ScalesByTheMeasuredOnTime
    std::vector<std::pair<double, double>> cw(10, {100.0, 0.2});
    const Estimate e = estimate(counts(cw), w);
    EXPECT_DOUBLE_EQ(e.rate, 500);
    EXPECT_DOUBLE_EQ(e.count, 5000 + 250);
    EXPECT_DOUBLE_EQ(e.swap_bound, 250);
    EXPECT_NEAR(e.bound, 1.96 * std::sqrt(20000.0) + 250, 1e-9);
}

TEST(DutyEstimate, NoWindowNoEstimate) {
    WindowSet w;
    w.elapsed_s = 3;
    const Estimate e = estimate(WindowedCount{}, w);
    EXPECT_EQ(e.count, 0);
    EXPECT_EQ(e.bound, 0);
    EXPECT_TRUE(std::isinf(unseen_bound(w)));
}

TEST(DutyEstimate, OneWindowHasOnlyTheSteadyBound) {
    WindowSet w;
    w.add(0.5);
    w.elapsed_s = 5;
    const Estimate e = estimate(counts({{50, 0.5}}), w);
    EXPECT_DOUBLE_EQ(e.count, 500);
    EXPECT_TRUE(e.steady_bound);
    EXPECT_NEAR(e.bound, 1.96 * std::sqrt(50 * 4.5 * 5 / 0.25), 1e-9);
}

TEST(DutyEstimate, ClassSeenInNoWindow) {
    WindowSet w;
    for (int i = 0; i < 4; i++) {
        w.add(0.25);
    }
    w.elapsed_s = 10;
    const Estimate e = estimate(WindowedCount{}, w);
    EXPECT_EQ(e.count, 0);
    EXPECT_EQ(e.bound, 0);
    // Rule of three: 3 / W per second over T.
    EXPECT_DOUBLE_EQ(unseen_bound(w), 30);
}

TEST(DutyEstimate, AlwaysOnIsExact) {
    WindowSet w;
    w.add(7);
    w.elapsed_s = 7;
    w.always_on = true;
    const Estimate e = estimate(counts({{1234, 7}}), w);
    EXPECT_TRUE(e.exact);
    EXPECT_EQ(e.count, 1234);
    EXPECT_EQ(e.bound, 0);
    EXPECT_EQ(unseen_bound(w), 0);
    // On all the time without the flag, f = 1 gives the same.
    w.always_on = false;
    const Estimate f = estimate(counts({{1234, 7}}), w);
    EXPECT_DOUBLE_EQ(f.count, 1234);
    EXPECT_DOUBLE_EQ(f.bound, 0);
}

TEST(DutyEstimate, StudentQuantiles) {
    EXPECT_DOUBLE_EQ(t975(1), 12.706);
    EXPECT_DOUBLE_EQ(t975(9), 2.262);
    EXPECT_DOUBLE_EQ(t975(30), 2.042);
    EXPECT_DOUBLE_EQ(t975(1000), 1.96);
    EXPECT_TRUE(std::isinf(t975(0)));
    for (size_t df = 1; df < 200; df++) {
        EXPECT_GE(t975(df), t975(df + 1)) << df;
    }
}

// Poisson arrivals at a known rate, sampled in jittered windows: the 95%
// interval holds the true count in about 95% of runs.
TEST(DutyEstimate, CoverageOnSteadyArrivals) {
    std::mt19937_64 rng(42);
    int covered = 0;
    const int runs = 400;
    for (int run = 0; run < runs; run++) {
        const double rate = 300, period = 0.5, on = 0.1;
        const int periods = 20;
        std::exponential_distribution<double> gap(rate);
        std::uniform_real_distribution<double> phase(0, period - on);
        std::vector<std::pair<double, double>> win;
        for (int k = 0; k < periods; k++) {
            const double b = k * period + phase(rng);
            win.emplace_back(b, b + on);
        }
        WindowSet w;
        for (size_t i = 0; i < win.size(); i++) {
            w.add(on);
        }
        w.elapsed_s = periods * period;
        std::vector<double> c(win.size());
        double truth = 0;
        for (double t = gap(rng); t < w.elapsed_s; t += gap(rng)) {
            truth++;
            for (size_t i = 0; i < win.size(); i++) {
                if (t >= win[i].first && t < win[i].second) {
                    c[i]++;
                }
            }
        }
        std::vector<std::pair<double, double>> cw;
        for (double ci : c) {
            cw.emplace_back(ci, on);
        }
        const Estimate e = estimate(counts(cw), w);
        covered += std::abs(e.count - truth) <= e.bound ? 1 : 0;
    }
    EXPECT_GE(covered, runs * 90 / 100);
}

// A closed-loop server that runs 20% slower while the probe is in: two
// classes (70% / 30% of the statements), 20 windows of 0.1 s in 10 s. The
// time-based scaling reads the slower rate as the rate of the whole time and
// comes out low, outside its own bound; scaled by the exact number of query
// ids, each class's share of what the windows saw is unbiased, and its 95%
// bound holds the true count in ~95% of runs.
struct SlowedRun {
    WindowSet by_time, by_qid;
    WindowedCount c[2];
    double truth[2] = {0, 0};
};

SlowedRun slowed_run(std::mt19937_64 &rng, double rate, double slowdown) {
    const double period = 0.5, on = 0.1, share[2] = {0.7, 0.3};
    const int periods = 20;
    SlowedRun r;
    std::vector<std::array<double, 2>> seen;
    std::vector<double> qids;
    double q_total = 0;
    auto statements = [&](double mean, double *by_class) {
        const auto q = static_cast<double>(std::poisson_distribution<uint64_t>(mean)(rng));
        const auto a = static_cast<double>(
            std::binomial_distribution<uint64_t>(static_cast<uint64_t>(q), share[0])(rng));
        by_class[0] = a;
        by_class[1] = q - a;
        r.truth[0] += a;
        r.truth[1] += q - a;
        q_total += q;
        return q;
    };
    for (int k = 0; k < periods; k++) {
        double in[2], out[2];
        const double q = statements(rate * (1 - slowdown) * on, in);
        statements(rate * (period - on), out);
        seen.push_back({in[0], in[1]});
        qids.push_back(q);
        r.by_time.add(on);
        r.by_qid.add(on);
        r.by_qid.add_qids(q);
    }
    r.by_time.elapsed_s = r.by_qid.elapsed_s = periods * period;
    r.by_qid.by_query_id = true;
    r.by_qid.q_total = q_total;
    for (int d = 0; d < 2; d++) {
        for (size_t i = 0; i < seen.size(); i++) {
            const double ci = seen[i][static_cast<size_t>(d)];
            r.c[d].sum += ci;
            r.c[d].sum_sq += ci * ci;
            r.c[d].sum_cw += ci * on;
            r.c[d].sum_cq += ci * qids[i];
        }
    }
    return r;
}

TEST(DutyEstimate, QueryIdScalingCancelsASlowdownWhileWatched) {
    std::mt19937_64 rng(7);
    const int runs = 400;
    int covered[2] = {0, 0}, old_covered[2] = {0, 0};
    double bias_time[2] = {0, 0}, bias_qid[2] = {0, 0}, width_qid[2] = {0, 0};
    for (int run = 0; run < runs; run++) {
        const SlowedRun r = slowed_run(rng, 2000, 0.2);
        for (int d = 0; d < 2; d++) {
            const Estimate t = estimate(r.c[d], r.by_time);
            const Estimate q = estimate(r.c[d], r.by_qid);
            EXPECT_FALSE(q.exact);
            EXPECT_EQ(q.swap_bound, 0);
            bias_time[d] += (t.count - r.truth[d]) / r.truth[d] / runs;
            bias_qid[d] += (q.count - r.truth[d]) / r.truth[d] / runs;
            width_qid[d] += q.bound / r.truth[d] / runs;
            covered[d] += std::abs(q.count - r.truth[d]) <= q.bound ? 1 : 0;
            old_covered[d] += std::abs(t.count - r.truth[d]) <= t.bound ? 1 : 0;
        }
    }
    for (int d = 0; d < 2; d++) {
        SCOPED_TRACE(d);
        // Time: the whole run at the watched rate, 0.8 + 0.2 * 0.8 / 1 ~ -18%.
        EXPECT_LT(bias_time[d], -0.15);
        EXPECT_LT(old_covered[d], runs / 2);
        EXPECT_LT(std::abs(bias_qid[d]), 0.01);
        EXPECT_GE(covered[d], runs * 90 / 100);
        EXPECT_LE(covered[d], runs);
        EXPECT_LT(width_qid[d], 0.1);  // +-10% of the count at most, here
    }
}

// The exact total: the classes' estimates add up to the query ids, and a
// class that is all the statements is exact (the binomial floor is 0).
TEST(DutyEstimate, QueryIdScalingSharesTheExactTotal) {
    WindowSet w;
    w.by_query_id = true;
    w.elapsed_s = 10;
    w.q_total = 10'000;
    WindowedCount a, b, all;
    for (const auto &[qa, qb] : {std::pair{150.0, 50.0}, {140.0, 60.0}, {160.0, 40.0}}) {
        w.add(0.1);
        w.add_qids(qa + qb);
        for (auto [c, x] : {std::pair{&a, qa}, {&b, qb}, {&all, qa + qb}}) {
            c->sum += x;
            c->sum_sq += x * x;
            c->sum_cq += x * (qa + qb);
        }
    }
    const Estimate ea = estimate(a, w), eb = estimate(b, w), e = estimate(all, w);
    EXPECT_DOUBLE_EQ(ea.count, 10'000 * 450.0 / 600);
    EXPECT_DOUBLE_EQ(ea.count + eb.count, 10'000);
    EXPECT_DOUBLE_EQ(ea.rate, ea.count / 10);
    EXPECT_DOUBLE_EQ(e.count, 10'000);
    EXPECT_NEAR(e.bound, 0, 1e-9);
    EXPECT_GT(ea.bound, 0);
    // Binomial floor: C (1 - p) (T - W) T / W^2, below the between-window term here.
    const double floor = 450 * 0.25 * 9400 * 10'000 / (600.0 * 600);
    EXPECT_GE(ea.bound, 1.96 * std::sqrt(floor) - 1e-9);
    EXPECT_NEAR(unseen_bound(w), 3 * 10'000 / 600.0, 1e-9);
}

TEST(WindowedCounterTest, FoldsCompleteWindowsOnly) {
    WindowedCounter c;
    c.add(0, 3);
    c.add(1);
    c.add(0);
    c.add(2, 5);
    auto on = [](size_t i) { return 0.1 * static_cast<double>(i + 1); };
    c.settle(2, on);
    EXPECT_DOUBLE_EQ(c.folded().sum, 5);
    EXPECT_DOUBLE_EQ(c.folded().sum_sq, 16 + 1);
    EXPECT_DOUBLE_EQ(c.folded().sum_cw, 4 * 0.1 + 1 * 0.2);
    c.add(2);
    c.settle(3, on);
    EXPECT_DOUBLE_EQ(c.folded().sum, 11);
    EXPECT_DOUBLE_EQ(c.folded().sum_sq, 17 + 36);
}

server::DutyWindow window(uint64_t a, uint64_t d, uint64_t drops = 0) {
    server::DutyWindow w;
    w.attach_begin_ns = a;
    w.attach_end_ns = a + 100;
    w.detach_begin_ns = d;
    w.detach_end_ns = d + 100;
    w.drops = drops;
    return w;
}

TEST(ReportWindows, CountsSettledWindowsAndTheirTime) {
    std::vector<server::DutyWindow> ws = {window(1000, 101000), window(501000, 601000, 7),
                                          window(1001000, 1101000)};
    size_t complete = 0;
    // Settled up to the second window: the time stands until the third's start.
    auto r = report_windows(ws, 0, 2'000'000, 700'000, false, &complete);
    EXPECT_EQ(complete, 2u);
    EXPECT_EQ(r.set.n, 2u);
    EXPECT_DOUBLE_EQ(r.set.on_s, 2 * 99900e-9);
    EXPECT_DOUBLE_EQ(r.set.elapsed_s, 1001000e-9);
    EXPECT_EQ(r.drop_windows, 1u);
    EXPECT_EQ(r.drops, 7u);
    EXPECT_EQ(r.attach_ns_max, 100u);
    r = report_windows(ws, 0, 2'000'000, 2'000'000, false, &complete);
    EXPECT_EQ(complete, 3u);
    EXPECT_DOUBLE_EQ(r.set.elapsed_s, 2e-3);
}

TEST(ReportWindows, ScalesByQueryIdsWhenEveryEdgeWasRead) {
    std::vector<server::DutyWindow> ws = {window(1000, 101000), window(501000, 601000)};
    ws[0].qid_on = 110;
    ws[0].qid_off = 130;
    ws[1].qid_on = 160;
    ws[1].qid_off = 190;
    ws[0].has_qid = ws[1].has_qid = true;
    size_t complete = 0;
    auto r = report_windows(ws, 0, 1'000'000, 1'000'000, false, &complete, 100, 250);
    EXPECT_TRUE(r.set.by_query_id);
    EXPECT_DOUBLE_EQ(r.set.q_total, 150);
    EXPECT_DOUBLE_EQ(r.set.q_on, 50);
    EXPECT_DOUBLE_EQ(r.set.q_on_sq, 20 * 20 + 30 * 30);
    // Settled up to the first window: to the second's attach.
    r = report_windows(ws, 0, 1'000'000, 300'000, false, &complete, 100, 250);
    EXPECT_EQ(complete, 1u);
    EXPECT_DOUBLE_EQ(r.set.q_total, 60);
    // A counter read that failed: by time, and why.
    r = report_windows(ws, 0, 1'000'000, 1'000'000, false, &complete, std::nullopt, 250);
    EXPECT_FALSE(r.set.by_query_id);
    EXPECT_EQ(r.no_query_id, "the query id counter could not be read");
    ws[1].has_qid = false;
    r = report_windows(ws, 0, 1'000'000, 1'000'000, false, &complete, 100, 250);
    EXPECT_FALSE(r.set.by_query_id);
    EXPECT_FALSE(r.no_query_id.empty());
}

server::Statement statement(const std::string &text, uint64_t ns, bool failed = false) {
    server::Statement st;
    st.command = 3;  // COM_QUERY
    st.text = text;
    st.start_ns = 1000;
    st.end_ns = 1000 + ns;
    st.rows_sent = 1;
    st.rows_examined = 2;
    st.da_status = failed ? MT_DA_ERROR : 0;
    return st;
}

TEST(DigestSummaryTest, JsonLinesPerDigest) {
    DigestSummary s({});
    std::vector<server::DutyWindow> ws = {window(0, 100'000'000), window(500'000'000, 600'000'000)};
    s.add(statement("select 1", 10'000), 0);
    s.add(statement("select 2", 30'000), 1);
    s.add(statement("select * from nosuch", 50'000, true), 1);
    size_t complete = 0;
    auto r = report_windows(ws, 0, 1'000'000'000, 1'000'000'000, false, &complete);
    s.settle(complete, ws);
    const std::string out = s.json(r, 42);
    std::vector<nlohmann::json> lines;
    size_t at = 0;
    while (at < out.size()) {
        const size_t nl = out.find('\n', at);
        lines.push_back(nlohmann::json::parse(out.substr(at, nl - at)));
        at = nl + 1;
    }
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[0]["kind"], "digest_summary");
    EXPECT_EQ(lines[0]["estimate"], true);
    EXPECT_EQ(lines[0]["windows"], 2);
    EXPECT_EQ(lines[0]["digests"], 2);
    EXPECT_EQ(lines[1]["kind"], "digest");
    EXPECT_EQ(lines[1]["digest"], "select ?");
    EXPECT_EQ(lines[1]["seen"], 2);
    // 2 seen in 0.2 s on of 1 s.
    EXPECT_NEAR(lines[1]["count"].get<double>(), 10, 0.01);
    EXPECT_GT(lines[1]["count_bound"].get<double>(), 0);
    EXPECT_EQ(lines[1]["rows_examined_avg"], 2.0);
    EXPECT_EQ(lines[2]["errors_seen"], 1);
    EXPECT_NEAR(lines[2]["errors"].get<double>(), 5, 0.01);
}

// The cycle's own bookkeeping, with a switch that only counts: windows
// alternate on and off, and a firing counts only between an attach call's
// end and the next detach call's start.
// The query id counter is read at the start, right after each attach and
// right before each detach, and at stop(): with a counter that counts its
// own reads and the switches, each window's ids are the switches it holds.
TEST(DutyCycleTest, QueryIdsAtTheEdges) {
    uint64_t ids = 100;
    bool on = false;
    server::DutyOptions o;
    o.fraction = 0.5;
    o.period_ns = 20'000'000;
    o.seed = 3;
    server::DutyCycle cycle(
        o,
        [&](bool want) -> Result<void> {
            on = want;
            ids += 10;  // the server ran 10 statements during each call
            return {};
        },
        [] { return uint64_t{0}; }, [&]() -> std::optional<uint64_t> { return ids++; });
    while (cycle.windows().size() < 3) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    cycle.stop();
    const auto ws = cycle.windows();
    ASSERT_EQ(cycle.query_id_start(), std::optional<uint64_t>(100));
    // Start, then per window: attach (+10), read, read, detach (+10).
    for (size_t i = 0; i < ws.size(); i++) {
        EXPECT_TRUE(ws[i].has_qid);
        EXPECT_EQ(ws[i].qid_on, 101 + 10 + 22 * i);
        EXPECT_EQ(ws[i].qids(), 1u);
    }
    EXPECT_EQ(cycle.query_id_end(), std::optional<uint64_t>(101 + 22 * ws.size()));
    EXPECT_EQ(cycle.query_id_end(), cycle.query_id_end());  // read once, at stop()
}

TEST(DutyCycleTest, AFailedQueryIdReadTurnsTheCounterOff) {
    int reads = 0;
    server::DutyOptions o;
    o.fraction = 0.5;
    o.period_ns = 20'000'000;
    server::DutyCycle cycle(
        o, [&](bool) -> Result<void> { return {}; }, [] { return uint64_t{0}; },
        [&]() -> std::optional<uint64_t> {
            return ++reads == 3 ? std::nullopt : std::optional<uint64_t>(reads);
        });
    while (cycle.windows().size() < 3) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    cycle.stop();
    EXPECT_FALSE(cycle.query_id_start());
    EXPECT_FALSE(cycle.query_id_end());
    EXPECT_FALSE(cycle.windows()[0].has_qid);  // its detach-side read failed
}

TEST(DutyCycleTest, WindowsAndTheirEdges) {
    int switches = 0;
    bool on = false;  // the caller took the probe out before the cycle
    server::DutyOptions o;
    o.fraction = 0.5;
    o.period_ns = 20'000'000;
    o.seed = 7;
    server::DutyCycle cycle(
        o,
        [&](bool want) -> Result<void> {
            EXPECT_NE(want, on);
            on = want;
            switches++;
            return {};
        },
        [] { return uint64_t{0}; });
    while (cycle.windows().size() < 4) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    cycle.stop();
    EXPECT_FALSE(on);
    const auto ws = cycle.windows();
    ASSERT_GE(ws.size(), 4u);
    EXPECT_EQ(switches, static_cast<int>(2 * ws.size()));
    EXPECT_FALSE(cycle.failure());
    for (size_t i = 0; i < ws.size(); i++) {
        const auto &w = ws[i];
        ASSERT_TRUE(w.closed());
        EXPECT_LE(w.attach_begin_ns, w.attach_end_ns);
        EXPECT_LE(w.attach_end_ns, w.detach_begin_ns);
        EXPECT_EQ(w.on_ns(), w.detach_begin_ns - w.attach_end_ns);
        EXPECT_EQ(cycle.window_of(w.attach_end_ns), static_cast<long>(i));
        EXPECT_EQ(cycle.window_of(w.detach_begin_ns), static_cast<long>(i));
        if (w.attach_begin_ns < w.attach_end_ns) {
            EXPECT_EQ(cycle.window_of(w.attach_end_ns - 1), -1);
        }
        if (w.detach_begin_ns < w.detach_end_ns) {
            EXPECT_EQ(cycle.window_of(w.detach_begin_ns + 1), -1);
        }
        // One window a period, inside it.
        const uint64_t k = (w.attach_begin_ns - cycle.start_ns()) / o.period_ns;
        EXPECT_EQ(k, i);
    }
    EXPECT_EQ(cycle.window_of(cycle.start_ns() - 1), -1);
}

// Fraction 1: one window from the start to stop(), nothing switched.
TEST(DutyCycleTest, AlwaysOn) {
    int switches = 0;
    server::DutyOptions o;
    o.fraction = 1;
    server::DutyCycle cycle(
        o,
        [&](bool) -> Result<void> {
            switches++;
            return {};
        },
        [] { return uint64_t{3}; });
    EXPECT_EQ(cycle.window_of(cycle.start_ns() + 1), 0);
    cycle.stop();
    EXPECT_EQ(switches, 0);
    const auto ws = cycle.windows();
    ASSERT_EQ(ws.size(), 1u);
    EXPECT_EQ(ws[0].drops, 0u);
    EXPECT_EQ(ws[0].on_ns(), cycle.end_ns() - cycle.start_ns());
}

TEST(LogHistogramTest, QuantilesWithinTheBucketWidth) {
    LogHistogram h;
    for (uint64_t v = 1; v <= 1000; v++) {
        h.add(v * 1000);
    }
    for (double q : {0.5, 0.95, 0.99}) {
        const double want = q * 1e6;
        EXPECT_NEAR(static_cast<double>(h.quantile(q)), want, want * 0.03) << q;
    }
    EXPECT_EQ(LogHistogram().quantile(0.5), 0u);
}

}  // namespace
}  // namespace mysqltrace::output
