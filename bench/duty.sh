#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What attaching and detaching the log_slow_statement uprobe costs on a
# loaded server, for `mysqltrace server --duty` (docs/PERFORMANCE.md). With
# sysbench oltp_point_select at 2 threads on a throwaway MariaDB (and MySQL
# 9.7 with --mysql), in interleaved rounds:
#   baseline            untraced
#   on                  --duty 100: the probe attached all the time
#   d50-1s              --duty 50, one window per 1 s (2 swaps a second)
#   d50-100ms            --duty 50, one window per 100 ms (20 swaps a second)
#   d10-1s              --duty 10, one window per 1 s
# d50-100ms and d50-1s keep the probe on for the same time: if a swap
# stalled the server, d50-100ms would lose more; the difference divided by
# the swaps a second is what one swap costs. The tracer's own timing of
# every attach and detach call (mean, max) comes from its digest summary.
# Prints a markdown table; never asserts on speed.
#   bench/duty.sh [--rounds N] [--seconds S] [--mysql] [--build DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench_name=duty
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
rounds=2 seconds=5 mysql=0 build="${BUILD_DIR:-$bench_root/build}"
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --mysql) mysql=1; shift ;;
    --build) build=$2; shift 2 ;;
    *) echo "duty: unknown argument $1" >&2; exit 2 ;;
  esac
done
bench_setup "$build"
configs=(baseline on d50-1s d50-100ms d10-1s)

duty_args() {  # config
  case $1 in
    on) echo "--duty 100" ;;
    d50-1s) echo "--duty 50 --duty-period 1" ;;
    d50-100ms) echo "--duty 50 --duty-period 0.1" ;;
    d10-1s) echo "--duty 10 --duty-period 1" ;;
  esac
}

# The longest and the 95th percentile latency of a sysbench run (ms).
lat_max() { sed -n 's/^ *max: *\([0-9.]*\)/\1/p' "$1" | head -1; }
lat_95() { sed -n 's/^ *95th percentile: *\([0-9.]*\)/\1/p' "$1" | head -1; }

# run SERVER CONFIG: "qps p95_ms max_ms attach_mean_us attach_max_us detach_mean_us
# detach_max_us on_fraction"
run() {
  local dir=$1 cfg=$2 out="$work/sb.out" err="$work/tr.err" sum="$work/sum.json"
  if [ "$cfg" = baseline ]; then
    bench_sysbench "$dir" oltp_point_select --threads=2 --time="$seconds" run >"$out"
    echo "$(bench_qps "$out") $(lat_95 "$out") $(lat_max "$out") - - - - -"
    return
  fi
  # The last run's stderr must not pass for this tracer's "Ctrl-C to stop":
  # the shell truncates it only once the tracer's process has started.
  rm -f "$err"
  # shellcheck disable=SC2046
  "$mt" server --pid "$(bench_server_pid "$dir")" --stages off $(duty_args "$cfg") \
    --format digests-json --output "$sum" 2>"$err" &
  bench_tracer=$!
  bench_wait_ready "$err"
  bench_sysbench "$dir" oltp_point_select --threads=2 --time="$seconds" run >"$out"
  bench_stop_tracer "$err"
  python3 - "$sum" "$(bench_qps "$out") $(lat_95 "$out") $(lat_max "$out")" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"digest_summary"' in l][-1]
us = lambda k: "%.0f" % (s[k] / 1000) if k in s else "-"
print(sys.argv[2], us("attach_ns_mean"), us("attach_ns_max"), us("detach_ns_mean"),
      us("detach_ns_max"), "%.4f" % s["on_fraction"])
PY
}

servers=(plain)
[ "$mysql" = 0 ] || servers+=(my-plain)
for s in "${servers[@]}"; do
  bench_log "starting $s"
  case $s in
    plain) bench_start_server plain ;;
    my-plain) bench_start_server my-plain --performance-schema=off ;;
  esac
  bench_sysbench "$work/$s" oltp_point_select --threads=2 --time=1 run >/dev/null
done
for s in "${servers[@]}"; do
  declare -A qps=() rest=()
  for r in $(seq "$rounds"); do
    n=${#configs[@]}
    for i in $(seq 0 $((n - 1))); do
      cfg=${configs[$(((i + r) % n))]}
      read -r q p95 lmax a amax d dmax frac <<<"$(run "$work/$s" "$cfg")"
      qps[$cfg]+="$q "
      rest[$cfg]+="$p95/$lmax ms, $a/$amax/$d/$dmax us, $frac; "
      bench_log "$s round $r $cfg: $q qps, p95/max $p95/$lmax ms (attach/max/detach/max us, on: $a/$amax/$d/$dmax $frac)"
    done
  done
  echo
  echo "### $s: oltp_point_select, 2 threads, $rounds rounds x $seconds s"
  echo
  echo "| configuration | QPS ratio to untraced (per round) | per round: sysbench p95/max latency; attach mean/max, detach mean/max; on-fraction |"
  echo "|---|---|---|"
  read -r -a base <<<"${qps[baseline]}"
  for cfg in "${configs[@]}"; do
    read -r -a q <<<"${qps[$cfg]}"
    ratios=""
    for k in "${!q[@]}"; do
      ratios+=$(python3 -c "print('%.3f' % (${q[$k]} / ${base[$k]}))")" "
    done
    echo "| $cfg $(duty_args "$cfg") | $ratios | ${rest[$cfg]} |"
  done
  unset qps rest
done
