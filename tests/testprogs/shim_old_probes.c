// SPDX-License-Identifier: GPL-2.0-only
// The probe notes of a libmysqltrace-shim.so from before its probes carried
// one struct address each: io with ten arguments, api_begin with five,
// api_end with nine, trace_event with four. `mysqltrace run --shim` must
// refuse it (tests/unit/shim_sites_test.cpp); it is never preloaded.
#include <stdint.h>
#include <sys/sdt.h>

__attribute__((noinline)) void old_io(int op, uint32_t conn, int fd, uint64_t ptr, uint64_t len,
                                      int64_t ret, int kind, int family, uint64_t start_ns,
                                      uint64_t begin) {
    STAP_PROBE10(mysqltrace, io, op, conn, fd, ptr, len, ret, kind, family, start_ns, begin);
}

__attribute__((noinline)) void old_api_begin(int func, uint64_t handle, uint32_t conn, uint64_t arg,
                                             uint64_t arg_len) {
    STAP_PROBE5(mysqltrace, api_begin, func, handle, conn, arg, arg_len);
}

__attribute__((noinline)) void old_api_end(int func, uint64_t handle, uint32_t conn, int64_t ret,
                                           uint32_t error_code, uint64_t sqlstate, uint64_t message,
                                           uint32_t thread_id, uint64_t begin) {
    STAP_PROBE9(mysqltrace, api_end, func, handle, conn, ret, error_code, sqlstate, message,
                thread_id, begin);
}

__attribute__((noinline)) void old_trace_event(uint64_t handle, int stage, int event,
                                               uint32_t conn) {
    STAP_PROBE4(mysqltrace, trace_event, handle, stage, event, conn);
}
