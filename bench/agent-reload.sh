#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Does a reload of `mysqltrace agent` lose or double statements of a busy
# server? A throwaway MariaDB under sysbench oltp_point_select (saturating at
# the default 2 threads), the agent run from a configuration file whose
# formats switch between json and json,slowlog every --every seconds, each
# switch followed by SIGHUP: the server is attached again each time (new
# probes in, then the old out). Prints each switch's time (from the agent's
# "attaching again" line to its "detached" line), then sysbench's query
# count against the sum of the agent's statement totals, and the records
# dropped; never asserts (tests/priv/agent_test.cpp checks each statement
# is written once).
#   bench/agent-reload.sh [--seconds S] [--every S] [--threads N] [--build DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench_name=agent-reload
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
seconds=20 every=4 threads=2 build="${BUILD_DIR:-$bench_root/build}"
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "agent-reload: unknown argument $1" >&2; exit 2 ;;
  esac
done
bench_setup "$build"

bench_log "starting plain"
bench_start_server plain
pid=$(bench_server_pid "$work/plain")
conf="$work/agent.conf"
# Files bounded (two of 64 MiB kept): the totals, not the files, are counted.
config() {  # formats
  cat >"$conf.new" <<CONF
[agent]
output_dir = $work/agent
socket_prefix = $work/
rescan_ms = 200
formats = $1
rotate_size = 64M
rotate_keep = 2
CONF
  mv "$conf.new" "$conf"
}
config json
# Each line of the agent's stderr with the time it came, in seconds.
"$mt" agent --config "$conf" --control-socket "" \
  2> >(while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done \
    >"$work/agent.err") &
bench_tracer=$!
bench_wait_attached "$work/agent.err" "$pid"
bench_log "agent attached; oltp_point_select at $threads threads for $seconds s, a reload every $every s"

bench_sysbench "$work/plain" oltp_point_select --threads="$threads" --time="$seconds" \
  run >"$work/sb.out" 2>&1 &
loader=$!
reloads=0 formats=json
for ((t = every; t < seconds; t += every)); do
  sleep "$every"
  if [ "$formats" = json ]; then formats=json,slowlog; else formats=json; fi
  config "$formats"
  kill -HUP "$bench_tracer"
  reloads=$((reloads + 1))
done
wait "$loader" || bench_die "sysbench failed: $(tail -5 "$work/sb.out")"
bench_stop_tracer "$work/agent.err"
# The timestamping loop writes the agent's last lines after it has exited.
for _ in $(seq 100); do
  grep -q "agent stopped" "$work/agent.err" && break
  sleep 0.05
done

echo
echo "### agent reloads under load: oltp_point_select, $threads threads, $seconds s, a reload every $every s"
echo
python3 - "$work/agent.err" "$(bench_queries "$work/sb.out")" "$(bench_qps "$work/sb.out")" \
  "$reloads" <<'PY'
import re
import sys

lines = [l.rstrip("\n").split(" ", 1) for l in open(sys.argv[1])]
queries, qps, reloads = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
switches, started = [], None
totals = drops = 0
for ts, text in lines:
    if ": attaching again" in text:
        started = float(ts)
    m = re.search(r"detached pid=\d+ \(([^)]*)\): (\d+) statements.*?(\d+) records dropped", text)
    if m:
        totals += int(m.group(2))
        drops += int(m.group(3))
        if m.group(1) == "settings changed" and started is not None:
            switches.append(float(ts) - started)
            started = None
print("| reload | switch ms |")
print("|---|---|")
for i, s in enumerate(switches, 1):
    print("| %d | %.0f |" % (i, s * 1000))
print()
print("%d reloads sent, %d switches logged; sysbench: %d queries (%.0f/s); the agent's"
      " totals: %d statements (%+d), %d records dropped"
      % (reloads, len(switches), queries, qps, totals, totals - queries, drops))
PY
