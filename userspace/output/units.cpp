// SPDX-License-Identifier: GPL-2.0-only
#include "output/units.h"

#include <charconv>

namespace mysqltrace::output {

void append_fixed(std::string &out, uint64_t ns, uint64_t unit, int decimals) {
    uint64_t scale = 1;
    for (int i = 0; i < decimals; i++) {
        scale *= 10;
    }
    const uint64_t step = unit / scale;  // ns per last digit
    const uint64_t v = ns / step + (ns % step >= (step + 1) / 2 ? 1 : 0);
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof(buf), v / scale);
    out.append(buf, r.ptr);
    if (decimals > 0) {
        out += '.';
        const uint64_t frac = v % scale;
        for (uint64_t d = scale / 10; d > 0; d /= 10) {
            out += static_cast<char>('0' + (frac / d) % 10);
        }
    }
}

std::string human_duration(uint64_t ns) {
    std::string s;
    if (ns < 10'000) {
        append_fixed(s, ns, 1000, 2);
        s += " us";
    } else if (ns < 10'000'000) {
        append_fixed(s, ns, 1000, 1);
        s += " us";
    } else if (ns < 10'000'000'000ull) {
        append_fixed(s, ns, 1'000'000, 2);
        s += " ms";
    } else {
        append_fixed(s, ns, 1'000'000'000, 3);
        s += " s";
    }
    return s;
}

}  // namespace mysqltrace::output
