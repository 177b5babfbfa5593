// SPDX-License-Identifier: GPL-2.0-only
#include "output/output_file.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace {

using mysqltrace::output::OutputFile;

using mysqltrace::output::Rotation;

std::string slurp(const std::string &path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool exists(const std::string &path) {
    struct stat st {};
    return lstat(path.c_str(), &st) == 0;
}

// "event 00 ......\n": 24 bytes each, numbered so order can be checked.
std::string event(int i) {
    std::string s = "event " + std::string(i < 10 ? "0" : "") + std::to_string(i) + " ";
    return s + std::string(23 - s.size(), '.') + "\n";
}

TEST(OutputFile, CreatedOwnerOnly) {
    mysqltrace::test::TempDir tmp("mysqltrace-unit");
    const std::string &dir = tmp.path();
    std::string path = dir + "/out.txt";
    {
        auto o = OutputFile::open(path);
        ASSERT_TRUE(o.ok());
        (*o)->write("hello\n");
    }
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(), "hello\n");
}

TEST(OutputFile, RefusesSymlink) {
    mysqltrace::test::TempDir tmp("mysqltrace-unit");
    const std::string &dir = tmp.path();
    std::string target = dir + "/target";
    std::string link = dir + "/link";
    ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
    auto o = OutputFile::open(link);
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.error().message, "cannot create " + link + ": Too many levels of symbolic links");
    EXPECT_NE(access(target.c_str(), F_OK), 0);  // nothing created through the link
}

TEST(OutputFile, FullDiskDisablesOutputWithMessage) {
    // /dev/full fails every write with ENOSPC, like a full disk.
    auto o = OutputFile::open("/dev/full");
    ASSERT_TRUE(o.ok());
    testing::internal::CaptureStderr();
    for (int i = 0; i < 10000; i++) {
        (*o)->write("0123456789abcdef");
    }
    (*o)->flush();
    (*o)->write("more");
    (*o)->flush();
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_TRUE((*o)->failed());
    EXPECT_EQ(
        err,
        "mysqltrace: writing /dev/full failed: No space left on device; this output is disabled\n");
}

TEST(OutputFile, RotatesBeforeExceedingSizeKeepingWholeEvents) {
    mysqltrace::test::TempDir tmp("mysqltrace-unit");
    const std::string &dir = tmp.path();
    std::string path = dir + "/trace.log";
    {
        // Four 24-byte events fit in 100 bytes; the fifth starts a new file.
        auto o = OutputFile::open(path, false, Rotation{100, 2});
        ASSERT_TRUE(o.ok()) << o.error().message;
        for (int i = 0; i < 14; i++) {
            (*o)->write(event(i));
        }
        EXPECT_FALSE((*o)->failed());
    }
    std::string all;
    for (int i = 0; i < 14; i++) {
        all += event(i);
    }
    // 14 events: files of 4, 4, 4, 2; the first file was dropped (keep 2).
    EXPECT_EQ(slurp(path + ".2"), all.substr(4 * 24, 4 * 24));
    EXPECT_EQ(slurp(path + ".1"), all.substr(8 * 24, 4 * 24));
    EXPECT_EQ(slurp(path), all.substr(12 * 24));
    EXPECT_FALSE(exists(path + ".3"));
    for (const std::string &p : {path, path + ".1", path + ".2"}) {
        struct stat st {};
        ASSERT_EQ(stat(p.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0600u) << p;
        EXPECT_LE(st.st_size, 100) << p;
    }
}

// The same with lines rendered in place: they wait in a batch, yet each file
// ends where it did, and write() and flush() keep the order.
TEST(OutputFile, LinesInPlaceRotateAsWritesDo) {
    mysqltrace::test::TempDir tmp("mysqltrace-unit");
    const std::string path = tmp.path() + "/trace.log";
    std::string all;
    {
        auto o = OutputFile::open(path, false, Rotation{100, 2});
        ASSERT_TRUE(o.ok()) << o.error().message;
        for (int i = 0; i < 14; i++) {
            if (i == 6) {
                (*o)->write(event(i));
            } else {
                (*o)->line() += event(i);
                (*o)->end_line();
            }
            all += event(i);
            if (i == 9) {
                (*o)->flush();
            }
        }
    }
    EXPECT_EQ(slurp(path + ".2"), all.substr(4 * 24, 4 * 24));
    EXPECT_EQ(slurp(path + ".1"), all.substr(8 * 24, 4 * 24));
    EXPECT_EQ(slurp(path), all.substr(12 * 24));
    EXPECT_FALSE(exists(path + ".3"));
}

TEST(OutputFile, LinesInPlaceGoOutInBatchesAndOnFlush) {
    mysqltrace::test::TempDir tmp("mysqltrace-unit");
    const std::string path = tmp.path() + "/trace.log";
    auto o = OutputFile::open(path);
    ASSERT_TRUE(o.ok());
    std::string all;
    for (int i = 0; i < 10; i++) {
        (*o)->line() += event(i);
        (*o)->end_line();
        all += event(i);
    }
    (*o)->flush();
    EXPECT_EQ(slurp(path), all);
    // Past 256 KiB the batch goes to the file, before any more lines.
    std::string line(1000, 'y');
    line.back() = '\n';
    for (int i = 0; i < 300; i++) {
        (*o)->line() += line;
        (*o)->end_line();
        all += line;
        // 263 lines of 1000 bytes pass 256 KiB.
        if (i == 261) {
            EXPECT_EQ(slurp(path).size(), 240u) << "the batch is not full yet";
        }
        if (i == 262) {
            EXPECT_TRUE(slurp(path) == all) << "the batch went out whole";
        }
    }
    (*o)->flush();
    EXPECT_EQ(slurp(path), all);
}

// write() goes through the stream's buffer, lines past it: what the stream
// holds still goes first.
TEST(OutputFile, WritesAndLinesKeepTheirOrder) {
    mysqltrace::test::TempDir tmp("mysqltrace-unit");
    const std::string path = tmp.path() + "/trace.log";
    auto o = OutputFile::open(path);
    ASSERT_TRUE(o.ok());
    std::string all;
    for (int i = 0; i < 12; i++) {
        if (i % 3 == 0) {
            (*o)->write(event(i));
        } else {
            (*o)->line() += event(i);
            (*o)->end_line();
        }
        all += event(i);
        if (i % 5 == 4) {
            (*o)->flush();
        }
    }
    (*o)->flush();
    EXPECT_EQ(slurp(path), all);
}

TEST(OutputFile, EventLargerThanRotationSizeIsWrittenWhole) {
    mysqltrace::test::TempDir tmp("mysqltrace-unit");
    const std::string &dir = tmp.path();
    std::string path = dir + "/trace.log";
    std::string big(300, 'x');
    {
        auto o = OutputFile::open(path, false, Rotation{100, 3});
        ASSERT_TRUE(o.ok());
        (*o)->write("small\n");
        (*o)->write(big);
        (*o)->write("after\n");
    }
    EXPECT_EQ(slurp(path + ".2"), "small\n");
    EXPECT_EQ(slurp(path + ".1"), big);
    EXPECT_EQ(slurp(path), "after\n");
}

TEST(OutputFile, RotationKeepsAnExistingFileInsteadOfTruncatingIt) {
    mysqltrace::test::TempDir tmp("mysqltrace-unit");
    const std::string &dir = tmp.path();
    std::string path = dir + "/trace.log";
    std::ofstream(path) << "previous run\n";
    std::ofstream(path + ".1") << "older run\n";
    {
        auto o = OutputFile::open(path, false, Rotation{1 << 20, 5});
        ASSERT_TRUE(o.ok());
        (*o)->write("this run\n");
    }
    EXPECT_EQ(slurp(path), "this run\n");
    EXPECT_EQ(slurp(path + ".1"), "previous run\n");
    EXPECT_EQ(slurp(path + ".2"), "older run\n");
}

TEST(OutputFile, RotationWithKeepZeroStartsOver) {
    mysqltrace::test::TempDir tmp("mysqltrace-unit");
    const std::string &dir = tmp.path();
    std::string path = dir + "/trace.log";
    {
        auto o = OutputFile::open(path, false, Rotation{10, 0});
        ASSERT_TRUE(o.ok());
        (*o)->write("first 789\n");
        (*o)->write("second\n");
    }
    EXPECT_EQ(slurp(path), "second\n");
    EXPECT_FALSE(exists(path + ".1"));
}

TEST(OutputFile, RotationRefusesSymlinkAndMovesRotatedLinksUnfollowed) {
    mysqltrace::test::TempDir tmp("mysqltrace-unit");
    const std::string &dir = tmp.path();
    std::string path = dir + "/trace.log";
    std::string target = dir + "/target";
    ASSERT_EQ(symlink(target.c_str(), path.c_str()), 0);
    auto refused = OutputFile::open(path, false, Rotation{100, 2});
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().message,
              "cannot create " + path + ": Too many levels of symbolic links");
    ASSERT_EQ(unlink(path.c_str()), 0);

    // A link planted among the rotated files is renamed, not written through.
    ASSERT_EQ(symlink(target.c_str(), (path + ".1").c_str()), 0);
    {
        auto o = OutputFile::open(path, false, Rotation{10, 2});
        ASSERT_TRUE(o.ok());
        (*o)->write("one 56789\n");
        (*o)->write("two 56789\n");
    }
    EXPECT_FALSE(exists(target));
    struct stat st {};
    ASSERT_EQ(lstat((path + ".2").c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode));
    EXPECT_EQ(slurp(path + ".1"), "one 56789\n");
    EXPECT_EQ(slurp(path), "two 56789\n");
}

TEST(OutputFile, FailedRotationDisablesOutputWithMessage) {
    mysqltrace::test::TempDir tmp("mysqltrace-unit");
    const std::string &dir = tmp.path();
    std::string path = dir + "/trace.log";
    auto o = OutputFile::open(path, false, Rotation{10, 2});
    ASSERT_TRUE(o.ok());
    (*o)->write("one 56789\n");
    // The directory goes away: the new file cannot be created.
    ASSERT_EQ(unlink(path.c_str()), 0);
    ASSERT_EQ(rmdir(dir.c_str()), 0);
    testing::internal::CaptureStderr();
    (*o)->write("two 56789\n");
    (*o)->write("three 789\n");
    (*o)->flush();
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_TRUE((*o)->failed());
    EXPECT_EQ(err, "mysqltrace: rotating " + path +
                       " failed: No such file or directory; this output is disabled\n");
}

TEST(OutputFile, RotationNeedsAFile) {
    auto o = OutputFile::open("", false, Rotation{100, 2});
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.error().message, "rotation needs an output file, not standard output");
}

}  // namespace
