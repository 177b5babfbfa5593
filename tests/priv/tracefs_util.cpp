// SPDX-License-Identifier: GPL-2.0-only
#include "priv/tracefs_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "priv/cli_util.h"

namespace mysqltrace::test {

const char *const kUnmountTracefs =
    "for m in $(findmnt -n -l -o TARGET -t tracefs,debugfs | sort -r); do umount -l \"$m\"; done; ";

const char *const kMountTracefs =
    "findmnt -n /sys/kernel/tracing >/dev/null || "
    "mount -t tracefs tracefs /sys/kernel/tracing || exit 99; ";

const char *const kNoTracefsMountPoint =
    "hold=$(mktemp -d) && mount --bind /sys/kernel/btf \"$hold\" && "
    "mount -t tmpfs -o size=64k tmpfs /sys/kernel && mkdir /sys/kernel/btf && "
    "mount --move \"$hold\" /sys/kernel/btf && mount -o remount,ro /sys/kernel && "
    "rmdir \"$hold\" || exit 99; ";

std::set<std::string> tracepoints_of(pid_t pid) {
    auto r = run_command({"/bin/sh", "-c", "exec bpftool -j perf show"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> out;
    for (const auto &e : nlohmann::json::parse(r.out)) {
        std::string type = e.value("fd_type", "");
        if (e.value("pid", -1) == pid && (type == "tracepoint" || type == "raw_tracepoint")) {
            out.insert(type + " " + e.value("tracepoint", ""));
        }
    }
    return out;
}

std::vector<std::string> in_namespace(const std::string &setup) {
    return {"/usr/bin/unshare",    "--mount", "--propagation", "private", "sh", "-c",
            setup + "exec \"$@\"", "sh"};
}

}  // namespace mysqltrace::test
