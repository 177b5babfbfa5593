// SPDX-License-Identifier: GPL-2.0-only
// Counts from a probe attached for part of the time (--duty), scaled to the
// whole time, with a 95% interval computed from the windows themselves.
//
// Each window i was on for w_i seconds and saw c_i statements of a class.
// The rate is the ratio estimate r = sum(c) / sum(w) and the count r * T
// for the T seconds traced. Its variance comes two ways and the larger is
// used:
// - between windows (cluster sampling, Cochran's ratio estimator):
//   Var = T^2 (1 - f) s^2 / (n wbar^2), s^2 = sum((c_i - r w_i)^2) / (n - 1),
//   f = sum(w) / T the fraction of time on. A bursty class, whose windows
//   disagree, gets a wide interval; the quantile is Student's t with n - 1
//   degrees of freedom, as s^2 is itself estimated from n windows.
// - steady (Poisson) arrivals: the unseen part of the count is Poisson too,
//   Var = C (T - W) T / W^2 with C = sum(c), W = sum(w). With fewer than two
//   windows, or a class seen so seldom that the windows alone understate it,
//   this is the floor.
// - the time inside attach and detach calls (S): the probe's state there is
//   not known to the nanosecond, and the swap itself may slow the server
//   (on a busy 2-CPU machine the estimates ran ~4% high without this), so
//   it is neither sampled nor extrapolated into: its count is taken as
//   between 0 and r S, i.e. r S / 2 +- r S / 2, the latter added to the
//   bound as a systematic term. T above is then the time outside swaps.
// Probe on all the time (f = 1): the count is exact and the interval 0.
//
// With the server's query id counter (server/query_counter.h) read at the
// start and end and at each window's edges, the same estimator runs with
// query ids in place of seconds (by_query_id): w_i is the number of query
// ids the server took inside window i, T the number over the whole time,
// so each class's count is its share of the statements seen times the exact
// total. A server that runs slower while the probe is in takes fewer ids
// then too, so the slowdown cancels (the time-based scaling reads it as a
// lower rate). Query ids taken inside attach and detach calls are in T and
// counted at the windows' share: no swap term. The steady floor is then
// binomial: a class that is a share p = C / W of the statements seen has
// Var = C (1 - p) (T - W) T / W^2 (the Poisson one times 1 - p).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mysqltrace::output {

// What all classes share: the windows and the time traced.
struct WindowSet {
    size_t n = 0;            // windows closed and counted
    double on_s = 0;         // sum(w_i)
    double on_sq = 0;        // sum(w_i^2)
    double elapsed_s = 0;    // T
    double swap_s = 0;       // S: inside attach and detach calls
    bool always_on = false;  // the probe never left: counts are exact
    // Query-id scaling: the same sums with query ids as the unit.
    bool by_query_id = false;
    double q_on = 0, q_on_sq = 0;  // sum(q_i), sum(q_i^2)
    double q_total = 0;            // query ids over the elapsed time
    void add_qids(double q) {
        q_on += q;
        q_on_sq += q * q;
    }
    void add(double w) {
        n++;
        on_s += w;
        on_sq += w * w;
    }
    double fraction() const { return elapsed_s > 0 ? on_s / elapsed_s : 0; }
};

// One class's counts over the windows.
struct WindowedCount {
    double sum = 0;     // sum(c_i)
    double sum_sq = 0;  // sum(c_i^2)
    double sum_cw = 0;  // sum(c_i w_i)
    double sum_cq = 0;  // sum(c_i q_i): query ids of the window
};

struct Estimate {
    double count = 0;  // over the elapsed time
    double bound = 0;  // half-width of the 95% interval
    double rate = 0;   // per second
    bool exact = false;
    bool steady_bound = false;  // the Poisson term set the bound
    double swap_bound = 0;      // of `bound`: the systematic term for S
};

Estimate estimate(const WindowedCount &c, const WindowSet &w);

// A class seen in no window ran at most this many times (95%, steady rate:
// the chance of no arrival in W seconds at rate 3 / W is e^-3 = 5%).
double unseen_bound(const WindowSet &w);

// Student's t, 97.5th percentile, `df` degrees of freedom (>= 1).
double t975(size_t df);

// c_i per window for one class, folded into a WindowedCount once the window
// is complete (its records may still be on their way while it is open).
class WindowedCounter {
  public:
    void add(size_t window, uint64_t n = 1);
    // Folds every window below `complete`; on_s(i): window i's on-time,
    // qids(i): the query ids the server took in it (0: not read).
    template <typename OnSeconds, typename Qids>
    void settle(size_t complete, OnSeconds on_s, Qids qids) {
        size_t kept = 0;
        for (auto &[win, n] : open_) {
            if (win < complete) {
                const double c = static_cast<double>(n);
                folded_.sum += c;
                folded_.sum_sq += c * c;
                folded_.sum_cw += c * on_s(win);
                folded_.sum_cq += c * qids(win);
            } else {
                open_[kept++] = {win, n};
            }
        }
        open_.resize(kept);
    }
    template <typename OnSeconds>
    void settle(size_t complete, OnSeconds on_s) {
        settle(complete, on_s, [](size_t) { return 0.0; });
    }
    const WindowedCount &folded() const { return folded_; }

  private:
    std::vector<std::pair<size_t, uint64_t>> open_;  // few: windows still open
    WindowedCount folded_;
};

}  // namespace mysqltrace::output
