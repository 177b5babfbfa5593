// SPDX-License-Identifier: GPL-2.0-only
// The bounds on analysing one binary (elf/analysis_budget.h), on Debian's
// mariadbd 10.11 (CI installs mariadb-server): the whole server analysis
// passes under the default limits, and each limit, set below what the
// analysis needs, stops it with an error naming that limit and nothing else
// of the analysis. MySQL 9.7's mysqld: tests/priv/analysis_bounds_test.cpp.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "elf/analysis_budget.h"
#include "elf/elf_file.h"
#include "server/server_target.h"

namespace {

using namespace mysqltrace;
using elf::AnalysisLimits;
using elf::ElfFile;
using elf::Limit;

constexpr const char *kServer = "/usr/sbin/mariadbd";

Result<server::ServerTarget> analyse(const AnalysisLimits &limits) {
    auto f = ElfFile::open(kServer, limits);
    if (!f) {
        return f.error();
    }
    return server::analyse_server(std::move(f).value(), "pid 1");
}

class MariadbBounds : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(access(kServer, R_OK), 0) << kServer << " is missing: install mariadb-server";
    }
};

TEST_F(MariadbBounds, PassesUnderTheDefaults) {
    auto f = ElfFile::open(kServer);
    ASSERT_TRUE(f.ok()) << f.error().message;
    std::shared_ptr<const ElfFile> file = std::move(f).value();
    auto t = server::analyse_server(file, "pid 1");
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_FALSE(file->budget()->exhausted());
    EXPECT_EQ(t->stages.size(), 162u + 49u + 4u);  // static, dynamic, enter/exit_cond
    // What it used, against the limits (docs/security.md quotes these).
    const AnalysisLimits defaults = elf::default_analysis_limits();
    for (size_t i = 0; i < elf::kLimitCount; i++) {
        const auto l = static_cast<Limit>(i);
        std::printf("%-22s %12llu of %12llu\n", elf::limit_name(l),
                    static_cast<unsigned long long>(file->budget()->used(l)),
                    static_cast<unsigned long long>(defaults[l]));
        if (l != Limit::cpu_ms) {
            // Ten times the margin at least (the CPU time is the machine's).
            EXPECT_LE(file->budget()->used(l) * 10, defaults[l]) << elf::limit_name(l);
        }
    }
}

struct Case {
    Limit limit;
    uint64_t value;
    const char *message;  // after "/usr/sbin/mariadbd: analysis stopped: "
};

std::ostream &operator<<(std::ostream &out, const Case &c) {
    return out << elf::limit_name(c.limit) << "=" << c.value;
}

class EachLimit : public MariadbBounds, public ::testing::WithParamInterface<Case> {};

TEST_P(EachLimit, StopsTheAnalysisNamingIt) {
    AnalysisLimits limits = elf::default_analysis_limits();
    limits[GetParam().limit] = GetParam().value;
    auto t = analyse(limits);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message,
              std::string(kServer) + ": analysis stopped: " + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Mariadbd, EachLimit,
    ::testing::Values(
        Case{Limit::file_bytes, 1'000'000,
             "more than 1000000 bytes in the file (analysis limit file_bytes)"},
        Case{Limit::symbols, 10'000,
             "more than 10000 symbol table entries (analysis limit symbols)"},
        Case{Limit::symbol_name_bytes, 100'000,
             "more than 100000 bytes of symbol names (analysis limit symbol_name_bytes)"},
        Case{Limit::bytes_read, 1'000'000,
             "more than 1000000 bytes of code and data read (analysis limit bytes_read)"},
        Case{Limit::instructions, 10'000,
             "more than 10000 instructions disassembled (analysis limit instructions)"},
        Case{Limit::function_instructions, 100,
             "more than 100 instructions disassembled in one function (analysis limit "
             "function_instructions)"},
        Case{Limit::relocations, 1'000,
             "more than 1000 relocation entries (analysis limit relocations)"},
        Case{Limit::probe_sites, 100, "more than 100 probe sites (analysis limit probe_sites)"},
        Case{Limit::cpu_ms, 0, "more than 0 ms of CPU time spent (analysis limit cpu_ms)"}),
    [](const ::testing::TestParamInfo<Case> &p) { return elf::limit_name(p.param.limit); });

// A symbol's size is what its table says: a read is cut where the file ends,
// never allocated as asked.
TEST_F(MariadbBounds, ReadsStopAtTheEndOfTheFile) {
    auto f = ElfFile::open(kServer);
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto sym = (*f)->find("thd_get_thread_id");
    ASSERT_TRUE(sym.has_value());
    auto off = (*f)->vaddr_to_offset(sym->vaddr);
    ASSERT_TRUE(off.ok());
    auto bytes = (*f)->read(sym->vaddr, SIZE_MAX);
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    EXPECT_EQ(bytes->size(), static_cast<size_t>((*f)->budget()->used(Limit::file_bytes) - *off));
    // Over bytes_read: refused, and so is every read after.
    AnalysisLimits small = elf::default_analysis_limits();
    small[Limit::bytes_read] = 64;
    auto g = ElfFile::open(kServer, small);
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_TRUE((*g)->read(sym->vaddr, 64).ok());
    auto over = (*g)->read(sym->vaddr, 1);
    ASSERT_FALSE(over.ok());
    EXPECT_EQ(over.error().message, std::string(kServer) +
                                        ": analysis stopped: more than 64 bytes of code and "
                                        "data read (analysis limit bytes_read)");
    EXPECT_FALSE((*g)->read(sym->vaddr, 0).ok());
}

// MYSQLTRACE_ANALYSIS_LIMITS: the way out for a larger binary, and a typo
// refuses every binary rather than being ignored.
TEST(AnalysisLimits, FromTheEnvironment) {
    AnalysisLimits l = elf::default_analysis_limits();
    ASSERT_TRUE(elf::apply_limits("instructions=20000000,cpu_ms=30000", l).ok());
    EXPECT_EQ(l[Limit::instructions], 20'000'000u);
    EXPECT_EQ(l[Limit::cpu_ms], 30'000u);
    EXPECT_EQ(l[Limit::symbols], elf::default_analysis_limits()[Limit::symbols]);
    for (const char *bad : {"instruction=5", "cpu_ms=", "cpu_ms=10ms", "=5", "symbols"}) {
        auto r = elf::apply_limits(bad, l);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.error().message.find("`" + std::string(bad) + "` is not NAME=NUMBER"), 0u)
            << r.error().message;
    }
    ASSERT_EQ(setenv("MYSQLTRACE_ANALYSIS_LIMITS", "symbols=7", 1), 0);
    EXPECT_EQ(elf::default_analysis_limits()[Limit::symbols], 7u);
    ASSERT_EQ(setenv("MYSQLTRACE_ANALYSIS_LIMITS", "symbols=7,bogus=1", 1), 0);
    elf::AnalysisBudget budget("x", elf::default_analysis_limits());
    unsetenv("MYSQLTRACE_ANALYSIS_LIMITS");
    EXPECT_FALSE(budget.charge(Limit::instructions));
    ASSERT_TRUE(budget.exceeded().has_value());
    EXPECT_EQ(budget.exceeded()->message.rfind("MYSQLTRACE_ANALYSIS_LIMITS: `bogus=1` is not", 0),
              0u)
        << budget.exceeded()->message;
}

}  // namespace
