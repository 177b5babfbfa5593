#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# Scripted MySQL/MariaDB client on PyMySQL for the privileged tests.
#
# The test starts this under a gate, attaches the tracer, then sends one
# command per line on stdin and waits for the one-line answer on stdout
# before sending the next, so every trace is deterministic. Same protocol
# as mt_client.c (libmariadb) and mysql2_client.js:
#
#   connect                      ok | error <code> <message>
#   query <sql>                  ok <result_sets> <rows>  (all results read)
#   bigquery <n>                 query "select length('xxx...')" with n x's
#   ping                         ok            (COM_PING)
#   initdb <db>                  ok            (COM_INIT_DB)
#   stats                        unsupported   (PyMySQL has no COM_STATISTICS)
#   change_user <user> <pw>      unsupported   (PyMySQL has no COM_CHANGE_USER)
#   prepare <sql> / execute [<int> ...] / close_stmt
#                                unsupported   (no server-side statements)
#   quit                         ok            (COM_QUIT, socket closed)
#   exit / EOF                   exit 0 without an answer
#
# Any failure answers "error <code or 0> <message>". Nothing but answers is
# ever written to stdout; diagnostics go to stderr.
#
# Run with Debian's /usr/bin/python3 (python3-pymysql). PyMySQL sends
# "SET AUTOCOMMIT = 0" by itself right after authenticating (its default
# autocommit=False while the server starts in autocommit mode); that is kept,
# being what every PyMySQL application sends. It has no compressed protocol:
# with --compress, connect answers "unsupported".

import argparse
import sys

try:
    import pymysql
    from pymysql.constants import CLIENT
except ImportError as exc:  # pragma: no cover - environment problem
    sys.stderr.write(
        "pymysql_client: cannot import pymysql (%s); run with /usr/bin/python3 "
        "and install python3-pymysql\n" % exc
    )
    sys.exit(2)

# libmariadb's CR_SSL_CONNECTION_ERROR, so a TLS failure reads the same in
# every driver.
CR_SSL_CONNECTION_ERROR = 2026


class _Connection(pymysql.connections.Connection):
    """PyMySQL connection that refuses to go on in clear text when TLS is
    required: stock PyMySQL silently skips TLS when the server's handshake
    does not offer it."""

    require_tls = False

    def _request_authentication(self):
        if self.require_tls and not (self.server_capabilities & CLIENT.SSL):
            raise pymysql.err.OperationalError(
                CR_SSL_CONNECTION_ERROR,
                "SSL connection error: TLS is required but the server does "
                "not support it",
            )
        super()._request_authentication()


def one_line(text):
    return " ".join(str(text).split())


class Driver:
    def __init__(self, opts):
        self.opts = opts
        self.conn = None

    # -- answers ---------------------------------------------------------
    @staticmethod
    def answer(line):
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    @staticmethod
    def error_line(exc):
        code = 0
        message = str(exc)
        if isinstance(exc, pymysql.err.MySQLError) and len(exc.args) >= 2:
            if isinstance(exc.args[0], int):
                code = exc.args[0]
                message = str(exc.args[1])
        if not message:
            message = type(exc).__name__
        return "error %d %s" % (code, one_line(message))

    def need_conn(self):
        if self.conn is None:
            raise RuntimeError("not connected")
        return self.conn

    # -- commands --------------------------------------------------------
    def cmd_connect(self, _arg):
        if self.conn is not None:
            raise RuntimeError("already connected")
        o = self.opts
        if o.compress:
            return "unsupported"
        kwargs = dict(
            user=o.user,
            password=o.password or "",
            database=o.database,
            local_infile=o.local_infile,
            client_flag=CLIENT.MULTI_STATEMENTS if o.multi else 0,
            defer_connect=True,
        )
        if o.socket:
            kwargs["unix_socket"] = o.socket
        else:
            kwargs["host"] = o.host
            kwargs["port"] = o.port
        if o.ssl:
            # Encrypt, but do not verify the certificate nor the host name.
            kwargs["ssl"] = {"verify_mode": False, "check_hostname": False}
        conn = _Connection(**kwargs)
        conn.require_tls = o.ssl
        conn.connect()
        self.conn = conn
        return "ok"

    def cmd_query(self, sql):
        conn = self.need_conn()
        result_sets = 0
        rows = 0
        cur = conn.cursor()
        try:
            # No args: PyMySQL sends the text as is (no %-formatting).
            cur.execute(sql)
            while True:
                if cur.description is not None:
                    result_sets += 1
                    rows += len(cur.fetchall())
                if not cur.nextset():
                    break
        finally:
            cur.close()
        return "ok %d %d" % (result_sets, rows)

    def cmd_bigquery(self, arg):
        if not arg.isdigit():
            raise ValueError("bigquery: not a count: %s" % arg)
        return self.cmd_query("select length('%s')" % ("x" * int(arg)))

    def cmd_ping(self, _arg):
        self.need_conn().ping(reconnect=False)
        return "ok"

    def cmd_initdb(self, db):
        self.need_conn().select_db(db)
        return "ok"

    def cmd_quit(self, _arg):
        conn = self.need_conn()
        self.conn = None
        conn.close()  # COM_QUIT, then the socket is closed
        return "ok"

    def cmd_unsupported(self, _arg):
        return "unsupported"

    COMMANDS = {
        "connect": cmd_connect,
        "query": cmd_query,
        "bigquery": cmd_bigquery,
        "ping": cmd_ping,
        "initdb": cmd_initdb,
        "quit": cmd_quit,
        # PyMySQL offers no COM_STATISTICS, no COM_CHANGE_USER and no
        # server-side prepared statements.
        "stats": cmd_unsupported,
        "change_user": cmd_unsupported,
        "prepare": cmd_unsupported,
        "execute": cmd_unsupported,
        "close_stmt": cmd_unsupported,
    }

    def handle(self, line):
        name, _, arg = line.partition(" ")
        handler = self.COMMANDS.get(name)
        if handler is None:
            return "error 0 unknown command"
        try:
            return handler(self, arg)
        except Exception as exc:  # noqa: BLE001 - every failure is answered
            # A lost connection is gone for good (PyMySQL has closed the
            # socket); after a server error it stays usable.
            if self.conn is not None and not self.conn.open:
                self.conn = None
            return self.error_line(exc)

    def run(self):
        stdin = sys.stdin.buffer
        while True:
            raw = stdin.readline()
            if not raw:
                break
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if line == "exit":
                break
            self.answer(self.handle(line))
        return 0


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="pymysql_client.py",
        description="Scripted PyMySQL client driven over stdin (see header).",
    )
    p.add_argument("--socket")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--user", required=True)
    p.add_argument("--password", default="")
    p.add_argument("--database")
    p.add_argument("--compress", action="store_true")
    p.add_argument("--ssl", action="store_true")
    p.add_argument("--local-infile", action="store_true")
    p.add_argument("--multi", action="store_true")
    opts = p.parse_args(argv)
    if not opts.socket and not (opts.host and opts.port):
        p.error("give --socket PATH or --host H --port P")
    return opts


def main(argv):
    opts = parse_args(argv)
    try:
        return Driver(opts).run()
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
