// SPDX-License-Identifier: GPL-2.0-only
#include "proc/kernel.h"

#include <cstdio>
#include <sys/utsname.h>

namespace mysqltrace::proc {

KernelRelease kernel_release() {
    KernelRelease k;
    utsname u{};
    if (uname(&u) != 0) {
        return k;
    }
    k.release = u.release;
    if (std::sscanf(u.release, "%d.%d", &k.major, &k.minor) != 2) {
        k.major = k.minor = 0;
    }
    return k;
}

}  // namespace mysqltrace::proc
