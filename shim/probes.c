// SPDX-License-Identifier: GPL-2.0-only
// The semaphores of the shim's four USDT probes (see probes.h).
#include "probes.h"

// Hidden: libbpf finds a semaphore through its probe note, not by name.
#define MT_SEMAPHORE __attribute__((section(".probes"), used, visibility("hidden")))

MT_SEMAPHORE volatile unsigned short mysqltrace_io_semaphore;
MT_SEMAPHORE volatile unsigned short mysqltrace_api_begin_semaphore;
MT_SEMAPHORE volatile unsigned short mysqltrace_api_end_semaphore;
MT_SEMAPHORE volatile unsigned short mysqltrace_trace_event_semaphore;

__thread uint64_t mt_send_start_ns[2] __attribute__((tls_model("initial-exec")));
__thread int mt_io_fd_seen __attribute__((tls_model("initial-exec")));
