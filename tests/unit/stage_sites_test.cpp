// SPDX-License-Identifier: GPL-2.0-only
#include "server/stage_sites.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <gtest/gtest.h>

// A stage and two inlined enter_stage shapes in this test binary (a PIE, so
// stage_mt_fake's m_name is a relative relocation, as in mariadbd): a static
// site, with its PSI call block, and a dynamic one (exit_cond style).
asm(R"(
    .text
    .globl mt_fake_stage_user
    .type mt_fake_stage_user, @function
mt_fake_stage_user:
    pushq %rbx
    movq %rdi, %rbx
    leaq stage_mt_fake(%rip), %rax
    movl (%rax), %edi
    movq 8(%rax), %rsi
    movq 0x1700(%rbx), %rax
    movl %edi, 0x1508(%rbx)
    movq %rsi, 0x1500(%rbx)
    testq %rax, %rax
    jne 1f
    movq %rbx, %rax
    leaq .Lmt_file(%rip), %rsi
    movl $1234, %edx
    call *0x238(%rax)
1:  popq %rbx
    ret
    .size mt_fake_stage_user, .-mt_fake_stage_user
    .globl mt_fake_exit_cond
    .type mt_fake_exit_cond, @function
mt_fake_exit_cond:
    movl (%rsi), %eax
    movq 8(%rsi), %rdx
    movq 0x1700(%rdi), %rcx
    movl %eax, 0x1508(%rdi)
    movq %rdx, 0x1500(%rdi)
    testq %rcx, %rcx
    jne 1f
1:  ret
    .size mt_fake_exit_cond, .-mt_fake_exit_cond
    .data
    .globl stage_mt_fake
    .type stage_mt_fake, @object
    .size stage_mt_fake, 24
    .balign 8
stage_mt_fake:
    .long 7, 0
    .quad .Lmt_name
    .long 0, 0
    .section .rodata
.Lmt_name:
    .string "mt fake stage"
.Lmt_file:
    .string "./sql/mt_fake.cc"
    .text
)");

namespace {

using mysqltrace::elf::ElfFile;
using mysqltrace::elf::ProbeCost;
using mysqltrace::server::derive_thd_layout;
using mysqltrace::server::find_stage_sites;
using mysqltrace::server::StageScan;
using mysqltrace::server::StageSite;
using mysqltrace::server::ThdLayout;

StageScan scan(const ElfFile &f, const ThdLayout &layout) {
    const auto t0 = std::chrono::steady_clock::now();
    auto s = find_stage_sites(f, layout);
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (!s.ok()) {
        return {};
    }
    std::printf("%s: %zu stage sites, %zu dynamic, %zu lea refs, in %.1f ms\n", f.path().c_str(),
                s->sites.size(), s->dynamic_sites.size(), s->lea_refs,
                static_cast<double>(us) / 1000);
    return std::move(s).value();
}

const StageSite *find(const std::vector<StageSite> &sites, const std::string &function,
                      const std::string &symbol = "") {
    auto it = std::find_if(sites.begin(), sites.end(), [&](const StageSite &s) {
        return s.function == function && s.stage_symbol == symbol;
    });
    return it == sites.end() ? nullptr : &*it;
}

TEST(StageSites, FindsTheShapeInThisBinary) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok());
    ThdLayout layout;
    layout.proc_info = 0x1500;
    layout.stage_key = 0x1508;
    for (const ThdLayout &l : {layout, ThdLayout{}}) {  // given, then learnt
        StageScan s = scan(**f, l);
        EXPECT_EQ(s.proc_info, 0x1500);
        EXPECT_EQ(s.stage_key, 0x1508);
        EXPECT_EQ(s.lea_refs, 1u);
        ASSERT_EQ(s.sites.size(), 1u);
        const StageSite &site = s.sites[0];
        EXPECT_EQ(site.stage_symbol, "stage_mt_fake");
        EXPECT_EQ(site.stage_name, "mt fake stage");
        EXPECT_EQ(site.function, "mt_fake_stage_user");
        EXPECT_EQ(site.source_file, "./sql/mt_fake.cc");
        EXPECT_EQ(site.source_line, 1234u);
        EXPECT_EQ(site.thd_register, "rbx");
        EXPECT_EQ(site.thd_bias, 0);
        EXPECT_EQ(site.probe_cost, ProbeCost::emulated);
        auto sym = (*f)->find("mt_fake_stage_user");
        ASSERT_TRUE(sym);
        EXPECT_EQ(site.lea_vaddr, sym->vaddr + 4);  // after push rbx; mov rdi, rbx
        auto jne = (*f)->read(site.probe_vaddr, 1);
        ASSERT_TRUE(jne.ok());
        EXPECT_EQ((*jne)[0], 0x75);
    }
    // The dynamic site is only recognised at the known offsets.
    StageScan s = scan(**f, layout);
    const StageSite *dyn = find(s.dynamic_sites, "mt_fake_exit_cond");
    ASSERT_NE(dyn, nullptr);
    EXPECT_EQ(dyn->thd_register, "rdi");
    EXPECT_EQ(dyn->probe_cost, ProbeCost::emulated);
}

// Debian's MariaDB 10.11 build (CI installs mariadb-server). The counts were
// cross-checked with `objdump -d`: 211 lea of a stage_ symbol (162 inlined
// enter_stage, the rest arguments of set_thd_stage_info and the like) and 211
// stores of m_key into the THD (162 static sites + 49 dynamic ones).
class MariaDb1011 : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        constexpr const char *kServer = "/usr/sbin/mariadbd";
        ASSERT_EQ(access(kServer, R_OK), 0) << kServer << " is missing: install mariadb-server";
        auto f = ElfFile::open(kServer);
        ASSERT_TRUE(f.ok()) << f.error().message;
        file_ = std::move(f).value().release();
        auto layout = derive_thd_layout(*file_);
        ASSERT_TRUE(layout.ok()) << layout.error().message;
        scan_ = new StageScan(scan(*file_, *layout));
    }
    static void TearDownTestSuite() {
        delete scan_;
        delete file_;
    }
    void SetUp() override { ASSERT_NE(scan_, nullptr); }

    static inline ElfFile *file_ = nullptr;
    static inline StageScan *scan_ = nullptr;
};

constexpr const char *kDispatch = "_Z16dispatch_command19enum_server_commandP3THDPcjb";

TEST_F(MariaDb1011, Counts) {
    EXPECT_EQ(scan_->sites.size(), 162u);
    EXPECT_EQ(scan_->dynamic_sites.size(), 49u);
    EXPECT_EQ(scan_->lea_refs, 211u);
    EXPECT_EQ(scan_->proc_info, 0x2600);
    EXPECT_EQ(scan_->stage_key, 0x2608);
    size_t with_file = 0;
    for (const StageSite &s : scan_->sites) {
        EXPECT_EQ(s.probe_cost, ProbeCost::emulated) << s.stage_symbol;
        EXPECT_EQ(s.probe_offset, *file_->vaddr_to_offset(s.probe_vaddr));
        EXPECT_FALSE(s.stage_name.empty()) << s.stage_symbol;
        EXPECT_GT(s.source_line, 0u) << s.stage_symbol;
        EXPECT_LT(s.source_line, 30000u) << s.stage_symbol;
        EXPECT_LT(s.lea_vaddr, s.probe_vaddr);
        with_file += !s.source_file.empty();
    }
    EXPECT_EQ(with_file, 157u);
    for (const StageSite &s : scan_->dynamic_sites) {
        EXPECT_EQ(s.probe_cost, ProbeCost::emulated) << std::hex << s.probe_vaddr;
        EXPECT_EQ(s.thd_bias, 0);
    }
}

TEST_F(MariaDb1011, EndOfCommand) {
    size_t n = std::count_if(scan_->sites.begin(), scan_->sites.end(), [](const StageSite &s) {
        return s.function == kDispatch && s.stage_symbol == "stage_cleaning_up";
    });
    EXPECT_EQ(n, 1u);
    const StageSite *s = find(scan_->sites, kDispatch, "stage_cleaning_up");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->probe_vaddr, 0x83aadfu);
    EXPECT_EQ(s->lea_vaddr, 0x83aabbu);
    EXPECT_EQ(s->stage_name, "Reset for next command");
    EXPECT_EQ(s->source_file, "./sql/sql_parse.cc");
    EXPECT_EQ(s->source_line, 2492u);
    EXPECT_EQ(s->thd_register, "rbx");
    EXPECT_EQ(s->probe_cost, ProbeCost::emulated);
    auto code = file_->read(s->probe_vaddr, 16);
    ASSERT_TRUE(code.ok());
    EXPECT_EQ(mysqltrace::elf::classify_instruction(*code), ProbeCost::emulated);
}

TEST_F(MariaDb1011, WellKnownStages) {
    struct Want {
        const char *symbol, *function, *name, *file;
        uint32_t line;
    } wants[] = {
        {"stage_starting", kDispatch, "starting", "./sql/sql_parse.cc", 1989},
        {"stage_opening_tables",
         "_Z11open_tablesP3THDRK14DDL_options_stPP10TABLE_LISTPjjP19Prelocking_strategy",
         "Opening tables", "./sql/sql_base.cc", 4676},
        {"stage_system_lock", "_Z17mysql_lock_tablesP3THDP13st_mysql_lockj", "System lock",
         "./sql/lock.cc", 340},
        {"stage_optimizing", "_ZN4JOIN14optimize_innerEv", "Optimizing", "./sql/sql_select.cc",
         2163},
        {"stage_statistics", "_ZN4JOIN14optimize_innerEv", "Statistics", "", 2677},
        {"stage_executing", "_ZN4JOIN10exec_innerEv", "Executing", "./sql/sql_select.cc", 4825},
        {"stage_sending_data", "_ZN4JOIN10exec_innerEv", "Sending data", "", 5017},
        {"stage_query_end", "_Z21mysql_execute_commandP3THDb", "Query end", "./sql/sql_parse.cc",
         6202},
        {"stage_closing_tables", "_Z19close_thread_tablesP3THD", "closing tables",
         "./sql/sql_base.cc", 843},
        {"stage_freeing_items", "_Z11mysql_parseP3THDPcjP12Parser_state", "Freeing items",
         "./sql/sql_parse.cc", 8227},
        {"stage_commit", "_Z12trans_commitP3THD", "Commit", "./sql/transaction.cc", 269},
    };
    for (const Want &w : wants) {
        const StageSite *s = find(scan_->sites, w.function, w.symbol);
        ASSERT_NE(s, nullptr) << w.symbol << " in " << w.function;
        EXPECT_EQ(s->stage_name, w.name);
        EXPECT_EQ(s->source_file, w.file) << w.symbol;
        EXPECT_EQ(s->source_line, w.line) << w.symbol;
    }
    // Delayed_insert embeds its THD 0x20 bytes in.
    const StageSite *s = find(scan_->sites, "handle_delayed_insert", "stage_waiting_for_insert");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->thd_bias, 0x20);
    EXPECT_EQ(s->thd_register, "r14");
    // exit_cond() restoring the previous stage: a dynamic site.
    EXPECT_NE(find(scan_->dynamic_sites, "_Z13thd_exit_condP3THDPK17PSI_stage_info_v1PKcS5_i"),
              nullptr);
}

TEST_F(MariaDb1011, LearnsTheStageFieldsWithoutALayout) {
    StageScan s = scan(*file_, ThdLayout{});
    EXPECT_EQ(s.proc_info, 0x2600);
    EXPECT_EQ(s.stage_key, 0x2608);
    EXPECT_EQ(s.sites.size(), scan_->sites.size());
    EXPECT_EQ(s.dynamic_sites.size(), scan_->dynamic_sites.size());
}

}  // namespace
