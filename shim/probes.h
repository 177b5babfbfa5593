// SPDX-License-Identifier: GPL-2.0-only
// The shim's USDT probes (provider "mysqltrace", include/mysqltrace/abi/usdt.h)
// and their semaphores. A probe's arguments are prepared only while its
// semaphore is non-zero, i.e. while a tracer has it attached.
#pragma once

#include <stdint.h>
#include <time.h>

#include "mysqltrace/abi/usdt.h"

// Semaphores let an idle site cost one load and a not-taken branch; the
// kernel increments them when a uprobe with a ref_ctr_offset is attached.
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#ifdef __cplusplus
extern "C" {
#endif

// Defined in probes.c, in the ".probes" section: it is file-backed data
// (not .bss), which the kernel needs to find a semaphore by file offset.
extern volatile unsigned short mysqltrace_io_semaphore;
extern volatile unsigned short mysqltrace_api_begin_semaphore;
extern volatile unsigned short mysqltrace_api_end_semaphore;
extern volatile unsigned short mysqltrace_trace_event_semaphore;

// Each probe has its one site in one of these (probes.c), whatever calls it:
// a tracer attaches a uprobe per site, and each uprobe's removal waits out
// RCU grace periods (~0.1 s here) when a trace ends. Called only while the
// probe's semaphore is set; the call costs nanoseconds next to the trap's
// microseconds. Each fills its probe's struct (usdt.h) on its stack and fires
// the probe with the struct's address.
void mt_fire_io(int op, uint32_t conn, int fd, uint64_t ptr, uint64_t len, int64_t ret, int kind,
                int family, uint64_t start_ns, uint64_t begin);
void mt_fire_api_begin(int func, uint64_t handle, uint32_t conn, uint64_t arg, uint64_t arg_len);
void mt_fire_api_end(int func, uint64_t handle, uint32_t conn, int64_t ret, uint32_t error_code,
                     uint64_t sqlstate, uint64_t message, uint32_t thread_id, uint64_t begin);
void mt_fire_trace_event(uint64_t handle, int stage, int event, uint32_t conn);

#ifdef __cplusplus
}
#endif

#define MT_PROBE_ON(name) __builtin_expect(mysqltrace_##name##_semaphore != 0, 0)

// The deferred begin of the C API call this thread is in (api.c), until an
// io hit or the call's api_end reports it; NULL otherwise.
extern __thread struct mt_api_begin_info *mt_api_unsent_begin
    __attribute__((tls_model("initial-exec")));

// The deferred begin for this io hit to report, taken so it is reported once.
static inline struct mt_api_begin_info *mt_take_unsent_begin(void) {
    struct mt_api_begin_info *b = mt_api_unsent_begin;
    mt_api_unsent_begin = NULL;
    return b;
}

#define MT_FIRE_IO(op, conn, fd, ptr, len, ret, kind, family, start_ns)                           \
    mt_fire_io((int)(op), (uint32_t)(conn), (int)(fd), (uint64_t)(uintptr_t)(ptr),                \
               (uint64_t)(len), (int64_t)(ret), (int)(kind), (int)(family), (uint64_t)(start_ns), \
               (uint64_t)(uintptr_t)mt_take_unsent_begin())

// When the send being reported began (CLOCK_MONOTONIC ns, the clock of
// bpf_ktime_get_ns), per thread; 0 when not taken. A command is sent when its
// write starts: on a busy machine the server may answer before the write
// returns, and the time in between is the server's, not the client's.
// Socket and TLS sends keep their own mark: a TLS write makes socket writes.
extern __thread uint64_t mt_send_start_ns[2] __attribute__((tls_model("initial-exec")));

// The followed socket this thread last moved bytes on (io.c sets it); a TLS
// interposer clears it before the library's call and reads it after, to
// learn the socket under a session whose library does not name it.
extern __thread int mt_io_fd_seen __attribute__((tls_model("initial-exec")));

static inline void mt_mark_send_start(int tls) {
    if (MT_PROBE_ON(io)) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        mt_send_start_ns[tls] = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
    }
}

// The mark for a send's report, cleared so it is never reused.
static inline uint64_t mt_take_send_start(int op) {
    if (op != 3 /* MT_SOCK_SEND */ && op != 7 /* MT_SOCK_TLS_SEND */) {
        return 0;
    }
    int tls = op == 7;
    uint64_t t = mt_send_start_ns[tls];
    mt_send_start_ns[tls] = 0;
    return t;
}

#define MT_FIRE_API_BEGIN(func, handle, conn, arg, arg_len)                         \
    mt_fire_api_begin((int)(func), (uint64_t)(uintptr_t)(handle), (uint32_t)(conn), \
                      (uint64_t)(uintptr_t)(arg), (uint64_t)(arg_len))

#define MT_FIRE_API_END(func, handle, conn, ret, error_code, sqlstate, message, thread_id, begin) \
    mt_fire_api_end((int)(func), (uint64_t)(uintptr_t)(handle), (uint32_t)(conn), (int64_t)(ret), \
                    (uint32_t)(error_code), (uint64_t)(uintptr_t)(sqlstate),                      \
                    (uint64_t)(uintptr_t)(message), (uint32_t)(thread_id),                        \
                    (uint64_t)(uintptr_t)(begin))

#define MT_FIRE_TRACE_EVENT(handle, stage, event, conn) \
    mt_fire_trace_event((uint64_t)(uintptr_t)(handle), (int)(stage), (int)(event), (uint32_t)(conn))
