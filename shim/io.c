// SPDX-License-Identifier: GPL-2.0-only
// The libc socket interposers: follow connected stream sockets from connect()
// to close() and report every call on them through the io probe.
#define _GNU_SOURCE
// The wrappers define read() and friends; fortified inline versions would clash.
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fd_table.h"
#include "mysqltrace/abi/event.h"
#include "mysqltrace/abi/usdt.h"
#include "probes.h"
#include "resolve.h"

// glibc declares these only under _FORTIFY_SOURCE; their addr argument is the
// same pointer as recvfrom()'s transparent union.
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
                       socklen_t *addrlen);

struct mt_fd_slot mt_fd_table[MT_MAX_FDS];

static _Atomic uint32_t last_conn;

// How many slots are CANDIDATE or CANDIDATE_HDR: sockets whose first bytes
// from the server are still to be judged. With no tracer attached and none
// to judge, a data call costs the interposer two loads and a branch.
static _Atomic int judging;

static inline int is_candidate(unsigned state) {
    return state == MT_FD_CANDIDATE || state == MT_FD_CANDIDATE_HDR;
}

// Sets a slot's state, keeping `judging` up to date.
static void set_state(struct mt_fd_slot *s, uint8_t next) {
    uint8_t was = atomic_exchange_explicit(&s->state, next, memory_order_acq_rel);
    int d = is_candidate(next) - is_candidate(was);
    if (d != 0) {
        atomic_fetch_add_explicit(&judging, d, memory_order_relaxed);
    }
}

// Whether a data call needs more than the real call: a tracer is attached,
// or a socket awaits its verdict.
static inline int io_watched(void) {
    return __builtin_expect(
        MT_PROBE_ON(io) || atomic_load_explicit(&judging, memory_order_relaxed) != 0, 0);
}

// The process the table describes. A vfork() child shares its parent's memory
// until it execs, so its close() of an inherited descriptor must leave the
// parent's slot alone; a fork() child has a copy of its own, and the atfork
// handler makes it the owner.
static _Atomic pid_t table_owner;

static void forked_child(void) {
    atomic_store_explicit(&table_owner, getpid(), memory_order_relaxed);
}

static inline int owns_table(void) {
    pid_t owner = atomic_load_explicit(&table_owner, memory_order_relaxed);
    return owner == 0 || owner == getpid();
}

#define MT_IO_FUNCS(X) \
    X(connect)         \
    X(read)            \
    X(write)           \
    X(recv)            \
    X(send)            \
    X(recvfrom)        \
    X(sendto)          \
    X(recvmsg)         \
    X(sendmsg)         \
    X(readv)           \
    X(writev)          \
    X(close)           \
    X(shutdown)        \
    X(__read_chk)      \
    X(__recv_chk)      \
    X(__recvfrom_chk)

#define MT_REAL_SLOT(name) static void *_Atomic real_##name;
MT_IO_FUNCS(MT_REAL_SLOT)

#define REAL(name) ((__typeof__(&name))mt_real(&real_##name, #name))

__attribute__((constructor)) static void io_init(void) {
#define MT_PRERESOLVE(name) mt_preresolve(&real_##name, #name);
    MT_IO_FUNCS(MT_PRERESOLVE)
    atomic_store_explicit(&table_owner, getpid(), memory_order_relaxed);
    pthread_atfork(NULL, NULL, forked_child);
}

// What an interposer does when libc's function cannot be found (never seen).
static inline long no_real(void) {
    errno = ENOSYS;
    return -1;
}

// Copies up to `want` leading bytes of what a recv returned.
static size_t leading_bytes(unsigned char *out, size_t want, int kind, const void *ptr,
                            size_t iovcnt, size_t got) {
    if (got < want) {
        want = got;
    }
    if (kind == MT_IO_BUF) {
        for (size_t i = 0; i < want; i++) {
            out[i] = ((const unsigned char *)ptr)[i];
        }
        return want;
    }
    const struct iovec *iov = ptr;
    size_t n = 0;
    for (size_t v = 0; v < iovcnt && n < want; v++) {
        for (size_t i = 0; i < iov[v].iov_len && n < want; i++) {
            out[n++] = ((const unsigned char *)iov[v].iov_base)[i];
        }
    }
    return n;
}

// The greeting verdict on a candidate's first bytes from the server. A MySQL
// server speaks first: packet header (3-byte length, sequence 0) and protocol
// version 10. Made whether or not a tracer is attached, so that one attaching
// later knows which of the open connections are MySQL.
static void judge(struct mt_fd_slot *s, unsigned state, int kind, const void *ptr, size_t iovcnt,
                  size_t got) {
    unsigned char b[5];
    size_t n = leading_bytes(b, sizeof(b), kind, ptr, iovcnt, got);
    uint8_t next;
    if (state == MT_FD_CANDIDATE_HDR) {
        next = b[0] == 10 ? MT_FD_MYSQL : MT_FD_IGNORED;
    } else if (n >= 5) {
        next = b[3] == 0 && b[4] == 10 ? MT_FD_MYSQL : MT_FD_IGNORED;
    } else if (n == 4) {
        // A client that reads the 4-byte header by itself is judged on the
        // next recv.
        next = b[3] == 0 ? MT_FD_CANDIDATE_HDR : MT_FD_IGNORED;
    } else {
        return;
    }
    uint8_t expected = (uint8_t)state;
    if (atomic_compare_exchange_strong_explicit(&s->state, &expected, next, memory_order_acq_rel,
                                                memory_order_relaxed) &&
        !is_candidate(next)) {
        atomic_fetch_sub_explicit(&judging, 1, memory_order_relaxed);
    }
}

// After a data call on a followed socket; `iovcnt` only for MT_IO_IOV.
__attribute__((noinline)) static void report(int op, struct mt_fd_slot *s, unsigned state, int fd,
                                             int kind, const void *ptr, size_t iovcnt, ssize_t r) {
    int saved = errno;
    if (MT_PROBE_ON(io)) {
        mt_io_fd_seen = fd;
    }
    if (r < 0 && (saved == EAGAIN || saved == EWOULDBLOCK || saved == EINTR)) {
        // Nothing moved: a non-blocking client polls and calls again.
        // Reporting these would cost a probe hit per wait.
        return;
    }
    if (op == MT_SOCK_RECV && state != MT_FD_MYSQL && r > 0) {
        judge(s, state, kind, ptr, iovcnt, (size_t)r);
    }
    if (MT_PROBE_ON(io)) {
        uint32_t conn = atomic_load_explicit(&s->conn, memory_order_relaxed);
        int family = atomic_load_explicit(&s->family, memory_order_relaxed);
        int64_t ret = r >= 0 ? (int64_t)r : -(int64_t)saved;
        uint64_t len = kind == MT_IO_IOV ? iovcnt : (r > 0 ? (uint64_t)r : 0);
        MT_FIRE_IO(op, conn, fd, ptr, len, ret, kind, family, mt_take_send_start(op));
    }
    errno = saved;
}

// After a data call, when io_watched() was true before it: a bounds check and
// one load for descriptors the shim does not follow. (With no tracer attached
// and no socket to judge, the interposers call the real function and nothing
// else: a tracer that attaches during such a call misses that call only.)
static inline void after_buf(int op, int fd, const void *buf, ssize_t r) {
    struct mt_fd_slot *s = mt_fd_slot(fd);
    if (s == NULL) {
        return;
    }
    unsigned state = atomic_load_explicit(&s->state, memory_order_acquire);
    if (__builtin_expect(mt_fd_followed(state), 0)) {
        report(op, s, state, fd, MT_IO_BUF, buf, 0, r);
    }
}

// Before a send-side call: note when it began, for followed sockets only, and
// only for a tracer.
static inline void before_send(int fd) {
    if (!MT_PROBE_ON(io)) {
        return;
    }
    struct mt_fd_slot *s = mt_fd_slot(fd);
    if (s != NULL &&
        __builtin_expect(mt_fd_followed(atomic_load_explicit(&s->state, memory_order_acquire)),
                         0)) {
        mt_mark_send_start(0);
    }
}

static inline void after_iov(int op, int fd, const struct iovec *iov, int iovcnt, ssize_t r) {
    struct mt_fd_slot *s = mt_fd_slot(fd);
    if (s == NULL) {
        return;
    }
    unsigned state = atomic_load_explicit(&s->state, memory_order_acquire);
    if (__builtin_expect(mt_fd_followed(state), 0)) {
        report(op, s, state, fd, MT_IO_IOV, iov, iovcnt > 0 ? (size_t)iovcnt : 0, r);
    }
}

// The msghdr is only read when the call succeeded, i.e. when the kernel could.
static inline void after_msg(int op, int fd, const struct msghdr *msg, ssize_t r) {
    struct mt_fd_slot *s = mt_fd_slot(fd);
    if (s == NULL) {
        return;
    }
    unsigned state = atomic_load_explicit(&s->state, memory_order_acquire);
    if (__builtin_expect(mt_fd_followed(state), 0)) {
        const struct iovec *iov = r > 0 ? msg->msg_iov : NULL;
        size_t iovcnt = r > 0 ? msg->msg_iovlen : 0;
        report(op, s, state, fd, MT_IO_IOV, iov, iovcnt, r);
    }
}

// Peeked bytes are received again later, and the error queue holds no stream
// data: neither is reported.
static inline int stream_data(int flags) {
    return (flags & (MSG_PEEK | MSG_ERRQUEUE)) == 0;
}

// Before close() and shutdown(): the consumer still knows the connection.
// A close() clears its slot even with no tracer attached (one load when the
// descriptor was not followed): a later descriptor of the same number must
// not pass for the connection.
static inline void before_end(int op, int fd) {
    struct mt_fd_slot *s = mt_fd_slot(fd);
    if (s == NULL) {
        return;
    }
    unsigned state = atomic_load_explicit(&s->state, memory_order_acquire);
    if (__builtin_expect(state == MT_FD_FREE, 1) || (op == MT_SOCK_CLOSE && !owns_table())) {
        return;
    }
    if (mt_fd_followed(state) && MT_PROBE_ON(io)) {
        uint32_t conn = atomic_load_explicit(&s->conn, memory_order_relaxed);
        int family = atomic_load_explicit(&s->family, memory_order_relaxed);
        MT_FIRE_IO(op, conn, fd, 0, 0, 0, MT_IO_BUF, family, 0);
    }
    // Cleared while the descriptor is still open, so that no other thread can
    // have been given the same number and connected it in between.
    if (op == MT_SOCK_CLOSE) {
        set_state(s, MT_FD_FREE);
    }
}

// The connect() results after which the connection may still complete.
static inline int pending(int err) {
    return err == EINPROGRESS || err == EINTR || err == EALREADY;
}

static inline void fire_connect(uint32_t conn, int fd, const struct sockaddr *addr,
                                socklen_t addrlen, int r, int err, int family) {
    if (MT_PROBE_ON(io)) {
        MT_FIRE_IO(MT_SOCK_CONNECT, conn, fd, addr, addrlen, r == 0 ? 0 : -(int64_t)err, MT_IO_BUF,
                   family, 0);
    }
}

static void track_connect(struct mt_fd_slot *s, int fd, const struct sockaddr *addr,
                          socklen_t addrlen, int r, int err) {
    // Unless the call succeeded or failed after the kernel copied the address
    // (EFAULT and EINVAL can come before), addr may be unreadable.
    if (r != 0 && (err == EFAULT || err == EINVAL)) {
        return;
    }
    if (addr == NULL || addrlen < sizeof(sa_family_t) ||
        addrlen > sizeof(struct sockaddr_storage)) {
        return;
    }
    int family = addr->sa_family;
    if (family != AF_INET && family != AF_INET6 && family != AF_UNIX) {
        return;
    }
    int type = 0;
    socklen_t type_len = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || type != SOCK_STREAM) {
        return;
    }
    // A non-blocking connect() asked again: the same connection, which is
    // complete (0 once, then EISCONN), still pending, or has failed. The
    // cookie tells it from a new socket given the number of one whose close()
    // the shim did not see (fclose() of an fdopen'ed socket, close_range()).
    uint64_t cookie = 0;
    socklen_t cookie_len = sizeof(cookie);
    if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &cookie_len) != 0) {
        cookie = 0;
    }
    if (atomic_load_explicit(&s->state, memory_order_acquire) != MT_FD_FREE &&
        atomic_load_explicit(&s->connecting, memory_order_relaxed) &&
        atomic_load_explicit(&s->cookie, memory_order_relaxed) == (uint32_t)cookie) {
        if (r == 0 || err == EISCONN) {
            atomic_store_explicit(&s->connecting, 0, memory_order_relaxed);
        } else if (!pending(err)) {
            fire_connect(atomic_load_explicit(&s->conn, memory_order_relaxed), fd, addr, addrlen, r,
                         err, family);
            set_state(s, MT_FD_FREE);
        }
        return;
    }
    // Not a connection this call made (nor one the shim saw being made).
    if (r != 0 && (err == EISCONN || err == EALREADY)) {
        return;
    }
    uint32_t conn = atomic_fetch_add_explicit(&last_conn, 1, memory_order_relaxed) + 1;
    atomic_store_explicit(&s->conn, conn, memory_order_relaxed);
    atomic_store_explicit(&s->cookie, (uint32_t)cookie, memory_order_relaxed);
    atomic_store_explicit(&s->family, (uint8_t)family, memory_order_relaxed);
    atomic_store_explicit(&s->connecting, r != 0, memory_order_relaxed);
    set_state(s, MT_FD_CANDIDATE);
    fire_connect(conn, fd, addr, addrlen, r, err, family);
    if (r != 0 && !pending(err)) {
        set_state(s, MT_FD_FREE);
    }
}

MT_EXPORT int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t addrlen) {
    __typeof__(&connect) real = REAL(connect);
    if (real == NULL) {
        return (int)no_real();
    }
    int r = real(fd, addr, addrlen);
    struct mt_fd_slot *s = mt_fd_slot(fd);
    if (s != NULL) {
        int saved = errno;
        track_connect(s, fd, addr.__sockaddr__, addrlen, r, saved);
        errno = saved;
    }
    return r;
}

// Each data interposer is two functions. The exported one, with no tracer
// attached and no socket to judge, loads the real function and two counters
// and jumps to the real function: no stack frame, no errno, no fd table. The
// _watched one does the rest: the send's start, the fd table, the probe.

__attribute__((noinline)) static ssize_t read_watched(int fd, void *buf, size_t n) {
    __typeof__(&read) real = REAL(read);
    if (real == NULL) {
        return no_real();
    }
    ssize_t r = real(fd, buf, n);
    after_buf(MT_SOCK_RECV, fd, buf, r);
    return r;
}

MT_EXPORT ssize_t read(int fd, void *buf, size_t n) {
    __typeof__(&read) real = MT_REAL_IF_RESOLVED(read);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, buf, n);
    }
    return read_watched(fd, buf, n);
}

__attribute__((noinline)) static ssize_t __read_chk_watched(int fd, void *buf, size_t n,
                                                            size_t buflen) {
    __typeof__(&__read_chk) real = REAL(__read_chk);
    if (real == NULL) {
        return no_real();
    }
    ssize_t r = real(fd, buf, n, buflen);
    after_buf(MT_SOCK_RECV, fd, buf, r);
    return r;
}

MT_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
    __typeof__(&__read_chk) real = MT_REAL_IF_RESOLVED(__read_chk);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, buf, n, buflen);
    }
    return __read_chk_watched(fd, buf, n, buflen);
}

__attribute__((noinline)) static ssize_t write_watched(int fd, const void *buf, size_t n) {
    __typeof__(&write) real = REAL(write);
    if (real == NULL) {
        return no_real();
    }
    before_send(fd);
    ssize_t r = real(fd, buf, n);
    after_buf(MT_SOCK_SEND, fd, buf, r);
    return r;
}

MT_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
    __typeof__(&write) real = MT_REAL_IF_RESOLVED(write);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, buf, n);
    }
    return write_watched(fd, buf, n);
}

__attribute__((noinline)) static ssize_t recv_watched(int fd, void *buf, size_t n, int flags) {
    __typeof__(&recv) real = REAL(recv);
    if (real == NULL) {
        return no_real();
    }
    ssize_t r = real(fd, buf, n, flags);
    if (stream_data(flags)) {
        after_buf(MT_SOCK_RECV, fd, buf, r);
    }
    return r;
}

MT_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags) {
    __typeof__(&recv) real = MT_REAL_IF_RESOLVED(recv);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, buf, n, flags);
    }
    return recv_watched(fd, buf, n, flags);
}

__attribute__((noinline)) static ssize_t __recv_chk_watched(int fd, void *buf, size_t n,
                                                            size_t buflen, int flags) {
    __typeof__(&__recv_chk) real = REAL(__recv_chk);
    if (real == NULL) {
        return no_real();
    }
    ssize_t r = real(fd, buf, n, buflen, flags);
    if (stream_data(flags)) {
        after_buf(MT_SOCK_RECV, fd, buf, r);
    }
    return r;
}

MT_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags) {
    __typeof__(&__recv_chk) real = MT_REAL_IF_RESOLVED(__recv_chk);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, buf, n, buflen, flags);
    }
    return __recv_chk_watched(fd, buf, n, buflen, flags);
}

__attribute__((noinline)) static ssize_t send_watched(int fd, const void *buf, size_t n,
                                                      int flags) {
    __typeof__(&send) real = REAL(send);
    if (real == NULL) {
        return no_real();
    }
    before_send(fd);
    ssize_t r = real(fd, buf, n, flags);
    after_buf(MT_SOCK_SEND, fd, buf, r);
    return r;
}

MT_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
    __typeof__(&send) real = MT_REAL_IF_RESOLVED(send);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, buf, n, flags);
    }
    return send_watched(fd, buf, n, flags);
}

__attribute__((noinline)) static ssize_t recvfrom_watched(int fd, void *restrict buf, size_t n,
                                                          int flags, __SOCKADDR_ARG addr,
                                                          socklen_t *restrict addrlen) {
    __typeof__(&recvfrom) real = REAL(recvfrom);
    if (real == NULL) {
        return no_real();
    }
    ssize_t r = real(fd, buf, n, flags, addr, addrlen);
    if (stream_data(flags)) {
        after_buf(MT_SOCK_RECV, fd, buf, r);
    }
    return r;
}

MT_EXPORT ssize_t recvfrom(int fd, void *restrict buf, size_t n, int flags, __SOCKADDR_ARG addr,
                           socklen_t *restrict addrlen) {
    __typeof__(&recvfrom) real = MT_REAL_IF_RESOLVED(recvfrom);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, buf, n, flags, addr, addrlen);
    }
    return recvfrom_watched(fd, buf, n, flags, addr, addrlen);
}

__attribute__((noinline)) static ssize_t __recvfrom_chk_watched(int fd, void *buf, size_t n,
                                                                size_t buflen, int flags,
                                                                struct sockaddr *addr,
                                                                socklen_t *addrlen) {
    __typeof__(&__recvfrom_chk) real = REAL(__recvfrom_chk);
    if (real == NULL) {
        return no_real();
    }
    ssize_t r = real(fd, buf, n, buflen, flags, addr, addrlen);
    if (stream_data(flags)) {
        after_buf(MT_SOCK_RECV, fd, buf, r);
    }
    return r;
}

MT_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                                 struct sockaddr *addr, socklen_t *addrlen) {
    __typeof__(&__recvfrom_chk) real = MT_REAL_IF_RESOLVED(__recvfrom_chk);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, buf, n, buflen, flags, addr, addrlen);
    }
    return __recvfrom_chk_watched(fd, buf, n, buflen, flags, addr, addrlen);
}

__attribute__((noinline)) static ssize_t sendto_watched(int fd, const void *buf, size_t n,
                                                        int flags, __CONST_SOCKADDR_ARG addr,
                                                        socklen_t addrlen) {
    __typeof__(&sendto) real = REAL(sendto);
    if (real == NULL) {
        return no_real();
    }
    before_send(fd);
    ssize_t r = real(fd, buf, n, flags, addr, addrlen);
    after_buf(MT_SOCK_SEND, fd, buf, r);
    return r;
}

MT_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG addr,
                         socklen_t addrlen) {
    __typeof__(&sendto) real = MT_REAL_IF_RESOLVED(sendto);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, buf, n, flags, addr, addrlen);
    }
    return sendto_watched(fd, buf, n, flags, addr, addrlen);
}

__attribute__((noinline)) static ssize_t recvmsg_watched(int fd, struct msghdr *msg, int flags) {
    __typeof__(&recvmsg) real = REAL(recvmsg);
    if (real == NULL) {
        return no_real();
    }
    ssize_t r = real(fd, msg, flags);
    if (stream_data(flags)) {
        after_msg(MT_SOCK_RECV, fd, msg, r);
    }
    return r;
}

MT_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
    __typeof__(&recvmsg) real = MT_REAL_IF_RESOLVED(recvmsg);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, msg, flags);
    }
    return recvmsg_watched(fd, msg, flags);
}

__attribute__((noinline)) static ssize_t sendmsg_watched(int fd, const struct msghdr *msg,
                                                         int flags) {
    __typeof__(&sendmsg) real = REAL(sendmsg);
    if (real == NULL) {
        return no_real();
    }
    before_send(fd);
    ssize_t r = real(fd, msg, flags);
    after_msg(MT_SOCK_SEND, fd, msg, r);
    return r;
}

MT_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
    __typeof__(&sendmsg) real = MT_REAL_IF_RESOLVED(sendmsg);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, msg, flags);
    }
    return sendmsg_watched(fd, msg, flags);
}

__attribute__((noinline)) static ssize_t readv_watched(int fd, const struct iovec *iov,
                                                       int iovcnt) {
    __typeof__(&readv) real = REAL(readv);
    if (real == NULL) {
        return no_real();
    }
    ssize_t r = real(fd, iov, iovcnt);
    after_iov(MT_SOCK_RECV, fd, iov, iovcnt, r);
    return r;
}

MT_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt) {
    __typeof__(&readv) real = MT_REAL_IF_RESOLVED(readv);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, iov, iovcnt);
    }
    return readv_watched(fd, iov, iovcnt);
}

__attribute__((noinline)) static ssize_t writev_watched(int fd, const struct iovec *iov,
                                                        int iovcnt) {
    __typeof__(&writev) real = REAL(writev);
    if (real == NULL) {
        return no_real();
    }
    before_send(fd);
    ssize_t r = real(fd, iov, iovcnt);
    after_iov(MT_SOCK_SEND, fd, iov, iovcnt, r);
    return r;
}

MT_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    __typeof__(&writev) real = MT_REAL_IF_RESOLVED(writev);
    if (__builtin_expect(real != NULL, 1) && !io_watched()) {
        return real(fd, iov, iovcnt);
    }
    return writev_watched(fd, iov, iovcnt);
}

MT_EXPORT int shutdown(int fd, int how) {
    __typeof__(&shutdown) real = REAL(shutdown);
    if (real == NULL) {
        return (int)no_real();
    }
    before_end(MT_SOCK_SHUTDOWN, fd);
    return real(fd, how);
}

MT_EXPORT int close(int fd) {
    __typeof__(&close) real = REAL(close);
    if (real == NULL) {
        return (int)no_real();
    }
    before_end(MT_SOCK_CLOSE, fd);
    return real(fd);
}
