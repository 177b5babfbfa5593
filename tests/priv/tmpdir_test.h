// SPDX-License-Identifier: GPL-2.0-only
// The fixture of the tests that run the agent or `top` over the harness's
// servers: a fresh directory (base_) made under /tmp and set as TMPDIR, so
// the harness's servers go under it and an agent given it as
// --socket-prefix traces only those (other servers of this machine, from
// tests running in parallel, are left alone); TMPDIR restored and the
// directory removed however the test ends. A fixture that stops things of
// its own in TearDown does so before calling this one's.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "priv/priv.h"

namespace mysqltrace::test {

class TmpdirTest : public ::testing::Test {
  protected:
    // `prefix`: the directory's name before its random part ("mtagent").
    explicit TmpdirTest(std::string prefix) : prefix_(std::move(prefix)) {}

    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        std::string templ = "/tmp/" + prefix_ + "-XXXXXX";
        ASSERT_NE(::mkdtemp(templ.data()), nullptr);
        base_ = templ;
        const char *old = std::getenv("TMPDIR");
        had_tmpdir_ = old != nullptr;
        old_tmpdir_ = old ? old : "";
        ::setenv("TMPDIR", base_.c_str(), 1);
    }
    void TearDown() override {
        if (base_.empty()) {
            return;  // SetUp stopped before making it
        }
        if (had_tmpdir_) {
            ::setenv("TMPDIR", old_tmpdir_.c_str(), 1);
        } else {
            ::unsetenv("TMPDIR");
        }
        std::error_code ec;
        std::filesystem::remove_all(base_, ec);
    }

    std::string base_;

  private:
    std::string prefix_, old_tmpdir_;
    bool had_tmpdir_ = false;
};

}  // namespace mysqltrace::test
