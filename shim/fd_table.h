// SPDX-License-Identifier: GPL-2.0-only
// The shim's per-descriptor table: which sockets it follows and their
// connection numbers. Lock-free; written by io.c, read by the other interposers.
#pragma once

#include <stdatomic.h>
#include <stdint.h>

// Descriptors at or above this are not followed (the table is static).
#define MT_MAX_FDS 65536

enum mt_fd_state {
    MT_FD_FREE = 0,
    MT_FD_CANDIDATE = 1,      // a connected stream socket; its first bytes decide
    MT_FD_CANDIDATE_HDR = 2,  // a candidate whose first recv was a lone seq-0 packet header
    MT_FD_MYSQL = 3,          // the server spoke first with a protocol-10 greeting
    MT_FD_IGNORED = 4,        // anything else: not followed until reconnected
};

struct mt_fd_slot {
    _Atomic uint32_t conn;       // 1, 2, ...; valid while state != FREE
    _Atomic uint32_t cookie;     // low bits of the socket's SO_COOKIE (0: unknown)
    _Atomic uint8_t state;       // enum mt_fd_state; published last, cleared first
    _Atomic uint8_t family;      // AF_INET, AF_INET6 or AF_UNIX
    _Atomic uint8_t connecting;  // connect() said EINPROGRESS and has not said more since
    uint8_t pad;
};

extern struct mt_fd_slot mt_fd_table[MT_MAX_FDS];

static inline struct mt_fd_slot *mt_fd_slot(int fd) {
    return (unsigned)fd < MT_MAX_FDS ? &mt_fd_table[fd] : 0;
}

static inline int mt_fd_followed(unsigned state) {
    return state == MT_FD_CANDIDATE || state == MT_FD_CANDIDATE_HDR || state == MT_FD_MYSQL;
}

// The connection number of a followed descriptor, else 0.
static inline uint32_t mt_fd_conn(int fd) {
    struct mt_fd_slot *s = mt_fd_slot(fd);
    if (s == 0 || !mt_fd_followed(atomic_load_explicit(&s->state, memory_order_acquire))) {
        return 0;
    }
    return atomic_load_explicit(&s->conn, memory_order_relaxed);
}
