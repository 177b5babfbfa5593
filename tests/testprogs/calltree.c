// SPDX-License-Identifier: GPL-2.0-only
// A program with a known call graph for `mysqltrace calls` tests. It prints
// "ready", then runs one scenario per line read from stdin and answers
// "done <scenario>" (threads first print "tid <n> <tid>"), so a test can
// attach first and trigger calls deterministically:
//   tree     ct_recurse(2)          recursion
//            ct_early(0), ct_early(1)  one returns early, one calls ct_leaf
//            ct_jumper()            ct_deep1 -> ct_deep2 -> longjmp back
//            ct_tail()              tail-jumps to ct_leaf
//            ct_annotate(5)         fires USDT calltree:mark(5), calls ct_leaf
//            ct_costly(3)           first instruction single-stepped
//   threads  two threads: ct_worker(i) -> ct_leaf(i), ct_recurse(1)
//   thread_exit  a thread exits (SYS_exit) inside ct_exiting -> ct_leaf
//   exit     the process exits inside ct_exit_inside
//   loop N   N calls of ct_leaf
//   deep N   ct_recurse(N): N + 1 nested calls of it, then ct_leaf
// Built without optimisation, so every call stays a call.
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

// Starts with `mov`: the kernel single-steps it (shared/FACTS.md section 2).
// Tail-jumps: ct_tail's return address slot is reused by ct_leaf.
__asm__(".text\n"
        ".globl ct_costly\n"
        ".type ct_costly, @function\n"
        "ct_costly:\n"
        "    movl %edi, %eax\n"
        "    ret\n"
        ".size ct_costly, .-ct_costly\n"
        ".globl ct_tail\n"
        ".type ct_tail, @function\n"
        "ct_tail:\n"
        "    push %rbp\n"
        "    pop %rbp\n"
        "    movl $9, %edi\n"
        "    jmp ct_leaf\n"
        ".size ct_tail, .-ct_tail\n");
int ct_costly(int x);
int ct_tail(void);

NOINLINE int ct_leaf(int x)
{
    return x + 1;
}

NOINLINE int ct_recurse(int n)
{
    if (n == 0)
        return ct_leaf(0);
    return ct_recurse(n - 1) + 1;
}

NOINLINE int ct_early(int x)
{
    if (x == 0)
        return -1;
    return ct_leaf(x) * 2;
}

static jmp_buf jump_back;

NOINLINE void ct_deep2(void)
{
    longjmp(jump_back, 1);
}

NOINLINE void ct_deep1(void)
{
    ct_deep2();
}

NOINLINE int ct_jumper(void)
{
    if (setjmp(jump_back) == 0) {
        ct_deep1();
        return 0;
    }
    return ct_leaf(7);
}

NOINLINE void ct_annotate(int v)
{
    DTRACE_PROBE1(calltree, mark, v);
    ct_leaf(v);
}

NOINLINE int ct_worker(int i)
{
    ct_leaf(i);
    return ct_recurse(1);
}

NOINLINE void ct_exiting(void)
{
    ct_leaf(1);
    syscall(SYS_exit, 0);
}

NOINLINE void ct_exit_inside(void)
{
    ct_leaf(2);
    fflush(stdout);
    _exit(0);
}

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t barrier;

static void *worker_main(void *arg)
{
    int i = (int)(long)arg;

    pthread_mutex_lock(&print_lock);
    printf("tid %d %ld\n", i, (long)syscall(SYS_gettid));
    pthread_mutex_unlock(&print_lock);
    // Both threads run their calls at the same time.
    pthread_barrier_wait(&barrier);
    ct_worker(i);
    return NULL;
}

static void *exiting_main(void *arg)
{
    (void)arg;
    printf("tid 0 %ld\n", (long)syscall(SYS_gettid));
    ct_exiting();
    return NULL;
}

int main(void)
{
    char line[64];

    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ready %d\n", (int)getpid());
    while (fgets(line, sizeof(line), stdin)) {
        line[strcspn(line, "\n")] = 0;
        if (strcmp(line, "tree") == 0) {
            ct_recurse(2);
            ct_early(0);
            ct_early(1);
            ct_jumper();
            ct_tail();
            ct_annotate(5);
            ct_costly(3);
        } else if (strcmp(line, "threads") == 0) {
            pthread_t t[2];

            pthread_barrier_init(&barrier, NULL, 2);
            for (long i = 0; i < 2; i++)
                pthread_create(&t[i], NULL, worker_main, (void *)(i + 1));
            for (int i = 0; i < 2; i++)
                pthread_join(t[i], NULL);
            pthread_barrier_destroy(&barrier);
        } else if (strcmp(line, "thread_exit") == 0) {
            pthread_t t;

            pthread_create(&t, NULL, exiting_main, NULL);
            pthread_join(t, NULL);
        } else if (strcmp(line, "exit") == 0) {
            printf("done exit\n");
            ct_exit_inside();
        } else if (strncmp(line, "deep ", 5) == 0) {
            ct_recurse((int)strtol(line + 5, NULL, 10));
        } else if (strncmp(line, "loop ", 5) == 0) {
            long n = strtol(line + 5, NULL, 10);

            for (long i = 0; i < n; i++)
                ct_leaf((int)i);
        }
        printf("done %s\n", line);
    }
    return 0;
}
