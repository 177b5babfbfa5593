// SPDX-License-Identifier: GPL-2.0-only
#include "calls/match.h"

#include <fnmatch.h>

#include <cstdlib>
#include <memory>

namespace mysqltrace::calls {

GlobSet::GlobSet(const std::vector<std::string> &globs) : given_(globs) {
    for (const auto &g : globs) {
        size_t start = 0;
        for (;;) {
            auto bar = g.find('|', start);
            std::string alt = g.substr(start, bar == std::string::npos ? bar : bar - start);
            if (!alt.empty()) {
                patterns_.push_back(std::move(alt));
            }
            if (bar == std::string::npos) {
                break;
            }
            start = bar + 1;
        }
    }
}

bool GlobSet::matches(std::string_view name) const {
    const std::string n(name);
    for (const auto &p : patterns_) {
        if (::fnmatch(p.c_str(), n.c_str(), 0) == 0) {
            return true;
        }
    }
    return false;
}

std::string GlobSet::describe() const {
    std::string out;
    for (const auto &g : given_) {
        out += (out.empty() ? "'" : ", '") + g + "'";
    }
    return out;
}

FunctionName function_name(const std::string &symbol) {
    FunctionName f;
    f.symbol = symbol;
    f.signature = demangle(symbol);
    f.name = without_params(f.signature);
    return f;
}

bool matches(const GlobSet &globs, const FunctionName &f) {
    return globs.matches(f.name) || globs.matches(f.signature) ||
           (f.symbol != f.signature && globs.matches(f.symbol));
}

}  // namespace mysqltrace::calls
