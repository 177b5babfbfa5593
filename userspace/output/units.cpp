// SPDX-License-Identifier: GPL-2.0-only
#include "output/units.h"

namespace mysqltrace::output {

void append_fixed(std::string &out, uint64_t ns, uint64_t unit, int decimals) {
    static constexpr uint64_t kPow10[] = {1, 10, 100, 1000, 10'000, 100'000, 1'000'000};
    decimals = decimals < 0 ? 0 : decimals > 6 ? 6 : decimals;
    const uint64_t step = unit / kPow10[decimals];  // ns per last digit: 1 or a power of 10
    uint64_t v = ns / step;
    v += ns - v * step >= (step + 1) / 2 ? 1 : 0;
    // Digits from the last one back, then one append: this runs for every
    // duration a busy trace prints.
    char buf[32];
    char *p = buf + sizeof(buf);
    for (int i = 0; i < decimals; i++) {
        *--p = static_cast<char>('0' + v % 10);
        v /= 10;
    }
    if (decimals > 0) {
        *--p = '.';
    }
    do {
        *--p = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    out.append(p, static_cast<size_t>(buf + sizeof(buf) - p));
}

void append_human_duration(std::string &out, uint64_t ns) {
    if (ns < 10'000) {
        append_fixed(out, ns, 1000, 2);
        out += " us";
    } else if (ns < 10'000'000) {
        append_fixed(out, ns, 1000, 1);
        out += " us";
    } else if (ns < 10'000'000'000ull) {
        append_fixed(out, ns, 1'000'000, 2);
        out += " ms";
    } else {
        append_fixed(out, ns, 1'000'000'000, 3);
        out += " s";
    }
}

std::string human_duration(uint64_t ns) {
    std::string s;
    append_human_duration(s, ns);
    return s;
}

void append_uint(std::string &out, uint64_t v) {
    char buf[20];
    char *p = buf + sizeof(buf);
    do {
        *--p = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    out.append(p, static_cast<size_t>(buf + sizeof(buf) - p));
}

}  // namespace mysqltrace::output
