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

Estimate estimate(const WindowedCount &c, const WindowSet &w) {
    Estimate e;
    if (w.always_on) {
        e.exact = true;
        e.count = c.sum;
        e.rate = w.elapsed_s > 0 ? c.sum / w.elapsed_s : 0;
        return e;
    }
    if (w.n == 0 || w.on_s <= 0 || w.elapsed_s <= 0) {
        return e;  // nothing measured: no estimate
    }
    const double W = w.on_s;
    const double S = std::clamp(w.swap_s, 0.0, std::max(0.0, w.elapsed_s - W));
    const double T = std::max(w.elapsed_s - S, W);
    e.rate = c.sum / W;
    e.count = e.rate * (T + S / 2);
    e.swap_bound = e.rate * S / 2;
    const double poisson = c.sum * (T - W) * T / (W * W);
    double between = 0;
    if (w.n >= 2) {
        const double n = static_cast<double>(w.n);
        const double r = e.rate;
        const double ss = std::max(0.0, c.sum_sq - 2 * r * c.sum_cw + r * r * w.on_sq);
        const double s2 = ss / (n - 1);
        const double wbar = W / n;
        const double f = W / T;
        between = T * T * (1 - f) * s2 / (n * wbar * wbar);
    }
    const double b_between = w.n >= 2 ? t975(w.n - 1) * std::sqrt(between) : 0;
    const double b_poisson = 1.96 * std::sqrt(poisson);
    e.steady_bound = b_poisson >= b_between;
    e.bound = std::max(b_between, b_poisson) + e.swap_bound;
    return e;
}

double unseen_bound(const WindowSet &w) {
    if (w.always_on) {
        return 0;
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
