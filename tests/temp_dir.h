// SPDX-License-Identifier: GPL-2.0-only
// A fresh directory under /tmp for one test. It goes, with everything in it,
// when the object does: also when a failed assertion ends the test early.
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace mysqltrace::test {

class TempDir {
  public:
    // /tmp/<prefix>-XXXXXX
    explicit TempDir(const std::string &prefix = "mysqltrace-test") {
        std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
        if (::mkdtemp(tmpl.data()) == nullptr) {
            ADD_FAILURE() << "mkdtemp " << tmpl << ": " << std::strerror(errno);
            return;
        }
        path_ = tmpl;
    }
    ~TempDir() {
        if (!path_.empty()) {
            std::error_code ec;
            std::filesystem::remove_all(path_, ec);
        }
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;

    // Empty when the directory could not be made (the test has failed then).
    const std::string &path() const { return path_; }
    std::string file(const std::string &name) const { return path_ + "/" + name; }

  private:
    std::string path_;
};

}  // namespace mysqltrace::test
