// SPDX-License-Identifier: GPL-2.0-only
#include "elf/probe_site.h"

#include <vector>

#include <gtest/gtest.h>

using mysqltrace::elf::classify_instruction;
using mysqltrace::elf::place_entry_probe;
using mysqltrace::elf::ProbeCost;

namespace {

ProbeCost cost(std::vector<uint8_t> bytes) {
    return classify_instruction(bytes);
}

TEST(ProbeSite, EmulatedInstructions) {
    EXPECT_EQ(cost({0x55}), ProbeCost::emulated);                           // push rbp
    EXPECT_EQ(cost({0x41, 0x57}), ProbeCost::emulated);                     // push r15
    EXPECT_EQ(cost({0x90}), ProbeCost::emulated);                           // nop
    EXPECT_EQ(cost({0xe8, 0, 0, 0, 0}), ProbeCost::emulated);               // call rel32
    EXPECT_EQ(cost({0xe9, 0, 0, 0, 0}), ProbeCost::emulated);               // jmp rel32
    EXPECT_EQ(cost({0xeb, 0x10}), ProbeCost::emulated);                     // jmp rel8
    EXPECT_EQ(cost({0x75, 0x10}), ProbeCost::emulated);                     // jne rel8
    EXPECT_EQ(cost({0x0f, 0x85, 1, 0, 0, 0}), ProbeCost::emulated);         // jne rel32
    EXPECT_EQ(cost({0x0f, 0x1f, 0x44, 0x00, 0x00}), ProbeCost::optimized);  // nop5
}

TEST(ProbeSite, SingleSteppedInstructions) {
    EXPECT_EQ(cost({0xf3, 0x0f, 0x1e, 0xfa}), ProbeCost::single_stepped);        // endbr64
    EXPECT_EQ(cost({0x48, 0x89, 0xe5}), ProbeCost::single_stepped);              // mov rbp, rsp
    EXPECT_EQ(cost({0xc3}), ProbeCost::single_stepped);                          // ret
    EXPECT_EQ(cost({0x31, 0xc0}), ProbeCost::single_stepped);                    // xor eax, eax
    EXPECT_EQ(cost({0x0f, 0x1f, 0x40, 0x00}), ProbeCost::single_stepped);        // 4-byte nop
    EXPECT_EQ(cost({0xff, 0x90, 0x38, 0x02, 0, 0}), ProbeCost::single_stepped);  // call *0x238(rax)
    EXPECT_EQ(cost({0x48, 0x8d, 0x05, 0, 0, 0, 0}), ProbeCost::single_stepped);  // lea
}

TEST(ProbeSite, UndecodableBytes) {
    EXPECT_EQ(cost({}), ProbeCost::undecodable);
    EXPECT_EQ(cost({0x0f}), ProbeCost::undecodable);
}

TEST(ProbeSite, EntrySkipsEndbr64) {
    std::vector<uint8_t> fn = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5};
    auto site = place_entry_probe(fn, 0x1000);
    EXPECT_TRUE(site.skipped_endbr);
    EXPECT_EQ(site.offset, 0x1004u);
    EXPECT_EQ(site.cost, ProbeCost::emulated);
    EXPECT_EQ(site.instruction, "push rbp");
}

TEST(ProbeSite, EntryWithoutEndbr64) {
    std::vector<uint8_t> fn = {0x48, 0x89, 0xe5, 0x55};
    auto site = place_entry_probe(fn, 0x2000);
    EXPECT_FALSE(site.skipped_endbr);
    EXPECT_EQ(site.offset, 0x2000u);
    EXPECT_EQ(site.cost, ProbeCost::single_stepped);
    EXPECT_EQ(site.instruction, "mov rbp, rsp");
}

}  // namespace
