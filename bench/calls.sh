#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What `mysqltrace calls` costs per traced call (entry + return), against the
# uprobe floor measured on the same machine in the same run. A small program
# (bench/calls_target.c) times N calls of one function, in interleaved rounds:
#   untraced      no probes
#   floor         `mysqltrace calls --traps-only`: the same entry + return
#                 probes, programs that return at once (the trap floor)
#   text, json    `mysqltrace calls` writing text / JSON lines to /dev/null
#   syscall       a plain getppid() syscall, for scale
# for a function whose first instruction the kernel emulates (cheap) and one
# it single-steps (costly). Prints median ns per call (min-max), the extra
# over untraced and the ratio of that extra to the floor's. Never asserts.
#   bench/calls.sh [--rounds N] [--calls N] [--build DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=3 calls=200000 build="$root/build"
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "calls: unknown argument $1" >&2; exit 2 ;;
  esac
done
mt="$build/userspace/mysqltrace"
target="$build/bench/calls_target"
for f in "$mt" "$target"; do
  [ -x "$f" ] || { echo "calls: build first ($f missing)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "calls: run as root (uprobes)" >&2; exit 1; }

work=$(mktemp -d /tmp/mysqltrace-calls-bench-XXXXXX)
tracer=""
cleanup() {
  [ -n "$tracer" ] && kill "$tracer" 2>/dev/null || true
  [ -n "${TGT_PID:-}" ] && kill "$TGT_PID" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

coproc TGT { exec "$target"; }
read -r ready _ <&"${TGT[0]}"
[ "$ready" = ready ] || { echo "calls: target did not start" >&2; exit 1; }
pid=$TGT_PID

measure() {  # what n -> ns per call
  echo "$1 $2" >&"${TGT[1]}"
  local line
  read -r line <&"${TGT[0]}"
  echo "${line#ns }"
}
start_tracer() {  # function, extra args...
  local fn=$1; shift
  rm -f "$work/err"  # the last tracer's "Ctrl-C to stop" must not pass for this one's
  "$mt" calls --pid "$pid" --match "$fn" --output /dev/null "$@" 2>"$work/err" &
  tracer=$!
  for _ in $(seq 400); do
    grep -q "Ctrl-C to stop" "$work/err" 2>/dev/null && return 0
    kill -0 "$tracer" 2>/dev/null || break
    sleep 0.05
  done
  echo "calls: tracer did not start:" >&2; cat "$work/err" >&2; exit 1
}
stop_tracer() {  # sets `dropped`
  kill -INT "$tracer"
  wait "$tracer" || { echo "calls: tracer failed:" >&2; cat "$work/err" >&2; exit 1; }
  tracer=""
  dropped=$(sed -n 's/.* \([0-9]*\) records dropped.*/\1/p' "$work/err" | tail -1)
}

declare -A samples drops
record() { samples[$1]="${samples[$1]:-} $2"; }

configs="untraced floor text json"
for r in $(seq "$rounds"); do
  record syscall "$(measure syscall "$calls")"
  for fn in cheap costly; do
    n=$calls
    [ "$fn" = costly ] && n=$((calls / 20))  # ~25 us each
    for cfg in $configs; do
      case "$cfg" in
        untraced) record "$fn/$cfg" "$(measure "$fn" "$n")"; continue ;;
        floor) start_tracer "cb_$fn" --traps-only ;;
        text) start_tracer "cb_$fn" ;;
        json) start_tracer "cb_$fn" --format json ;;
      esac
      measure "$fn" 1000 >/dev/null  # first hits map the kernel's trampoline page
      record "$fn/$cfg" "$(measure "$fn" "$n")"
      stop_tracer
      drops[$fn/$cfg]=$(( ${drops[$fn/$cfg]:-0} + ${dropped:-0} ))
    done
  done
  echo "round $r done" >&2
done

stats() {  # values -> "median min max"
  tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g |
    awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%s %s %s", m, v[1], v[NR]}'
}

echo "## mysqltrace calls: cost per traced call (entry + return)"
echo
echo "$rounds rounds, $calls calls per measurement (costly: $((calls / 20))), $(nproc) CPUs, $(uname -r)"
echo
read -r sys_med _ _ <<<"$(stats "${samples[syscall]}")"
printf '| %-16s | %16s | %14s | %13s | %7s |\n' "function / config" "ns per call" "extra vs untraced" "extra / floor's" "dropped"
printf '|%s|%s|%s|%s|%s|\n' "------------------" "------------------" "------------------" "---------------" "---------"
for fn in cheap costly; do
  read -r base _ _ <<<"$(stats "${samples[$fn/untraced]}")"
  read -r floor _ _ <<<"$(stats "${samples[$fn/floor]}")"
  floor_extra=$(awk -v a="$floor" -v b="$base" 'BEGIN {print a - b}')
  for cfg in $configs; do
    read -r med lo hi <<<"$(stats "${samples[$fn/$cfg]}")"
    extra=$(awk -v a="$med" -v b="$base" 'BEGIN {printf "%.0f", a - b}')
    ratio=$(awk -v a="$med" -v b="$base" -v f="$floor_extra" 'BEGIN {if (f > 0) printf "%.2fx", (a - b) / f; else print "-"}')
    [ "$cfg" = untraced ] && { extra="-"; ratio="-"; }
    printf '| %-16s | %7.0f (%.0f-%.0f) | %17s | %15s | %7s |\n' "cb_$fn $cfg" "$med" "$lo" "$hi" \
      "$extra" "$ratio" "${drops[$fn/$cfg]:--}"
  done
done
printf '| %-16s | %7.0f | %17s | %15s | %7s |\n' "getppid syscall" "$sys_med" "-" "-" "-"
