// SPDX-License-Identifier: GPL-2.0-only
// Finding tracefs in /proc/self/mountinfo (bpf/tracefs.h).
#include <gtest/gtest.h>

#include "bpf/tracefs.h"

namespace mysqltrace::bpf {
namespace {

constexpr const char *kBase =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "23 22 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "24 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n";

TEST(FindTracefs, NoneMounted) {
    EXPECT_EQ(find_tracefs(kBase), "");
    EXPECT_EQ(find_tracefs(""), "");
}

TEST(FindTracefs, TracefsMount) {
    std::string mi = std::string(kBase) +
                     "40 23 0:12 / /sys/kernel/tracing rw,nosuid,nodev,noexec,relatime shared:18 - "
                     "tracefs tracefs rw\n";
    EXPECT_EQ(find_tracefs(mi), "/sys/kernel/tracing");
}

TEST(FindTracefs, NoOptionalFields) {
    std::string mi = std::string(kBase) + "40 23 0:12 / /mnt/trace rw,relatime - tracefs none rw\n";
    EXPECT_EQ(find_tracefs(mi), "/mnt/trace");
}

TEST(FindTracefs, DebugfsOnly) {
    std::string mi = std::string(kBase) +
                     "41 23 0:7 / /sys/kernel/debug rw,nosuid,nodev,noexec,relatime shared:15 - "
                     "debugfs debugfs rw\n";
    EXPECT_EQ(find_tracefs(mi), "/sys/kernel/debug/tracing");
}

TEST(FindTracefs, TracefsPreferredOverDebugfs) {
    std::string mi =
        std::string(kBase) +
        "41 23 0:7 / /sys/kernel/debug rw,relatime shared:15 - debugfs debugfs rw\n"
        "42 41 0:12 / /sys/kernel/debug/tracing rw,relatime shared:16 - tracefs "
        "tracefs rw\n"
        "43 23 0:12 / /sys/kernel/tracing rw,relatime shared:18 - tracefs tracefs rw\n";
    EXPECT_EQ(find_tracefs(mi), "/sys/kernel/tracing");
}

TEST(FindTracefs, EscapedMountPoint) {
    std::string mi =
        std::string(kBase) + "40 23 0:12 / /mnt/my\\040trace rw,relatime - tracefs none rw\n";
    EXPECT_EQ(find_tracefs(mi), "/mnt/my trace");
}

TEST(FindTracefs, TracepointIdOfAMissingDirectory) {
    auto id = tracepoint_id("/nonexistent", "syscalls", "sys_enter_read");
    ASSERT_FALSE(id);
    EXPECT_EQ(id.error().message,
              "cannot read the id of tracepoint syscalls:sys_enter_read "
              "(/nonexistent/events/syscalls/sys_enter_read/id)");
}

}  // namespace
}  // namespace mysqltrace::bpf
