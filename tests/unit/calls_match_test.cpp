// SPDX-License-Identifier: GPL-2.0-only
// Which functions `mysqltrace calls --match` selects: glob matching over
// demangled names, aliases, symbols that never match, probe placement, and
// the mapped files searched. No root needed: this test's own executable is
// the target.
#include <unistd.h>

#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "calls/functions.h"
#include "calls/match.h"
#include "calls/usdt_notes.h"
#include "elf/elf_file.h"
#include "proc/maps.h"

// Functions with known first instructions and names.
asm(R"(
    .text
    .globl mt_calls_cheap
    .type mt_calls_cheap, @function
mt_calls_cheap:
    endbr64
    push %rbp
    pop %rbp
    ret
    .size mt_calls_cheap, .-mt_calls_cheap
    .globl mt_calls_costly
    .type mt_calls_costly, @function
mt_calls_costly:
    movl %edi, %eax
    ret
    .size mt_calls_costly, .-mt_calls_costly
    .globl mt_calls_alias_long
    .type mt_calls_alias_long, @function
    .globl mt_calls_alias
    .type mt_calls_alias, @function
mt_calls_alias_long:
mt_calls_alias:
    push %rbx
    pop %rbx
    ret
    .size mt_calls_alias_long, .-mt_calls_alias_long
    .size mt_calls_alias, .-mt_calls_alias
    .globl mt_calls_empty
    .type mt_calls_empty, @function
mt_calls_empty:
    .size mt_calls_empty, 0
    .type mt_calls_split.cold, @function
mt_calls_split.cold:
    push %rbp
    ret
    .size mt_calls_split.cold, .-mt_calls_split.cold
)");

extern "C" void mt_calls_cheap();

namespace {

using namespace mysqltrace::calls;

TEST(CallsMatch, Demangles) {
    EXPECT_EQ(demangle("_Z16dispatch_command19enum_server_commandP3THDPcjb"),
              "dispatch_command(enum_server_command, THD*, char*, unsigned int, bool)");
    EXPECT_EQ(demangle("mysql_parse"), "mysql_parse");
    EXPECT_EQ(demangle("_Znot_a_valid_name"), "_Znot_a_valid_name");
}

TEST(CallsMatch, StripsParameterLists) {
    EXPECT_EQ(without_params("dispatch_command(enum_server_command, THD*, char*, unsigned int, "
                             "bool)"),
              "dispatch_command");
    EXPECT_EQ(without_params("ns::Foo::bar(int) const"), "ns::Foo::bar");
    EXPECT_EQ(without_params("Foo::operator()(int)"), "Foo::operator()");
    EXPECT_EQ(without_params("(anonymous namespace)::f(void (*)(int))"),
              "(anonymous namespace)::f");
    EXPECT_EQ(without_params("f(int) [clone .isra.0]"), "f");
    EXPECT_EQ(without_params("std::vector<int, std::allocator<int> >::push_back(int const&) &&"),
              "std::vector<int, std::allocator<int> >::push_back");
    EXPECT_EQ(without_params("plain_c_function"), "plain_c_function");
    EXPECT_EQ(without_params("(anonymous namespace)"), "(anonymous namespace)");
}

TEST(CallsMatch, GlobsWithAlternatives) {
    GlobSet g({"dispatch_command|mysql_parse", "THD::*"});
    EXPECT_EQ(g.patterns(),
              (std::vector<std::string>{"dispatch_command", "mysql_parse", "THD::*"}));
    EXPECT_TRUE(g.matches("mysql_parse"));
    EXPECT_TRUE(g.matches("THD::enter_stage"));
    EXPECT_FALSE(g.matches("mysql_parse2"));
    EXPECT_FALSE(g.matches("do_command"));
    EXPECT_EQ(g.describe(), "'dispatch_command|mysql_parse', 'THD::*'");
    EXPECT_TRUE(GlobSet({"|"}).empty());
}

TEST(CallsMatch, MatchesWithOrWithoutParameters) {
    const FunctionName f = function_name("_Z16dispatch_command19enum_server_commandP3THDPcjb");
    EXPECT_EQ(f.name, "dispatch_command");
    EXPECT_TRUE(matches(GlobSet({"dispatch_command"}), f));
    EXPECT_TRUE(matches(GlobSet({"dispatch_command(*THD*)"}), f));
    EXPECT_TRUE(matches(GlobSet({"_Z16dispatch*"}), f));  // the symbol itself
    EXPECT_FALSE(matches(GlobSet({"dispatch"}), f));
    EXPECT_TRUE(matches(GlobSet({"mysql_*"}), function_name("mysql_parse")));
}

TEST(CallsMatch, NeverTracesWhatReturnProbesBreak) {
    for (const char *n : {"setjmp", "__sigsetjmp", "longjmp", "swapcontext", "vfork",
                          "_Unwind_RaiseException", "__cxa_throw", "_dl_runtime_resolve_xsavec",
                          "__x86_indirect_thunk_rax", "pthread_exit"}) {
        EXPECT_TRUE(unsafe_to_trace(function_name(n))) << n;
    }
    EXPECT_FALSE(unsafe_to_trace(function_name("malloc")));
    EXPECT_FALSE(
        unsafe_to_trace(function_name("_Z16dispatch_command19enum_server_commandP3THDPcjb")));
}

Selection select_self(const std::vector<std::string> &globs) {
    Selection sel;
    auto files = mapped_files(getpid(), "/proc/self/exe");
    EXPECT_TRUE(files.ok()) << (files.ok() ? "" : files.error().message);
    if (!files.ok()) {
        return sel;
    }
    sel.files = std::move(files).value();
    auto elf = mysqltrace::elf::ElfFile::open(sel.files[0].open_path);
    EXPECT_TRUE(elf.ok());
    if (elf.ok()) {
        select_from_file(**elf, 0, GlobSet(globs), sel);
    }
    return sel;
}

const TracedFunction *by_name(const Selection &sel, const std::string &name) {
    for (const auto &f : sel.functions) {
        if (f.name.name == name) {
            return &f;
        }
    }
    return nullptr;
}

TEST(CallsSelect, PlacesProbesAndDedupesAliases) {
    Selection sel = select_self({"mt_calls_*"});
    // One per address, named by the shorter alias; no zero-size, no .cold part.
    std::vector<std::string> names;
    for (const auto &f : sel.functions) {
        names.push_back(f.name.name);
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names,
              (std::vector<std::string>{"mt_calls_alias", "mt_calls_cheap", "mt_calls_costly"}));
    const TracedFunction *cheap = by_name(sel, "mt_calls_cheap");
    ASSERT_NE(cheap, nullptr);
    EXPECT_TRUE(cheap->site.skipped_endbr);
    EXPECT_EQ(cheap->site.instruction, "push rbp");
    EXPECT_EQ(cheap->site.cost, mysqltrace::elf::ProbeCost::emulated);
    const TracedFunction *costly = by_name(sel, "mt_calls_costly");
    ASSERT_NE(costly, nullptr);
    EXPECT_EQ(costly->site.cost, mysqltrace::elf::ProbeCost::single_stepped);
    EXPECT_EQ(sel.costly(), 1u);
    // The probe offset is where that code is in this process: after endbr64.
    auto loc =
        mysqltrace::proc::locate_address(getpid(), reinterpret_cast<uint64_t>(&mt_calls_cheap) + 4);
    ASSERT_TRUE(loc.ok()) << loc.error().message;
    EXPECT_EQ(loc->offset, cheap->site.offset);
}

TEST(CallsSelect, NoMatchLeavesNothing) {
    Selection sel = select_self({"no_such_function_anywhere*"});
    EXPECT_TRUE(sel.functions.empty());
    EXPECT_TRUE(sel.unsafe.empty());
}

TEST(CallsSelect, MappedFiles) {
    auto all = mapped_files(getpid(), "");
    ASSERT_TRUE(all.ok()) << all.error().message;
    ASSERT_GE(all->size(), 2u);  // this executable and at least libc
    bool libc = false;
    for (const auto &f : *all) {
        EXPECT_FALSE(f.exec_ranges.empty()) << f.path;
        libc = libc || f.path.find("libc.so") != std::string::npos;
    }
    EXPECT_TRUE(libc);
    auto one = mapped_files(getpid(), "libc.so.6");
    ASSERT_TRUE(one.ok()) << one.error().message;
    ASSERT_EQ(one->size(), 1u);
    EXPECT_NE((*one)[0].path.find("libc.so.6"), std::string::npos);
    auto none = mapped_files(getpid(), "/no/such/lib.so");
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.error().message.find("/no/such/lib.so is not mapped executable by pid "),
              std::string::npos)
        << none.error().message;
}

TEST(CallsSelect, FindsTheUnwinders) {
    auto sel = select_functions(getpid(), GlobSet({"mt_calls_cheap"}), "/proc/self/exe");
    ASSERT_TRUE(sel.ok()) << sel.error().message;
    EXPECT_EQ(sel->functions.size(), 1u);
    // Searched: only this executable; guarded: libgcc_s / libstdc++ too.
    size_t searched = 0;
    for (const auto &f : sel->files) {
        searched += f.searched ? 1 : 0;
    }
    EXPECT_EQ(searched, 1u);
    bool raise = false, begin_catch = false;
    for (const auto &g : sel->guards) {
        raise = raise || g.symbol == "_Unwind_RaiseException";
        begin_catch = begin_catch || g.symbol == "__cxa_begin_catch";
    }
    EXPECT_TRUE(raise);
    EXPECT_TRUE(begin_catch);
}

TEST(CallsUsdt, ListsProbeNames) {
    auto names = usdt_names(MYSQLTRACE_TESTPROGS_DIR "/calltree");
    ASSERT_TRUE(names.ok()) << names.error().message;
    EXPECT_EQ(*names, (std::vector<UsdtName>{{"calltree", "mark"}}));
    // A program without USDT probes (this test's own links the doctor's
    // self-test probe in with the project's library).
    auto none = usdt_names(MYSQLTRACE_TESTPROGS_DIR "/calltree_cxx");
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty());
}

}  // namespace
