#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Does `mysqltrace agent` hold its memory over a long run of mixed load?
# (issue 20: "the agent's RSS flat over a 10-minute run"). A throwaway
# MariaDB (and MySQL 9.7 with --mysql) under the agent (--format
# json,slowlog, sampled stages, files rotated at 4 MiB) while, for the whole
# run:
#   - sysbench oltp_read_write at 2 threads, rate-limited to --rate
#     transactions a second per server, so the machine is not saturated;
#   - every 2 s a burst of statements with a new shape each time (a table
#     name nobody used, an IN list of another length): new statement classes
#     until the per-server cap, then the "other" class;
#   - every 10 s a new connection that sends a few statements and leaves,
#     and every 30 s one that fails to log in.
# The agent's VmRSS and CPU are read every --sample seconds. Prints a
# markdown table (seconds, RSS, CPU), the growth of RSS from the end of the
# first minute to the end, and the agent's totals; never asserts.
#   bench/agent-rss.sh [--minutes M] [--rate TPS] [--sample S] [--mysql] [--build DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench_name=agent-rss
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
minutes=10 rate=200 sample=10 mysql=0 build="${BUILD_DIR:-$bench_root/build}"
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --sample) sample=$2; shift 2 ;;
    --mysql) mysql=1; shift ;;
    --build) build=$2; shift 2 ;;
    *) echo "agent-rss: unknown argument $1" >&2; exit 2 ;;
  esac
done
bench_setup "$build"
seconds=$(python3 -c "print(max(1, int($minutes * 60)))")

servers=(plain)
[ "$mysql" = 0 ] || servers+=(my-plain)
for s in "${servers[@]}"; do
  bench_log "starting $s"
  case $s in
    plain) bench_start_server plain ;;
    my-plain) bench_start_server my-plain --performance-schema=off ;;
  esac
done

"$mt" agent --socket-prefix "$work/" --output-dir "$work/agent" --format json,slowlog \
  --rotate-size 4M --rotate-keep 2 2>"$work/agent.err" &
bench_tracer=$!
for s in "${servers[@]}"; do
  bench_wait_attached "$work/agent.err" "$(bench_server_pid "$work/$s")"
done
bench_log "agent attached to ${servers[*]}; load for $seconds s"

loaders=()
for s in "${servers[@]}"; do
  bench_sysbench "$work/$s" oltp_read_write --threads=2 --rate="$rate" --time="$seconds" \
    run >"$work/sb-$s.out" 2>&1 &
  loaders+=($!)
  (
    # shellcheck disable=SC1091
    source "$work/$s/env"
    sql() { mariadb --no-defaults -S "$MT_SOCKET" -u"$MT_USER" -p"$MT_PASSWORD" sbtest "$@"; }
    end=$((SECONDS + seconds)) i=0
    while [ "$SECONDS" -lt "$end" ]; do
      i=$((i + 1))
      in=$(seq -s, 1 $((i % 200 + 1)))
      sql -e "SELECT COUNT(*) FROM sbtest1 WHERE id IN ($in); SELECT $i AS shape_$i;
              SELECT * FROM missing_table_$i" >/dev/null 2>&1 || true
      if [ $((i % 5)) -eq 0 ]; then
        sql -e "SELECT 1; SELECT k FROM sbtest1 WHERE id = $i; DO SLEEP(0)" >/dev/null
      fi
      if [ $((i % 15)) -eq 0 ]; then
        mariadb --no-defaults -S "$MT_SOCKET" -uno_such_user -pwrong -e "SELECT 1" \
          >/dev/null 2>&1 || true
      fi
      sleep 2
    done
  ) &
  loaders+=($!)
done

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
samples=()
t=0
while [ "$t" -lt "$seconds" ]; do
  sleep "$sample"
  t=$((t + sample))
  kill -0 "$bench_tracer" 2>/dev/null || bench_die "agent exited: $(cat "$work/agent.err")"
  samples+=("$t $(rss_kib "$bench_tracer") $(bench_cpu_ticks "$bench_tracer")")
  bench_log "${samples[-1]}"
done
for p in "${loaders[@]}"; do wait "$p" || true; done
bench_stop_tracer "$work/agent.err"

echo
echo "### agent RSS over $minutes min: ${servers[*]}, oltp_read_write at $rate tx/s per server + new statement shapes"
echo
echo "| seconds | RSS MiB | agent CPU s |"
echo "|---|---|---|"
hz=$(getconf CLK_TCK)
for row in "${samples[@]}"; do
  read -r ts rss ticks <<<"$row"
  printf '| %s | %.1f | %.1f |\n' "$ts" "$(echo "$rss / 1024" | bc -l)" "$(echo "$ticks / $hz" | bc -l)"
done
python3 - "${samples[@]}" <<'PY'
import sys
rows = [list(map(int, r.split())) for r in sys.argv[1:]]
first = next((r for r in rows if r[0] >= 60), rows[0])
last = rows[-1]
mins = max((last[0] - first[0]) / 60, 1e-9)
print()
print("RSS %.1f MiB at %d s, %.1f MiB at %d s: %+.2f MiB a minute after the first minute"
      % (first[1] / 1024, first[0], last[1] / 1024, last[0], (last[1] - first[1]) / 1024 / mins))
PY
echo
grep -E "^mysqltrace: detached" "$work/agent.err" | sed 's/^mysqltrace: /- /' 
