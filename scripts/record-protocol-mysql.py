#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Record Oracle MySQL 9.7 client/server byte streams as protocol fixtures.

The companion of record-protocol.py (MariaDB), with its relay and fixture
format, for Oracle's own client: the `mysql` CLI and a program linked to
libmysqlclient (tests/testprogs/mt_client.c, compiled here against the
chroot's headers and library), run inside a Debian sid chroot that holds
MySQL 9.7 (scripts/mysql-sandbox.sh builds one), against a running 9.7
server that has the sandbox's user mt/mtpass (caching_sha2_password) and
database mt with table t.

Scenarios (tests/data/protocol/mysql97_<name>.txt):
  sha2_rsa     caching_sha2_password full authentication on a plain socket:
               the client asks for the server's RSA key (the server's cache
               is emptied first with FLUSH PRIVILEGES)
  cli_attrs    the mysql CLI, fast authentication, queries with and without
               query attributes (`query_attributes n1 v1 n2 v2`)
  c_api        libmysqlclient: mysql_bind_param attributes, a prepared
               statement, an error
  zstd, zlib   the mysql CLI with --compression-algorithms

Usage: record-protocol-mysql.py --chroot DIR --port P --root-socket PATH
       [--out DIR] [--only NAME ...]
PATH is the server's unix socket as the chroot sees it (root, no password:
used for FLUSH PRIVILEGES).
"""

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location(
    "record_protocol", os.path.join(REPO, "scripts", "record-protocol.py"))
rp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rp)

CLI_SQL = "SELECT id, name FROM t ORDER BY id;\n" \
          "query_attributes n1 v1 n2 v2\n" \
          "SELECT mysql_query_attribute_string('n1') AS a, " \
          "mysql_query_attribute_string('n2') AS b;\n" \
          "SELECT 'no attributes' AS c;\n"
C_API_SCRIPT = "connect\n" \
               "attrs trace_id abc123\n" \
               "query SELECT mysql_query_attribute_string('trace_id')\n" \
               "prepare SELECT id, name FROM t WHERE id > ?\n" \
               "execute 1\n" \
               "close_stmt\n" \
               "query SELECT nope FROM t\n" \
               "quit\n"


def build_client(chroot, tmp):
    """mt_client.c linked to the chroot's libmysqlclient, copied into it."""
    inc = os.path.join(tmp, "inc")
    os.makedirs(inc)
    # Only the chroot's MySQL headers: its libc headers are newer than ours.
    os.symlink(os.path.join(chroot, "usr/include/mysql"), os.path.join(inc, "mysql"))
    inside = os.path.join("/tmp", os.path.basename(tmp) + "-mt_client")
    subprocess.run(["cc", "-O1", "-o", chroot + inside,
                    os.path.join(REPO, "tests/testprogs/mt_client.c"),
                    "-I" + os.path.join(chroot, "usr/include/mysql"), "-I" + inc,
                    "-L" + os.path.join(chroot, "usr/lib/x86_64-linux-gnu"), "-lmysqlclient",
                    "-Wl,--allow-shlib-undefined"], check=True)
    return inside


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chroot", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--root-socket", required=True)
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "protocol"))
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()

    chroot = os.path.abspath(args.chroot)
    root_sql = ["chroot", chroot, "mysql", "--no-defaults", "-uroot", "-S", args.root_socket,
                "-N", "-e"]
    version = subprocess.run(root_sql + ["SELECT VERSION()"], capture_output=True, check=True,
                             text=True).stdout.strip()
    tmp = tempfile.mkdtemp(prefix="mysqltrace-record-")
    client = None
    try:
        client = build_client(chroot, tmp)
        cli = ["chroot", chroot, "mysql", "--no-defaults", "-h127.0.0.1", "-umt", "-pmtpass",
               "--ssl-mode=DISABLED", "--get-server-public-key"]
        c_api = ["chroot", chroot, client, "--host", "127.0.0.1", "--user", "mt", "--password",
                 "mtpass", "--database", "mt", "--ssl-mode", "DISABLED",
                 "--get-server-public-key"]
        big = "SELECT REPEAT('xyz', 500) AS big; SELECT id, name FROM t ORDER BY id"
        scenarios = {
            # name: (client description, argv(port), stdin, before)
            "sha2_rsa": ("mysql CLI, caching_sha2 full auth with RSA key exchange",
                         lambda p: cli + [f"-P{p}", "mt", "-e", "SELECT 1"], None,
                         "FLUSH PRIVILEGES"),
            "cli_attrs": ("mysql CLI --commands, query_attributes",
                          lambda p: cli + [f"-P{p}", "--commands", "mt"], CLI_SQL, None),
            "c_api": ("C libmysqlclient (mt_client.c)",
                      lambda p: c_api + ["--port", str(p)], C_API_SCRIPT, None),
            "zstd": ("mysql CLI --compression-algorithms=zstd",
                     lambda p: cli + [f"-P{p}", "--compression-algorithms=zstd", "mt", "-e",
                                      big], None, None),
            "zlib": ("mysql CLI --compression-algorithms=zlib",
                     lambda p: cli + [f"-P{p}", "--compression-algorithms=zlib", "mt", "-e",
                                      big], None, None),
        }
        os.makedirs(args.out, exist_ok=True)
        for name, (desc, argv, stdin, before) in scenarios.items():
            if args.only and name not in args.only:
                continue
            if before:
                subprocess.run(root_sql + [before], check=True)
            relay = rp.Relay(args.port)
            r = subprocess.run(argv(relay.port), input=(stdin or "").encode(),
                               capture_output=True, timeout=rp.RELAY_TIMEOUT_S)
            if r.returncode != 0:
                raise RuntimeError(f"{name}: client failed: {r.stderr.decode()}")
            records = relay.wait()
            path = os.path.join(args.out, f"mysql97_{name}.txt")
            rp.write_fixture(path, f"mysql97_{name}", desc, version, records)
            rp.log(f"{path}: {len(records)} records")
    finally:
        if client:
            try:
                os.unlink(chroot + client)
            except OSError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
