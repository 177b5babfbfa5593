#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Record real MySQL client/server byte streams as protocol test fixtures.

Starts a throwaway mariadbd in a temporary directory (loopback only, no
binary log), then for each scenario puts a loopback TCP relay between a
client and the server and writes every chunk the relay reads to
tests/data/protocol/<scenario>.txt. The server is stopped and the directory
removed at the end, whatever happens.

Clients: a small C program linked to libmariadb (compiled on the fly; it
covers the libmariadb API paths), the `mariadb` command-line client,
python3-pymysql, a minimal raw-protocol client in this file that asks
for CLIENT_DEPRECATE_EOF and MARIADB_CLIENT_CACHE_METADATA, which none of
the others do, and sysbench (one thread's steady state, the sysbench_*
recordings that bench/decoder_bench.cpp measures apart).

Fixture format (read by tests/unit/protocol_fixture.h), one record a line:
    # comment
    <t_us> connect                 the client connected
    <t_us> C <hex>                 bytes the client wrote (client -> server)
    <t_us> S <hex>                 bytes the client read  (server -> client)
    <t_us> close                   the connection ended
t_us is microseconds since the relay accepted the client. One data line is
one recv() of the relay, which approximates one read()/write() of the
client. Tests may add TC/TS (TLS cleartext) lines and a trailing "+<n>"
(n more bytes existed but were not copied); recordings never contain them.

Usage: record-protocol.py [--out DIR] [--only SCENARIO ...] [--keep-tmp]
Needs root or a user that can run mariadbd; mariadb-server, mariadb-client,
libmariadb-dev, a C compiler, python3-pymysql and sysbench (for their
scenarios).
"""

import argparse
import hashlib
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELAY_TIMEOUT_S = 60          # a scenario that takes longer is broken
RELAY_MAX_BYTES = 64 << 20    # fixtures stay small and reviewable
INFILE = "/tmp/mysqltrace-infile.csv"
CLIENT_PLUGIN_DIR = "/usr/lib/x86_64-linux-gnu/libmariadb3/plugin"

SETUP_SQL = """
INSTALL SONAME 'auth_ed25519';
CREATE DATABASE mt;
CREATE TABLE mt.t (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(32),
                   price DECIMAL(8,2), created DATETIME, ratio DOUBLE, note TEXT);
INSERT INTO mt.t (name, price, created, ratio) VALUES
  ('apple', 1.25, '2024-01-02 03:04:05', 0.5),
  ('pear', 2.50, '2024-02-03 04:05:06', NULL),
  ('plum', 0.75, NULL, 1e-3);
CREATE USER 'mt'@'127.0.0.1' IDENTIFIED BY 'mtpass';
GRANT ALL ON *.* TO 'mt'@'127.0.0.1';
CREATE USER 'mt2'@'127.0.0.1' IDENTIFIED BY 'mt2pass';
GRANT ALL ON mt.* TO 'mt2'@'127.0.0.1';
CREATE USER 'mted'@'127.0.0.1' IDENTIFIED VIA ed25519 USING PASSWORD('edpass');
GRANT ALL ON mt.* TO 'mted'@'127.0.0.1';
SET GLOBAL local_infile = 1;
CREATE DATABASE sb;
"""

C_CLIENT = r"""
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MYSQL *open_conn(const char *host, int port, const char *user, const char *pass,
                        unsigned long flags, int compress, int local_infile) {
    MYSQL *m = mysql_init(NULL);
    mysql_optionsv(m, MYSQL_PLUGIN_DIR, PLUGIN_DIR);
    if (compress) mysql_optionsv(m, MYSQL_OPT_COMPRESS, NULL);
    if (local_infile) { unsigned int on = 1; mysql_optionsv(m, MYSQL_OPT_LOCAL_INFILE, &on); }
    my_bool no = 0;
    mysql_optionsv(m, MYSQL_OPT_SSL_ENFORCE, &no);
    if (!mysql_real_connect(m, host, user, pass, "mt", port, NULL, flags)) {
        fprintf(stderr, "connect: %s\n", mysql_error(m));
        exit(2);
    }
    return m;
}

static void query(MYSQL *m, const char *sql) {
    if (mysql_query(m, sql)) {
        fprintf(stderr, "query '%s': %s (expected?)\n", sql, mysql_error(m));
        return;
    }
    do {
        MYSQL_RES *r = mysql_store_result(m);
        if (r) mysql_free_result(r);
    } while (mysql_next_result(m) == 0);
}

static void prepared(MYSQL *m) {
    MYSQL_STMT *s = mysql_stmt_init(m);
    const char *sql = "SELECT id, name, price, created, ratio FROM t WHERE id > ? AND name <> ?";
    if (mysql_stmt_prepare(s, sql, strlen(sql))) { fprintf(stderr, "%s\n", mysql_stmt_error(s)); exit(3); }
    int id = 0; char name[] = "pear"; unsigned long name_len = 4;
    MYSQL_BIND p[2]; memset(p, 0, sizeof(p));
    p[0].buffer_type = MYSQL_TYPE_LONG; p[0].buffer = &id;
    p[1].buffer_type = MYSQL_TYPE_STRING; p[1].buffer = name; p[1].length = &name_len;
    mysql_stmt_bind_param(s, p);
    if (mysql_stmt_execute(s)) { fprintf(stderr, "%s\n", mysql_stmt_error(s)); exit(3); }
    mysql_stmt_store_result(s);
    while (mysql_stmt_fetch(s) == 0) {}
    mysql_stmt_free_result(s);
    id = 1;  /* execute again: types are not resent */
    mysql_stmt_execute(s);
    mysql_stmt_store_result(s);
    mysql_stmt_free_result(s);
    mysql_stmt_reset(s);
    mysql_stmt_close(s);

    s = mysql_stmt_init(m);
    sql = "UPDATE t SET note = ? WHERE id = ?";
    mysql_stmt_prepare(s, sql, strlen(sql));
    MYSQL_BIND u[2]; memset(u, 0, sizeof(u));
    int uid = 2;
    u[0].buffer_type = MYSQL_TYPE_BLOB;
    u[1].buffer_type = MYSQL_TYPE_LONG; u[1].buffer = &uid;
    mysql_stmt_bind_param(s, u);
    mysql_stmt_send_long_data(s, 0, "long data ", 10);
    mysql_stmt_send_long_data(s, 0, "in two parts", 12);
    mysql_stmt_execute(s);
    mysql_stmt_close(s);

    s = mysql_stmt_init(m);
    sql = "SELECT * FROM nosuch WHERE id = ?";
    if (mysql_stmt_prepare(s, sql, strlen(sql)) == 0) exit(3);
    mysql_stmt_close(s);
}

static void bulk(MYSQL *m) {
    MYSQL_STMT *s = mysql_stmt_init(m);
    const char *sql = "INSERT INTO t (name, price) VALUES (?, ?)";
    mysql_stmt_prepare(s, sql, strlen(sql));
    char *names[3] = {"kiwi", "lime", "fig"};
    unsigned long lens[3] = {4, 4, 3};
    double prices[3] = {1.5, 2.5, 3.5};
    unsigned int size = 3;
    mysql_stmt_attr_set(s, STMT_ATTR_ARRAY_SIZE, &size);
    MYSQL_BIND b[2]; memset(b, 0, sizeof(b));
    b[0].buffer_type = MYSQL_TYPE_STRING; b[0].buffer = names; b[0].length = lens;
    b[1].buffer_type = MYSQL_TYPE_DOUBLE; b[1].buffer = prices;
    mysql_stmt_bind_param(s, b);
    if (mysql_stmt_execute(s)) { fprintf(stderr, "bulk: %s\n", mysql_stmt_error(s)); exit(3); }
    mysql_stmt_close(s);

    /* Prepare and execute sent together; the execute names statement -1. */
    s = mysql_stmt_init(m);
    int id = 2;
    MYSQL_BIND p[1]; memset(p, 0, sizeof(p));
    p[0].buffer_type = MYSQL_TYPE_LONG; p[0].buffer = &id;
    unsigned int one = 1;
    mysql_stmt_attr_set(s, STMT_ATTR_PREBIND_PARAMS, &one);
    mysql_stmt_bind_param(s, p);
    sql = "SELECT name FROM t WHERE id = ?";
    if (mariadb_stmt_execute_direct(s, sql, strlen(sql))) { fprintf(stderr, "direct: %s\n", mysql_stmt_error(s)); exit(3); }
    mysql_stmt_store_result(s);
    mysql_stmt_free_result(s);
    mysql_stmt_close(s);

    /* A read-only cursor: rows come with COM_STMT_FETCH. */
    s = mysql_stmt_init(m);
    unsigned long cursor = CURSOR_TYPE_READ_ONLY, prefetch = 2;
    mysql_stmt_attr_set(s, STMT_ATTR_CURSOR_TYPE, &cursor);
    mysql_stmt_attr_set(s, STMT_ATTR_PREFETCH_ROWS, &prefetch);
    sql = "SELECT id, name FROM t ORDER BY id LIMIT 3";
    mysql_stmt_prepare(s, sql, strlen(sql));
    mysql_stmt_execute(s);
    int rid; char rname[40]; unsigned long rlen;
    MYSQL_BIND r[2]; memset(r, 0, sizeof(r));
    r[0].buffer_type = MYSQL_TYPE_LONG; r[0].buffer = &rid;
    r[1].buffer_type = MYSQL_TYPE_STRING; r[1].buffer = rname; r[1].buffer_length = sizeof(rname); r[1].length = &rlen;
    mysql_stmt_bind_result(s, r);
    while (mysql_stmt_fetch(s) == 0) {}
    mysql_stmt_close(s);
}

int main(int argc, char **argv) {
    const char *scenario = argv[1], *host = argv[2];
    int port = atoi(argv[3]);
    MYSQL *m;
    if (!strcmp(scenario, "basic")) {
        m = open_conn(host, port, "mt", "mtpass", 0, 0, 0);
        query(m, "SELECT 1, 'abc', NULL");
        query(m, "SELECT id, name, price FROM t ORDER BY id");
        query(m, "SELECT * FROM t WHERE id < 0");
        query(m, "SELECT * FROM nosuch");
        query(m, "INSERT INTO t (name, price) VALUES ('quince', 9.99)");
        query(m, "CREATE USER IF NOT EXISTS 'tmp'@'localhost' IDENTIFIED BY 's3cret'");
        query(m, "DROP USER 'tmp'@'localhost'");
    } else if (!strcmp(scenario, "auth_switch")) {
        m = open_conn(host, port, "mted", "edpass", 0, 0, 0);
        query(m, "SELECT CURRENT_USER()");
    } else if (!strcmp(scenario, "multi")) {
        m = open_conn(host, port, "mt", "mtpass", CLIENT_MULTI_STATEMENTS, 0, 0);
        query(m, "SELECT 1 AS a; SELECT 'x' AS b, 2 AS c; DO 1");
        query(m, "SELECT 3; SELECT * FROM nosuch");
    } else if (!strcmp(scenario, "prepared")) {
        m = open_conn(host, port, "mt", "mtpass", 0, 0, 0);
        prepared(m);
    } else if (!strcmp(scenario, "bulk")) {
        m = open_conn(host, port, "mt", "mtpass", 0, 0, 0);
        bulk(m);
    } else if (!strcmp(scenario, "local_infile")) {
        m = open_conn(host, port, "mt", "mtpass", 0, 0, 1);
        query(m, "LOAD DATA LOCAL INFILE '" INFILE "' INTO TABLE t FIELDS TERMINATED BY ',' (name, price)");
        query(m, "LOAD DATA LOCAL INFILE '/nonexistent/file.csv' INTO TABLE t");
    } else if (!strcmp(scenario, "change_user")) {
        m = open_conn(host, port, "mt", "mtpass", 0, 0, 0);
        query(m, "SELECT CURRENT_USER()");
        if (mysql_change_user(m, "mt2", "mt2pass", "mt")) { fprintf(stderr, "%s\n", mysql_error(m)); exit(4); }
        query(m, "SELECT CURRENT_USER()");
        if (mysql_change_user(m, "mted", "edpass", "mt")) { fprintf(stderr, "%s\n", mysql_error(m)); exit(4); }
        if (mysql_change_user(m, "mt2", "wrong", "mt") == 0) exit(4);
    } else if (!strcmp(scenario, "admin")) {
        m = open_conn(host, port, "mt", "mtpass", 0, 0, 0);
        mysql_ping(m);
        mysql_select_db(m, "mt");
        mysql_select_db(m, "nosuchdb");
        const char *st = mysql_stat(m);
        (void)st;
        MYSQL_RES *r = mysql_list_fields(m, "t", NULL);
        if (r) mysql_free_result(r);
        r = mysql_list_processes(m);
        if (r) mysql_free_result(r);
        mysql_set_server_option(m, MYSQL_OPTION_MULTI_STATEMENTS_ON);
        mysql_reset_connection(m);
    } else if (!strcmp(scenario, "compress_c")) {
        m = open_conn(host, port, "mt", "mtpass", 0, 1, 0);
        query(m, "SELECT REPEAT('abcdefgh', 300) AS big, 1 AS small");
        query(m, "SELECT id, name FROM t ORDER BY id");
    } else {
        fprintf(stderr, "unknown scenario %s\n", scenario);
        return 1;
    }
    mysql_close(m);
    return 0;
}
"""


def log(msg):
    print(f"record-protocol: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Relay:
    """Accepts one client, connects it to the server, records every chunk."""

    def __init__(self, server_port):
        self.server_port = server_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.records = []
        self.error = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.listener.settimeout(RELAY_TIMEOUT_S)
            client, _ = self.listener.accept()
            t0 = time.monotonic_ns()
            server = socket.create_connection(("127.0.0.1", self.server_port))
            self.records.append((0, "connect", b""))
            peers = {client: (server, "C"), server: (client, "S")}
            open_ = {client, server}
            total = 0
            deadline = time.monotonic() + RELAY_TIMEOUT_S
            while open_ and time.monotonic() < deadline:
                ready, _, _ = select.select(list(open_), [], [], 1.0)
                for s in ready:
                    data = s.recv(1 << 20)
                    other, tag = peers[s]
                    if not data:
                        open_.discard(s)
                        try:
                            other.shutdown(socket.SHUT_WR)
                        except OSError:
                            pass
                        continue
                    total += len(data)
                    if total > RELAY_MAX_BYTES:
                        raise RuntimeError("scenario exceeded the byte cap")
                    self.records.append(((time.monotonic_ns() - t0) // 1000, tag, data))
                    other.sendall(data)
            self.records.append(((time.monotonic_ns() - t0) // 1000, "close", b""))
            client.close()
            server.close()
        except Exception as e:  # reported by the caller
            self.error = e
        finally:
            self.listener.close()

    def wait(self):
        self.thread.join(RELAY_TIMEOUT_S + 5)
        if self.thread.is_alive():
            raise RuntimeError("relay did not finish")
        if self.error:
            raise self.error
        return self.records


class Server:
    def __init__(self, tmp):
        self.tmp = tmp
        self.datadir = os.path.join(tmp, "data")
        self.sock = os.path.join(tmp, "mysqld.sock")
        self.port = free_port()
        self.proc = None

    def start(self):
        subprocess.run(["mariadb-install-db", "--no-defaults", "--user=root",
                        f"--datadir={self.datadir}", "--auth-root-authentication-method=socket",
                        "--skip-test-db"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        self.proc = subprocess.Popen(
            ["mariadbd", "--no-defaults", "--user=root", f"--datadir={self.datadir}",
             f"--socket={self.sock}", f"--port={self.port}", "--bind-address=127.0.0.1",
             "--skip-log-bin", "--skip-name-resolve", f"--pid-file={self.tmp}/mysqld.pid",
             f"--log-error={self.tmp}/error.log", "--innodb-buffer-pool-size=16M",
             "--plugin-dir=/usr/lib/mysql/plugin"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(300):
            if self.proc.poll() is not None:
                raise RuntimeError("mariadbd exited; see " + self.tmp + "/error.log")
            if os.path.exists(self.sock):
                r = subprocess.run(["mariadb", "--no-defaults", "-uroot", f"-S{self.sock}",
                                    "-e", "SELECT 1"], capture_output=True)
                if r.returncode == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError("mariadbd did not come up")

    def sql(self, text):
        subprocess.run(["mariadb", "--no-defaults", "-uroot", f"-S{self.sock}"],
                       input=text.encode(), check=True)

    def version(self):
        r = subprocess.run(["mariadb", "--no-defaults", "-uroot", f"-S{self.sock}", "-N", "-e",
                            "SELECT VERSION()"], capture_output=True, check=True)
        return r.stdout.decode().strip()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---------------------------------------------------------------------------
# A minimal raw-protocol client: the only way to get a real server to speak
# with CLIENT_DEPRECATE_EOF and MARIADB_CLIENT_CACHE_METADATA here.

CLIENT_PROTOCOL_41 = 1 << 9
CLIENT_SECURE_CONNECTION = 1 << 15
CLIENT_MULTI_STATEMENTS = 1 << 16
CLIENT_MULTI_RESULTS = 1 << 17
CLIENT_PS_MULTI_RESULTS = 1 << 18
CLIENT_PLUGIN_AUTH = 1 << 19
CLIENT_TRANSACTIONS = 1 << 13
CLIENT_CONNECT_WITH_DB = 1 << 3
CLIENT_DEPRECATE_EOF = 1 << 24
MARIADB_CLIENT_CACHE_METADATA = 1 << 36


class RawClient:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.seq = 0

    def read_packet(self):
        hdr = self._recv(4)
        n = hdr[0] | hdr[1] << 8 | hdr[2] << 16
        self.seq = (hdr[3] + 1) & 0xFF
        return self._recv(n)

    def _recv(self, n):
        buf = b""
        while len(buf) < n:
            d = self.s.recv(n - len(buf))
            if not d:
                raise RuntimeError("server closed")
            buf += d
        return buf

    def write_packet(self, payload, seq=None):
        seq = self.seq if seq is None else seq
        self.s.sendall(struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload)
        self.seq = (seq + 1) & 0xFF

    def connect(self, user, password, db):
        greet = self.read_packet()
        pos = greet.index(b"\0", 1) + 1
        pos += 4
        scramble = greet[pos:pos + 8]
        pos += 9
        caps = struct.unpack_from("<H", greet, pos)[0]
        pos += 2 + 1 + 2
        caps |= struct.unpack_from("<H", greet, pos)[0] << 16
        pos += 2 + 1 + 6
        ext = struct.unpack_from("<I", greet, pos)[0]
        pos += 4
        scramble += greet[pos:pos + 12]
        sha = hashlib.sha1
        h1 = sha(password.encode()).digest()
        token = bytes(a ^ b for a, b in zip(h1, sha(scramble + sha(h1).digest()).digest()))
        flags = (CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_MULTI_STATEMENTS |
                 CLIENT_MULTI_RESULTS | CLIENT_PS_MULTI_RESULTS | CLIENT_PLUGIN_AUTH |
                 CLIENT_TRANSACTIONS | CLIENT_CONNECT_WITH_DB | CLIENT_DEPRECATE_EOF)
        self.deprecate_eof = bool(caps & CLIENT_DEPRECATE_EOF)
        self.cache_metadata = bool(ext & (MARIADB_CLIENT_CACHE_METADATA >> 32))
        ext_flags = (MARIADB_CLIENT_CACHE_METADATA >> 32) if self.cache_metadata else 0
        resp = struct.pack("<IIB", flags, 1 << 24, 45) + b"\0" * 19 + struct.pack("<I", ext_flags)
        resp += user.encode() + b"\0" + bytes([len(token)]) + token + db.encode() + b"\0"
        resp += b"mysql_native_password\0"
        self.write_packet(resp)
        r = self.read_packet()
        if r[0] != 0:
            raise RuntimeError(f"raw auth failed: {r!r}")

    def command(self, payload):
        self.seq = 0
        self.write_packet(payload)

    @staticmethod
    def lenenc(b, pos):
        c = b[pos]
        if c < 0xFB:
            return c, pos + 1
        n = {0xFC: 2, 0xFD: 3, 0xFE: 8}[c]
        return int.from_bytes(b[pos + 1:pos + 1 + n], "little"), pos + 1 + n

    def read_result(self):
        """Reads one reply (all result sets); returns the column counts seen."""
        counts = []
        while True:
            p = self.read_packet()
            if p[0] == 0xFF:
                return counts
            if p[0] == 0x00:
                _, pos = self.lenenc(p, 1)
                _, pos = self.lenenc(p, pos)
                status = struct.unpack_from("<H", p, pos)[0]
                if status & 8:
                    continue
                return counts
            n, pos = self.lenenc(p, 0)
            counts.append(n)
            metadata = True
            if self.cache_metadata and pos < len(p):
                metadata = p[pos] == 1
            if metadata:
                for _ in range(n):
                    self.read_packet()
            if not self.deprecate_eof:
                self.read_packet()
            while True:
                p = self.read_packet()
                if p[0] == 0xFF:
                    return counts
                if p[0] == 0xFE and len(p) < 0xFFFFFF:
                    break
            if self.deprecate_eof:
                _, pos = self.lenenc(p, 1)
                _, pos = self.lenenc(p, pos)
                status = struct.unpack_from("<H", p, pos)[0]
            else:
                status = struct.unpack_from("<H", p, 3)[0]
            if not status & 8:
                return counts

    def prepare(self, sql):
        self.command(b"\x16" + sql.encode())
        p = self.read_packet()
        stmt_id, cols, params = struct.unpack_from("<IHH", p, 1)
        for _ in range(params):
            self.read_packet()
        if params and not self.deprecate_eof:
            self.read_packet()
        for _ in range(cols):
            self.read_packet()
        if cols and not self.deprecate_eof:
            self.read_packet()
        return stmt_id

    def execute_int(self, stmt_id, value, send_types):
        payload = b"\x17" + struct.pack("<IBI", stmt_id, 0, 1) + b"\x00"
        payload += b"\x01" + struct.pack("<BB", 3, 0) if send_types else b"\x00"
        payload += struct.pack("<i", value)
        self.command(payload)
        self.read_result()

    def quit(self):
        self.command(b"\x01")
        self.s.close()


def run_raw(port):
    c = RawClient(port)
    c.connect("mt", "mtpass", "mt")
    c.command(b"\x03SELECT id, name FROM t ORDER BY id")
    c.read_result()
    c.command(b"\x03SELECT * FROM t WHERE id < 0")
    c.read_result()
    c.command(b"\x03SELECT 1; SELECT 2")
    c.read_result()
    sid = c.prepare("SELECT id, name FROM t WHERE id = ?")
    c.execute_int(sid, 1, True)
    c.execute_int(sid, 2, False)
    c.command(b"\x19" + struct.pack("<I", sid))
    c.quit()


def run_pymysql(port):
    import pymysql  # noqa: E402 (only this scenario needs it)
    conn = pymysql.connect(host="127.0.0.1", port=port, user="mt", password="mtpass",
                           database="mt", autocommit=True)
    with conn.cursor() as cur:
        cur.execute("SELECT id, name, price FROM t ORDER BY id")
        cur.fetchall()
        cur.execute("UPDATE t SET ratio = ratio WHERE id = %s", (1,))
        try:
            cur.execute("SELECT nope FROM t")
        except pymysql.MySQLError:
            pass
    conn.close()


def sysbench(test, events):
    """A sysbench run of one thread through the relay: steady-state traffic
    (prepared statements, result sets of 1 and 100 rows), the mix the
    decoder benchmark weighs apart from the handshake-heavy scenarios."""
    def run(port):
        return ["sysbench", test, "--db-driver=mysql", "--mysql-host=127.0.0.1",
                f"--mysql-port={port}", "--mysql-user=mt", "--mysql-password=mtpass",
                "--mysql-db=sb", "--tables=1", "--table-size=1000", "--threads=1",
                f"--events={events}", "--time=0", "--rand-seed=1", "run"]
    return run


def write_fixture(path, scenario, client, version, records):
    with open(path, "w") as f:
        f.write("# SPDX-License-Identifier: GPL-2.0-only\n")
        f.write("# mysqltrace protocol fixture v1 (format: scripts/record-protocol.py)\n")
        f.write(f"# scenario: {scenario}\n# client: {client}\n# server: {version}\n")
        for t_us, tag, data in records:
            if tag in ("connect", "close"):
                f.write(f"{t_us} {tag}\n")
            else:
                f.write(f"{t_us} {tag} {data.hex()}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "protocol"))
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--keep-tmp", action="store_true")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="mysqltrace-record-")
    server = Server(tmp)
    try:
        with open(INFILE, "w") as f:
            f.write("banana,1.10\ncherry,2.20\n")
        cbin = os.path.join(tmp, "client")
        src = os.path.join(tmp, "client.c")
        with open(src, "w") as f:
            f.write(C_CLIENT)
        cflags = subprocess.run(["pkg-config", "--cflags", "--libs", "libmariadb"],
                                capture_output=True, check=True).stdout.decode().split()
        subprocess.run(["cc", "-O1", "-o", cbin, src, f'-DPLUGIN_DIR="{CLIENT_PLUGIN_DIR}"',
                        f'-DINFILE="{INFILE}"'] + cflags, check=True)
        server.start()
        server.sql(SETUP_SQL)
        version = server.version()
        log(f"mariadbd {version} on port {server.port}")

        cli = ["mariadb", "--no-defaults", "-h127.0.0.1", "-umt", "-pmtpass", "mt"]
        scenarios = {
            "connect_query": ("C libmariadb", lambda p: [cbin, "basic", "127.0.0.1", str(p)]),
            "auth_switch_ed25519": ("C libmariadb",
                                    lambda p: [cbin, "auth_switch", "127.0.0.1", str(p)]),
            "multi_statements": ("C libmariadb", lambda p: [cbin, "multi", "127.0.0.1", str(p)]),
            "prepared": ("C libmariadb", lambda p: [cbin, "prepared", "127.0.0.1", str(p)]),
            "bulk_direct_cursor": ("C libmariadb", lambda p: [cbin, "bulk", "127.0.0.1", str(p)]),
            "local_infile": ("C libmariadb",
                             lambda p: [cbin, "local_infile", "127.0.0.1", str(p)]),
            "change_user": ("C libmariadb", lambda p: [cbin, "change_user", "127.0.0.1", str(p)]),
            "admin_commands": ("C libmariadb", lambda p: [cbin, "admin", "127.0.0.1", str(p)]),
            "compressed_cli": ("mariadb CLI --compress",
                               lambda p: cli + [f"-P{p}", "--compress", "-e",
                                                "SELECT REPEAT('xyz', 500) AS big; "
                                                "SELECT id, name FROM t ORDER BY id"]),
            "compressed_c": ("C libmariadb MYSQL_OPT_COMPRESS",
                             lambda p: [cbin, "compress_c", "127.0.0.1", str(p)]),
            "pymysql": ("python3-pymysql", run_pymysql),
            "deprecate_eof_raw": ("raw client: DEPRECATE_EOF + CACHE_METADATA", run_raw),
            "sysbench_point_select": ("sysbench oltp_point_select, 1 thread",
                                      sysbench("oltp_point_select", 400)),
            "sysbench_read_only": ("sysbench oltp_read_only, 1 thread",
                                   sysbench("oltp_read_only", 4)),
        }
        if any(n.startswith("sysbench") and (not args.only or n in args.only)
               for n in scenarios):
            # The table, straight to the server: only the runs are recorded.
            subprocess.run(sysbench("oltp_read_only", 0)(server.port)[:-1] + ["prepare"],
                           check=True, stdout=subprocess.DEVNULL)
        os.makedirs(args.out, exist_ok=True)
        for name, (client, how) in scenarios.items():
            if args.only and name not in args.only:
                continue
            relay = Relay(server.port)
            result = how(relay.port)
            if isinstance(result, list):
                r = subprocess.run(result, capture_output=True, timeout=RELAY_TIMEOUT_S)
                if r.returncode != 0:
                    raise RuntimeError(f"{name}: client failed: {r.stderr.decode()}")
            records = relay.wait()
            path = os.path.join(args.out, f"{name}.txt")
            write_fixture(path, name, client, version, records)
            log(f"{name}: {len(records)} records -> {os.path.relpath(path, REPO)}")
    finally:
        server.stop()
        if os.path.exists(INFILE):
            os.unlink(INFILE)
        if args.keep_tmp:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
