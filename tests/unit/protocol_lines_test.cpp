// SPDX-License-Identifier: GPL-2.0-only
// protocol::Lines, an event's detail lines: a vector to its readers, whose
// lines keep their buffers across clear() for the event object's next use.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "protocol/event.h"

namespace mysqltrace::protocol {
namespace {

using Seq = std::vector<std::string>;

TEST(Lines, ReadsLikeAVector) {
    Lines l;
    EXPECT_TRUE(l.empty());
    l.push_back("first");
    l.emplace_back() = "second";
    EXPECT_EQ(l.size(), 2u);
    EXPECT_EQ(l.front(), "first");
    EXPECT_EQ(l.back(), "second");
    EXPECT_EQ(l[1], "second");
    EXPECT_EQ(l.at(1), "second");
    EXPECT_THROW((void)l.at(2), std::out_of_range);
    EXPECT_EQ(l, (Seq{"first", "second"}));
    EXPECT_EQ(Seq(l.begin(), l.end()), (Seq{"first", "second"}));
}

TEST(Lines, ClearedLinesKeepTheirBuffersAndComeBackEmpty) {
    Lines l;
    const std::string long_line(200, 'x');  // past the in-object buffer
    l.push_back(long_line);
    l.push_back(long_line);
    const char *first = l[0].data();
    const char *second = l[1].data();
    l.clear();
    EXPECT_TRUE(l.empty());
    EXPECT_EQ(l.begin(), l.end());
    std::string &a = l.emplace_back();
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.data(), first);
    a += "again";
    std::string &b = l.emplace_back();
    EXPECT_TRUE(b.empty());
    EXPECT_EQ(b.data(), second);
    std::string &c = l.emplace_back();  // more lines than before
    c = "third";
    EXPECT_EQ(l, (Seq{"again", "", "third"}));
}

TEST(Lines, ALargeLineOrManyLinesAreNotKept) {
    Lines l;
    l.push_back(std::string(Lines::kKeepBytes + 1, 'x'));
    l.push_back(std::string(200, 'y'));
    const char *small = l[1].data();
    for (size_t i = 2; i < Lines::kKeepLines + 5; ++i) {
        l.emplace_back();
    }
    l.clear();
    EXPECT_LE(l.emplace_back().capacity(), Lines::kKeepBytes);  // given back
    EXPECT_EQ(l.emplace_back().data(), small);                  // kept
    l.clear();
    for (size_t i = 0; i < Lines::kKeepLines + 5; ++i) {
        EXPECT_TRUE(l.emplace_back().empty());
    }
    EXPECT_EQ(l.size(), Lines::kKeepLines + 5);
}

TEST(Lines, PushFrontPutsALineBeforeTheOthers) {
    Lines l{"a", "b"};
    l.push_front("note");
    EXPECT_EQ(l, (Seq{"note", "a", "b"}));
    l.clear();
    l.push_front("alone");  // into a kept line
    EXPECT_EQ(l, (Seq{"alone"}));
}

TEST(Lines, ACopyHoldsTheLinesOnly) {
    Lines l{"a", "b", "c"};
    l.clear();
    l.push_back("x");
    const Lines copy = l;
    EXPECT_EQ(copy, (Seq{"x"}));
    EXPECT_EQ(copy, l);
    Lines assigned{"1", "2", "3", "4"};
    assigned = l;
    EXPECT_EQ(assigned, (Seq{"x"}));
    assigned = {"p", "q"};
    EXPECT_EQ(assigned, (Seq{"p", "q"}));
    EXPECT_FALSE(assigned == l);
}

TEST(Lines, AMovedFromLinesIsEmptyAndUsable) {
    Lines from{"a", "b"};
    Lines to(std::move(from));
    EXPECT_EQ(to, (Seq{"a", "b"}));
    EXPECT_TRUE(from.empty());  // NOLINT(bugprone-use-after-move): the point
    from.push_back("c");
    EXPECT_EQ(from, (Seq{"c"}));
    Lines other{"x", "y", "z"};
    other = std::move(to);
    EXPECT_EQ(other, (Seq{"a", "b"}));
    EXPECT_TRUE(to.empty());  // NOLINT(bugprone-use-after-move)
    to.emplace_back() = "d";
    EXPECT_EQ(to, (Seq{"d"}));
}

TEST(Lines, MovedOntoItselfKeepsItsLines) {
    Lines l{"a", "b"};
    Lines &same = l;
    l = std::move(same);
    EXPECT_EQ(l.size(), 2u);
    EXPECT_EQ(l, (Seq{"a", "b"}));
}

}  // namespace
}  // namespace mysqltrace::protocol
