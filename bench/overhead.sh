#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What tracing costs the traced: sysbench oltp_point_select QPS against a
# throwaway MariaDB, side by side in interleaved rounds:
#   baseline      no tracer, performance_schema OFF
#   client        `mysqltrace client` attached to sysbench (all its connections)
#   client-summary  the same with --summary-only (one line per command)
#   shim-idle     sysbench with libmysqltrace-shim.so preloaded, no tracer
#   run           `mysqltrace run -- sysbench` (the shim's USDT probes)
#   run-no-api    the same with --no-api (socket probes only)
#   server        `mysqltrace server` attached to mariadbd (every command)
#   pfs           a second server with performance_schema ON, every
#                 instrument and consumer enabled (the reference cost)
# Prints a markdown table of median QPS (min-max) and ratio to the baseline
# of the same run. Never asserts on speed.
#   bench/overhead.sh [--rounds N] [--seconds S] [--threads T] [--build DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=3 seconds=8 threads=2 build="$root/build"
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "overhead: unknown argument $1" >&2; exit 2 ;;
  esac
done
mt="$build/userspace/mysqltrace"
shim="$build/shim/libmysqltrace-shim.so"
sandbox="$root/scripts/mariadb-sandbox.sh"
[ -x "$mt" ] || { echo "overhead: build first ($mt missing)" >&2; exit 1; }

work=$(mktemp -d /tmp/mysqltrace-bench-XXXXXX)
tracer=""
cleanup() {
  [ -n "$tracer" ] && kill "$tracer" 2>/dev/null || true
  "$sandbox" stop "$work/plain" >/dev/null 2>&1 || true
  "$sandbox" stop "$work/pfs" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

start_server() {  # name [--performance-schema]
  local dir="$work/$1"; shift
  "$sandbox" start "$dir" "$@" >/dev/null
  # shellcheck disable=SC1091
  (source "$dir/env" && mariadb --no-defaults -S "$MT_SOCKET" -u"$MT_USER" -p"$MT_PASSWORD" \
     -e "CREATE DATABASE sbtest" && sysbench_cmd "$dir" prepare >/dev/null)
}
sysbench_args() {  # dir: fills the array sb with the sysbench command line
  # shellcheck disable=SC1091
  source "$1/env"
  sb=(sysbench oltp_point_select --db-driver=mysql --mysql-socket="$MT_SOCKET"
      --mysql-user="$MT_USER" --mysql-password="$MT_PASSWORD" --mysql-db=sbtest
      --tables=1 --table-size=10000)
}
sysbench_cmd() {  # dir args...
  local dir=$1; shift
  sysbench_args "$dir"
  "${sb[@]}" "$@"
}
qps_of() { sed -n 's/^ *queries: *[0-9]* *(\([0-9.]*\) per sec.)/\1/p' "$1"; }
wait_ready() {  # stderr-file
  for _ in $(seq 200); do
    grep -q "Ctrl-C to stop" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "overhead: tracer did not start:" >&2; cat "$1" >&2; return 1
}
drops_of() { sed -n 's/.* \([0-9]*\) records dropped.*/\1/p' "$1" | tail -1; }

run_one() {  # config round
  local cfg=$1 out="$work/$1.$2.out" err="$work/$1.$2.err"
  local args=(--threads="$threads" --time="$seconds" run)
  case "$cfg" in
    baseline) sysbench_cmd "$work/plain" "${args[@]}" >"$out" ;;
    pfs) sysbench_cmd "$work/pfs" "${args[@]}" >"$out" ;;
    server)
      "$mt" server --pid "$(source "$work/plain/env"; echo "$MT_PID")" --output /dev/null 2>"$err" &
      tracer=$!
      wait_ready "$err"
      sysbench_cmd "$work/plain" "${args[@]}" >"$out"
      kill -INT "$tracer"; wait "$tracer"; tracer="" ;;
    shim-idle) LD_PRELOAD="$shim" sysbench_cmd "$work/plain" "${args[@]}" >"$out" ;;
    run|run-no-api)
      local extra=()
      [ "$cfg" = run-no-api ] && extra=(--no-api)
      sysbench_args "$work/plain"
      "$mt" run "${extra[@]}" --output /dev/null -- "${sb[@]}" "${args[@]}" >"$out" 2>"$err" ;;
    client|client-summary)
      local extra=()
      [ "$cfg" = client-summary ] && extra=(--summary-only)
      # sysbench waits at a gate until the tracer is attached to its pid.
      mkfifo "$work/gate"
      sysbench_args "$work/plain"
      (read -r _ <"$work/gate"; exec "${sb[@]}" "${args[@]}") >"$out" &
      local sbpid=$!
      "$mt" client --pid "$sbpid" "${extra[@]}" --output /dev/null 2>"$err" &
      tracer=$!
      wait_ready "$err"
      echo go >"$work/gate"
      wait "$sbpid"; rm -f "$work/gate"
      kill -INT "$tracer" 2>/dev/null || true; wait "$tracer" || true; tracer="" ;;
  esac
  echo "$cfg $(qps_of "$out") ${err:+$( [ -f "$err" ] && drops_of "$err")}" >>"$work/results"
}

echo "overhead: starting servers (performance_schema OFF and ON)" >&2
start_server plain
start_server pfs --performance-schema
configs=(baseline shim-idle run run-no-api client client-summary server pfs)
for r in $(seq "$rounds"); do
  for c in "${configs[@]}"; do
    echo "overhead: round $r/$rounds: $c" >&2
    run_one "$c" "$r"
  done
done

/usr/bin/python3 - "$work/results" "$rounds" "$seconds" "$threads" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault(f[0], []).append((float(f[1]), int(f[2]) if len(f) > 2 and f[2] else None))
base = statistics.median(q for q, _ in rows["baseline"])
print(f"sysbench oltp_point_select, {sys.argv[4]} threads, unix socket, {sys.argv[2]} interleaved "
      f"round(s) of {sys.argv[3]} s\n")
threads = int(sys.argv[4])
print("| configuration | median QPS | min-max | vs baseline | cost per command | records dropped |")
print("|---|---|---|---|---|---|")
names = {"baseline": "untraced", "shim-idle": "shim preloaded, no tracer",
         "run": "mysqltrace run -- sysbench", "run-no-api": "mysqltrace run --no-api -- sysbench",
         "client": "mysqltrace client on sysbench",
         "client-summary": "mysqltrace client --summary-only on sysbench",
         "server": "mysqltrace server on mariadbd", "pfs": "performance_schema ON (all)"}
for cfg in ["baseline", "shim-idle", "run", "run-no-api", "client", "client-summary", "server", "pfs"]:
    qs = [q for q, _ in rows[cfg]]
    drops = [d for _, d in rows[cfg] if d is not None]
    med = statistics.median(qs)
    # Extra time per command, on the critical path of each client thread.
    cost = (threads / med - threads / base) * 1e6
    print(f"| {names[cfg]} | {med:.0f} | {min(qs):.0f}-{max(qs):.0f} | {med / base:.3f} | "
          f"{cost:+.1f} us | {sum(drops) if drops else '-'} |")
PY
