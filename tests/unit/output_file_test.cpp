// SPDX-License-Identifier: GPL-2.0-only
#include "output/output_file.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace {

using mysqltrace::output::OutputFile;

std::string temp_dir() {
    char tmpl[] = "/tmp/mysqltrace-unit-XXXXXX";
    const char *d = mkdtemp(tmpl);
    return d != nullptr ? d : "";
}

TEST(OutputFile, CreatedOwnerOnly) {
    std::string dir = temp_dir();
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
    unlink(path.c_str());
    rmdir(dir.c_str());
}

TEST(OutputFile, RefusesSymlink) {
    std::string dir = temp_dir();
    std::string target = dir + "/target";
    std::string link = dir + "/link";
    ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
    auto o = OutputFile::open(link);
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.error().message, "cannot create " + link + ": Too many levels of symbolic links");
    EXPECT_NE(access(target.c_str(), F_OK), 0);  // nothing created through the link
    unlink(link.c_str());
    rmdir(dir.c_str());
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

}  // namespace
