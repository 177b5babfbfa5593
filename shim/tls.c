// SPDX-License-Identifier: GPL-2.0-only
// The TLS interposers (OpenSSL, GnuTLS): the cleartext of followed sockets,
// reported through the io probe as TLS_RECV / TLS_SEND.
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fd_table.h"
#include "mysqltrace/abi/event.h"
#include "mysqltrace/abi/usdt.h"
#include "probes.h"
#include "resolve.h"

// Opaque: the shim needs neither library's headers, only their public API.
struct mt_ssl;
struct mt_gnutls_session;

int SSL_read(struct mt_ssl *ssl, void *buf, int num);
int SSL_write(struct mt_ssl *ssl, const void *buf, int num);
int SSL_read_ex(struct mt_ssl *ssl, void *buf, size_t num, size_t *readbytes);
int SSL_write_ex(struct mt_ssl *ssl, const void *buf, size_t num, size_t *written);
ssize_t gnutls_record_recv(struct mt_gnutls_session *session, void *data, size_t size);
ssize_t gnutls_record_send(struct mt_gnutls_session *session, const void *data, size_t size);

// Returned when the real function cannot be found (the library is not
// loaded, so nothing should have called it): GNUTLS_E_INTERNAL_ERROR.
#define MT_GNUTLS_NO_REAL (-59)

#define MT_TLS_FUNCS(X)   \
    X(SSL_read)           \
    X(SSL_write)          \
    X(SSL_read_ex)        \
    X(SSL_write_ex)       \
    X(gnutls_record_recv) \
    X(gnutls_record_send)

#define MT_REAL_SLOT(name) static void *_Atomic real_##name;
MT_TLS_FUNCS(MT_REAL_SLOT)

#define REAL(name) ((__typeof__(&name))mt_real(&real_##name, #name))

static void *_Atomic helper_ssl_get_fd;
static void *_Atomic helper_gnutls_get_int;

__attribute__((constructor)) static void tls_init(void) {
#define MT_PRERESOLVE(name) mt_preresolve(&real_##name, #name);
    MT_TLS_FUNCS(MT_PRERESOLVE)
}

static void report(int op, int fd, const void *buf, uint64_t n, int64_t ret) {
    struct mt_fd_slot *s = mt_fd_slot(fd);
    if (s == NULL || !mt_fd_followed(atomic_load_explicit(&s->state, memory_order_acquire))) {
        return;
    }
    uint32_t conn = atomic_load_explicit(&s->conn, memory_order_relaxed);
    int family = atomic_load_explicit(&s->family, memory_order_relaxed);
    MT_FIRE_IO(op, conn, fd, buf, n, ret, MT_IO_BUF, family, mt_take_send_start(op));
}

// Sessions whose library does not name their socket, and the socket each was
// last seen on: (session address << 16) | fd, direct-mapped by address.
#define MT_SESSION_SLOTS 1024
static _Atomic uint64_t session_fds[MT_SESSION_SLOTS];

static inline _Atomic uint64_t *session_slot(const void *session) {
    uintptr_t a = (uintptr_t)session;
    return &session_fds[(a >> 4 ^ a >> 14) % MT_SESSION_SLOTS];
}

// The socket under a TLS session. `named`: what the library says (-1: not a
// socket, as with the custom BIO MariaDB Connector/C 3.4 installs, or a
// GnuTLS pointer transport); `seen`: the followed socket the library moved
// bytes on during this call (-1: none, a read served from its buffer). A
// session's socket is remembered from its calls that touch it: the first
// call after the handshake is a write, which always does.
static int session_fd(const void *session, int named, int seen) {
    if (seen >= 0 && seen < MT_MAX_FDS) {
        if (seen != named) {
            atomic_store_explicit(session_slot(session),
                                  (uint64_t)(uintptr_t)session << 16 | (uint64_t)seen,
                                  memory_order_relaxed);
        }
        return seen;
    }
    if (named >= 0 && mt_fd_conn(named) != 0) {
        return named;
    }
    uint64_t key = (uint64_t)(uintptr_t)session << 16;
    uint64_t v = atomic_load_explicit(session_slot(session), memory_order_relaxed);
    return v != 0 && (v & ~(uint64_t)0xffff) == key ? (int)(v & 0xffff) : named;
}

// Before a TLS call: forget the socket of the last one. Returns whether a
// tracer was attached: the socket calls inside note their socket only then
// (io.c), so a call that began without one cannot tell its socket that way.
static inline int tls_call_begins(void) {
    if (MT_PROBE_ON(io)) {
        mt_io_fd_seen = -1;
        return 1;
    }
    return 0;
}

// The descriptor comes from SSL_get_fd() of the same libssl: -1 for an SSL
// object that is not on a socket BIO.
__attribute__((noinline)) static void ssl_report(int op, const void *real, struct mt_ssl *ssl,
                                                 const void *buf, uint64_t n, int64_t ret,
                                                 int watched) {
    int saved = errno;
    int seen = watched ? mt_io_fd_seen : -1;
    int (*get_fd)(const struct mt_ssl *) = mt_helper(&helper_ssl_get_fd, real, "SSL_get_fd");
    if (get_fd != NULL) {
        report(op, session_fd(ssl, get_fd(ssl), seen), buf, n, ret);
    }
    errno = saved;
}

// gnutls_transport_get_int() is only meaningful for sessions given a
// descriptor (gnutls_transport_set_int); a pointer transport gives a value
// that is not in the table, or rarely, one that happens to be.
__attribute__((noinline)) static void gnutls_report(int op, const void *real,
                                                    struct mt_gnutls_session *session,
                                                    const void *buf, uint64_t n, int64_t ret,
                                                    int watched) {
    int saved = errno;
    int seen = watched ? mt_io_fd_seen : -1;
    int (*get_int)(struct mt_gnutls_session *) =
        mt_helper(&helper_gnutls_get_int, real, "gnutls_transport_get_int");
    if (get_int != NULL) {
        report(op, session_fd(session, get_int(session), seen), buf, n, ret);
    }
    errno = saved;
}

// As in io.c, each interposer is a fast path that only checks the io probe's
// semaphore and jumps to the real function, and a _watched function for when
// a tracer is attached.

__attribute__((noinline)) static int SSL_read_watched(struct mt_ssl *ssl, void *buf, int num) {
    __typeof__(&SSL_read) real = REAL(SSL_read);
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    int watched = tls_call_begins();
    int r = real(ssl, buf, num);
    if (MT_PROBE_ON(io)) {
        ssl_report(MT_SOCK_TLS_RECV, (const void *)real, ssl, buf, r > 0 ? (uint64_t)r : 0, r,
                   watched);
    }
    return r;
}

MT_EXPORT int SSL_read(struct mt_ssl *ssl, void *buf, int num) {
    __typeof__(&SSL_read) real = MT_REAL_IF_RESOLVED(SSL_read);
    if (__builtin_expect(real != NULL, 1) && !MT_PROBE_ON(io)) {
        return real(ssl, buf, num);
    }
    return SSL_read_watched(ssl, buf, num);
}

__attribute__((noinline)) static int SSL_write_watched(struct mt_ssl *ssl, const void *buf,
                                                       int num) {
    __typeof__(&SSL_write) real = REAL(SSL_write);
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    mt_mark_send_start(1);
    int watched = tls_call_begins();
    int r = real(ssl, buf, num);
    if (MT_PROBE_ON(io)) {
        ssl_report(MT_SOCK_TLS_SEND, (const void *)real, ssl, buf, r > 0 ? (uint64_t)r : 0, r,
                   watched);
    }
    return r;
}

MT_EXPORT int SSL_write(struct mt_ssl *ssl, const void *buf, int num) {
    __typeof__(&SSL_write) real = MT_REAL_IF_RESOLVED(SSL_write);
    if (__builtin_expect(real != NULL, 1) && !MT_PROBE_ON(io)) {
        return real(ssl, buf, num);
    }
    return SSL_write_watched(ssl, buf, num);
}

// The _ex variants return 1 or 0 and the byte count separately; ret is the
// byte count on success and 0 on failure.
__attribute__((noinline)) static int SSL_read_ex_watched(struct mt_ssl *ssl, void *buf, size_t num,
                                                         size_t *readbytes) {
    __typeof__(&SSL_read_ex) real = REAL(SSL_read_ex);
    if (real == NULL) {
        errno = ENOSYS;
        return 0;
    }
    int watched = tls_call_begins();
    int r = real(ssl, buf, num, readbytes);
    if (MT_PROBE_ON(io)) {
        uint64_t n = r == 1 && readbytes != NULL ? *readbytes : 0;
        ssl_report(MT_SOCK_TLS_RECV, (const void *)real, ssl, buf, n, (int64_t)n, watched);
    }
    return r;
}

MT_EXPORT int SSL_read_ex(struct mt_ssl *ssl, void *buf, size_t num, size_t *readbytes) {
    __typeof__(&SSL_read_ex) real = MT_REAL_IF_RESOLVED(SSL_read_ex);
    if (__builtin_expect(real != NULL, 1) && !MT_PROBE_ON(io)) {
        return real(ssl, buf, num, readbytes);
    }
    return SSL_read_ex_watched(ssl, buf, num, readbytes);
}

__attribute__((noinline)) static int SSL_write_ex_watched(struct mt_ssl *ssl, const void *buf,
                                                          size_t num, size_t *written) {
    __typeof__(&SSL_write_ex) real = REAL(SSL_write_ex);
    if (real == NULL) {
        errno = ENOSYS;
        return 0;
    }
    mt_mark_send_start(1);
    int watched = tls_call_begins();
    int r = real(ssl, buf, num, written);
    if (MT_PROBE_ON(io)) {
        uint64_t n = r == 1 && written != NULL ? *written : 0;
        ssl_report(MT_SOCK_TLS_SEND, (const void *)real, ssl, buf, n, (int64_t)n, watched);
    }
    return r;
}

MT_EXPORT int SSL_write_ex(struct mt_ssl *ssl, const void *buf, size_t num, size_t *written) {
    __typeof__(&SSL_write_ex) real = MT_REAL_IF_RESOLVED(SSL_write_ex);
    if (__builtin_expect(real != NULL, 1) && !MT_PROBE_ON(io)) {
        return real(ssl, buf, num, written);
    }
    return SSL_write_ex_watched(ssl, buf, num, written);
}

__attribute__((noinline)) static ssize_t gnutls_record_recv_watched(
    struct mt_gnutls_session *session, void *data, size_t size) {
    __typeof__(&gnutls_record_recv) real = REAL(gnutls_record_recv);
    if (real == NULL) {
        errno = ENOSYS;
        return MT_GNUTLS_NO_REAL;
    }
    int watched = tls_call_begins();
    ssize_t r = real(session, data, size);
    if (MT_PROBE_ON(io)) {
        gnutls_report(MT_SOCK_TLS_RECV, (const void *)real, session, data, r > 0 ? (uint64_t)r : 0,
                      r, watched);
    }
    return r;
}

MT_EXPORT ssize_t gnutls_record_recv(struct mt_gnutls_session *session, void *data, size_t size) {
    __typeof__(&gnutls_record_recv) real = MT_REAL_IF_RESOLVED(gnutls_record_recv);
    if (__builtin_expect(real != NULL, 1) && !MT_PROBE_ON(io)) {
        return real(session, data, size);
    }
    return gnutls_record_recv_watched(session, data, size);
}

__attribute__((noinline)) static ssize_t gnutls_record_send_watched(
    struct mt_gnutls_session *session, const void *data, size_t size) {
    __typeof__(&gnutls_record_send) real = REAL(gnutls_record_send);
    if (real == NULL) {
        errno = ENOSYS;
        return MT_GNUTLS_NO_REAL;
    }
    mt_mark_send_start(1);
    int watched = tls_call_begins();
    ssize_t r = real(session, data, size);
    if (MT_PROBE_ON(io)) {
        gnutls_report(MT_SOCK_TLS_SEND, (const void *)real, session, data, r > 0 ? (uint64_t)r : 0,
                      r, watched);
    }
    return r;
}

MT_EXPORT ssize_t gnutls_record_send(struct mt_gnutls_session *session, const void *data,
                                     size_t size) {
    __typeof__(&gnutls_record_send) real = MT_REAL_IF_RESOLVED(gnutls_record_send);
    if (__builtin_expect(real != NULL, 1) && !MT_PROBE_ON(io)) {
        return real(session, data, size);
    }
    return gnutls_record_send_watched(session, data, size);
}
