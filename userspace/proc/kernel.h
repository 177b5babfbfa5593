// SPDX-License-Identifier: GPL-2.0-only
// The running kernel's release, for what depends on its version.
#pragma once

#include <string>

namespace mysqltrace::proc {

struct KernelRelease {
    std::string release;  // uname -r: "6.18.44-..."
    int major = 0;        // 0.0 when the release cannot be read
    int minor = 0;
    bool at_least(int maj, int min) const { return major > maj || (major == maj && minor >= min); }
};

KernelRelease kernel_release();

}  // namespace mysqltrace::proc
