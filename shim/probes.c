// SPDX-License-Identifier: GPL-2.0-only
// The shim's four USDT probes, one site each, and their semaphores (see
// probes.h).
#include "probes.h"

// Hidden: libbpf finds a semaphore through its probe note, not by name.
#define MT_SEMAPHORE __attribute__((section(".probes"), used, visibility("hidden")))

MT_SEMAPHORE volatile unsigned short mysqltrace_io_semaphore;
MT_SEMAPHORE volatile unsigned short mysqltrace_api_begin_semaphore;
MT_SEMAPHORE volatile unsigned short mysqltrace_api_end_semaphore;
MT_SEMAPHORE volatile unsigned short mysqltrace_trace_event_semaphore;

__thread uint64_t mt_send_start_ns[2] __attribute__((tls_model("initial-exec")));
__thread int mt_io_fd_seen __attribute__((tls_model("initial-exec")));

#define MT_FIRE_FN __attribute__((noinline, visibility("hidden")))

// Fires probe `name` with the address of `rec`. The asm of a probe site takes
// only the address: the empty asm statements on each side tell the compiler
// that `rec` is read there, so its stores are all done before the site and
// it stays in place until after it (volatile asm statements keep their order).
#define MT_FIRE(name, rec)                                            \
    do {                                                              \
        __asm__ __volatile__("" : : "m"(rec) : "memory");             \
        STAP_PROBE1(mysqltrace, name, (uint64_t)(uintptr_t) & (rec)); \
        __asm__ __volatile__("" : : "m"(rec) : "memory");             \
    } while (0)

MT_FIRE_FN void mt_fire_io(int op, uint32_t conn, int fd, uint64_t ptr, uint64_t len, int64_t ret,
                           int kind, int family, uint64_t start_ns, uint64_t begin) {
    struct mt_io_probe p = {.ptr = ptr,
                            .len = len,
                            .ret = ret,
                            .start_ns = start_ns,
                            .begin = begin,
                            .op = op,
                            .conn = conn,
                            .fd = fd,
                            .kind = kind,
                            .family = family};
    MT_FIRE(io, p);
}

MT_FIRE_FN void mt_fire_api_begin(int func, uint64_t handle, uint32_t conn, uint64_t arg,
                                  uint64_t arg_len) {
    struct mt_api_begin_info b = {
        .handle = handle, .arg = arg, .arg_len = arg_len, .func = (uint32_t)func, .conn = conn};
    MT_FIRE(api_begin, b);
}

MT_FIRE_FN void mt_fire_api_end(int func, uint64_t handle, uint32_t conn, int64_t ret,
                                uint32_t error_code, uint64_t sqlstate, uint64_t message,
                                uint32_t thread_id, uint64_t begin) {
    struct mt_api_end_probe e = {.handle = handle,
                                 .ret = ret,
                                 .sqlstate = sqlstate,
                                 .message = message,
                                 .begin = begin,
                                 .func = (uint32_t)func,
                                 .conn = conn,
                                 .error_code = error_code,
                                 .thread_id = thread_id};
    MT_FIRE(api_end, e);
}

MT_FIRE_FN void mt_fire_trace_event(uint64_t handle, int stage, int event, uint32_t conn) {
    struct mt_trace_event_probe t = {
        .handle = handle, .stage = stage, .event = event, .conn = conn};
    MT_FIRE(trace_event, t);
}
