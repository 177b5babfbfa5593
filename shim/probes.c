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

MT_FIRE_FN void mt_fire_io(int op, uint32_t conn, int fd, uint64_t ptr, uint64_t len, int64_t ret,
                           int kind, int family, uint64_t start_ns, uint64_t begin) {
    STAP_PROBE10(mysqltrace, io, op, conn, fd, ptr, len, ret, kind, family, start_ns, begin);
}

MT_FIRE_FN void mt_fire_api_begin(int func, uint64_t handle, uint32_t conn, uint64_t arg,
                                  uint64_t arg_len) {
    STAP_PROBE5(mysqltrace, api_begin, func, handle, conn, arg, arg_len);
}

MT_FIRE_FN void mt_fire_api_end(int func, uint64_t handle, uint32_t conn, int64_t ret,
                                uint32_t error_code, uint64_t sqlstate, uint64_t message,
                                uint32_t thread_id, uint64_t begin) {
    STAP_PROBE9(mysqltrace, api_end, func, handle, conn, ret, error_code, sqlstate, message,
                thread_id, begin);
}

MT_FIRE_FN void mt_fire_trace_event(uint64_t handle, int stage, int event, uint32_t conn) {
    STAP_PROBE4(mysqltrace, trace_event, handle, stage, event, conn);
}
