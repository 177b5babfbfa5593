// SPDX-License-Identifier: GPL-2.0-only
// Which functions `mysqltrace calls --match GLOB` means: shell globs
// (fnmatch) over demangled C++ names, tried with and without the parameter
// list, so that `dispatch_command` matches
// `dispatch_command(enum_server_command, THD*, char*, unsigned int, bool)`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "elf/symbol_name.h"

namespace mysqltrace::calls {

using elf::demangle;
using elf::without_params;

// A set of globs; each may hold alternatives separated by `|`
// ("dispatch_command|mysql_parse").
class GlobSet {
  public:
    explicit GlobSet(const std::vector<std::string> &globs);
    bool empty() const { return patterns_.empty(); }
    // True when any pattern matches `name` as a whole.
    bool matches(std::string_view name) const;
    // The patterns, alternatives split ("a|b" -> "a", "b").
    const std::vector<std::string> &patterns() const { return patterns_; }
    // The globs as given, quoted and comma-separated, for messages.
    std::string describe() const;

  private:
    std::vector<std::string> given_;
    std::vector<std::string> patterns_;
};

// A function symbol and the names it is known by.
struct FunctionName {
    std::string symbol;     // as in the ELF file (mangled)
    std::string signature;  // demangled, with parameters
    std::string name;       // demangled, without parameters: what output shows
};

FunctionName function_name(const std::string &symbol);

// True when `globs` match the symbol by its demangled name with or without
// parameters, or by the symbol itself.
bool matches(const GlobSet &globs, const FunctionName &f);

}  // namespace mysqltrace::calls
