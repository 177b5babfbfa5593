// SPDX-License-Identifier: GPL-2.0-only
// Ordinary, non-MySQL I/O (pipes, a file, socketpairs, loopback TCP, threads,
// fork and vfork) and deliberately failing calls, with a deterministic
// transcript on stdout that includes every errno.
// tests/unit/shim_preload_test.cpp runs it with and without
// libmysqltrace-shim.so preloaded: the transcripts and exit statuses must be
// identical. Exits 1 if an expectation fails.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

// The fortified entry points the shim interposes too; glibc declares them
// only under _FORTIFY_SOURCE.
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                       struct sockaddr *addr, socklen_t *addrlen);

#define THREADS 4
#define ROUNDS 200

static int failures;

static const char *err_name(int err)
{
    const char *name = strerrorname_np(err);
    return name ? name : "?";
}

// Prints a call's outcome: its result, and errno when it failed.
static void show(const char *what, long r, int err)
{
    if (r < 0)
        printf("%s: -1 %s\n", what, err_name(err));
    else
        printf("%s: %ld\n", what, r);
}

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("UNEXPECTED: %s\n", what);
        failures++;
    }
}

// Runs a call, prints it, and checks its result or errno.
#define CALL(what, call, want)                        \
    do {                                              \
        errno = 0;                                    \
        long r_ = (long)(call);                       \
        int e_ = errno;                               \
        show(what, r_, e_);                           \
        expect(r_ == (long)(want), what);             \
    } while (0)

#define FAILS(what, call, want_errno)                 \
    do {                                              \
        errno = 0;                                    \
        long r_ = (long)(call);                       \
        int e_ = errno;                               \
        show(what, r_, e_);                           \
        expect(r_ == -1 && e_ == (want_errno), what); \
    } while (0)

static void show_bytes(const char *what, const char *buf, long n)
{
    printf("%s: \"%.*s\"\n", what, n > 0 ? (int)n : 0, buf);
}

static void pipes(void)
{
    int p[2];
    char buf[64];

    printf("== pipe\n");
    CALL("pipe", pipe(p), 0);
    CALL("write", write(p[1], "hello", 5), 5);
    CALL("read", read(p[0], buf, sizeof(buf)), 5);
    show_bytes("read got", buf, 5);

    struct iovec out[2] = {{"ab", 2}, {"cde", 3}};
    char a[2], b[8];
    struct iovec in[2] = {{a, sizeof(a)}, {b, sizeof(b)}};
    CALL("writev", writev(p[1], out, 2), 5);
    CALL("readv", readv(p[0], in, 2), 5);
    show_bytes("readv got", a, 2);
    show_bytes("readv got", b, 3);

    CALL("write", write(p[1], "chk", 3), 3);
    CALL("__read_chk", __read_chk(p[0], buf, 3, sizeof(buf)), 3);
    FAILS("recv on a pipe", recv(p[0], buf, 1, 0), ENOTSOCK);
    volatile int negative = -1;  // hidden from the compiler, which rejects a literal
    FAILS("readv with a negative count", readv(p[0], in, negative), EINVAL);
    CALL("close", close(p[0]), 0);
    FAILS("write without a reader", write(p[1], "x", 1), EPIPE);
    CALL("close", close(p[1]), 0);
    FAILS("read of a closed fd", read(p[0], buf, 1), EBADF);
    FAILS("write to a closed fd", write(p[1], "x", 1), EBADF);
    FAILS("close of a closed fd", close(p[1]), EBADF);
    FAILS("shutdown of a closed fd", shutdown(p[1], SHUT_RDWR), EBADF);
}

static void files(void)
{
    char path[] = "/tmp/shim_plain.XXXXXX";
    char buf[64];

    printf("== file\n");
    int fd = mkstemp(path);
    expect(fd >= 0, "mkstemp");
    CALL("write", write(fd, "file data", 9), 9);
    CALL("lseek", lseek(fd, 0, SEEK_SET), 0);
    CALL("read", read(fd, buf, sizeof(buf)), 9);
    show_bytes("read got", buf, 9);
    CALL("read at the end", read(fd, buf, sizeof(buf)), 0);
    FAILS("send on a file", send(fd, "x", 1, 0), ENOTSOCK);
    FAILS("connect of a file", connect(fd, NULL, 0), ENOTSOCK);
    CALL("close", close(fd), 0);
    unlink(path);

    // errno is left alone by successful calls, through the shim too.
    int p[2];
    CALL("pipe", pipe(p), 0);
    CALL("write", write(p[1], "e", 1), 1);
    errno = 4242;
    long r = read(p[0], buf, 1);
    printf("errno after a successful read: %d (read %ld)\n", errno, r);
    expect(errno == 4242, "errno kept");
    close(p[0]);
    close(p[1]);
}

static void unix_sockets(void)
{
    int sv[2];
    char buf[64];

    printf("== socketpair\n");
    CALL("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    CALL("send", send(sv[0], "ping", 4, 0), 4);
    CALL("recv with MSG_PEEK", recv(sv[1], buf, sizeof(buf), MSG_PEEK), 4);
    CALL("recv", recv(sv[1], buf, sizeof(buf), 0), 4);
    show_bytes("recv got", buf, 4);

    struct iovec iov = {"msg!", 4};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    CALL("sendmsg", sendmsg(sv[1], &m, 0), 4);
    char in[8];
    struct iovec iin = {in, sizeof(in)};
    struct msghdr mi = {.msg_iov = &iin, .msg_iovlen = 1};
    CALL("recvmsg", recvmsg(sv[0], &mi, 0), 4);
    show_bytes("recvmsg got", in, 4);

    CALL("sendto", sendto(sv[0], "to", 2, 0, NULL, 0), 2);
    CALL("recvfrom", recvfrom(sv[1], buf, sizeof(buf), 0, NULL, NULL), 2);
    CALL("send", send(sv[0], "chk", 3, 0), 3);
    CALL("__recv_chk", __recv_chk(sv[1], buf, 3, sizeof(buf), 0), 3);
    CALL("send", send(sv[0], "chk2", 4, 0), 4);
    CALL("__recvfrom_chk", __recvfrom_chk(sv[1], buf, 4, sizeof(buf), 0, NULL, NULL), 4);
    FAILS("recv with nothing there", recv(sv[1], buf, 1, MSG_DONTWAIT), EAGAIN);
    FAILS("recvmsg with no msghdr", recvmsg(sv[1], NULL, 0), EFAULT);
    CALL("shutdown", shutdown(sv[0], SHUT_WR), 0);
    CALL("recv after the peer's shutdown", recv(sv[1], buf, 1, 0), 0);
    FAILS("send after shutdown", send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
    CALL("close", close(sv[0]), 0);
    CALL("close", close(sv[1]), 0);

    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    strcpy(un.sun_path, "/nonexistent/shim_plain.sock");
    FAILS("connect to a missing unix socket", connect(s, (struct sockaddr *)&un, sizeof(un)),
          ENOENT);
    close(s);

    // A datagram socket can be connected too; the shim must leave it alone.
    CALL("socketpair dgram", socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
    CALL("send dgram", send(sv[0], "dgram", 5, 0), 5);
    CALL("recv dgram", recv(sv[1], buf, sizeof(buf), 0), 5);
    close(sv[0]);
    close(sv[1]);
}

static int listener(struct sockaddr_in *addr)
{
    socklen_t len = sizeof(*addr);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    memset(addr, 0, sizeof(*addr));
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(l, (struct sockaddr *)addr, sizeof(*addr)) != 0 || listen(l, 8) != 0 ||
        getsockname(l, (struct sockaddr *)addr, &len) != 0) {
        perror("listener");
        exit(2);
    }
    return l;
}

// A connected pair over loopback TCP: *client and *server.
static void tcp_pair(int *client, int *server)
{
    struct sockaddr_in addr;
    int l = listener(&addr);
    *client = socket(AF_INET, SOCK_STREAM, 0);
    CALL("connect", connect(*client, (struct sockaddr *)&addr, sizeof(addr)), 0);
    *server = accept(l, NULL, NULL);
    expect(*server >= 0, "accept");
    close(l);
}

// What a MySQL server sends first: sequence 0, protocol version 10.
static size_t greeting(char *buf)
{
    static const char body[] = "\x0a"
                               "5.5.5-10.11.0-shim-plain";
    size_t n = sizeof(body);  // with its NUL
    buf[0] = (char)n;
    buf[1] = 0;
    buf[2] = 0;
    buf[3] = 0;
    memcpy(buf + 4, body, n);
    return n + 4;
}

static void tcp(void)
{
    int c, s;
    char buf[256], g[64];

    printf("== tcp, server speaks MySQL\n");
    tcp_pair(&c, &s);
    size_t glen = greeting(g);
    CALL("server send greeting", send(s, g, glen, 0), (long)glen);
    CALL("client recv greeting", recv(c, buf, sizeof(buf), 0), (long)glen);
    CALL("client write", write(c, "query", 5), 5);
    CALL("server read", read(s, buf, sizeof(buf)), 5);
    struct iovec out[2] = {{"re", 2}, {"sult", 4}};
    CALL("server writev", writev(s, out, 2), 6);
    char a[3], b[8];
    struct iovec in[2] = {{a, sizeof(a)}, {b, sizeof(b)}};
    CALL("client readv", readv(c, in, 2), 6);
    show_bytes("client readv got", a, 3);
    show_bytes("client readv got", b, 3);
    FAILS("client recvmsg with no msghdr", recvmsg(c, NULL, 0), EFAULT);
    struct sockaddr_in peer;
    socklen_t peer_len = sizeof(peer);
    CALL("getpeername", getpeername(c, (struct sockaddr *)&peer, &peer_len), 0);
    FAILS("connect of a connected socket", connect(c, (struct sockaddr *)&peer, peer_len),
          EISCONN);
    CALL("client shutdown", shutdown(c, SHUT_WR), 0);
    CALL("server read at the end", read(s, buf, sizeof(buf)), 0);
    CALL("client close", close(c), 0);
    CALL("server close", close(s), 0);

    printf("== tcp, greeting header read alone\n");
    tcp_pair(&c, &s);
    CALL("server send greeting", send(s, g, glen, 0), (long)glen);
    CALL("client recv header", recv(c, buf, 4, MSG_WAITALL), 4);
    CALL("client recv body", recv(c, buf, sizeof(buf), 0), (long)glen - 4);
    CALL("client send", send(c, "q", 1, 0), 1);
    CALL("server recv", recv(s, buf, sizeof(buf), 0), 1);
    close(c);
    close(s);

    printf("== tcp, server speaks something else\n");
    tcp_pair(&c, &s);
    CALL("server send", send(s, "HTTP/1.0 200 OK\r\n", 17, 0), 17);
    CALL("client recv", recv(c, buf, sizeof(buf), 0), 17);
    CALL("client send", send(c, "more", 4, 0), 4);
    CALL("server recv", recv(s, buf, sizeof(buf), 0), 4);
    close(c);
    close(s);

    printf("== tcp, non-blocking connect\n");
    struct sockaddr_in addr;
    int l = listener(&addr);
    c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int r = connect(c, (struct sockaddr *)&addr, sizeof(addr));
    printf("connect: %s\n", r == 0 || errno == EINPROGRESS ? "started" : err_name(errno));
    struct pollfd pfd = {.fd = c, .events = POLLOUT};
    CALL("poll", poll(&pfd, 1, 5000), 1);
    // Asked again, connect() reports the completion once, then EISCONN.
    CALL("connect again", connect(c, (struct sockaddr *)&addr, sizeof(addr)), 0);
    FAILS("connect a third time", connect(c, (struct sockaddr *)&addr, sizeof(addr)), EISCONN);
    s = accept(l, NULL, NULL);
    CALL("server send greeting", send(s, g, glen, 0), (long)glen);
    pfd.events = POLLIN;
    CALL("poll", poll(&pfd, 1, 5000), 1);
    CALL("client recv", recv(c, buf, sizeof(buf), 0), (long)glen);
    close(c);
    close(s);

    printf("== tcp, failing connects\n");
    close(l);
    c = socket(AF_INET, SOCK_STREAM, 0);
    FAILS("connect to a closed port", connect(c, (struct sockaddr *)&addr, sizeof(addr)),
          ECONNREFUSED);
    close(c);
    c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    r = connect(c, (struct sockaddr *)&addr, sizeof(addr));
    printf("non-blocking connect to a closed port: %s\n",
           r == -1 && (errno == EINPROGRESS || errno == ECONNREFUSED) ? "refused or started"
                                                                      : err_name(errno));
    pfd.fd = c;
    pfd.events = POLLOUT;
    CALL("poll", poll(&pfd, 1, 5000), 1);
    int soerr = 0;
    socklen_t soerr_len = sizeof(soerr);
    getsockopt(c, SOL_SOCKET, SO_ERROR, &soerr, &soerr_len);
    printf("SO_ERROR: %s\n", soerr == 0 || soerr == ECONNREFUSED ? "refused or clear"
                                                                 : err_name(soerr));
    close(c);
    c = socket(AF_INET, SOCK_STREAM, 0);
    FAILS("connect with a bad address", connect(c, (struct sockaddr *)1, sizeof(addr)), EFAULT);
    FAILS("connect with a short address", connect(c, (struct sockaddr *)&addr, 1), EINVAL);
    FAILS("connect with a long address", connect(c, (struct sockaddr *)&addr, 4096), EINVAL);
    close(c);
}

// A connection that crosses a fork: the child inherits the socket.
static void forked(void)
{
    int c, s;
    char buf[64], g[64];

    printf("== fork\n");
    tcp_pair(&c, &s);
    size_t glen = greeting(g);
    CALL("server send greeting", send(s, g, glen, 0), (long)glen);
    CALL("client recv greeting", recv(c, buf, sizeof(buf), 0), (long)glen);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        ssize_t n = send(c, "from child", 10, 0);
        close(c);
        _exit(n == 10 ? 7 : 1);
    }
    int status = 0;
    expect(waitpid(pid, &status, 0) == pid, "waitpid");
    printf("child exit status: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    expect(WIFEXITED(status) && WEXITSTATUS(status) == 7, "child status");
    CALL("server recv", recv(s, buf, 10, MSG_WAITALL), 10);
    show_bytes("server recv got", buf, 10);
    CALL("client send", send(c, "from parent", 11, 0), 11);
    CALL("server recv", recv(s, buf, 11, MSG_WAITALL), 11);
    close(c);
    close(s);
}

// A vfork() child shares the parent's memory: its close() of the inherited
// socket must not make the shim forget the parent's connection.
static void vforked(void)
{
    int c, s;
    char buf[64], g[64];

    printf("== vfork\n");
    tcp_pair(&c, &s);
    size_t glen = greeting(g);
    CALL("server send greeting", send(s, g, glen, 0), (long)glen);
    CALL("client recv greeting", recv(c, buf, sizeof(buf), 0), (long)glen);
    fflush(stdout);
    pid_t pid = vfork();
    if (pid == 0) {
        close(c);
        _exit(3);
    }
    int status = 0;
    expect(waitpid(pid, &status, 0) == pid, "waitpid");
    printf("child exit status: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CALL("client send after the child closed its copy", send(c, "still", 5, 0), 5);
    CALL("server recv", recv(s, buf, 5, MSG_WAITALL), 5);
    close(c);
    close(s);
}

static void *round_trips(void *arg)
{
    long *total = arg;
    int sv[2];
    char buf[32];

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return NULL;
    for (int i = 0; i < ROUNDS; i++) {
        int n = snprintf(buf, sizeof(buf), "round %d", i);
        if (write(sv[0], buf, (size_t)n) != n)
            break;
        ssize_t got = read(sv[1], buf, sizeof(buf));
        if (got != n || send(sv[1], buf, (size_t)got, 0) != got)
            break;
        got = recv(sv[0], buf, sizeof(buf), 0);
        if (got != n)
            break;
        *total += got;
    }
    close(sv[0]);
    close(sv[1]);
    return NULL;
}

static void threads(void)
{
    pthread_t t[THREADS];
    long totals[THREADS] = {0};
    long sum = 0;

    printf("== threads\n");
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, round_trips, &totals[i]);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        sum += totals[i];
    }
    long want = 0;
    for (int i = 0; i < ROUNDS; i++)
        want += snprintf(NULL, 0, "round %d", i);
    printf("bytes echoed by %d threads: %ld\n", THREADS, sum);
    expect(sum == THREADS * want, "thread totals");
}

// Descriptors past the shim's table are passed through untouched.
static void high_fd(void)
{
    const int high = 70000;
    struct rlimit rl;
    int sv[2];
    char buf[8];

    printf("== high descriptor\n");
    // Raising the hard limit needs root; the test then still runs the same
    // way with and without the shim.
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_max <= (rlim_t)high)
        rl.rlim_max = high + 1;
    rl.rlim_cur = high + 1;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        printf("skipped: descriptor limit too low\n");
        return;
    }
    CALL("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    CALL("dup2", dup2(sv[0], high), high);
    CALL("send", send(high, "high", 4, 0), 4);
    CALL("recv", recv(sv[1], buf, sizeof(buf), 0), 4);
    CALL("close", close(high), 0);
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    pipes();
    files();
    unix_sockets();
    tcp();
    forked();
    vforked();
    threads();
    high_fd();
    printf("== end: %d unexpected\n", failures);
    return failures == 0 ? 0 : 1;
}
