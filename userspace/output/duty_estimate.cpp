// SPDX-License-Identifier: GPL-2.0-only
#include "output/duty_estimate.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace mysqltrace::output {

double t975(size_t df) {
    static constexpr std::array<double, 30> table = {
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    if (df == 0) {
        return INFINITY;
    }
    if (df <= table.size()) {
        return table[df - 1];
    }
    if (df <= 60) {
        return 2.000 + (2.042 - 2.000) * static_cast<double>(60 - df) / 30.0;
    }
    if (df <= 120) {
        return 1.980 + (2.000 - 1.980) * static_cast<double>(120 - df) / 60.0;
    }
    return 1.960;
}

namespace {

// The ratio estimate over windows of sizes w_i (seconds or query ids) that
// sum to W, of T in all; S the unsampled swap part (seconds only). share:
// the steady floor is binomial (the class is a share r of the statements,
// their number known exactly), not Poisson: times (1 - r).
Estimate ratio_estimate(double sum, double sum_sq, double sum_cw, size_t windows, double W,
                        double W_sq, double T, double S, bool share) {
    Estimate e;
    const double r = sum / W;
    e.count = r * (T + S / 2);
    e.swap_bound = r * S / 2;
    const double poisson =
        sum * (T - W) * T / (W * W) * (share ? std::clamp(1 - r, 0.0, 1.0) : 1.0);
    double between = 0;
    if (windows >= 2) {
        const double n = static_cast<double>(windows);
        const double ss = std::max(0.0, sum_sq - 2 * r * sum_cw + r * r * W_sq);
        const double s2 = ss / (n - 1);
        const double wbar = W / n;
        const double f = W / T;
        between = T * T * (1 - f) * s2 / (n * wbar * wbar);
    }
    const double b_between = windows >= 2 ? t975(windows - 1) * std::sqrt(between) : 0;
    const double b_poisson = 1.96 * std::sqrt(poisson);
    e.steady_bound = b_poisson >= b_between;
    e.bound = std::max(b_between, b_poisson) + e.swap_bound;
    return e;
}

}  // namespace

Estimate estimate(const WindowedCount &c, const WindowSet &w) {
    Estimate e;
    if (w.always_on) {
        e.exact = true;
        e.count = c.sum;
        e.rate = w.elapsed_s > 0 ? c.sum / w.elapsed_s : 0;
        return e;
    }
    if (w.by_query_id) {
        if (w.n == 0 || w.q_on <= 0 || w.q_total <= 0) {
            return e;
        }
        e = ratio_estimate(c.sum, c.sum_sq, c.sum_cq, w.n, w.q_on, w.q_on_sq,
                           std::max(w.q_total, w.q_on), 0, true);
        e.rate = w.elapsed_s > 0 ? e.count / w.elapsed_s : 0;
        return e;
    }
    if (w.n == 0 || w.on_s <= 0 || w.elapsed_s <= 0) {
        return e;  // nothing measured: no estimate
    }
    const double W = w.on_s;
    const double S = std::clamp(w.swap_s, 0.0, std::max(0.0, w.elapsed_s - W));
    const double T = std::max(w.elapsed_s - S, W);
    e = ratio_estimate(c.sum, c.sum_sq, c.sum_cw, w.n, W, w.on_sq, T, S, false);
    e.rate = c.sum / W;
    return e;
}

double unseen_bound(const WindowSet &w) {
    if (w.always_on) {
        return 0;
    }
    if (w.by_query_id) {
        return w.q_on > 0 ? 3.0 * std::max(w.q_total, w.q_on) / w.q_on : INFINITY;
    }
    if (w.on_s <= 0) {
        return INFINITY;
    }
    return 3.0 * std::max(w.elapsed_s, w.on_s) / w.on_s;
}

void WindowedCounter::add(size_t window, uint64_t n) {
    for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
        if (it->first == window) {
            it->second += n;
            return;
        }
    }
    open_.emplace_back(window, n);
}

}  // namespace mysqltrace::output
