// SPDX-License-Identifier: GPL-2.0-only
// Writing all of a buffer to a file descriptor, which every writer of files
// and sockets here needs.
#pragma once

#include <string_view>

namespace mysqltrace {

// All of s to fd: a short write goes on where it stopped, a signal retries,
// and a non-blocking fd (a stdout handed over by a supervisor) is waited on
// instead of failing. 0, or the errno of the write that failed (errno is
// left set to it too); a write that takes nothing is EIO.
int write_all(int fd, std::string_view s);

}  // namespace mysqltrace
