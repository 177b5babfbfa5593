// SPDX-License-Identifier: GPL-2.0-only
#include "util/fd_io.h"

#include <cerrno>
#include <poll.h>
#include <unistd.h>

namespace mysqltrace {

int write_all(int fd, std::string_view s) {
    while (!s.empty()) {
        const ssize_t n = ::write(fd, s.data(), s.size());
        if (n > 0) {
            s.remove_prefix(static_cast<size_t>(n));
            continue;
        }
        if (n == 0) {
            errno = EIO;
            return EIO;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            pollfd p{fd, POLLOUT, 0};
            if (::poll(&p, 1, -1) < 0 && errno != EINTR) {
                return errno;
            }
            continue;
        }
        return errno;
    }
    return 0;
}

}  // namespace mysqltrace
