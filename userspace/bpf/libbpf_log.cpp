// SPDX-License-Identifier: GPL-2.0-only
#include "bpf/libbpf_log.h"

#include <cstdarg>
#include <cstdio>

#include <bpf/libbpf.h>

namespace mysqltrace::bpf {

namespace {

int g_level = 0;

int print_fn(enum libbpf_print_level level, const char *fmt, va_list args) {
    int needed = level == LIBBPF_WARN ? 1 : 2;
    if (g_level < needed) {
        return 0;
    }
    std::fputs("libbpf: ", stderr);
    return std::vfprintf(stderr, fmt, args);
}

}  // namespace

void set_libbpf_verbosity(int level) {
    g_level = level;
    libbpf_set_print(print_fn);
}

}  // namespace mysqltrace::bpf
