// SPDX-License-Identifier: GPL-2.0-only
// Stand-ins for the libc and client library functions that
// libmysqltrace-shim.so interposes, for bench/shim_idle_bench.c: each returns
// at once, so that a call through the shim costs the interposer and the
// function call alone, not a syscall.
#include <stddef.h>
#include <sys/types.h>

ssize_t send(int fd, const void *buf, size_t n, int flags) {
    (void)fd;
    (void)buf;
    (void)flags;
    return (ssize_t)n;
}

ssize_t recv(int fd, void *buf, size_t n, int flags) {
    (void)fd;
    (void)buf;
    (void)flags;
    return (ssize_t)n;
}

int mysql_real_query(void *mysql, const char *q, unsigned long length) {
    (void)mysql;
    (void)q;
    (void)length;
    return 0;
}

int mysql_stmt_execute(void *stmt) {
    (void)stmt;
    return 0;
}

int SSL_write(void *ssl, const void *buf, int num) {
    (void)ssl;
    (void)buf;
    return num;
}
