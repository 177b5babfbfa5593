// SPDX-License-Identifier: GPL-2.0-only
// Loads shim_dlopen_lib (argv[1]) with RTLD_LOCAL and runs it against a
// loopback port nobody listens on. This program itself links no client or TLS
// library, so only the dlopen'ed one provides them.
//
//   shim_dlopen /path/to/libshim_dlopen_lib.so
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

// A port that was free a moment ago: bound, then released.
static unsigned closed_port(void)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof(addr);
    int s = socket(AF_INET, SOCK_STREAM, 0);

    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        getsockname(s, (struct sockaddr *)&addr, &len) != 0)
        return 0;
    close(s);
    return ntohs(addr.sin_port);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: shim_dlopen LIBRARY\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "shim_dlopen: %s\n", dlerror());
        return 2;
    }
    void (*run)(unsigned) = (void (*)(unsigned))dlsym(lib, "shim_dlopen_run");
    if (!run) {
        fprintf(stderr, "shim_dlopen: %s\n", dlerror());
        return 2;
    }
    unsigned port = closed_port();
    if (port == 0) {
        perror("shim_dlopen: port");
        return 2;
    }
    run(port);
    return 0;
}
