// SPDX-License-Identifier: GPL-2.0-only
// A scripted MySQL C API client for the privileged tests. It does one thing
// per line of stdin and answers one line on stdout, so a test can attach the
// tracer first and then drive every protocol step deterministically.
// It builds against libmariadb (the build's mt_client) and Oracle's
// libmysqlclient (built by the tests against MySQL's chroot).
//
//   mt_client (--socket PATH | --host H --port P) --user U --password P
//             [--database D] [--compress] [--ssl] [--local-infile] [--multi]
//             libmysqlclient only: [--compression-algorithms zlib|zstd]
//             [--ssl-mode DISABLED|REQUIRED|...] [--get-server-public-key]
//             [--nonblocking]  (connect, query and reset through libmysqlclient's
//                               *_nonblocking functions, each called until it is
//                               not NET_ASYNC_NOT_READY; same answers)
//
// Commands and answers (same protocol as pymysql_client.py, mysql2_client.js):
//   connect                      ok | error <code> <message>
//   query <sql>                  ok <result sets> <rows> | error ...
//   bigquery <n>                 query "select length('xxx...')" with n x's
//   peek <sql>                   query, its reply first peeked at on the
//                                socket (recv and recvmsg with MSG_PEEK, as
//                                a liveness check does), then read
//   ping | stats                 ok
//   initdb <db>                  ok
//   change_user <user> <pass>    ok
//   reset                        ok   (mysql_reset_connection)
//   waited                       ok waited | ok not waited  (whether a
//                                      non-blocking call was NOT_READY since
//                                      the last ask)
//   prepare <sql>                ok
//   execute [<int> ...]          ok <rows>
//   close_stmt                   ok
//   attrs <name> <value> ...     ok   (query attributes for the next query;
//                                      libmysqlclient's mysql_bind_param)
//   quit                         ok   (COM_QUIT)
//   exit                         (exits)
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#if defined(LIBMYSQL_VERSION_ID) && !defined(MARIADB_BASE_VERSION) && \
    !defined(MARIADB_PACKAGE_VERSION)
#define ORACLE_CLIENT 1
#endif

#define MAX_PARAMS 8

static MYSQL *db;
static MYSQL_STMT *stmt;

#ifdef ORACLE_CLIENT
static int nonblocking;
static unsigned long not_ready;  // calls that answered NET_ASYNC_NOT_READY

// Calls a non-blocking function until the operation is no longer NOT_READY.
#define NB(call)                                                    \
    ({                                                              \
        enum net_async_status s_;                                   \
        while ((s_ = (call)) == NET_ASYNC_NOT_READY)                \
            not_ready++;                                            \
        s_;                                                         \
    })

static void do_query_nonblocking(const char *sql);
#endif

static void answer_error(unsigned code, const char *msg)
{
    printf("error %u %s\n", code, msg);
}

static void db_error(void)
{
    answer_error(mysql_errno(db), mysql_error(db));
}

static void stmt_error(void)
{
    answer_error(mysql_stmt_errno(stmt), mysql_stmt_error(stmt));
}

// The results of the query sent, each stored and counted.
static void store_results(void)
{
    unsigned sets = 0;
    unsigned long long rows = 0;
    int status;

    do {
        MYSQL_RES *res = mysql_store_result(db);

        if (res) {
            sets++;
            rows += mysql_num_rows(res);
            mysql_free_result(res);
        } else if (mysql_field_count(db) != 0) {
            db_error();
            return;
        }
        status = mysql_next_result(db);
        if (status > 0) {
            db_error();
            return;
        }
    } while (status == 0);
    printf("ok %u %llu\n", sets, rows);
}

static void do_query(const char *sql)
{
#ifdef ORACLE_CLIENT
    if (nonblocking) {
        do_query_nonblocking(sql);
        return;
    }
#endif
    if (mysql_real_query(db, sql, strlen(sql)) != 0) {
        db_error();
        return;
    }
    store_results();
}

// The connection's socket: libmysqlclient has no mysql_get_socket().
static int db_socket(void)
{
#ifdef ORACLE_CLIENT
    return db->net.fd;
#else
    return mysql_get_socket(db);
#endif
}

// The query, its reply's first bytes peeked at twice before the library
// reads it all.
static void do_peek(const char *sql)
{
    char buf[4];
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

    if (mysql_send_query(db, sql, strlen(sql)) != 0) {
        db_error();
        return;
    }
    if (recv(db_socket(), buf, sizeof(buf), MSG_PEEK | MSG_WAITALL) != sizeof(buf) ||
        recvmsg(db_socket(), &msg, MSG_PEEK) != sizeof(buf)) {
        answer_error(0, "peek failed");
        return;
    }
    if (mysql_read_query_result(db) != 0) {
        db_error();
        return;
    }
    store_results();
}

#ifdef ORACLE_CLIENT
static void do_query_nonblocking(const char *sql)
{
    unsigned sets = 0;
    unsigned long long rows = 0;
    enum net_async_status status;

    if (NB(mysql_real_query_nonblocking(db, sql, strlen(sql))) != NET_ASYNC_COMPLETE) {
        db_error();
        return;
    }
    do {
        MYSQL_RES *res = NULL;

        if (NB(mysql_store_result_nonblocking(db, &res)) == NET_ASYNC_ERROR) {
            db_error();
            return;
        }
        if (res) {
            MYSQL_ROW row;

            sets++;
            while (NB(mysql_fetch_row_nonblocking(res, &row)) == NET_ASYNC_COMPLETE && row)
                rows++;
            NB(mysql_free_result_nonblocking(res));
        } else if (mysql_field_count(db) != 0) {
            db_error();
            return;
        }
        status = NB(mysql_next_result_nonblocking(db));
        if (status == NET_ASYNC_ERROR) {
            db_error();
            return;
        }
    } while (status == NET_ASYNC_COMPLETE);
    printf("ok %u %llu\n", sets, rows);
}
#endif

static void do_execute(char *args)
{
    MYSQL_BIND bind[MAX_PARAMS];
    int values[MAX_PARAMS];
    unsigned long n = mysql_stmt_param_count(stmt);
    unsigned long long rows = 0;

    if (n > MAX_PARAMS) {
        answer_error(0, "too many parameters");
        return;
    }
    memset(bind, 0, sizeof(bind));
    for (unsigned long i = 0; i < n; i++) {
        char *tok = strtok(i == 0 ? args : NULL, " ");

        values[i] = tok ? atoi(tok) : 0;
        bind[i].buffer_type = MYSQL_TYPE_LONG;
        bind[i].buffer = &values[i];
    }
    if ((n && mysql_stmt_bind_param(stmt, bind)) || mysql_stmt_execute(stmt) ||
        mysql_stmt_store_result(stmt)) {
        stmt_error();
        return;
    }
    rows = mysql_stmt_num_rows(stmt);
    mysql_stmt_free_result(stmt);
    printf("ok %llu\n", rows);
}

static void do_attrs(char *args)
{
#ifdef ORACLE_CLIENT
    static char names_buf[MAX_PARAMS][64], values_buf[MAX_PARAMS][64];
    static const char *names[MAX_PARAMS];
    static unsigned long lengths[MAX_PARAMS];
    MYSQL_BIND bind[MAX_PARAMS];
    unsigned n = 0;

    memset(bind, 0, sizeof(bind));
    for (char *name = strtok(args, " "); name && n < MAX_PARAMS; name = strtok(NULL, " ")) {
        char *value = strtok(NULL, " ");

        snprintf(names_buf[n], sizeof(names_buf[n]), "%s", name);
        snprintf(values_buf[n], sizeof(values_buf[n]), "%s", value ? value : "");
        names[n] = names_buf[n];
        lengths[n] = strlen(values_buf[n]);
        bind[n].buffer_type = MYSQL_TYPE_STRING;
        bind[n].buffer = values_buf[n];
        bind[n].buffer_length = lengths[n];
        bind[n].length = &lengths[n];
        n++;
    }
    if (mysql_bind_param(db, n, bind, names))
        db_error();
    else
        puts("ok");
#else
    (void)args;
    answer_error(0, "query attributes need libmysqlclient");
#endif
}

int main(int argc, char **argv)
{
    const char *sock = NULL, *host = NULL, *user = NULL, *pass = NULL, *database = NULL;
    unsigned port = 0;
    int compress = 0, ssl = 0, infile = 0, multi = 0, get_key = 0;
    const char *algorithms = NULL, *ssl_mode = NULL;
    char line[1 << 16];

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(a, "--socket") && v) { sock = v; i++; }
        else if (!strcmp(a, "--host") && v) { host = v; i++; }
        else if (!strcmp(a, "--port") && v) { port = (unsigned)atoi(v); i++; }
        else if (!strcmp(a, "--user") && v) { user = v; i++; }
        else if (!strcmp(a, "--password") && v) { pass = v; i++; }
        else if (!strcmp(a, "--database") && v) { database = v; i++; }
        else if (!strcmp(a, "--compress")) compress = 1;
        else if (!strcmp(a, "--ssl")) ssl = 1;
        else if (!strcmp(a, "--local-infile")) infile = 1;
        else if (!strcmp(a, "--multi")) multi = 1;
        else if (!strcmp(a, "--compression-algorithms") && v) { algorithms = v; i++; }
        else if (!strcmp(a, "--ssl-mode") && v) { ssl_mode = v; i++; }
        else if (!strcmp(a, "--get-server-public-key")) get_key = 1;
#ifdef ORACLE_CLIENT
        else if (!strcmp(a, "--nonblocking")) nonblocking = 1;
#endif
        else {
            fprintf(stderr, "mt_client: bad argument %s\n", a);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (fgets(line, sizeof(line), stdin)) {
        char *arg;

        line[strcspn(line, "\n")] = 0;
        arg = strchr(line, ' ');
        if (arg)
            *arg++ = 0;
        else
            arg = line + strlen(line);

        if (!strcmp(line, "connect")) {
            unsigned int one = 1;

            db = mysql_init(NULL);
            if (compress)
                mysql_options(db, MYSQL_OPT_COMPRESS, NULL);
            if (infile)
                mysql_options(db, MYSQL_OPT_LOCAL_INFILE, &one);
#ifdef ORACLE_CLIENT
            if (ssl || ssl_mode) {
                static const char *modes[] = {"", "DISABLED", "PREFERRED", "REQUIRED",
                                              "VERIFY_CA", "VERIFY_IDENTITY"};
                unsigned mode = SSL_MODE_REQUIRED;

                for (unsigned m = 1; ssl_mode && m < sizeof(modes) / sizeof(modes[0]); m++)
                    if (!strcmp(ssl_mode, modes[m]))
                        mode = m;
                mysql_options(db, MYSQL_OPT_SSL_MODE, &mode);
            }
            if (algorithms)
                mysql_options(db, MYSQL_OPT_COMPRESSION_ALGORITHMS, algorithms);
            if (get_key) {
                bool yes = 1;

                mysql_options(db, MYSQL_OPT_GET_SERVER_PUBLIC_KEY, &yes);
            }
#else
            (void)algorithms;
            (void)ssl_mode;
            (void)get_key;
            if (ssl) {
                my_bool yes = 1, no = 0;

                mysql_optionsv(db, MYSQL_OPT_SSL_ENFORCE, &yes);
                mysql_optionsv(db, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &no);
            }
#endif
#ifdef ORACLE_CLIENT
            if (nonblocking) {
                if (NB(mysql_real_connect_nonblocking(db, host, user, pass, database, port, sock,
                                                      multi ? CLIENT_MULTI_STATEMENTS : 0)) !=
                    NET_ASYNC_COMPLETE)
                    db_error();
                else
                    puts("ok");
                continue;
            }
#endif
            if (!mysql_real_connect(db, host, user, pass, database, port, sock,
                                    multi ? CLIENT_MULTI_STATEMENTS : 0))
                db_error();
            else
                puts("ok");
        } else if (!strcmp(line, "query")) {
            do_query(arg);
        } else if (!strcmp(line, "peek")) {
            do_peek(arg);
        } else if (!strcmp(line, "bigquery")) {
            size_t n = strtoul(arg, NULL, 10);
            char *sql = malloc(n + 32);

            if (!sql) {
                answer_error(0, "out of memory");
                continue;
            }
            strcpy(sql, "select length('");
            memset(sql + 15, 'x', n);
            strcpy(sql + 15 + n, "')");
            do_query(sql);
            free(sql);
        } else if (!strcmp(line, "ping")) {
            mysql_ping(db) ? db_error() : (void)puts("ok");
        } else if (!strcmp(line, "stats")) {
            mysql_stat(db) ? (void)puts("ok") : db_error();
        } else if (!strcmp(line, "initdb")) {
            mysql_select_db(db, arg) ? db_error() : (void)puts("ok");
        } else if (!strcmp(line, "change_user")) {
            char *u = strtok(arg, " "), *p = strtok(NULL, " ");

            mysql_change_user(db, u, p ? p : "", NULL) ? db_error() : (void)puts("ok");
        } else if (!strcmp(line, "reset")) {
#ifdef ORACLE_CLIENT
            if (nonblocking) {
                NB(mysql_reset_connection_nonblocking(db)) != NET_ASYNC_COMPLETE
                    ? db_error()
                    : (void)puts("ok");
                continue;
            }
#endif
            mysql_reset_connection(db) ? db_error() : (void)puts("ok");
        } else if (!strcmp(line, "waited")) {
#ifdef ORACLE_CLIENT
            puts(not_ready ? "ok waited" : "ok not waited");
            not_ready = 0;
#else
            puts("ok not waited");
#endif
        } else if (!strcmp(line, "prepare")) {
            stmt = mysql_stmt_init(db);
            mysql_stmt_prepare(stmt, arg, strlen(arg)) ? stmt_error() : (void)puts("ok");
        } else if (!strcmp(line, "execute")) {
            do_execute(arg);
        } else if (!strcmp(line, "close_stmt")) {
            mysql_stmt_close(stmt);
            stmt = NULL;
            puts("ok");
        } else if (!strcmp(line, "attrs")) {
            do_attrs(arg);
        } else if (!strcmp(line, "quit")) {
            mysql_close(db);
            db = NULL;
            puts("ok");
        } else if (!strcmp(line, "exit")) {
            break;
        } else {
            answer_error(0, "unknown command");
        }
    }
    return 0;
}
