// SPDX-License-Identifier: GPL-2.0-only
// What the C API interposers (api.c, api_oracle.c) share: the opaque handle
// types, the nesting depth, and the api_begin / api_end reporting.
#pragma once

#include <stdint.h>

#include "mysqltrace/abi/usdt.h"
#include "probes.h"

// Opaque on purpose: no client library's headers or struct layouts.
struct mt_mysql;       // MYSQL
struct mt_mysql_stmt;  // MYSQL_STMT
struct mt_mysql_res;   // MYSQL_RES
struct mt_mysql_bind;  // MYSQL_BIND
typedef char mt_bool;  // my_bool (char) in MariaDB, bool in MySQL 8: one byte either way

// Calls the library makes to its own interposed functions (mysql_query() to
// mysql_real_query(), a _start function to the blocking one, ...) are not
// reported: the program's call is. Only the outermost call changes the
// depth, so it stays balanced across the non-blocking API's suspended
// contexts.
extern __thread int mt_api_depth __attribute__((tls_model("initial-exec")));

static inline int nested(void) {
    return mt_api_depth > 0;
}

// Whether an interposer just calls the real function: no tracer has the API
// probes attached, or the call is nested. With no tracer this costs the two
// semaphore loads, not the depth's upkeep. A tracer that attaches during
// such a call sees the calls nested in it as the program's own, and the
// call's end without its begin.
static inline int api_watched(void) {
    return __builtin_expect(MT_PROBE_ON(api_begin) || MT_PROBE_ON(api_end), 0);
}

static inline int pass_through(void) {
    return !api_watched() || nested();
}

// Calls that read a reply the library has usually buffered already: they
// are reported only when they fail (then with their error), as a probe hit
// per row or result set would cost more than the work they do.
static inline int quiet_unless_failed(int func) {
    return func == MT_API_STORE_RESULT || func == MT_API_USE_RESULT || func == MT_API_NEXT_RESULT ||
           func == MT_API_STMT_FETCH;
}

// Fires api_begin; `arg` is a NUL-terminated string when arg_is_cstr.
__attribute__((noinline)) void mt_api_begin_slow(int func, const void *real, void *handle,
                                                 int is_stmt, const char *arg, uint64_t arg_len,
                                                 int arg_is_cstr);

static inline void begin_mysql(int func, const void *real, struct mt_mysql *mysql, const char *arg,
                               uint64_t arg_len) {
    if (MT_PROBE_ON(api_begin) && mysql != NULL && !quiet_unless_failed(func)) {
        mt_api_begin_slow(func, real, mysql, 0, arg, arg_len, 0);
    }
}

static inline void begin_mysql_cstr(int func, const void *real, struct mt_mysql *mysql,
                                    const char *arg) {
    if (MT_PROBE_ON(api_begin) && mysql != NULL) {
        mt_api_begin_slow(func, real, mysql, 0, arg, 0, 1);
    }
}

static inline void begin_stmt(int func, const void *real, struct mt_mysql_stmt *stmt,
                              const char *arg, uint64_t arg_len) {
    if (MT_PROBE_ON(api_begin) && stmt != NULL && !quiet_unless_failed(func)) {
        mt_api_begin_slow(func, real, stmt, 1, arg, arg_len, 0);
    }
}

// A call whose begin is deferred (usdt.h, mt_api_begin_info): when the tracer
// has api_end attached, fills *b and leaves it for the call's first io hit
// or its api_end to report; otherwise fires api_begin as begin_* would.
// Returns b when deferred, NULL otherwise. `handle` is not NULL.
__attribute__((noinline)) struct mt_api_begin_info *mt_api_defer_begin_slow(
    struct mt_api_begin_info *b, int func, const void *real, void *handle, int is_stmt,
    const char *arg, uint64_t arg_len, int arg_is_cstr);

static inline struct mt_api_begin_info *defer_mysql(struct mt_api_begin_info *b, int func,
                                                    const void *real, struct mt_mysql *mysql,
                                                    const char *arg, uint64_t arg_len) {
    if ((MT_PROBE_ON(api_begin) || MT_PROBE_ON(api_end)) && mysql != NULL) {
        return mt_api_defer_begin_slow(b, func, real, mysql, 0, arg, arg_len, 0);
    }
    return NULL;
}

static inline struct mt_api_begin_info *defer_mysql_cstr(struct mt_api_begin_info *b, int func,
                                                         const void *real, struct mt_mysql *mysql,
                                                         const char *arg) {
    if ((MT_PROBE_ON(api_begin) || MT_PROBE_ON(api_end)) && mysql != NULL) {
        return mt_api_defer_begin_slow(b, func, real, mysql, 0, arg, 0, 1);
    }
    return NULL;
}

static inline struct mt_api_begin_info *defer_stmt(struct mt_api_begin_info *b, int func,
                                                   const void *real, struct mt_mysql_stmt *stmt,
                                                   const char *arg, uint64_t arg_len) {
    if ((MT_PROBE_ON(api_begin) || MT_PROBE_ON(api_end)) && stmt != NULL) {
        return mt_api_defer_begin_slow(b, func, real, stmt, 1, arg, arg_len, 0);
    }
    return NULL;
}

// After the real call of a deferred call: the begin if no io hit reported
// it (for its api_end to report), else NULL.
static inline struct mt_api_begin_info *unsent_begin(struct mt_api_begin_info *b) {
    if (b == NULL) {
        return NULL;
    }
    return mt_take_unsent_begin();
}

// How a function says it failed.
enum mt_outcome {
    OUT_ZERO_OK,     // 0 success, anything else failure
    OUT_POSITIVE,    // > 0 failure (mysql_next_result: 0 more, -1 no more)
    OUT_HANDLE,      // a non-NULL pointer: raw is 1 then
    OUT_RESULT_SET,  // raw 0 (NULL) fails only if the statement had columns or an error
    OUT_FETCH,       // mysql_stmt_fetch: passed on raw; 1 is the failure
    OUT_FREED,       // like ZERO_OK, but the handle is gone: no error details
};

// Fires api_end for a MYSQL handle, with the library's error when it failed,
// and the call's deferred begin if `begin` is not NULL.
__attribute__((noinline)) void mt_api_end_mysql_slow(int func, const void *real,
                                                     struct mt_mysql *mysql, enum mt_outcome how,
                                                     int64_t raw, struct mt_api_begin_info *begin);

// The end of a deferred call (defer_mysql). With the begin deferred but
// api_end detached meanwhile, the begin is lost like an end would be.
static inline void end_mysql_deferred(int func, const void *real, struct mt_mysql *mysql,
                                      enum mt_outcome how, int64_t raw,
                                      struct mt_api_begin_info *begin) {
    if (MT_PROBE_ON(api_end) && mysql != NULL) {
        mt_api_end_mysql_slow(func, real, mysql, how, raw, begin);
    }
}

static inline void end_mysql(int func, const void *real, struct mt_mysql *mysql,
                             enum mt_outcome how, int64_t raw) {
    end_mysql_deferred(func, real, mysql, how, raw, NULL);
}

// Registers the shim's protocol trace plugin with Oracle's library, once per
// process, before its first connection. `real` is any real function of it.
void mt_api_register_trace_plugin(const void *real);

// Forgets the operation of Oracle's non-blocking API in progress on a handle
// being closed (api_oracle.c), so a new handle at its address starts afresh.
void mt_api_nonblocking_forget(const struct mt_mysql *mysql);
