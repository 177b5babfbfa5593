// SPDX-License-Identifier: GPL-2.0-only
// Gate for the privileged test tier. Without root a priv test skips, unless
// MYSQLTRACE_REQUIRE_PRIV=1 (as CI sets it), where it fails: a CI run that
// could not load BPF or start a server must never look green.
#pragma once

#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <gtest/gtest.h>

namespace mysqltrace::test {

inline bool priv_required() {
    const char *v = std::getenv("MYSQLTRACE_REQUIRE_PRIV");
    return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace mysqltrace::test

#define MYSQLTRACE_REQUIRE_ROOT()                                                          \
    do {                                                                                   \
        if (::geteuid() != 0) {                                                            \
            if (::mysqltrace::test::priv_required()) {                                     \
                FAIL() << "this privileged test needs root and MYSQLTRACE_REQUIRE_PRIV=1"; \
            }                                                                              \
            GTEST_SKIP() << "needs root (set MYSQLTRACE_REQUIRE_PRIV=1 to fail instead)";  \
        }                                                                                  \
    } while (0)
