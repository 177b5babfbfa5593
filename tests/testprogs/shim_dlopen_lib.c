// SPDX-License-Identifier: GPL-2.0-only
// Loaded by shim_dlopen with RTLD_LOCAL, as Python loads its extension
// modules: libmariadb, libssl and libgnutls are then outside the global scope,
// yet this library's calls still bind to the shim's interposers, which must
// find the real functions anyway. Prints what each call returned. GnuTLS is
// used when its development files are installed.
#ifdef SHIM_TEST_GNUTLS
#include <gnutls/gnutls.h>
#endif
#include <mysql.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>

static void mysql_calls(unsigned port)
{
    MYSQL *m = mysql_init(NULL);
    MYSQL *r = mysql_real_connect(m, "127.0.0.1", "nobody", "secret", NULL, port, NULL, 0);
    // Not mysql_error(): it ends with the errno of a connect() that may or may
    // not have completed at once.
    printf("mysql_real_connect: %s, error %u (%s)\n", r ? "connected" : "failed",
           mysql_errno(m), mysql_sqlstate(m));
    int q = mysql_query(m, "select 1");
    printf("mysql_query: %d, error %u\n", q, mysql_errno(m));
    printf("mysql_ping: %d, error %u\n", mysql_ping(m), mysql_errno(m));
    printf("mysql_select_db: %d, error %u\n", mysql_select_db(m, "test"), mysql_errno(m));
    MYSQL_STMT *st = mysql_stmt_init(m);
    if (st) {
        int p = mysql_stmt_prepare(st, "select ?", 8);
        printf("mysql_stmt_prepare: %d, error %u\n", p, mysql_stmt_errno(st));
        printf("mysql_stmt_close: %d\n", mysql_stmt_close(st));
    }
    mysql_close(m);

    // The non-blocking API, driven to completion.
    m = mysql_init(NULL);
    mysql_options(m, MYSQL_OPT_NONBLOCK, 0);
    int status = mysql_real_connect_start(&r, m, "127.0.0.1", "nobody", "secret", NULL, port,
                                          NULL, 0);
    while (status != 0) {
        struct pollfd pfd = {.fd = mysql_get_socket(m), .events = POLLIN | POLLOUT};
        poll(&pfd, 1, 1000);
        status = mysql_real_connect_cont(&r, m, MYSQL_WAIT_READ | MYSQL_WAIT_WRITE);
    }
    printf("mysql_real_connect_start: %s, error %u\n", r ? "connected" : "failed",
           mysql_errno(m));
    status = mysql_close_start(m);
    while (status != 0)
        status = mysql_close_cont(m, status);
    printf("mysql_close_start: done\n");
}

static void openssl_calls(void)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = SSL_new(ctx);
    BIO *in = BIO_new(BIO_s_mem());
    BIO *out = BIO_new(BIO_s_mem());
    char buf[16];
    size_t n = 0;

    SSL_set_bio(ssl, in, out);
    SSL_set_connect_state(ssl);
    int r = SSL_read(ssl, buf, sizeof(buf));
    printf("SSL_read: %d, SSL_get_error %d, hello written %s\n", r, SSL_get_error(ssl, r),
           BIO_ctrl_pending(out) > 0 ? "yes" : "no");
    r = SSL_write(ssl, "x", 1);
    printf("SSL_write: %d, SSL_get_error %d\n", r, SSL_get_error(ssl, r));
    r = SSL_read_ex(ssl, buf, sizeof(buf), &n);
    printf("SSL_read_ex: %d, SSL_get_error %d, %zu bytes\n", r, SSL_get_error(ssl, r), n);
    r = SSL_write_ex(ssl, "x", 1, &n);
    printf("SSL_write_ex: %d, SSL_get_error %d, %zu bytes\n", r, SSL_get_error(ssl, r), n);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
}

#ifdef SHIM_TEST_GNUTLS
static void gnutls_calls(void)
{
    gnutls_session_t session;
    char buf[16];

    if (gnutls_init(&session, GNUTLS_CLIENT) != 0) {
        printf("gnutls_init failed\n");
        return;
    }
    printf("gnutls_record_recv: %zd\n", gnutls_record_recv(session, buf, sizeof(buf)));
    printf("gnutls_record_send: %zd\n", gnutls_record_send(session, "x", 1));
    gnutls_deinit(session);
}
#else
static void gnutls_calls(void)
{
    printf("gnutls: not built (no libgnutls28-dev)\n");
}
#endif

void shim_dlopen_run(unsigned closed_port)
{
    mysql_calls(closed_port);
    openssl_calls();
    gnutls_calls();
    fflush(stdout);
}
