// SPDX-License-Identifier: GPL-2.0-only
// write_all(): every byte, in order, through short writes and a
// non-blocking pipe that fills; the errno of a write that fails.
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <string>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>

#include "util/fd_io.h"

namespace {

using mysqltrace::write_all;

// 1 MiB into a non-blocking pipe (64 KiB of room) that a slow reader drains:
// the writes come up short and then fail with EAGAIN until it reads.
TEST(WriteAll, NonBlockingPipeGetsEveryByteInOrder) {
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    std::string data(1 << 20, '\0');
    for (size_t i = 0; i < data.size(); i++) {
        data[i] = static_cast<char>('a' + i * 7 % 26);
    }
    std::string got;
    std::thread reader([&] {
        const int flags = fcntl(fds[0], F_GETFL);
        fcntl(fds[0], F_SETFL, flags & ~O_NONBLOCK);
        char buf[4096];
        for (;;) {
            const ssize_t n = ::read(fds[0], buf, sizeof(buf));
            if (n <= 0) {
                break;
            }
            got.append(buf, static_cast<size_t>(n));
            usleep(50);
        }
    });
    EXPECT_EQ(write_all(fds[1], data), 0);
    ::close(fds[1]);
    reader.join();
    ::close(fds[0]);
    EXPECT_TRUE(got == data) << got.size() << " bytes of " << data.size();
}

TEST(WriteAll, FailedWriteGivesItsErrno) {
    std::signal(SIGPIPE, SIG_IGN);
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    ::close(fds[0]);
    EXPECT_EQ(write_all(fds[1], "no reader"), EPIPE);
    EXPECT_EQ(errno, EPIPE);
    ::close(fds[1]);
    EXPECT_EQ(write_all(fds[1], "closed"), EBADF);
    EXPECT_EQ(write_all(-1, ""), 0) << "nothing to write is no write";
}

}  // namespace
