// SPDX-License-Identifier: GPL-2.0-only
#include "elf/symbol_name.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace mysqltrace::elf {

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

}  // namespace mysqltrace::elf
