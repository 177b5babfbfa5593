// SPDX-License-Identifier: GPL-2.0-only
// The MySQL C API interposers: api_begin / api_end around each call a program
// makes, for libmariadb and Oracle's libmysqlclient alike.
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "fd_table.h"
#include "resolve.h"
#include "trace_plugin.h"

struct mt_mysql *mysql_real_connect(struct mt_mysql *mysql, const char *host, const char *user,
                                    const char *passwd, const char *db, unsigned int port,
                                    const char *unix_socket, unsigned long flags);
int mysql_real_query(struct mt_mysql *mysql, const char *q, unsigned long length);
int mysql_query(struct mt_mysql *mysql, const char *q);
int mysql_send_query(struct mt_mysql *mysql, const char *q, unsigned long length);
mt_bool mysql_read_query_result(struct mt_mysql *mysql);
struct mt_mysql_res *mysql_store_result(struct mt_mysql *mysql);
struct mt_mysql_res *mysql_use_result(struct mt_mysql *mysql);
int mysql_next_result(struct mt_mysql *mysql);
int mysql_stmt_prepare(struct mt_mysql_stmt *stmt, const char *q, unsigned long length);
int mysql_stmt_execute(struct mt_mysql_stmt *stmt);
int mysql_stmt_fetch(struct mt_mysql_stmt *stmt);
mt_bool mysql_stmt_close(struct mt_mysql_stmt *stmt);
mt_bool mysql_change_user(struct mt_mysql *mysql, const char *user, const char *passwd,
                          const char *db);
int mysql_select_db(struct mt_mysql *mysql, const char *db);
int mysql_ping(struct mt_mysql *mysql);
int mysql_reset_connection(struct mt_mysql *mysql);
void mysql_close(struct mt_mysql *mysql);

// libmariadb's non-blocking API: _start begins an operation, _cont resumes
// it; either returns 0 once it is complete, with the result in *ret.
int mysql_real_connect_start(struct mt_mysql **ret, struct mt_mysql *mysql, const char *host,
                             const char *user, const char *passwd, const char *db,
                             unsigned int port, const char *unix_socket, unsigned long flags);
int mysql_real_connect_cont(struct mt_mysql **ret, struct mt_mysql *mysql, int status);
int mysql_real_query_start(int *ret, struct mt_mysql *mysql, const char *q, unsigned long length);
int mysql_real_query_cont(int *ret, struct mt_mysql *mysql, int status);
int mysql_query_start(int *ret, struct mt_mysql *mysql, const char *q);
int mysql_query_cont(int *ret, struct mt_mysql *mysql, int status);
int mysql_send_query_start(int *ret, struct mt_mysql *mysql, const char *q, unsigned long length);
int mysql_send_query_cont(int *ret, struct mt_mysql *mysql, int status);
int mysql_read_query_result_start(mt_bool *ret, struct mt_mysql *mysql);
int mysql_read_query_result_cont(mt_bool *ret, struct mt_mysql *mysql, int status);
int mysql_store_result_start(struct mt_mysql_res **ret, struct mt_mysql *mysql);
int mysql_store_result_cont(struct mt_mysql_res **ret, struct mt_mysql *mysql, int status);
int mysql_next_result_start(int *ret, struct mt_mysql *mysql);
int mysql_next_result_cont(int *ret, struct mt_mysql *mysql, int status);
int mysql_change_user_start(mt_bool *ret, struct mt_mysql *mysql, const char *user,
                            const char *passwd, const char *db);
int mysql_change_user_cont(mt_bool *ret, struct mt_mysql *mysql, int status);
int mysql_select_db_start(int *ret, struct mt_mysql *mysql, const char *db);
int mysql_select_db_cont(int *ret, struct mt_mysql *mysql, int status);
int mysql_ping_start(int *ret, struct mt_mysql *mysql);
int mysql_ping_cont(int *ret, struct mt_mysql *mysql, int status);
int mysql_reset_connection_start(int *ret, struct mt_mysql *mysql);
int mysql_reset_connection_cont(int *ret, struct mt_mysql *mysql, int status);
int mysql_close_start(struct mt_mysql *mysql);
int mysql_close_cont(struct mt_mysql *mysql, int status);
int mysql_stmt_prepare_start(int *ret, struct mt_mysql_stmt *stmt, const char *q,
                             unsigned long length);
int mysql_stmt_prepare_cont(int *ret, struct mt_mysql_stmt *stmt, int status);
int mysql_stmt_execute_start(int *ret, struct mt_mysql_stmt *stmt);
int mysql_stmt_execute_cont(int *ret, struct mt_mysql_stmt *stmt, int status);
int mysql_stmt_fetch_start(int *ret, struct mt_mysql_stmt *stmt);
int mysql_stmt_fetch_cont(int *ret, struct mt_mysql_stmt *stmt, int status);
int mysql_stmt_close_start(mt_bool *ret, struct mt_mysql_stmt *stmt);
int mysql_stmt_close_cont(mt_bool *ret, struct mt_mysql_stmt *stmt, int status);

#define MT_API_FUNCS(X)              \
    X(mysql_real_connect)            \
    X(mysql_real_query)              \
    X(mysql_query)                   \
    X(mysql_send_query)              \
    X(mysql_read_query_result)       \
    X(mysql_store_result)            \
    X(mysql_use_result)              \
    X(mysql_next_result)             \
    X(mysql_stmt_prepare)            \
    X(mysql_stmt_execute)            \
    X(mysql_stmt_fetch)              \
    X(mysql_stmt_close)              \
    X(mysql_change_user)             \
    X(mysql_select_db)               \
    X(mysql_ping)                    \
    X(mysql_reset_connection)        \
    X(mysql_close)                   \
    X(mysql_real_connect_start)      \
    X(mysql_real_connect_cont)       \
    X(mysql_real_query_start)        \
    X(mysql_real_query_cont)         \
    X(mysql_query_start)             \
    X(mysql_query_cont)              \
    X(mysql_send_query_start)        \
    X(mysql_send_query_cont)         \
    X(mysql_read_query_result_start) \
    X(mysql_read_query_result_cont)  \
    X(mysql_store_result_start)      \
    X(mysql_store_result_cont)       \
    X(mysql_next_result_start)       \
    X(mysql_next_result_cont)        \
    X(mysql_change_user_start)       \
    X(mysql_change_user_cont)        \
    X(mysql_select_db_start)         \
    X(mysql_select_db_cont)          \
    X(mysql_ping_start)              \
    X(mysql_ping_cont)               \
    X(mysql_reset_connection_start)  \
    X(mysql_reset_connection_cont)   \
    X(mysql_close_start)             \
    X(mysql_close_cont)              \
    X(mysql_stmt_prepare_start)      \
    X(mysql_stmt_prepare_cont)       \
    X(mysql_stmt_execute_start)      \
    X(mysql_stmt_execute_cont)       \
    X(mysql_stmt_fetch_start)        \
    X(mysql_stmt_fetch_cont)         \
    X(mysql_stmt_close_start)        \
    X(mysql_stmt_close_cont)

#define MT_REAL_SLOT(name) static void *_Atomic real_##name;
MT_API_FUNCS(MT_REAL_SLOT)

#define REAL(name) ((__typeof__(&name))mt_real(&real_##name, #name))

__attribute__((constructor)) static void api_init(void) {
#define MT_PRERESOLVE(name) mt_preresolve(&real_##name, #name);
    MT_API_FUNCS(MT_PRERESOLVE)
}

// What a wrapper returns when the library is not there after all: the
// function's own failure value (mysql_errno() and friends cannot say more).
#define MT_NO_REAL_INT 1
#define MT_NO_REAL_BOOL 1

// ---- Helpers: public API functions of the same library ----

#define MT_HELPERS(X)              \
    X(mysql_get_socket)            \
    X(mysql_get_socket_descriptor) \
    X(mysql_errno)                 \
    X(mysql_sqlstate)              \
    X(mysql_error)                 \
    X(mysql_thread_id)             \
    X(mysql_field_count)           \
    X(mysql_stmt_errno)            \
    X(mysql_stmt_sqlstate)         \
    X(mysql_stmt_error)

#define MT_HELPER_SLOT(name) static void *_Atomic helper_##name;
MT_HELPERS(MT_HELPER_SLOT)

#define HELPER(type, name, real) ((type)mt_helper(&helper_##name, (real), #name))

typedef int (*mt_get_socket_fn)(struct mt_mysql *);
typedef unsigned int (*mt_errno_fn)(struct mt_mysql *);
typedef const char *(*mt_text_fn)(struct mt_mysql *);
typedef unsigned long (*mt_thread_id_fn)(struct mt_mysql *);
typedef unsigned int (*mt_stmt_errno_fn)(struct mt_mysql_stmt *);
typedef const char *(*mt_stmt_text_fn)(struct mt_mysql_stmt *);

// The shim's number for a handle's connection: that of its socket.
// mysql_get_socket() is libmariadb's; some MySQL forks have
// mysql_get_socket_descriptor(); Oracle's library has neither (0 then).
static uint32_t mysql_conn(const void *real, struct mt_mysql *mysql) {
    mt_get_socket_fn get = HELPER(mt_get_socket_fn, mysql_get_socket, real);
    if (get == NULL) {
        get = HELPER(mt_get_socket_fn, mysql_get_socket_descriptor, real);
    }
    return get != NULL ? mt_fd_conn(get(mysql)) : 0;
}

// The trace plugin's view: any real function of the library will do.
static const void *_Atomic client_anchor;

static uint32_t trace_plugin_conn(void *mysql) {
    const void *real = atomic_load_explicit(&client_anchor, memory_order_acquire);
    return real != NULL && mysql != NULL ? mysql_conn(real, mysql) : 0;
}

static void *lookup_beside(const char *name, const void *real) {
    return mt_find_beside(real, name);
}

static _Atomic int trace_plugin_tried;

// Once per process, before the first connection, so that Oracle's library
// traces every connection from its start.
void mt_api_register_trace_plugin(const void *real) {
    int expected = 0;
    if (atomic_load_explicit(&trace_plugin_tried, memory_order_relaxed) != 0 ||
        !atomic_compare_exchange_strong(&trace_plugin_tried, &expected, 1)) {
        return;
    }
    atomic_store_explicit(&client_anchor, real, memory_order_release);
    struct mt_trace_plugin_env env = {
        .lookup = lookup_beside, .ctx = real, .conn_of = trace_plugin_conn};
    mt_trace_plugin_register(&env);
}

// ---- Reporting ----

__thread int mt_api_depth __attribute__((tls_model("initial-exec")));
__thread struct mt_api_begin_info *mt_api_unsent_begin __attribute__((tls_model("initial-exec")));

void mt_api_begin_slow(int func, const void *real, void *handle, int is_stmt, const char *arg,
                       uint64_t arg_len, int arg_is_cstr) {
    int saved = errno;
    uint32_t conn = is_stmt ? 0 : mysql_conn(real, handle);
    if (arg_is_cstr) {
        arg_len = arg != NULL ? strlen(arg) : 0;
    }
    MT_FIRE_API_BEGIN(func, handle, conn, arg, arg != NULL ? arg_len : 0);
    errno = saved;
}

struct mt_api_begin_info *mt_api_defer_begin_slow(struct mt_api_begin_info *b, int func,
                                                  const void *real, void *handle, int is_stmt,
                                                  const char *arg, uint64_t arg_len,
                                                  int arg_is_cstr) {
    if (!MT_PROBE_ON(api_end)) {
        if (MT_PROBE_ON(api_begin)) {
            mt_api_begin_slow(func, real, handle, is_stmt, arg, arg_len, arg_is_cstr);
        }
        return NULL;
    }
    int saved = errno;
    if (arg_is_cstr) {
        arg_len = arg != NULL ? strlen(arg) : 0;
    }
    b->func = (uint32_t)func;
    b->conn = is_stmt ? 0 : mysql_conn(real, handle);
    b->handle = (uint64_t)(uintptr_t)handle;
    b->arg = (uint64_t)(uintptr_t)arg;
    b->arg_len = arg != NULL ? arg_len : 0;
    // Last, so the call's time starts as close to the real call as api_begin's did.
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    b->begin_ns = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
    mt_api_unsent_begin = b;
    errno = saved;
    return b;
}

void mt_api_end_mysql_slow(int func, const void *real, struct mt_mysql *mysql, enum mt_outcome how,
                           int64_t raw, struct mt_api_begin_info *begin) {
    int saved = errno;
    int failed;
    if (how == OUT_HANDLE) {
        failed = raw == 0;
    } else if (how == OUT_RESULT_SET) {
        mt_errno_fn field_count = HELPER(mt_errno_fn, mysql_field_count, real);
        mt_errno_fn err = HELPER(mt_errno_fn, mysql_errno, real);
        failed = raw == 0 && ((field_count != NULL && field_count(mysql) != 0) ||
                              (err != NULL && err(mysql) != 0));
    } else if (how == OUT_POSITIVE) {
        failed = raw > 0;
    } else {
        failed = raw != 0;
    }
    if (!failed && quiet_unless_failed(func)) {
        errno = saved;
        return;
    }
    uint32_t code = 0;
    const char *sqlstate = NULL;
    const char *message = NULL;
    if (failed) {
        mt_errno_fn err = HELPER(mt_errno_fn, mysql_errno, real);
        mt_text_fn state = HELPER(mt_text_fn, mysql_sqlstate, real);
        mt_text_fn text = HELPER(mt_text_fn, mysql_error, real);
        code = err != NULL ? err(mysql) : 0;
        sqlstate = state != NULL ? state(mysql) : NULL;
        message = text != NULL ? text(mysql) : NULL;
    }
    mt_thread_id_fn tid = HELPER(mt_thread_id_fn, mysql_thread_id, real);
    uint32_t thread_id = tid != NULL ? (uint32_t)tid(mysql) : 0;
    MT_FIRE_API_END(func, mysql, mysql_conn(real, mysql), failed, code, sqlstate, message,
                    thread_id, begin);
    errno = saved;
}

// A statement handle's connection is not available through the public API:
// conn and thread_id are 0.
__attribute__((noinline)) static void end_stmt_slow(int func, const void *real,
                                                    struct mt_mysql_stmt *stmt, enum mt_outcome how,
                                                    int64_t raw, struct mt_api_begin_info *begin) {
    int saved = errno;
    int64_t ret = how == OUT_FETCH ? raw : raw != 0;
    int failed = how == OUT_FETCH ? raw == 1 : raw != 0;
    if (!failed && quiet_unless_failed(func)) {
        errno = saved;
        return;
    }
    uint32_t code = 0;
    const char *sqlstate = NULL;
    const char *message = NULL;
    if (failed && how != OUT_FREED) {
        mt_stmt_errno_fn err = HELPER(mt_stmt_errno_fn, mysql_stmt_errno, real);
        mt_stmt_text_fn state = HELPER(mt_stmt_text_fn, mysql_stmt_sqlstate, real);
        mt_stmt_text_fn text = HELPER(mt_stmt_text_fn, mysql_stmt_error, real);
        code = err != NULL ? err(stmt) : 0;
        sqlstate = state != NULL ? state(stmt) : NULL;
        message = text != NULL ? text(stmt) : NULL;
    }
    MT_FIRE_API_END(func, stmt, 0, ret, code, sqlstate, message, 0, begin);
    errno = saved;
}

static inline void end_stmt_deferred(int func, const void *real, struct mt_mysql_stmt *stmt,
                                     enum mt_outcome how, int64_t raw,
                                     struct mt_api_begin_info *begin) {
    if (MT_PROBE_ON(api_end) && stmt != NULL) {
        end_stmt_slow(func, real, stmt, how, raw, begin);
    }
}

static inline void end_stmt(int func, const void *real, struct mt_mysql_stmt *stmt,
                            enum mt_outcome how, int64_t raw) {
    end_stmt_deferred(func, real, stmt, how, raw, NULL);
}

// ---- Blocking API ----

// Most interposers are two functions. The exported one, with no tracer
// attached to the API probes, loads the real function and the two semaphores
// and jumps to the real function: no stack frame, no nesting depth. The
// _watched one reports the call.

MT_EXPORT struct mt_mysql *mysql_real_connect(struct mt_mysql *mysql, const char *host,
                                              const char *user, const char *passwd, const char *db,
                                              unsigned int port, const char *unix_socket,
                                              unsigned long flags) {
    __typeof__(&mysql_real_connect) real = REAL(mysql_real_connect);
    if (real == NULL) {
        return NULL;
    }
    if (!nested()) {
        // With or without a tracer: Oracle's library traces a connection
        // only if the plugin is there before it.
        mt_api_register_trace_plugin((const void *)real);
    }
    if (pass_through()) {
        return real(mysql, host, user, passwd, db, port, unix_socket, flags);
    }
    begin_mysql(MT_API_REAL_CONNECT, real, mysql, NULL, 0);
    mt_api_depth++;
    struct mt_mysql *r = real(mysql, host, user, passwd, db, port, unix_socket, flags);
    mt_api_depth--;
    end_mysql(MT_API_REAL_CONNECT, real, mysql, OUT_HANDLE, r != NULL);
    return r;
}

__attribute__((noinline)) static int mysql_real_query_watched(struct mt_mysql *mysql, const char *q,
                                                              unsigned long length) {
    __typeof__(&mysql_real_query) real = REAL(mysql_real_query);
    if (real == NULL) {
        return MT_NO_REAL_INT;
    }
    if (pass_through()) {
        return real(mysql, q, length);
    }
    struct mt_api_begin_info b;
    struct mt_api_begin_info *deferred = defer_mysql(&b, MT_API_REAL_QUERY, real, mysql, q, length);
    mt_api_depth++;
    int r = real(mysql, q, length);
    mt_api_depth--;
    end_mysql_deferred(MT_API_REAL_QUERY, real, mysql, OUT_ZERO_OK, r, unsent_begin(deferred));
    return r;
}

MT_EXPORT int mysql_real_query(struct mt_mysql *mysql, const char *q, unsigned long length) {
    __typeof__(&mysql_real_query) real = MT_REAL_IF_RESOLVED(mysql_real_query);
    if (__builtin_expect(real != NULL, 1) && !api_watched()) {
        return real(mysql, q, length);
    }
    return mysql_real_query_watched(mysql, q, length);
}

__attribute__((noinline)) static int mysql_query_watched(struct mt_mysql *mysql, const char *q) {
    __typeof__(&mysql_query) real = REAL(mysql_query);
    if (real == NULL) {
        return MT_NO_REAL_INT;
    }
    if (pass_through()) {
        return real(mysql, q);
    }
    struct mt_api_begin_info b;
    struct mt_api_begin_info *deferred = defer_mysql_cstr(&b, MT_API_QUERY, real, mysql, q);
    mt_api_depth++;
    int r = real(mysql, q);
    mt_api_depth--;
    end_mysql_deferred(MT_API_QUERY, real, mysql, OUT_ZERO_OK, r, unsent_begin(deferred));
    return r;
}

MT_EXPORT int mysql_query(struct mt_mysql *mysql, const char *q) {
    __typeof__(&mysql_query) real = MT_REAL_IF_RESOLVED(mysql_query);
    if (__builtin_expect(real != NULL, 1) && !api_watched()) {
        return real(mysql, q);
    }
    return mysql_query_watched(mysql, q);
}

__attribute__((noinline)) static int mysql_send_query_watched(struct mt_mysql *mysql, const char *q,
                                                              unsigned long length) {
    __typeof__(&mysql_send_query) real = REAL(mysql_send_query);
    if (real == NULL) {
        return MT_NO_REAL_INT;
    }
    if (pass_through()) {
        return real(mysql, q, length);
    }
    struct mt_api_begin_info b;
    struct mt_api_begin_info *deferred = defer_mysql(&b, MT_API_SEND_QUERY, real, mysql, q, length);
    mt_api_depth++;
    int r = real(mysql, q, length);
    mt_api_depth--;
    end_mysql_deferred(MT_API_SEND_QUERY, real, mysql, OUT_ZERO_OK, r, unsent_begin(deferred));
    return r;
}

MT_EXPORT int mysql_send_query(struct mt_mysql *mysql, const char *q, unsigned long length) {
    __typeof__(&mysql_send_query) real = MT_REAL_IF_RESOLVED(mysql_send_query);
    if (__builtin_expect(real != NULL, 1) && !api_watched()) {
        return real(mysql, q, length);
    }
    return mysql_send_query_watched(mysql, q, length);
}

// A function of one handle: defer its begin, call it, report its end (with
// the begin if no io hit reported it). Functions quiet unless they fail have
// no begin.
// `raw` is the result as the end probe takes it (an expression of r).
#define MT_ONE_HANDLE(name, ret_type, handle_type, no_real, kind, func, how, raw)             \
    __attribute__((noinline)) static ret_type name##_watched(handle_type *handle) {           \
        __typeof__(&name) real = REAL(name);                                                  \
        if (real == NULL) {                                                                   \
            return no_real;                                                                   \
        }                                                                                     \
        if (pass_through()) {                                                                 \
            return real(handle);                                                              \
        }                                                                                     \
        struct mt_api_begin_info b;                                                           \
        struct mt_api_begin_info *deferred =                                                  \
            quiet_unless_failed(func) ? NULL : defer_##kind(&b, func, real, handle, NULL, 0); \
        mt_api_depth++;                                                                       \
        ret_type r = real(handle);                                                            \
        mt_api_depth--;                                                                       \
        end_##kind##_deferred(func, real, handle, how, raw, unsent_begin(deferred));          \
        return r;                                                                             \
    }                                                                                         \
    MT_EXPORT ret_type name(handle_type *handle) {                                            \
        __typeof__(&name) real = MT_REAL_IF_RESOLVED(name);                                   \
        if (__builtin_expect(real != NULL, 1) && !api_watched()) {                            \
            return real(handle);                                                              \
        }                                                                                     \
        return name##_watched(handle);                                                        \
    }

MT_ONE_HANDLE(mysql_read_query_result, mt_bool, struct mt_mysql, MT_NO_REAL_BOOL, mysql,
              MT_API_READ_QUERY_RESULT, OUT_ZERO_OK, r)
MT_ONE_HANDLE(mysql_store_result, struct mt_mysql_res *, struct mt_mysql, NULL, mysql,
              MT_API_STORE_RESULT, OUT_RESULT_SET, r != NULL)
MT_ONE_HANDLE(mysql_use_result, struct mt_mysql_res *, struct mt_mysql, NULL, mysql,
              MT_API_USE_RESULT, OUT_RESULT_SET, r != NULL)
MT_ONE_HANDLE(mysql_next_result, int, struct mt_mysql, MT_NO_REAL_INT, mysql, MT_API_NEXT_RESULT,
              OUT_POSITIVE, r)
__attribute__((noinline)) static int mysql_stmt_prepare_watched(struct mt_mysql_stmt *stmt,
                                                                const char *q,
                                                                unsigned long length) {
    __typeof__(&mysql_stmt_prepare) real = REAL(mysql_stmt_prepare);
    if (real == NULL) {
        return MT_NO_REAL_INT;
    }
    if (pass_through()) {
        return real(stmt, q, length);
    }
    struct mt_api_begin_info b;
    struct mt_api_begin_info *deferred = defer_stmt(&b, MT_API_STMT_PREPARE, real, stmt, q, length);
    mt_api_depth++;
    int r = real(stmt, q, length);
    mt_api_depth--;
    end_stmt_deferred(MT_API_STMT_PREPARE, real, stmt, OUT_ZERO_OK, r, unsent_begin(deferred));
    return r;
}

MT_EXPORT int mysql_stmt_prepare(struct mt_mysql_stmt *stmt, const char *q, unsigned long length) {
    __typeof__(&mysql_stmt_prepare) real = MT_REAL_IF_RESOLVED(mysql_stmt_prepare);
    if (__builtin_expect(real != NULL, 1) && !api_watched()) {
        return real(stmt, q, length);
    }
    return mysql_stmt_prepare_watched(stmt, q, length);
}

MT_ONE_HANDLE(mysql_stmt_execute, int, struct mt_mysql_stmt, MT_NO_REAL_INT, stmt,
              MT_API_STMT_EXECUTE, OUT_ZERO_OK, r)
MT_ONE_HANDLE(mysql_stmt_fetch, int, struct mt_mysql_stmt, MT_NO_REAL_INT, stmt, MT_API_STMT_FETCH,
              OUT_FETCH, r)
MT_ONE_HANDLE(mysql_stmt_close, mt_bool, struct mt_mysql_stmt, MT_NO_REAL_BOOL, stmt,
              MT_API_STMT_CLOSE, OUT_FREED, r)
__attribute__((noinline)) static mt_bool mysql_change_user_watched(struct mt_mysql *mysql,
                                                                   const char *user,
                                                                   const char *passwd,
                                                                   const char *db) {
    __typeof__(&mysql_change_user) real = REAL(mysql_change_user);
    if (real == NULL) {
        return MT_NO_REAL_BOOL;
    }
    if (pass_through()) {
        return real(mysql, user, passwd, db);
    }
    begin_mysql(MT_API_CHANGE_USER, real, mysql, NULL, 0);
    mt_api_depth++;
    mt_bool r = real(mysql, user, passwd, db);
    mt_api_depth--;
    end_mysql(MT_API_CHANGE_USER, real, mysql, OUT_ZERO_OK, r);
    return r;
}

MT_EXPORT mt_bool mysql_change_user(struct mt_mysql *mysql, const char *user, const char *passwd,
                                    const char *db) {
    __typeof__(&mysql_change_user) real = MT_REAL_IF_RESOLVED(mysql_change_user);
    if (__builtin_expect(real != NULL, 1) && !api_watched()) {
        return real(mysql, user, passwd, db);
    }
    return mysql_change_user_watched(mysql, user, passwd, db);
}

__attribute__((noinline)) static int mysql_select_db_watched(struct mt_mysql *mysql,
                                                             const char *db) {
    __typeof__(&mysql_select_db) real = REAL(mysql_select_db);
    if (real == NULL) {
        return MT_NO_REAL_INT;
    }
    if (pass_through()) {
        return real(mysql, db);
    }
    struct mt_api_begin_info b;
    struct mt_api_begin_info *deferred = defer_mysql_cstr(&b, MT_API_SELECT_DB, real, mysql, db);
    mt_api_depth++;
    int r = real(mysql, db);
    mt_api_depth--;
    end_mysql_deferred(MT_API_SELECT_DB, real, mysql, OUT_ZERO_OK, r, unsent_begin(deferred));
    return r;
}

MT_EXPORT int mysql_select_db(struct mt_mysql *mysql, const char *db) {
    __typeof__(&mysql_select_db) real = MT_REAL_IF_RESOLVED(mysql_select_db);
    if (__builtin_expect(real != NULL, 1) && !api_watched()) {
        return real(mysql, db);
    }
    return mysql_select_db_watched(mysql, db);
}

MT_ONE_HANDLE(mysql_ping, int, struct mt_mysql, MT_NO_REAL_INT, mysql, MT_API_PING, OUT_ZERO_OK, r)
MT_ONE_HANDLE(mysql_reset_connection, int, struct mt_mysql, MT_NO_REAL_INT, mysql,
              MT_API_RESET_CONNECTION, OUT_ZERO_OK, r)
// Reported before the real call: afterwards the handle is freed.
static void close_report(const void *real, struct mt_mysql *mysql) {
    begin_mysql(MT_API_CLOSE, real, mysql, NULL, 0);
    end_mysql(MT_API_CLOSE, real, mysql, OUT_ZERO_OK, 0);
}

MT_EXPORT void mysql_close(struct mt_mysql *mysql) {
    __typeof__(&mysql_close) real = REAL(mysql_close);
    if (real == NULL) {
        return;
    }
    if (nested()) {
        real(mysql);
        return;
    }
    mt_api_nonblocking_forget(mysql);
    if (pass_through()) {
        real(mysql);
        return;
    }
    // The call's end is reported after it, so its time and the COM_QUIT it
    // sends fall inside it; the handle is freed by then, so nothing is read
    // from it afterwards.
    begin_mysql(MT_API_CLOSE, real, mysql, NULL, 0);
    uint32_t conn = 0;
    int report_end = MT_PROBE_ON(api_end) && mysql != NULL;
    if (report_end) {
        int saved = errno;
        conn = mysql_conn(real, mysql);
        errno = saved;
    }
    mt_api_depth++;
    real(mysql);
    mt_api_depth--;
    if (report_end) {
        MT_FIRE_API_END(MT_API_CLOSE, mysql, conn, 0, 0, NULL, NULL, 0, NULL);
    }
}

// ---- Non-blocking API (libmariadb) ----

// A _cont function: the operation's end when it returns 0.
#define MT_CONT(name, handle_type, ret_type, no_real_value, end_call)                       \
    __attribute__((noinline)) static int name##_watched(ret_type *ret, handle_type *handle, \
                                                        int status) {                       \
        __typeof__(&name) real = REAL(name);                                                \
        if (real == NULL) {                                                                 \
            *ret = no_real_value;                                                           \
            return 0;                                                                       \
        }                                                                                   \
        if (pass_through()) {                                                               \
            return real(ret, handle, status);                                               \
        }                                                                                   \
        mt_api_depth++;                                                                     \
        int done = real(ret, handle, status);                                               \
        mt_api_depth--;                                                                     \
        if (done == 0) {                                                                    \
            end_call;                                                                       \
        }                                                                                   \
        return done;                                                                        \
    }                                                                                       \
    MT_EXPORT int name(ret_type *ret, handle_type *handle, int status) {                    \
        __typeof__(&name) real = MT_REAL_IF_RESOLVED(name);                                 \
        if (__builtin_expect(real != NULL, 1) && !api_watched()) {                          \
            return real(ret, handle, status);                                               \
        }                                                                                   \
        return name##_watched(ret, handle, status);                                         \
    }

// A _start function: api_begin, the call, and the end if it completed at once.
#define MT_START(name, handle_type, ret_type, no_real_value, params, args, begin_call, end_call) \
    __attribute__((noinline)) static int name##_watched(ret_type *ret,                           \
                                                        handle_type *handle MT_UNPAREN params) { \
        __typeof__(&name) real = REAL(name);                                                     \
        if (real == NULL) {                                                                      \
            *ret = no_real_value;                                                                \
            return 0;                                                                            \
        }                                                                                        \
        if (pass_through()) {                                                                    \
            return real(ret, handle MT_UNPAREN args);                                            \
        }                                                                                        \
        begin_call;                                                                              \
        mt_api_depth++;                                                                          \
        int done = real(ret, handle MT_UNPAREN args);                                            \
        mt_api_depth--;                                                                          \
        if (done == 0) {                                                                         \
            end_call;                                                                            \
        }                                                                                        \
        return done;                                                                             \
    }                                                                                            \
    MT_EXPORT int name(ret_type *ret, handle_type *handle MT_UNPAREN params) {                   \
        __typeof__(&name) real = MT_REAL_IF_RESOLVED(name);                                      \
        if (__builtin_expect(real != NULL, 1) && !api_watched()) {                               \
            return real(ret, handle MT_UNPAREN args);                                            \
        }                                                                                        \
        return name##_watched(ret, handle MT_UNPAREN args);                                      \
    }

#define MT_UNPAREN(...) __VA_ARGS__

#define MT_NONBLOCKING(base, handle_type, ret_type, no_real_value, params, args, begin_call, \
                       end_call)                                                             \
    MT_START(base##_start, handle_type, ret_type, no_real_value, params, args, begin_call,   \
             end_call)                                                                       \
    MT_CONT(base##_cont, handle_type, ret_type, no_real_value, end_call)

MT_NONBLOCKING(mysql_real_connect, struct mt_mysql, struct mt_mysql *, NULL,
               (, const char *host, const char *user, const char *passwd, const char *db,
                unsigned int port, const char *unix_socket, unsigned long flags),
               (, host, user, passwd, db, port, unix_socket, flags),
               begin_mysql(MT_API_REAL_CONNECT, real, handle, NULL, 0),
               end_mysql(MT_API_REAL_CONNECT, real, handle, OUT_HANDLE, *ret != NULL))

MT_NONBLOCKING(mysql_real_query, struct mt_mysql, int, MT_NO_REAL_INT,
               (, const char *q, unsigned long length), (, q, length),
               begin_mysql(MT_API_REAL_QUERY, real, handle, q, length),
               end_mysql(MT_API_REAL_QUERY, real, handle, OUT_ZERO_OK, *ret))

MT_NONBLOCKING(mysql_query, struct mt_mysql, int, MT_NO_REAL_INT, (, const char *q), (, q),
               begin_mysql_cstr(MT_API_QUERY, real, handle, q),
               end_mysql(MT_API_QUERY, real, handle, OUT_ZERO_OK, *ret))

MT_NONBLOCKING(mysql_send_query, struct mt_mysql, int, MT_NO_REAL_INT,
               (, const char *q, unsigned long length), (, q, length),
               begin_mysql(MT_API_SEND_QUERY, real, handle, q, length),
               end_mysql(MT_API_SEND_QUERY, real, handle, OUT_ZERO_OK, *ret))

MT_NONBLOCKING(mysql_read_query_result, struct mt_mysql, mt_bool, MT_NO_REAL_BOOL, (), (),
               begin_mysql(MT_API_READ_QUERY_RESULT, real, handle, NULL, 0),
               end_mysql(MT_API_READ_QUERY_RESULT, real, handle, OUT_ZERO_OK, *ret))

MT_NONBLOCKING(mysql_store_result, struct mt_mysql, struct mt_mysql_res *, NULL, (), (),
               begin_mysql(MT_API_STORE_RESULT, real, handle, NULL, 0),
               end_mysql(MT_API_STORE_RESULT, real, handle, OUT_RESULT_SET, *ret != NULL))

MT_NONBLOCKING(mysql_next_result, struct mt_mysql, int, MT_NO_REAL_INT, (), (),
               begin_mysql(MT_API_NEXT_RESULT, real, handle, NULL, 0),
               end_mysql(MT_API_NEXT_RESULT, real, handle, OUT_POSITIVE, *ret))

MT_NONBLOCKING(mysql_change_user, struct mt_mysql, mt_bool, MT_NO_REAL_BOOL,
               (, const char *user, const char *passwd, const char *db), (, user, passwd, db),
               begin_mysql(MT_API_CHANGE_USER, real, handle, NULL, 0),
               end_mysql(MT_API_CHANGE_USER, real, handle, OUT_ZERO_OK, *ret))

MT_NONBLOCKING(mysql_select_db, struct mt_mysql, int, MT_NO_REAL_INT, (, const char *db), (, db),
               begin_mysql_cstr(MT_API_SELECT_DB, real, handle, db),
               end_mysql(MT_API_SELECT_DB, real, handle, OUT_ZERO_OK, *ret))

MT_NONBLOCKING(mysql_ping, struct mt_mysql, int, MT_NO_REAL_INT, (), (),
               begin_mysql(MT_API_PING, real, handle, NULL, 0),
               end_mysql(MT_API_PING, real, handle, OUT_ZERO_OK, *ret))

MT_NONBLOCKING(mysql_reset_connection, struct mt_mysql, int, MT_NO_REAL_INT, (), (),
               begin_mysql(MT_API_RESET_CONNECTION, real, handle, NULL, 0),
               end_mysql(MT_API_RESET_CONNECTION, real, handle, OUT_ZERO_OK, *ret))

MT_NONBLOCKING(mysql_stmt_prepare, struct mt_mysql_stmt, int, MT_NO_REAL_INT,
               (, const char *q, unsigned long length), (, q, length),
               begin_stmt(MT_API_STMT_PREPARE, real, handle, q, length),
               end_stmt(MT_API_STMT_PREPARE, real, handle, OUT_ZERO_OK, *ret))

MT_NONBLOCKING(mysql_stmt_execute, struct mt_mysql_stmt, int, MT_NO_REAL_INT, (), (),
               begin_stmt(MT_API_STMT_EXECUTE, real, handle, NULL, 0),
               end_stmt(MT_API_STMT_EXECUTE, real, handle, OUT_ZERO_OK, *ret))

MT_NONBLOCKING(mysql_stmt_fetch, struct mt_mysql_stmt, int, MT_NO_REAL_INT, (), (),
               begin_stmt(MT_API_STMT_FETCH, real, handle, NULL, 0),
               end_stmt(MT_API_STMT_FETCH, real, handle, OUT_FETCH, *ret))

MT_NONBLOCKING(mysql_stmt_close, struct mt_mysql_stmt, mt_bool, MT_NO_REAL_BOOL, (), (),
               begin_stmt(MT_API_STMT_CLOSE, real, handle, NULL, 0),
               end_stmt(MT_API_STMT_CLOSE, real, handle, OUT_FREED, *ret))

// Reported before the operation starts, like mysql_close(): when it completes
// the handle is gone. The _cont function only keeps the library's own final
// mysql_close() call from being reported again.
__attribute__((noinline)) static int mysql_close_start_watched(struct mt_mysql *mysql) {
    __typeof__(&mysql_close_start) real = REAL(mysql_close_start);
    if (real == NULL) {
        return 0;
    }
    if (pass_through()) {
        return real(mysql);
    }
    close_report(real, mysql);
    mt_api_depth++;
    int done = real(mysql);
    mt_api_depth--;
    return done;
}

MT_EXPORT int mysql_close_start(struct mt_mysql *mysql) {
    __typeof__(&mysql_close_start) real = MT_REAL_IF_RESOLVED(mysql_close_start);
    if (__builtin_expect(real != NULL, 1) && !api_watched()) {
        return real(mysql);
    }
    return mysql_close_start_watched(mysql);
}

__attribute__((noinline)) static int mysql_close_cont_watched(struct mt_mysql *mysql, int status) {
    __typeof__(&mysql_close_cont) real = REAL(mysql_close_cont);
    if (real == NULL) {
        return 0;
    }
    if (pass_through()) {
        return real(mysql, status);
    }
    mt_api_depth++;
    int done = real(mysql, status);
    mt_api_depth--;
    return done;
}

MT_EXPORT int mysql_close_cont(struct mt_mysql *mysql, int status) {
    __typeof__(&mysql_close_cont) real = MT_REAL_IF_RESOLVED(mysql_close_cont);
    if (__builtin_expect(real != NULL, 1) && !api_watched()) {
        return real(mysql, status);
    }
    return mysql_close_cont_watched(mysql, status);
}
