// SPDX-License-Identifier: GPL-2.0-only
// Bounds on what analysing one binary may cost. mysqltrace reads, as root,
// binaries a container's user may have built: a symbol table or a function
// size that lies must not make the tracer allocate without bound or spin.
//
// Every ElfFile carries a budget: mapping it, its symbol table, every read
// of its bytes and every instruction a disassembler decodes from them are
// charged to it. The first limit hit is recorded; from then on reads fail and
// the budget's disassemblers decode nothing, so each analysis step ends at
// once, and whoever analyses the file refuses it with that error before
// anything is attached. Counting, rather than setrlimit in a child process,
// keeps the analysis in-process (its results hold ElfFiles and libelf state)
// and makes a limit hit a deterministic message naming the limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace mysqltrace::elf {

// What a budget counts; the order of the fields of AnalysisLimits.
enum class Limit : uint8_t {
    file_bytes,             // size of the file mapped
    symbols,                // symbol table entries read (.symtab + .dynsym)
    symbol_name_bytes,      // bytes of symbol names kept
    bytes_read,             // code and data copied out of the file, in all
    instructions,           // instructions disassembled, in all
    function_instructions,  // instructions one walk of one function or range decodes
    relocations,            // relocation entries read
    probe_sites,            // probe sites one scan finds (each becomes a uprobe)
    cpu_ms,                 // CPU time of the analysing thread, milliseconds
};
inline constexpr size_t kLimitCount = 9;

struct AnalysisLimits {
    uint64_t value[kLimitCount] = {};
    // Not "": why these limits are unusable (a bad MYSQLTRACE_ANALYSIS_LIMITS);
    // a budget with them refuses every binary with this message.
    std::string invalid;

    uint64_t &operator[](Limit l) { return value[static_cast<size_t>(l)]; }
    uint64_t operator[](Limit l) const { return value[static_cast<size_t>(l)]; }
};

// The defaults: ten times or more what the largest server binaries known
// need (docs/security.md, "Analysis bounds", has the measurements), then
// whatever the environment's MYSQLTRACE_ANALYSIS_LIMITS sets, e.g.
// "instructions=20000000,cpu_ms=30000": the way out for a binary larger
// than any known, and how tests make a limit trip.
AnalysisLimits default_analysis_limits();

// Applies `spec` ("name=value,..." with the names of limit_name()) to `limits`.
Result<void> apply_limits(std::string_view spec, AnalysisLimits &limits);

// "instructions", ... as in --help and the docs; nullptr for no such name.
const char *limit_name(Limit l);
// What the limit counts, in an error message: "instructions disassembled".
const char *limit_what(Limit l);

class AnalysisBudget {
  public:
    // `who` names the binary in errors ("/proc/42/exe").
    AnalysisBudget(std::string who, const AnalysisLimits &limits);

    const AnalysisLimits &limits() const { return limits_; }
    // Adds `n` to what `l` counts. False once over the limit (this or an
    // earlier one): the first limit hit is kept as the budget's error.
    bool charge(Limit l, uint64_t n = 1);
    // A count that is not summed (the instructions of one walk, the sites of
    // one scan): false when `count` is over the limit, recorded as charge().
    bool check(Limit l, uint64_t count);
    bool exhausted() const { return exceeded_.has_value(); }
    // The error of the first limit hit.
    const std::optional<Error> &exceeded() const { return exceeded_; }
    uint64_t used(Limit l) const;

  private:
    bool fail(Limit l, uint64_t limit);
    bool check_cpu();

    std::string who_;
    AnalysisLimits limits_;
    uint64_t used_[kLimitCount] = {};
    uint64_t start_cpu_ns_ = 0;
    uint64_t charges_ = 0;
    std::optional<Error> exceeded_;
};

}  // namespace mysqltrace::elf
