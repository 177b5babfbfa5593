#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The newcomer's tour: installs dependencies, builds, checks the machine with
# `mysqltrace doctor`, starts a throwaway MariaDB server, and traces it while
# a client runs a small workload (statements, stages, waits, a lock wait and
# its blocker, leave-on digest estimates, OpenTelemetry spans, a call tree,
# client protocol traces); then the same with Oracle MySQL 9.7 from a Debian
# sid chroot (built once, ~20 s), and the agent tracing both servers into
# files of their own, with Prometheus metrics, `mysqltrace top` and a
# configuration reloaded by SIGHUP.
# Everything it starts, it stops.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
mt_need_root "$@"
mt_build

mt="$BUILD_DIR/userspace/mysqltrace"
sandbox="$mt_root/scripts/mariadb-sandbox.sh"
mysql_sandbox="$mt_root/scripts/mysql-sandbox.sh"
work=$(mktemp -d /tmp/mysqltrace-demo-XXXXXX)
tracer=""
cleanup() {
  if [ -n "$tracer" ]; then kill "$tracer" 2>/dev/null || true; fi
  "$sandbox" stop "$work/server" >/dev/null 2>&1 || true
  if [ -d "$work/mysql" ]; then "$mysql_sandbox" stop "$work/mysql" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

banner() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# Starts `mysqltrace "$@"` in the background with stderr in $work/trace.err and
# returns once it reports that its probes are attached.
start_tracer() {
  "$mt" "$@" 2>"$work/trace.err" &
  tracer=$!
  for _ in $(seq 100); do
    grep -q "Ctrl-C to stop" "$work/trace.err" 2>/dev/null && return 0
    kill -0 "$tracer" 2>/dev/null || break
    sleep 0.1
  done
  cat "$work/trace.err" >&2
  return 1
}
# Ends the tracer once the step's clients are done, as a user's Ctrl-C does
# (a fixed --duration could end it before a slow client's statements ran).
finish_tracer() {
  kill -INT "$tracer" 2>/dev/null || true
  wait "$tracer" || true
  tracer=""
  cat "$work/trace.err" >&2
}

client() { mariadb --socket="$MT_SOCKET" -u"$MT_USER" -p"$MT_PASSWORD" "$@"; }

banner "mysqltrace doctor: can this machine trace?"
"$mt" doctor

banner "A throwaway MariaDB server"
eval "$("$sandbox" start "$work/server")"
echo "mariadbd pid $MT_PID, socket $MT_SOCKET, port $MT_PORT"

banner "mysqltrace server --pid $MT_PID: every statement, its outcome and where its time went"
# Default: statements with performance_schema's columns, and sampled stages
# (a CPU timer and the scheduler's switches) summed per statement class at the end.
start_tracer server --pid "$MT_PID"
client -e "CREATE DATABASE demo; CREATE TABLE demo.t (id INT PRIMARY KEY, name VARCHAR(20));
           INSERT INTO demo.t VALUES (1, 'alpha'), (2, 'beta');"
client demo -e "SELECT name FROM t WHERE id = 2; SELECT COUNT(*) FROM t;" >/dev/null
client demo -e "SELECT * FROM missing_table" 2>/dev/null || true
client -e "SELECT SLEEP(0.3)" >/dev/null
finish_tracer

banner "mysqltrace server --stages exact --format profile: SHOW PROFILE, without touching the session"
# Every stage transition (one probe per stage site, found in the binary),
# with per-thread CPU and context switches; --max-statements bounds the window.
start_tracer server --pid "$MT_PID" --stages exact --format profile --max-statements 20
client demo -e "SELECT name FROM t WHERE name LIKE 'b%' ORDER BY id" >/dev/null
finish_tracer

banner "mysqltrace server --waits --table-io --format pfs-sql: waits in their statements, as WL#4878 trace files"
# One connection holds a table lock while another waits for it: the wait
# shows up nested in the waiting statement. --table-io adds a wait for each
# row read or written through the storage engine. One trace file per server
# thread; merged and loaded into ordinary tables, the usual
# performance_schema queries run on them.
start_tracer server --pid "$MT_PID" --waits --table-io --format pfs-sql --output "$work/pfs"
client demo -e "LOCK TABLES t WRITE; SELECT SLEEP(0.5); UNLOCK TABLES" >/dev/null &
locker=$!
sleep 0.2
client demo -e "SELECT COUNT(*) FROM t" >/dev/null
wait "$locker"
finish_tracer
ls "$work/pfs"
"$mt" merge "$work/pfs"/thread.* --output "$work/trace.sql"
client -e "CREATE DATABASE pfs_trace"
client pfs_trace <"$mt_root/share/schema.sql"
client pfs_trace <"$work/trace.sql"
client pfs_trace -t -e "SELECT s.SQL_TEXT, w.EVENT_NAME, ROUND(w.TIMER_WAIT / 1e9, 1) AS wait_ms
  FROM events_waits_current w
  JOIN events_statements_current s ON s.THREAD_ID = w.THREAD_ID AND s.EVENT_ID = w.NESTING_EVENT_ID
  WHERE w.TIMER_END IS NOT NULL AND s.TIMER_END IS NOT NULL AND w.EVENT_NAME LIKE 'wait/synch/%'
  ORDER BY w.TIMER_WAIT DESC"

banner "mysqltrace server --locks: who blocks whom, with performance_schema off"
# One connection updates a row in an open transaction; another's UPDATE of
# the same row waits until the first commits. The wait comes out with the
# waiting statement and names its blocker, and a blocking tree ends the trace.
start_tracer server --pid "$MT_PID" --stages off --locks
client demo -e "BEGIN; UPDATE t SET name = 'gamma' WHERE id = 1; SELECT SLEEP(0.6); COMMIT" \
  >/dev/null &
holder=$!
sleep 0.2
client demo -e "UPDATE t SET name = 'delta' WHERE id = 1"
wait "$holder"
finish_tracer

banner "mysqltrace server --duty 20 --format digests: statement statistics to leave on"
# The statement probe is in 20% of the time, in windows at random phases;
# each class's count is its share of the statements seen, scaled by the
# exact number of query ids the server took (its own counter), with a 95%
# bound: estimates that say how good they are.
start_tracer server --pid "$MT_PID" --duty 20 --duty-period 0.5 --format digests
/usr/bin/python3 - "$MT_SOCKET" "$MT_USER" "$MT_PASSWORD" <<'PY'
import sys
import time
import pymysql
sock, user, password = sys.argv[1:4]
conn = pymysql.connect(unix_socket=sock, user=user, password=password, database="demo",
                       autocommit=True)
end = time.monotonic() + 3
i = 0
with conn.cursor() as cur:
    while time.monotonic() < end:
        cur.execute("SELECT name FROM t WHERE id = %s", (i % 2 + 1,))
        cur.fetchall()
        if i % 4 == 0:
            cur.execute("SELECT COUNT(*) FROM t")
            cur.fetchall()
        i += 1
print(f"the client ran {i} + {(i + 3) // 4} statements")
PY
finish_tracer

banner "mysqltrace server --format otlp: OpenTelemetry spans, joined to the application's trace"
# One SERVER span per statement with the database semantic conventions'
# attributes; a sqlcommenter traceparent puts it in the caller's trace
# (--otlp URL posts the same batches to a collector).
start_tracer server --pid "$MT_PID" --format otlp --output "$work/spans.json"
client --comments demo -e "SELECT name FROM t WHERE id = 1 /*traceparent='00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'*/" >/dev/null
finish_tracer
jq -c '.resourceSpans[].scopeSpans[].spans[] | select(.name | startswith("SELECT"))
  | {name, traceId, parentSpanId, kind,
     attributes: [.attributes[] | select(.key | test("^db[.]")) | {(.key): (.value | to_entries[0].value)}] | add}' \
  "$work/spans.json"

banner "mysqltrace run --server-pid $MT_PID --format otlp: a client's span and its statement's server span, one trace"
# The client's CLIENT span per command, and the server's SERVER span of the
# statement it ran as its child (same connection id, overlapping times), both
# traced by this one process (the server with one probe per statement).
"$mt" run --server-pid "$MT_PID" --format otlp --output "$work/joined.json" -- \
  mariadb --socket="$MT_SOCKET" -u"$MT_USER" -p"$MT_PASSWORD" demo \
  -e "SELECT name FROM t WHERE id = 2" >/dev/null
jq -c '.resourceSpans[].scopeSpans[].spans[]
  | {kind: (if .kind == 2 then "SERVER" else "CLIENT" end), name, traceId, spanId, parentSpanId}' \
  "$work/joined.json"

banner "mysqltrace calls --pid $MT_PID: the server's call tree for one statement"
# Entry and return probes on the functions whose names match, found in the
# binary's symbol tables: a -finstrument-functions trace without a rebuild.
start_tracer calls --pid "$MT_PID" --retval \
  --match 'dispatch_command|mysql_parse|mysql_execute_command|open_tables|JOIN::exec'
client demo -e "SELECT name FROM t WHERE id = 2" >/dev/null
finish_tracer

banner "mysqltrace client --pid: the WL#6226 protocol trace of a running Python client"
mkfifo "$work/go"
/usr/bin/python3 - "$MT_SOCKET" "$MT_USER" "$MT_PASSWORD" "$work/go" <<'PY' &
import sys
import pymysql
sock, user, password, gate = sys.argv[1:5]
open(gate).read()  # connect only once the tracer is attached
conn = pymysql.connect(unix_socket=sock, user=user, password=password, database="demo")
with conn.cursor() as cur:
    cur.execute("SELECT id, name FROM t ORDER BY id")
    cur.fetchall()
    try:
        cur.execute("SELECT * FROM missing_table")
    except pymysql.MySQLError:
        pass
conn.close()
PY
client_pid=$!
start_tracer client --pid "$client_pid"
echo go >"$work/go"
wait "$client_pid"
finish_tracer

banner "mysqltrace run -- mariadb ...: start a client under the shim, traced from CONNECTING"
# The shim's USDT probes see the connection from its first connect(); a
# client linked to libmariadb also shows its C API calls. The command's own
# output and exit status pass through untouched.
"$mt" run -- mariadb --socket="$MT_SOCKET" -u"$MT_USER" -p"$MT_PASSWORD" demo \
  -e "SELECT name FROM t WHERE id = 1"
sb=(sysbench oltp_point_select --db-driver=mysql --mysql-socket="$MT_SOCKET"
    --mysql-user="$MT_USER" --mysql-password="$MT_PASSWORD" --mysql-db=demo
    --tables=1 --table-size=100 --threads=1)
"${sb[@]}" prepare >/dev/null
banner "mysqltrace run -- sysbench: a libmariadb client's C API calls next to its commands"
"$mt" run --output "$work/run.trace" -- "${sb[@]}" --events=3 run >/dev/null
grep -E " (api|summary): " "$work/run.trace"

banner "Oracle MySQL 9.7 next to it: a throwaway mysqld from a Debian sid chroot"
# Built once with mmdebstrap and cached; the server is started from the host
# (its pid is a host pid) in a private mount namespace, so nothing stays
# mounted. Its variables get an MY_ prefix, next to MariaDB's MT_ ones.
"$mysql_sandbox" chroot >/dev/null
# performance_schema is ON in 9.7; its long statement history too here, as
# the oracle the server step compares with.
eval "$("$mysql_sandbox" start "$work/mysql" -- \
  --performance-schema-consumer-events-statements-history-long=ON | sed 's/^MT_/MY_/')"
echo "mysqld pid $MY_PID ($(readlink "/proc/$MY_PID/exe")), socket $MY_SOCKET, port $MY_PORT"
mysql_client() { "$mysql_sandbox" client "$work/mysql" "$@" 2>/dev/null; }
mysql_client -e "CREATE DATABASE demo; CREATE TABLE demo.t (id INT PRIMARY KEY, name VARCHAR(20));
                 INSERT INTO demo.t VALUES (1, 'alpha'), (2, 'beta');"

banner "mysqltrace client --pid: Oracle's own mysql CLI, from its first connect"
# The CLI waits at a gate until the tracer is attached; each exec on the way
# into the chroot keeps its pid. It speaks caching_sha2_password and sends
# query attributes with every statement.
mkfifo "$work/mysql-go"
sh -c 'read -r _ <"$1"; shift; exec "$@"' sh "$work/mysql-go" \
  "$mysql_sandbox" client "$work/mysql" demo \
  -e "SELECT id, name FROM t ORDER BY id; SELECT * FROM missing_table" >/dev/null 2>&1 &
client_pid=$!
start_tracer client --pid "$client_pid"
echo go >"$work/mysql-go"
wait "$client_pid" || true
finish_tracer

banner "mysqltrace doctor --pid $MY_PID: what this build of mysqld supports"
"$mt" doctor --pid "$MY_PID" || true

banner "mysqltrace server --pid $MY_PID: MySQL 9.7's statements, checked by its own performance_schema"
# The password never reaches the trace: every output redacts it.
mysql_client -e "TRUNCATE TABLE performance_schema.events_statements_history_long"
start_tracer server --pid "$MY_PID"
mysql_client demo -e "SELECT name FROM t WHERE id = 2; SELECT COUNT(*) FROM t" >/dev/null
mysql_client demo -e "SELECT * FROM missing_table" || true
mysql_client -e "CREATE USER demo_user IDENTIFIED BY 'demo-secret-pw'"
finish_tracer
mysql_client -t -e "SELECT SQL_TEXT, MYSQL_ERRNO, ROWS_SENT, ROWS_EXAMINED
  FROM performance_schema.events_statements_history_long
  WHERE SQL_TEXT LIKE 'SELECT%FROM%' ORDER BY TIMER_START"

banner "mysqltrace server --stages exact --format profile: SHOW PROFILE for MySQL 9.7, from outside"
start_tracer server --pid "$MY_PID" --stages exact --format profile
mysql_client demo -e "SELECT name FROM t WHERE id > 0 ORDER BY name" >/dev/null
finish_tracer
banner "mysqltrace agent: every server of the host, each traced into files of its own"
# It finds servers in /proc as they start (--socket-prefix keeps it to this
# demo's two), labels each (flavour, version, port, socket, cgroup, unit,
# container) and traces it as `server` does; a server that exits is detached.
# metrics_listen serves Prometheus metrics (the package's agent.conf:
# 127.0.0.1:9715), and `mysqltrace top` reads its control socket.
cat >"$work/agent.conf" <<CONF
[agent]
output_dir = $work/agent
socket_prefix = $work/
rescan_ms = 500
formats = json
metrics_listen = 127.0.0.1:0
control_socket = $work/agent.sock
CONF
start_tracer agent --config "$work/agent.conf"
for _ in $(seq 100); do
  [ "$(grep -c "attached pid=" "$work/trace.err")" -ge 2 ] && break
  sleep 0.1
done
for i in 1 2 3; do client demo -e "SELECT name FROM t WHERE id = $i" >/dev/null; done
mysql_client demo -e "SELECT COUNT(*) FROM t" >/dev/null
# SIGHUP (systemctl reload mysqltrace): a section gives MySQL the slow log
# too. Its new probes go in before the old come out: no statement is lost or
# written twice, and statements.json goes on in the same file.
printf '\n[server flavour=mysql]\nformats = json, slowlog\n' >>"$work/agent.conf"
kill -HUP "$tracer"
for _ in $(seq 100); do
  grep -q "detached pid=$MY_PID (settings changed)" "$work/trace.err" && break
  sleep 0.1
done
mysql_client demo -e "SELECT name FROM t WHERE id = 1; SELECT MAX(id) FROM t" >/dev/null
sleep 0.5
metrics=$(sed -n 's|^mysqltrace: metrics at \(http://[^ ]*\)$|\1|p' "$work/trace.err")
echo "\$ curl -s $metrics | grep '^mysqltrace_statements_total.*sql/select'"
curl -s "$metrics" | grep '^mysqltrace_statements_total.*sql/select' || true
echo "\$ mysqltrace top --batch (the live screen's table, as top -b prints it)"
"$mt" top --control-socket "$work/agent.sock" --batch --duration 1.5 --sort calls 2>/dev/null |
  head -8 || true
finish_tracer
(cd "$work/agent" && find . -type f | sort)
cat "$work/agent"/*mysql-*/slow.log

"$mysql_sandbox" stop "$work/mysql"

banner "Done"
echo "Try it on your own server: sudo $mt server --pid \$(pidof mariadbd)"
echo "a MySQL 9.7 of your own:     sudo $mysql_sandbox start DIR (then: client DIR, stop DIR)"
echo "or on a client:              sudo $mt client --pid <pid of a program talking to MySQL>"
echo "or start one under the shim: sudo $mt run -- <your client> [args]"
echo "or follow a program's calls: sudo $mt calls --pid <pid> --match 'glob|glob'"
echo "or every server of the host: sudo $mt agent --output-dir /var/log/mysqltrace"
