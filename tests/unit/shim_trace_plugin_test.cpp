// SPDX-License-Identifier: GPL-2.0-only
// The shim's WL#6226 trace plugin (shim/trace_plugin.c) registered with a fake
// client library: which libraries get it, the plugin struct it hands over (read
// through this test's own statement of MySQL's documented layouts), and events
// driven through its callbacks reaching the trace_event probe.
#include "trace_plugin.h"

#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "probes.h"

namespace {

// MySQL's include/mysql/client_plugin.h and plugin_trace.h, restated.
struct TraceEventArgs {
    const char *plugin_name;
    int cmd;
    const unsigned char *hdr;
    size_t hdr_len;
    const unsigned char *pkt;
    size_t pkt_len;
};
using TracingStart = void *(*)(void *self, void *mysql, int stage);
using TracingStop = void (*)(void *self, void *mysql, void *data);
using TraceEvent = int (*)(void *self, void *data, void *mysql, int stage, int event,
                           TraceEventArgs args);

struct Header {
    int type;
    unsigned int interface_version;
    const char *name;
    const char *author;
    const char *desc;
    unsigned int version[3];
    const char *license;
    void *mysql_api;
    int (*init)(char *, size_t, int, va_list);
    int (*deinit)();
    int (*options)(const char *, const void *);
};
struct Callbacks {
    TracingStart tracing_start;
    TracingStop tracing_stop;
    TraceEvent trace_event;
};
struct Plugin57 {  // 5.7 to 8.0.26
    Header h;
    Callbacks cb;
};
struct Plugin8027 {  // 8.0.27 and later
    Header h;
    int (*get_options)(const char *, void *);
    Callbacks cb;
};
static_assert(offsetof(Plugin57, cb) == 88);
static_assert(offsetof(Plugin8027, cb) == 96);

// The fake client library.
struct FakeLibrary {
    unsigned long version = 80036;
    bool mariadb = false;
    bool has_register = true;
    bool refuse = false;
    // The library's own MYSQL_CLIENT_TRACE_PLUGIN_INTERFACE_VERSION: like
    // libmysqlclient it refuses an older one or another major version.
    unsigned interface_version = 0x0200;
    int registered = 0;
    void *plugin = nullptr;
    void *register_handle = nullptr;
    int inits = 0;
    void *closed = nullptr;
};
FakeLibrary lib;
char scratch_handle;

extern "C" void *fake_register(void *mysql, void *plugin) {
    lib.registered++;
    lib.register_handle = mysql;
    lib.plugin = plugin;
    errno = EINVAL;  // the shim must not let this through
    const unsigned v = static_cast<const unsigned *>(plugin)[1];
    if (v < lib.interface_version || (v >> 8) > (lib.interface_version >> 8)) {
        return nullptr;
    }
    return lib.refuse ? nullptr : plugin;
}
extern "C" unsigned long fake_version() {
    return lib.version;
}
extern "C" void *fake_init(void *mysql) {
    lib.inits++;
    return mysql == nullptr ? &scratch_handle : mysql;
}
extern "C" void fake_close(void *mysql) {
    lib.closed = mysql;
}
extern "C" void *fake_get_infov() {
    return nullptr;
}

void *fake_lookup(const char *name, const void *ctx) {
    EXPECT_EQ(ctx, &lib);
    std::map<std::string, void *> syms = {
        {"mysql_get_client_version", reinterpret_cast<void *>(&fake_version)},
        {"mysql_init", reinterpret_cast<void *>(&fake_init)},
        {"mysql_close", reinterpret_cast<void *>(&fake_close)},
    };
    if (lib.has_register) {
        syms["mysql_client_register_plugin"] = reinterpret_cast<void *>(&fake_register);
    }
    if (lib.mariadb) {
        syms["mariadb_get_infov"] = reinterpret_cast<void *>(&fake_get_infov);
    }
    auto it = syms.find(name);
    return it == syms.end() ? nullptr : it->second;
}

uint32_t fake_conn_of(void *mysql) {
    return mysql == &scratch_handle ? 0 : 7;
}

struct Forwarded {
    void *mysql;
    int stage, event;
    uint32_t conn;
};
std::vector<Forwarded> forwarded;

void hook(void *mysql, int stage, int event, uint32_t conn) {
    forwarded.push_back({mysql, stage, event, conn});
}

class ShimTracePlugin : public ::testing::Test {
  protected:
    void SetUp() override {
        lib = FakeLibrary{};
        forwarded.clear();
        mt_trace_plugin_test_hook = hook;
        mysqltrace_trace_event_semaphore = 0;
    }
    void TearDown() override {
        mt_trace_plugin_test_hook = nullptr;
        mysqltrace_trace_event_semaphore = 0;
    }
    int do_register() {
        mt_trace_plugin_env env = {fake_lookup, &lib, fake_conn_of};
        return mt_trace_plugin_register(&env);
    }
};

void expect_header(const Header &h, unsigned interface_version = 0x0100) {
    EXPECT_EQ(h.type, 3);  // MYSQL_CLIENT_TRACE_PLUGIN
    EXPECT_EQ(h.interface_version, interface_version);
    ASSERT_NE(h.name, nullptr);
    EXPECT_STREQ(h.name, "mysqltrace");
    EXPECT_NE(h.author, nullptr);
    EXPECT_NE(h.desc, nullptr);
    EXPECT_STREQ(h.license, "GPL");
    EXPECT_EQ(h.mysql_api, nullptr);
    // No init: the library would call it at registration.
    EXPECT_EQ(h.init, nullptr);
    EXPECT_EQ(h.deinit, nullptr);
    EXPECT_EQ(h.options, nullptr);
}

// Drives a connection's life through the callbacks as the library would.
void drive(void *plugin, const Callbacks &cb) {
    int conn_handle = 0;
    ASSERT_NE(cb.tracing_start, nullptr);
    ASSERT_NE(cb.tracing_stop, nullptr);
    ASSERT_NE(cb.trace_event, nullptr);
    void *data = cb.tracing_start(plugin, &conn_handle, 0);
    EXPECT_NE(data, nullptr);  // PROTOCOL_STAGE_CONNECTING
    TraceEventArgs args = {"x", 3, nullptr, 0, nullptr, 0};

    // No tracer attached: nothing forwarded, tracing goes on.
    EXPECT_EQ(cb.trace_event(plugin, data, &conn_handle, 0, 1, args), 0);
    EXPECT_TRUE(forwarded.empty());

    mysqltrace_trace_event_semaphore = 1;
    errno = 1234;
    // READY_FOR_COMMAND / SEND_COMMAND, then WAIT_FOR_RESULT / PACKET_RECEIVED.
    EXPECT_EQ(cb.trace_event(plugin, data, &conn_handle, 4, 12, args), 0);
    EXPECT_EQ(cb.trace_event(plugin, data, &conn_handle, 6, 15, args), 0);
    EXPECT_EQ(errno, 1234);
    cb.tracing_stop(plugin, &conn_handle, data);
    ASSERT_EQ(forwarded.size(), 2u);
    EXPECT_EQ(forwarded[0].mysql, &conn_handle);
    EXPECT_EQ(forwarded[0].stage, 4);
    EXPECT_EQ(forwarded[0].event, 12);
    EXPECT_EQ(forwarded[0].conn, 7u);
    EXPECT_EQ(forwarded[1].stage, 6);
    EXPECT_EQ(forwarded[1].event, 15);
}

TEST_F(ShimTracePlugin, Oracle97InterfaceVersion2) {
    lib.version = 90704;
    lib.interface_version = 0x0200;
    EXPECT_EQ(do_register(), MT_TRACE_PLUGIN_REGISTERED);
    EXPECT_EQ(lib.registered, 1);
    auto *p = static_cast<Plugin8027 *>(lib.plugin);
    ASSERT_NE(p, nullptr);
    expect_header(p->h, 0x0200);
    drive(p, p->cb);
}

TEST_F(ShimTracePlugin, Oracle80WithGetOptions) {
    lib.version = 80036;
    lib.interface_version = 0x0100;
    errno = 4321;
    EXPECT_EQ(do_register(), MT_TRACE_PLUGIN_REGISTERED);
    EXPECT_EQ(errno, 4321);
    // Offered 2.0 first, refused, then 1.0.
    EXPECT_EQ(lib.registered, 2);
    // Registered through a throwaway handle, which is then closed.
    EXPECT_EQ(lib.inits, 1);
    EXPECT_EQ(lib.register_handle, &scratch_handle);
    EXPECT_EQ(lib.closed, &scratch_handle);
    ASSERT_NE(lib.plugin, nullptr);
    auto *p = static_cast<Plugin8027 *>(lib.plugin);
    expect_header(p->h);
    EXPECT_EQ(p->get_options, nullptr);
    drive(p, p->cb);
}

TEST_F(ShimTracePlugin, Oracle57Layout) {
    lib.interface_version = 0x0100;
    lib.version = 50744;
    EXPECT_EQ(do_register(), MT_TRACE_PLUGIN_REGISTERED);
    ASSERT_NE(lib.plugin, nullptr);
    auto *p = static_cast<Plugin57 *>(lib.plugin);
    expect_header(p->h);
    drive(p, p->cb);
}

TEST_F(ShimTracePlugin, LastVersionWithoutGetOptions) {
    lib.interface_version = 0x0100;
    lib.version = 80026;
    EXPECT_EQ(do_register(), MT_TRACE_PLUGIN_REGISTERED);
    auto *p = static_cast<Plugin57 *>(lib.plugin);
    ASSERT_NE(p, nullptr);
    drive(p, p->cb);
}

TEST_F(ShimTracePlugin, NeverWithMariaDB) {
    lib.mariadb = true;
    lib.version = 100611;
    EXPECT_EQ(do_register(), MT_TRACE_PLUGIN_NOT_ORACLE);
    EXPECT_EQ(lib.registered, 0);
    EXPECT_EQ(lib.inits, 0);
}

TEST_F(ShimTracePlugin, NotBefore57) {
    lib.version = 50640;
    EXPECT_EQ(do_register(), MT_TRACE_PLUGIN_TOO_OLD);
    EXPECT_EQ(lib.registered, 0);
}

TEST_F(ShimTracePlugin, NotWithoutThePluginApi) {
    lib.has_register = false;
    EXPECT_EQ(do_register(), MT_TRACE_PLUGIN_NOT_ORACLE);
    EXPECT_EQ(lib.inits, 0);
}

TEST_F(ShimTracePlugin, RefusedLeavesNoHandleOpen) {
    lib.refuse = true;
    errno = 77;
    EXPECT_EQ(do_register(), MT_TRACE_PLUGIN_REFUSED);
    EXPECT_EQ(errno, 77);
    EXPECT_EQ(lib.closed, &scratch_handle);
}

}  // namespace
