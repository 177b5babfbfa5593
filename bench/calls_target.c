// SPDX-License-Identifier: GPL-2.0-only
// The traced program of bench/calls.sh. Reads "<what> <n>" lines and
// answers "ns <per call>" after n calls of:
//   cheap    cb_cheap(), whose first instruction (push rbp) the kernel emulates
//   costly   cb_costly(), whose first instruction (mov) it single-steps
//   syscall  getppid(), a plain syscall, for scale
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__asm__(".text\n"
        ".globl cb_cheap\n"
        ".type cb_cheap, @function\n"
        "cb_cheap:\n"
        "    push %rbp\n"
        "    mov %rsp, %rbp\n"
        "    lea 1(%rdi), %rax\n"
        "    pop %rbp\n"
        "    ret\n"
        ".size cb_cheap, .-cb_cheap\n"
        ".globl cb_costly\n"
        ".type cb_costly, @function\n"
        "cb_costly:\n"
        "    lea 1(%rdi), %rax\n"
        "    ret\n"
        ".size cb_costly, .-cb_costly\n");
long cb_cheap(long x);
long cb_costly(long x);

// Calls through a volatile pointer, so nothing is inlined or hoisted.
static long (*volatile cheap_fn)(long) = cb_cheap;
static long (*volatile costly_fn)(long) = cb_costly;

static unsigned long long now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(void)
{
    char line[128], what[32];
    long n, sink = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ready %d\n", (int)getpid());
    while (fgets(line, sizeof(line), stdin)) {
        if (sscanf(line, "%31s %ld", what, &n) != 2 || n <= 0)
            continue;
        unsigned long long t0 = now_ns();
        if (strcmp(what, "cheap") == 0) {
            for (long i = 0; i < n; i++)
                sink += cheap_fn(i);
        } else if (strcmp(what, "costly") == 0) {
            for (long i = 0; i < n; i++)
                sink += costly_fn(i);
        } else {
            for (long i = 0; i < n; i++)
                sink += syscall(SYS_getppid);
        }
        unsigned long long t1 = now_ns();
        printf("ns %.1f\n", (double)(t1 - t0) / (double)n);
    }
    return sink == 42 ? 1 : 0;
}
