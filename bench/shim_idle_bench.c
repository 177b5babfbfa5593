// SPDX-License-Identifier: GPL-2.0-only
// What libmysqltrace-shim.so costs per interposed call with no tracer
// attached. Run it twice, with and without LD_PRELOAD=libmysqltrace-shim.so;
// the difference per line is the shim's. The interposed functions come from
// shim_idle_stubs.c and return at once, so no syscall hides the difference.
//
//   shim_idle_bench [ITERATIONS]
//
// Prints one line per call kind: "name ns_per_call" (the fastest of 7 runs).
// A socket the shim follows is set up first: a unix stream connection whose
// peer sends a MySQL greeting header, read through libc's read().
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int mysql_real_query(void *mysql, const char *q, unsigned long length);
int mysql_stmt_execute(void *stmt);
int SSL_write(void *ssl, const void *buf, int num);

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static volatile long sink;

enum kind { SEND_FOLLOWED, RECV_FOLLOWED, SEND_OTHER, RECV_OTHER, API_QUERY, API_STMT, TLS_WRITE };

static void loop(enum kind k, int fd, long n) {
    char buf[16] = {0};
    long acc = 0;
    char handle[64];
    for (long i = 0; i < n; i++) {
        switch (k) {
            case SEND_FOLLOWED:
            case SEND_OTHER:
                acc += send(fd, buf, sizeof(buf), 0);
                break;
            case RECV_FOLLOWED:
            case RECV_OTHER:
                acc += recv(fd, buf, sizeof(buf), 0);
                break;
            case API_QUERY:
                acc += mysql_real_query(handle, "SELECT 1", 8);
                break;
            case API_STMT:
                acc += mysql_stmt_execute(handle);
                break;
            case TLS_WRITE:
                acc += SSL_write(handle, buf, sizeof(buf));
                break;
        }
    }
    sink = acc;
}

// A connected unix stream socket whose peer greeted like a MySQL server.
static int mysql_like_socket(void) {
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    // An abstract address: nothing to clean up.
    snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "mt-shim-bench-%d", getpid());
    socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1);
    if (l < 0 || bind(l, (struct sockaddr *)&a, len) != 0 || listen(l, 1) != 0) {
        perror("listen");
        exit(1);
    }
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&a, len) != 0) {
        perror("connect");
        exit(1);
    }
    int s = accept(l, NULL, NULL);
    // Payload length 1, sequence 0, protocol version 10.
    const unsigned char greeting[5] = {1, 0, 0, 0, 10};
    unsigned char got[5];
    if (s < 0 || write(s, greeting, sizeof(greeting)) != (ssize_t)sizeof(greeting) ||
        read(c, got, sizeof(got)) != (ssize_t)sizeof(got)) {
        perror("greeting");
        exit(1);
    }
    close(l);
    return c;
}

int main(int argc, char **argv) {
    char *end = NULL;
    long n = argc > 1 ? strtol(argv[1], &end, 10) : 20000000;
    if (argc > 2 || (argc > 1 && (*end != '\0' || n <= 0))) {
        fprintf(stderr,
                "usage: shim_idle_bench [ITERATIONS]\n"
                "What each call the shim interposes costs, in ns (the fastest of 7 runs of\n"
                "ITERATIONS calls, default 20000000): run it with and without\n"
                "LD_PRELOAD=libmysqltrace-shim.so and compare.\n");
        return 2;
    }
    int followed = mysql_like_socket();
    int other = 1000;  // a descriptor number the shim does not follow
    const struct {
        const char *name;
        enum kind k;
        int fd;
    } cases[] = {
        {"send_followed_socket", SEND_FOLLOWED, followed},
        {"recv_followed_socket", RECV_FOLLOWED, followed},
        {"send_other_fd", SEND_OTHER, other},
        {"recv_other_fd", RECV_OTHER, other},
        {"mysql_real_query", API_QUERY, -1},
        {"mysql_stmt_execute", API_STMT, -1},
        {"SSL_write", TLS_WRITE, -1},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        double best = 1e30;
        for (int round = 0; round < 7; round++) {
            uint64_t t0 = now_ns();
            loop(cases[c].k, cases[c].fd, n);
            double ns = (double)(now_ns() - t0) / (double)n;
            if (ns < best) {
                best = ns;
            }
        }
        printf("%s %.2f\n", cases[c].name, best);
    }
    return 0;
}
