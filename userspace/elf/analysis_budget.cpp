// SPDX-License-Identifier: GPL-2.0-only
#include "elf/analysis_budget.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <string>
#include <utility>

namespace mysqltrace::elf {

namespace {

struct LimitInfo {
    const char *name;
    const char *what;
    uint64_t fallback;  // the default
};

// Defaults: ten times or more what Debian's mariadbd 10.11 (26 MB) and
// Oracle MySQL 9.7.4's mysqld (76 MB) use, the larger of the two, measured
// 2026-11-26 (docs/security.md, "Analysis bounds"): 76 MB file, 81,118
// symbols, 5.6 MB of names, 9.8 MB read, 64,508 instructions, 4,849 in one
// function, 191,994 relocations, 231 probe sites, 87 ms of CPU.
constexpr LimitInfo kLimits[kLimitCount] = {
    {"file_bytes", "bytes in the file", uint64_t{1} << 30},
    {"symbols", "symbol table entries", 1'000'000},
    {"symbol_name_bytes", "bytes of symbol names", uint64_t{64} << 20},
    {"bytes_read", "bytes of code and data read", uint64_t{256} << 20},
    {"instructions", "instructions disassembled", 10'000'000},
    {"function_instructions", "instructions disassembled in one function", 500'000},
    {"relocations", "relocation entries", 5'000'000},
    {"probe_sites", "probe sites", 10'000},
    {"cpu_ms", "ms of CPU time spent", 10'000},
};

uint64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The CPU clock is read once every this many charges: ~20 ns a read against
// the ~100 ns-1 us of one decoded instruction.
constexpr uint64_t kCpuCheckEvery = 4096;

}  // namespace

AnalysisLimits default_analysis_limits() {
    AnalysisLimits l;
    for (size_t i = 0; i < kLimitCount; i++) {
        l.value[i] = kLimits[i].fallback;
    }
    if (const char *env = std::getenv("MYSQLTRACE_ANALYSIS_LIMITS")) {
        if (auto r = apply_limits(env, l); !r) {
            l.invalid = "MYSQLTRACE_ANALYSIS_LIMITS: " + r.error().message;
        }
    }
    return l;
}

Result<void> apply_limits(std::string_view spec, AnalysisLimits &limits) {
    while (!spec.empty()) {
        const size_t comma = spec.find(',');
        const std::string_view item = spec.substr(0, comma);
        spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
        const size_t eq = item.find('=');
        const std::string_view name = item.substr(0, eq == std::string_view::npos ? 0 : eq);
        const std::string_view value =
            eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
        size_t i = 0;
        while (i < kLimitCount && name != kLimits[i].name) {
            i++;
        }
        uint64_t v = 0;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (i == kLimitCount || value.empty() || ec != std::errc{} ||
            end != value.data() + value.size()) {
            return Error{EINVAL, "`" + std::string(item) +
                                     "` is not NAME=NUMBER with a NAME of file_bytes, symbols, "
                                     "symbol_name_bytes, bytes_read, instructions, "
                                     "function_instructions, relocations, probe_sites, cpu_ms"};
        }
        limits.value[i] = v;
    }
    return {};
}

const char *limit_name(Limit l) {
    return kLimits[static_cast<size_t>(l)].name;
}

const char *limit_what(Limit l) {
    return kLimits[static_cast<size_t>(l)].what;
}

AnalysisBudget::AnalysisBudget(std::string who, const AnalysisLimits &limits)
    : who_(std::move(who)), limits_(limits), start_cpu_ns_(thread_cpu_ns()) {
    if (!limits_.invalid.empty()) {
        exceeded_ = Error{EINVAL, limits_.invalid};
    }
}

bool AnalysisBudget::fail(Limit l, uint64_t limit) {
    if (!exceeded_) {
        exceeded_ =
            Error{EFBIG, who_ + ": analysis stopped: more than " + std::to_string(limit) + " " +
                             limit_what(l) + " (analysis limit " + limit_name(l) + ")"};
    }
    return false;
}

bool AnalysisBudget::check_cpu() {
    const uint64_t ms = (thread_cpu_ns() - start_cpu_ns_) / 1'000'000;
    used_[static_cast<size_t>(Limit::cpu_ms)] = ms;
    return ms <= limits_[Limit::cpu_ms] || fail(Limit::cpu_ms, limits_[Limit::cpu_ms]);
}

bool AnalysisBudget::charge(Limit l, uint64_t n) {
    if (exceeded_) {
        return false;
    }
    uint64_t &used = used_[static_cast<size_t>(l)];
    used = n > UINT64_MAX - used ? UINT64_MAX : used + n;
    if (used > limits_[l]) {
        return fail(l, limits_[l]);
    }
    return ++charges_ % kCpuCheckEvery != 0 || check_cpu();
}

bool AnalysisBudget::check(Limit l, uint64_t count) {
    if (exceeded_) {
        return false;
    }
    uint64_t &used = used_[static_cast<size_t>(l)];
    used = std::max(used, count);  // the largest seen
    return count <= limits_[l] || fail(l, limits_[l]);
}

uint64_t AnalysisBudget::used(Limit l) const {
    if (l == Limit::cpu_ms) {
        return (thread_cpu_ns() - start_cpu_ns_) / 1'000'000;
    }
    return used_[static_cast<size_t>(l)];
}

}  // namespace mysqltrace::elf
