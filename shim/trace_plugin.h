// SPDX-License-Identifier: GPL-2.0-only
// The shim's WL#6226 protocol trace plugin for Oracle's libmysqlclient >= 5.7:
// the library calls it on every protocol event, and it forwards each one to
// the trace_event probe.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// MYSQL_CLIENT_TRACE_PLUGIN and its interface versions in Oracle's
// client_plugin.h: 1.0 in 5.7 and 8.0; 2.0 in 9.7 (Debian sid's 9.7.4 refuses
// a 1.0 plugin: the library accepts only its own major version). Which
// release moved to 2.0 is not known here, so a library with get_options is
// offered 2.0 first, then 1.0.
#define MT_MYSQL_CLIENT_TRACE_PLUGIN 3
#define MT_MYSQL_TRACE_PLUGIN_INTERFACE_VERSION 0x0100
#define MT_MYSQL_TRACE_PLUGIN_INTERFACE_VERSION_2 0x0200

// The first client library version with trace plugins.
#define MT_MYSQL_TRACE_PLUGIN_MIN_VERSION 50700
// MySQL 8.0.27 added get_options to every client plugin's header, which
// moves the trace callbacks down by one pointer.
#define MT_MYSQL_GET_OPTIONS_VERSION 80027

// What registration needs from the process; a test stands in for the client
// library with it.
struct mt_trace_plugin_env {
    // A function of the client library, NULL when it has none.
    void *(*lookup)(const char *name, const void *ctx);
    const void *ctx;
    // The shim's number for a MYSQL *'s connection, 0 when unknown.
    uint32_t (*conn_of)(void *mysql);
};

enum mt_trace_plugin_result {
    MT_TRACE_PLUGIN_REGISTERED = 0,
    MT_TRACE_PLUGIN_NOT_ORACLE = 1,  // no client plugin API, or MariaDB's library
    MT_TRACE_PLUGIN_TOO_OLD = 2,     // before 5.7: no trace plugins
    MT_TRACE_PLUGIN_REFUSED = 3,     // the library said no (one trace plugin at a time)
};

// Registers the plugin when the library is Oracle's libmysqlclient >= 5.7; a
// throwaway MYSQL handle takes any error, so no handle of the program's
// changes. Keeps errno. Returns enum mt_trace_plugin_result.
int mt_trace_plugin_register(const struct mt_trace_plugin_env *env);

#ifdef MT_SHIM_TEST_HOOKS
// Test builds only: called with what the trace_event probe fires.
extern void (*mt_trace_plugin_test_hook)(void *mysql, int stage, int event, uint32_t conn);
#endif

#ifdef __cplusplus
}
#endif
