#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What tracing a busy MariaDB server costs it: sysbench QPS over the unix
# socket (1 table x 10000 rows) against throwaway servers, side by side in
# interleaved rounds, for each workload (oltp_point_select, oltp_read_only):
#   baseline    no tracer, performance_schema OFF (server "plain")
#   statements  `mysqltrace server --stages off` on the plain server
#   sampled     `mysqltrace server --stages sampled` (the default mode)
#   exact       `mysqltrace server --stages exact`
#   waits       `mysqltrace server --waits` (sampled stages + waits: full tracing)
#   traps       `mysqltrace server --stages traps`: exact's probes attached
#               to programs that return at once (the floor exact is judged
#               against)
#   pfs-stages  a second server, performance_schema ON with only statement
#               and stage instruments and consumers enabled
#   pfs-all     a third server, performance_schema ON, everything enabled
# Prints, per workload, a markdown table of median QPS (min-max), ratio to
# the baseline of the same run and records the tracer dropped, then the cost
# goals evaluated from the medians of that run, each "met" or "not met".
# Never asserts on speed: the exit status says only whether it ran.
#   bench/server.sh [--rounds N] [--seconds S] [--threads T] [--build DIR]
#                   [--workloads "oltp_point_select oltp_read_only"]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=3 seconds=8 threads=2 build="$root/build"
workloads="oltp_point_select oltp_read_only"
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    *) echo "server: unknown argument $1" >&2; exit 2 ;;
  esac
done
mt="$build/userspace/mysqltrace"
sandbox="$root/scripts/mariadb-sandbox.sh"
[ -x "$mt" ] || { echo "server: build first ($mt missing)" >&2; exit 1; }
read -r -a workload_list <<<"$workloads"
[ "${#workload_list[@]}" -gt 0 ] || { echo "server: no workloads" >&2; exit 2; }

work=$(mktemp -d /tmp/mysqltrace-bench-XXXXXX)
tracer=""
cleanup() {
  if [ -n "$tracer" ]; then
    kill "$tracer" 2>/dev/null || true
    wait "$tracer" 2>/dev/null || true
  fi
  "$sandbox" stop "$work/plain" >/dev/null 2>&1 || true
  "$sandbox" stop "$work/pfs-stages" >/dev/null 2>&1 || true
  "$sandbox" stop "$work/pfs-all" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

sql() {  # dir statements
  # shellcheck disable=SC1091
  (source "$1/env" && mariadb --no-defaults -S "$MT_SOCKET" -u"$MT_USER" -p"$MT_PASSWORD" \
     --batch --skip-column-names -e "$2")
}
start_server() {  # name [--performance-schema]
  local dir="$work/$1"; shift
  "$sandbox" start "$dir" "$@" >/dev/null
  sql "$dir" "CREATE DATABASE sbtest"
  # Every oltp_* workload shares oltp_common's sbtest1 table.
  sysbench_cmd "$dir" oltp_point_select prepare >/dev/null
}
# performance_schema as it would be run to see statements and where their
# time goes: statement and stage instruments (timed), their current and
# history consumers and the digests; everything else off.
limit_pfs_to_stages() {  # dir
  sql "$1" "UPDATE performance_schema.setup_instruments SET ENABLED = 'NO', TIMED = 'NO';
    UPDATE performance_schema.setup_instruments SET ENABLED = 'YES', TIMED = 'YES'
      WHERE NAME LIKE 'statement/%' OR NAME LIKE 'stage/%';
    UPDATE performance_schema.setup_consumers SET ENABLED = IF(NAME IN
      ('global_instrumentation', 'thread_instrumentation', 'events_statements_current',
       'events_statements_history', 'events_stages_current', 'events_stages_history',
       'statements_digest'), 'YES', 'NO');"
  local consumers
  consumers=$(sql "$1" "SELECT COUNT(*) FROM performance_schema.setup_consumers WHERE ENABLED = 'YES'")
  [ "$consumers" = 7 ] || { echo "server: performance_schema setup failed ($consumers consumers on)" >&2; exit 1; }
}
sysbench_cmd() {  # dir workload args...
  local dir=$1 workload=$2; shift 2
  # shellcheck disable=SC1091
  source "$dir/env"
  sysbench "$workload" --db-driver=mysql --mysql-socket="$MT_SOCKET" \
    --mysql-user="$MT_USER" --mysql-password="$MT_PASSWORD" --mysql-db=sbtest \
    --tables=1 --table-size=10000 "$@"
}
# shellcheck disable=SC1091
server_pid() { (source "$1/env"; echo "$MT_PID"); }
qps_of() { sed -n 's/^ *queries: *[0-9]* *(\([0-9.]*\) per sec.)/\1/p' "$1"; }
wait_ready() {  # stderr-file: exact attaches a few hundred probes, allow 30 s
  for _ in $(seq 600); do
    grep -q "Ctrl-C to stop" "$1" 2>/dev/null && return 0
    kill -0 "$tracer" 2>/dev/null || break
    sleep 0.05
  done
  echo "server: tracer did not start:" >&2; cat "$1" >&2; return 1
}
stop_tracer() {  # stderr-file
  local rc=0
  kill -INT "$tracer" 2>/dev/null || true
  wait "$tracer" || rc=$?
  tracer=""
  [ "$rc" -eq 0 ] && return 0
  echo "server: tracer exited with status $rc:" >&2; cat "$1" >&2; return 1
}
drops_of() { sed -n 's/.* \([0-9]*\) records dropped.*/\1/p' "$1" | tail -1; }

run_one() {  # workload config round
  local workload=$1 cfg=$2 out="$work/$1.$2.$3.out" err="$work/$1.$2.$3.err"
  local args=(--threads="$threads" --time="$seconds" run)
  case "$cfg" in
    baseline) sysbench_cmd "$work/plain" "$workload" "${args[@]}" >"$out" ;;
    pfs-stages|pfs-all) sysbench_cmd "$work/$cfg" "$workload" "${args[@]}" >"$out" ;;
    statements|sampled|exact|traps|waits)
      local mode=$cfg extra=()
      [ "$cfg" = statements ] && mode=off
      [ "$cfg" = waits ] && mode=sampled && extra=(--waits)
      "$mt" server --pid "$(server_pid "$work/plain")" --stages "$mode" "${extra[@]}" \
        --output /dev/null 2>"$err" &
      tracer=$!
      wait_ready "$err"
      sysbench_cmd "$work/plain" "$workload" "${args[@]}" >"$out"
      stop_tracer "$err" ;;
  esac
  local drops="" qps
  [ -f "$err" ] && drops=$(drops_of "$err")
  qps=$(qps_of "$out")
  [ -n "$qps" ] || { echo "server: no QPS in sysbench output:" >&2; cat "$out" >&2; exit 1; }
  echo "$workload $cfg $qps $drops" >>"$work/results"
}

echo "server: starting servers (performance_schema OFF, statements+stages, all)" >&2
start_server plain
start_server pfs-stages --performance-schema
limit_pfs_to_stages "$work/pfs-stages"
start_server pfs-all --performance-schema
configs=(baseline statements sampled waits exact traps pfs-stages pfs-all)
for r in $(seq "$rounds"); do
  for w in "${workload_list[@]}"; do
    for c in "${configs[@]}"; do
      echo "server: round $r/$rounds: $w: $c" >&2
      run_one "$w" "$c" "$r"
    done
  done
done

/usr/bin/python3 - "$work/results" "$rounds" "$seconds" "$threads" "${workload_list[@]}" <<'PY'
import os, statistics, sys
results, rounds, seconds, threads = sys.argv[1:5]
workloads = sys.argv[5:]
rows = {}
for line in open(results):
    f = line.split()
    rows.setdefault((f[0], f[1]), []).append((float(f[2]), int(f[3]) if len(f) > 3 else None))
names = {"baseline": "untraced, performance_schema OFF",
         "statements": "mysqltrace server --stages off",
         "sampled": "mysqltrace server --stages sampled (default)",
         "waits": "mysqltrace server --waits (sampled stages + waits)",
         "exact": "mysqltrace server --stages exact",
         "traps": "mysqltrace server --stages traps (trap floor)",
         "pfs-stages": "performance_schema ON (statements + stages)",
         "pfs-all": "performance_schema ON (all)"}
print(f"mysqltrace server on a busy mariadbd: sysbench, {threads} threads, unix socket, "
      f"1 table x 10000 rows, {rounds} interleaved round(s) of {seconds} s, "
      f"{os.cpu_count()} CPUs")
def met(ok):
    return "met" if ok else "not met"
for w in workloads:
    med = {c: statistics.median(q for q, _ in rows[(w, c)]) for c in names}
    base = med["baseline"]
    print(f"\n{w}\n")
    print("| configuration | median QPS | min-max | vs baseline | records dropped |")
    print("|---|---|---|---|---|")
    dropped = []
    for c, name in names.items():
        qs = [q for q, _ in rows[(w, c)]]
        drops = [d for _, d in rows[(w, c)] if d is not None]
        if sum(drops):
            dropped.append(c)
        print(f"| {name} | {med[c]:.0f} | {min(qs):.0f}-{max(qs):.0f} | {med[c] / base:.3f} | "
              f"{sum(drops) if drops else '-'} |")
    print()
    change = (med["statements"] / base - 1) * 100
    print(f"- statements only: {change:+.1f}% (goal <= 5% loss): {met(change >= -5)}")
    added = (1 - med["sampled"] / med["statements"]) * 100
    print(f"- sampled stages add: {added:.1f}% on top of statements (goal < 2%): {met(added < 2)}")
    floor = med["exact"] / med["traps"]
    print(f"- exact / trap floor: {floor:.2f} (goal >= 0.85): {met(floor >= 0.85)}")
    ours, pfs = med["sampled"] / base, med["pfs-stages"] / base
    if w == "oltp_read_only":
        print(f"- statements+sampled vs pfs-stages: {ours:.2f} vs {pfs:.2f} "
              f"(goal: cheaper than performance_schema statement+stage): {met(ours > pfs)}")
    ours_loss, pfs_loss = 1 - med["waits"] / base, 1 - med["pfs-all"] / base
    if w == "oltp_read_only":
        print(f"- full tracing (+waits) loss vs performance_schema (all) loss: "
              f"{ours_loss * 100:.1f}% vs {pfs_loss * 100:.1f}% "
              f"(goal: < 1/3 of it): {met(ours_loss < pfs_loss / 3)}")
    if dropped:
        print(f"- records dropped in {', '.join(dropped)}: the tracer did less than all the work there")
PY
