// SPDX-License-Identifier: GPL-2.0-only
// Oracle libmysqlclient's own non-blocking API (MySQL 8.0.16 and later) and
// mysql_bind_param() (8.0.23 and later): the same api_begin / api_end as
// their blocking twins.
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "resolve.h"

// enum net_async_status (mysql/plugin_auth_common.h, the same in 8.0 and 9.7).
enum mt_net_async_status {
    MT_NET_ASYNC_COMPLETE = 0,
    MT_NET_ASYNC_NOT_READY = 1,
    MT_NET_ASYNC_ERROR = 2,
    MT_NET_ASYNC_COMPLETE_NO_MORE_RESULTS = 3,
};

enum mt_net_async_status mysql_real_connect_nonblocking(struct mt_mysql *mysql, const char *host,
                                                        const char *user, const char *passwd,
                                                        const char *db, unsigned int port,
                                                        const char *unix_socket,
                                                        unsigned long flags);
enum mt_net_async_status mysql_real_query_nonblocking(struct mt_mysql *mysql, const char *q,
                                                      unsigned long length);
enum mt_net_async_status mysql_send_query_nonblocking(struct mt_mysql *mysql, const char *q,
                                                      unsigned long length);
enum mt_net_async_status mysql_store_result_nonblocking(struct mt_mysql *mysql,
                                                        struct mt_mysql_res **result);
enum mt_net_async_status mysql_next_result_nonblocking(struct mt_mysql *mysql);
enum mt_net_async_status mysql_reset_connection_nonblocking(struct mt_mysql *mysql);
mt_bool mysql_bind_param(struct mt_mysql *mysql, unsigned int n_params, struct mt_mysql_bind *binds,
                         const char **names);

#define MT_ORACLE_FUNCS(X)                \
    X(mysql_real_connect_nonblocking)     \
    X(mysql_real_query_nonblocking)       \
    X(mysql_send_query_nonblocking)       \
    X(mysql_store_result_nonblocking)     \
    X(mysql_next_result_nonblocking)      \
    X(mysql_reset_connection_nonblocking) \
    X(mysql_bind_param)

#define MT_REAL_SLOT(name) static void *_Atomic real_##name;
MT_ORACLE_FUNCS(MT_REAL_SLOT)

#define REAL(name) ((__typeof__(&name))mt_real(&real_##name, #name))

__attribute__((constructor)) static void api_oracle_init(void) {
#define MT_PRERESOLVE(name) mt_preresolve(&real_##name, #name);
    MT_ORACLE_FUNCS(MT_PRERESOLVE)
}

// ---- Operations in progress ----

// A program calls a non-blocking function again, with the same arguments,
// until it returns something other than NOT_READY; the operation begins at
// the first call. The handles with an operation in progress are kept here
// (a handle runs one at a time), whether or not a tracer is attached, so one
// that attaches mid-operation does not take a later call for its start.
// Fixed size and atomics only: no allocation, no lock.
#define MT_PENDING_SLOTS 1024  // a power of 2
#define MT_PENDING_PROBES 16

static _Atomic uintptr_t pending[MT_PENDING_SLOTS];
static _Atomic int pending_count;

static size_t pending_home(uintptr_t handle) {
    // Fibonacci hashing: the top 10 bits of the product.
    return (size_t)(((uint64_t)(handle >> 4) * 0x9E3779B97F4A7C15ull) >> 54);
}

static _Atomic uintptr_t *pending_find(const struct mt_mysql *mysql) {
    if (atomic_load_explicit(&pending_count, memory_order_relaxed) == 0) {
        return NULL;
    }
    uintptr_t h = (uintptr_t)mysql;
    size_t home = pending_home(h);
    for (size_t i = 0; i < MT_PENDING_PROBES; i++) {
        _Atomic uintptr_t *slot = &pending[(home + i) & (MT_PENDING_SLOTS - 1)];
        if (atomic_load_explicit(slot, memory_order_relaxed) == h) {
            return slot;
        }
    }
    return NULL;
}

// When every slot near its home is taken, the operation is not kept: each
// of its later calls then reports a begin of its own.
static void pending_add(const struct mt_mysql *mysql) {
    uintptr_t h = (uintptr_t)mysql;
    size_t home = pending_home(h);
    for (size_t i = 0; i < MT_PENDING_PROBES; i++) {
        _Atomic uintptr_t *slot = &pending[(home + i) & (MT_PENDING_SLOTS - 1)];
        uintptr_t empty = 0;
        if (atomic_compare_exchange_strong(slot, &empty, h)) {
            atomic_fetch_add_explicit(&pending_count, 1, memory_order_relaxed);
            return;
        }
    }
}

static void pending_clear(_Atomic uintptr_t *slot, const struct mt_mysql *mysql) {
    uintptr_t h = (uintptr_t)mysql;
    if (atomic_compare_exchange_strong(slot, &h, 0)) {
        atomic_fetch_sub_explicit(&pending_count, 1, memory_order_relaxed);
    }
}

void mt_api_nonblocking_forget(const struct mt_mysql *mysql) {
    _Atomic uintptr_t *slot = pending_find(mysql);
    if (slot != NULL) {
        pending_clear(slot, mysql);
    }
}

// ---- Non-blocking API ----

#define MT_UNPAREN(...) __VA_ARGS__

// A function of a MYSQL handle: api_begin at the operation's first call,
// api_end at the call that completes it (NET_ASYNC_ERROR is the failure).
// Without the real function it fails at once, as the function does.
#define MT_ORACLE_NONBLOCKING(name, params, args, begin_call, end_call)                 \
    MT_EXPORT enum mt_net_async_status name(struct mt_mysql *mysql MT_UNPAREN params) { \
        __typeof__(&name) real = REAL(name);                                            \
        if (real == NULL) {                                                             \
            return MT_NET_ASYNC_ERROR;                                                  \
        }                                                                               \
        if (nested()) {                                                                 \
            return real(mysql MT_UNPAREN args);                                         \
        }                                                                               \
        _Atomic uintptr_t *slot = pending_find(mysql);                                  \
        if (slot == NULL) {                                                             \
            begin_call;                                                                 \
        }                                                                               \
        mt_api_depth++;                                                                 \
        enum mt_net_async_status status = real(mysql MT_UNPAREN args);                  \
        mt_api_depth--;                                                                 \
        if (status == MT_NET_ASYNC_NOT_READY) {                                         \
            if (slot == NULL && mysql != NULL) {                                        \
                pending_add(mysql);                                                     \
            }                                                                           \
            return status;                                                              \
        }                                                                               \
        if (slot != NULL) {                                                             \
            pending_clear(slot, mysql);                                                 \
        }                                                                               \
        int failed = status == MT_NET_ASYNC_ERROR;                                      \
        end_call;                                                                       \
        return status;                                                                  \
    }

MT_ORACLE_NONBLOCKING(mysql_real_connect_nonblocking,
                      (, const char *host, const char *user, const char *passwd, const char *db,
                       unsigned int port, const char *unix_socket, unsigned long flags),
                      (, host, user, passwd, db, port, unix_socket, flags),
                      (mt_api_register_trace_plugin((const void *)real),
                       begin_mysql(MT_API_REAL_CONNECT, real, mysql, NULL, 0)),
                      end_mysql(MT_API_REAL_CONNECT, real, mysql, OUT_HANDLE, !failed))

MT_ORACLE_NONBLOCKING(mysql_real_query_nonblocking, (, const char *q, unsigned long length),
                      (, q, length), begin_mysql(MT_API_REAL_QUERY, real, mysql, q, length),
                      end_mysql(MT_API_REAL_QUERY, real, mysql, OUT_ZERO_OK, failed))

MT_ORACLE_NONBLOCKING(mysql_send_query_nonblocking, (, const char *q, unsigned long length),
                      (, q, length), begin_mysql(MT_API_SEND_QUERY, real, mysql, q, length),
                      end_mysql(MT_API_SEND_QUERY, real, mysql, OUT_ZERO_OK, failed))

// Reported only when they fail, as their blocking twins are.
MT_ORACLE_NONBLOCKING(mysql_store_result_nonblocking, (, struct mt_mysql_res **result), (, result),
                      (void)0, end_mysql(MT_API_STORE_RESULT, real, mysql, OUT_ZERO_OK, failed))

MT_ORACLE_NONBLOCKING(mysql_next_result_nonblocking, (), (), (void)0,
                      end_mysql(MT_API_NEXT_RESULT, real, mysql, OUT_ZERO_OK, failed))

MT_ORACLE_NONBLOCKING(mysql_reset_connection_nonblocking, (), (),
                      begin_mysql(MT_API_RESET_CONNECTION, real, mysql, NULL, 0),
                      end_mysql(MT_API_RESET_CONNECTION, real, mysql, OUT_ZERO_OK, failed))

// ---- Query attributes ----

// The names, ", " between them, as much as the probe copies. Never a value:
// a MYSQL_BIND's layout is the library's, and values may be secret.
#define MT_NAMES_MAX 512

static size_t join_names(char *out, unsigned int n, const char **names) {
    size_t len = 0;
    for (unsigned int i = 0; i < n && len < MT_NAMES_MAX; i++) {
        const char *name = names != NULL && names[i] != NULL ? names[i] : "";
        if (i > 0) {
            size_t sep = MT_NAMES_MAX - len < 2 ? MT_NAMES_MAX - len : 2;
            memcpy(out + len, ", ", sep);
            len += sep;
        }
        size_t k = strnlen(name, MT_NAMES_MAX - len);
        memcpy(out + len, name, k);
        len += k;
    }
    return len;
}

__attribute__((noinline)) static mt_bool mysql_bind_param_watched(struct mt_mysql *mysql,
                                                                  unsigned int n_params,
                                                                  struct mt_mysql_bind *binds,
                                                                  const char **names) {
    __typeof__(&mysql_bind_param) real = REAL(mysql_bind_param);
    if (real == NULL) {
        return 1;
    }
    if (pass_through()) {
        return real(mysql, n_params, binds, names);
    }
    if (MT_PROBE_ON(api_begin) && mysql != NULL) {
        char joined[MT_NAMES_MAX];
        size_t len = join_names(joined, n_params, names);
        mt_api_begin_slow(MT_API_BIND_PARAM, real, mysql, 0, joined, len, 0);
    }
    mt_api_depth++;
    mt_bool r = real(mysql, n_params, binds, names);
    mt_api_depth--;
    end_mysql(MT_API_BIND_PARAM, real, mysql, OUT_ZERO_OK, r != 0);
    return r;
}

MT_EXPORT mt_bool mysql_bind_param(struct mt_mysql *mysql, unsigned int n_params,
                                   struct mt_mysql_bind *binds, const char **names) {
    __typeof__(&mysql_bind_param) real = MT_REAL_IF_RESOLVED(mysql_bind_param);
    if (__builtin_expect(real != NULL, 1) && !api_watched()) {
        return real(mysql, n_params, binds, names);
    }
    return mysql_bind_param_watched(mysql, n_params, binds, names);
}
