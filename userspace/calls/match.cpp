// SPDX-License-Identifier: GPL-2.0-only
#include "calls/match.h"

#include <cxxabi.h>
#include <fnmatch.h>

#include <cstdlib>
#include <memory>

namespace mysqltrace::calls {

std::string demangle(const std::string &symbol) {
    if (symbol.size() < 2 || symbol[0] != '_' || symbol[1] != 'Z') {
        return symbol;
    }
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> d(
        abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), &std::free);
    return status == 0 && d ? std::string(d.get()) : symbol;
}

std::string without_params(std::string_view s) {
    // GCC's local clones: "f(int) [clone .isra.0] [clone .cold]".
    while (s.size() > 1 && s.back() == ']') {
        auto open = s.rfind(" [clone ");
        if (open == std::string_view::npos) {
            break;
        }
        s = s.substr(0, open);
    }
    // Trailing qualifiers after the list: " const", " volatile", " &", " &&",
    // " noexcept", ...; the list is the last balanced (...) group.
    auto close = s.rfind(')');
    if (close == std::string_view::npos) {
        return std::string(s);
    }
    int depth = 0;
    for (size_t i = close + 1; i-- > 0;) {
        if (s[i] == ')') {
            depth++;
        } else if (s[i] == '(') {
            if (--depth == 0) {
                if (i == 0) {
                    return std::string(s);  // "(anonymous namespace)" alone
                }
                return std::string(s.substr(0, i));
            }
        }
    }
    return std::string(s);
}

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
