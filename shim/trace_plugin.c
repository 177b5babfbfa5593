// SPDX-License-Identifier: GPL-2.0-only
// The WL#6226 trace plugin (see trace_plugin.h). Layouts follow MySQL's
// documented include/mysql/client_plugin.h and include/mysql/plugin_trace.h.
#include "trace_plugin.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "probes.h"

#ifndef MT_SHIM_VERSION_MAJOR
#define MT_SHIM_VERSION_MAJOR 0
#define MT_SHIM_VERSION_MINOR 0
#define MT_SHIM_VERSION_PATCH 0
#endif

// st_trace_event_args: passed by value, on the stack, after the five
// register arguments; declared so the callback's signature is exact.
struct mt_trace_event_args {
    const char *plugin_name;
    int cmd;
    const unsigned char *hdr;
    size_t hdr_len;
    const unsigned char *pkt;
    size_t pkt_len;
};

// enum protocol_stage and enum trace_event are passed as ints.
typedef void *(*mt_tracing_start_fn)(void *self, void *mysql, int stage);
typedef void (*mt_tracing_stop_fn)(void *self, void *mysql, void *plugin_data);
typedef int (*mt_trace_event_fn)(void *self, void *plugin_data, void *mysql, int stage, int event,
                                 struct mt_trace_event_args args);

#define MT_PLUGIN_HEADER                       \
    int type;                                  \
    unsigned int interface_version;            \
    const char *name;                          \
    const char *author;                        \
    const char *desc;                          \
    unsigned int version[3];                   \
    const char *license;                       \
    void *mysql_api;                           \
    int (*init)(char *, size_t, int, va_list); \
    int (*deinit)(void);                       \
    int (*options)(const char *option, const void *);

#define MT_TRACE_CALLBACKS             \
    mt_tracing_start_fn tracing_start; \
    mt_tracing_stop_fn tracing_stop;   \
    mt_trace_event_fn trace_event;

// st_mysql_client_plugin_TRACE of 5.7 to 8.0.26.
struct mt_trace_plugin_57 {
    MT_PLUGIN_HEADER
    MT_TRACE_CALLBACKS
};

// st_mysql_client_plugin_TRACE from 8.0.27.
struct mt_trace_plugin_8027 {
    MT_PLUGIN_HEADER
    int (*get_options)(const char *option, void *);
    MT_TRACE_CALLBACKS
};

#ifdef MT_SHIM_TEST_HOOKS
void (*mt_trace_plugin_test_hook)(void *mysql, int stage, int event, uint32_t conn);
#endif

static uint32_t (*_Atomic conn_of)(void *mysql);

// Per-connection data: Oracle's library keeps it in the MYSQL handle and
// passes it back; the shim needs none, but says it traces the connection.
static char tracing;

static void *tracing_start(void *self, void *mysql, int stage) {
    (void)self;
    (void)mysql;
    (void)stage;
    return &tracing;
}

static void tracing_stop(void *self, void *mysql, void *plugin_data) {
    (void)self;
    (void)mysql;
    (void)plugin_data;
}

__attribute__((noinline)) static void forward(void *mysql, int stage, int event) {
    int saved = errno;
    uint32_t (*f)(void *) = atomic_load_explicit(&conn_of, memory_order_acquire);
    uint32_t conn = f != NULL ? f(mysql) : 0;
    MT_FIRE_TRACE_EVENT(mysql, stage, event, conn);
#ifdef MT_SHIM_TEST_HOOKS
    if (mt_trace_plugin_test_hook != NULL) {
        mt_trace_plugin_test_hook(mysql, stage, event, conn);
    }
#endif
    errno = saved;
}

// Returning non-zero would end tracing of the connection, so it is always 0:
// a tracer may attach later.
static int trace_event(void *self, void *plugin_data, void *mysql, int stage, int event,
                       struct mt_trace_event_args args) {
    (void)self;
    (void)plugin_data;
    (void)args;
    if (MT_PROBE_ON(trace_event)) {
        forward(mysql, stage, event);
    }
    return 0;
}

#define MT_PLUGIN_HEADER_VALUES                                                         \
    .type = MT_MYSQL_CLIENT_TRACE_PLUGIN,                                               \
    .interface_version = MT_MYSQL_TRACE_PLUGIN_INTERFACE_VERSION, .name = "mysqltrace", \
    .author = "mysqltrace", .desc = "Forwards protocol trace events to USDT probes",    \
    .version = {MT_SHIM_VERSION_MAJOR, MT_SHIM_VERSION_MINOR, MT_SHIM_VERSION_PATCH},   \
    .license = "GPL", .tracing_start = tracing_start, .tracing_stop = tracing_stop,     \
    .trace_event = trace_event

static struct mt_trace_plugin_57 plugin_57 = {MT_PLUGIN_HEADER_VALUES};
static struct mt_trace_plugin_8027 plugin_8027 = {MT_PLUGIN_HEADER_VALUES};

typedef void *(*mt_register_fn)(void *mysql, void *plugin);
typedef unsigned long (*mt_version_fn)(void);
typedef void *(*mt_init_fn)(void *mysql);
typedef void (*mt_close_fn)(void *mysql);

static int try_register(const struct mt_trace_plugin_env *env) {
    mt_register_fn reg = (mt_register_fn)env->lookup("mysql_client_register_plugin", env->ctx);
    mt_version_fn version = (mt_version_fn)env->lookup("mysql_get_client_version", env->ctx);
    mt_init_fn init = (mt_init_fn)env->lookup("mysql_init", env->ctx);
    mt_close_fn close_handle = (mt_close_fn)env->lookup("mysql_close", env->ctx);
    if (reg == NULL || version == NULL || init == NULL || close_handle == NULL) {
        return MT_TRACE_PLUGIN_NOT_ORACLE;
    }
    // MariaDB's libraries share the plugin API, but their trace plugin type
    // (MARIADB_CLIENT_TRACE_PLUGIN) has no callbacks.
    if (env->lookup("mariadb_get_infov", env->ctx) != NULL ||
        env->lookup("mariadb_connection", env->ctx) != NULL) {
        return MT_TRACE_PLUGIN_NOT_ORACLE;
    }
    unsigned long v = version();
    if (v < MT_MYSQL_TRACE_PLUGIN_MIN_VERSION) {
        return MT_TRACE_PLUGIN_TOO_OLD;
    }
    atomic_store_explicit(&conn_of, env->conn_of, memory_order_release);
    void *plugin = v >= MT_MYSQL_GET_OPTIONS_VERSION ? (void *)&plugin_8027 : (void *)&plugin_57;
    void *scratch = init(NULL);
    if (scratch == NULL) {
        return MT_TRACE_PLUGIN_REFUSED;
    }
    void *done = NULL;
    if (plugin == (void *)&plugin_8027) {
        // A refused plugin is not kept: the next version may be offered.
        plugin_8027.interface_version = MT_MYSQL_TRACE_PLUGIN_INTERFACE_VERSION_2;
        done = reg(scratch, plugin);
        if (done == NULL) {
            plugin_8027.interface_version = MT_MYSQL_TRACE_PLUGIN_INTERFACE_VERSION;
            done = reg(scratch, plugin);
        }
    } else {
        done = reg(scratch, plugin);
    }
    close_handle(scratch);
    return done != NULL ? MT_TRACE_PLUGIN_REGISTERED : MT_TRACE_PLUGIN_REFUSED;
}

int mt_trace_plugin_register(const struct mt_trace_plugin_env *env) {
    int saved = errno;
    int r = try_register(env);
    errno = saved;
    return r;
}
