// SPDX-License-Identifier: GPL-2.0-only
// Fires the USDT probe mysqltrace_test:fire(i) for i = 0..N-1 each time a
// line "N" arrives on stdin, then answers "done N" on stdout. Lets a test
// attach first and trigger hits deterministically.
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

static void __attribute__((noinline)) fire(unsigned long i)
{
    DTRACE_PROBE1(mysqltrace_test, fire, i);
}

int main(void)
{
    char line[64];

    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ready\n");
    while (fgets(line, sizeof(line), stdin)) {
        unsigned long n = strtoul(line, NULL, 10);
        for (unsigned long i = 0; i < n; i++)
            fire(i);
        printf("done %lu\n", n);
    }
    return 0;
}
