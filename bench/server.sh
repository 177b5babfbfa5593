#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What tracing a busy MariaDB server costs it: sysbench QPS against
# throwaway servers, side by side in interleaved rounds, with statements
# only, sampled stages, exact stages, the bare stage traps, waits, and
# performance_schema with statement+stage or all instruments. The server
# side of bench/perf-report.sh's matrix (configurations: bench/lib.sh);
# prints its tables and the goals they decide, never writes
# docs/PERFORMANCE.md.
#   bench/server.sh [--rounds N] [--seconds S] [--threads "T ..."] [--build DIR]
#                   [--workloads "oltp_point_select oltp_read_only"]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
args=() threads=2 workloads="oltp_point_select oltp_read_only"
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds | --seconds | --build) args+=("$1" "$2"); shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    *) echo "server: unknown argument $1" >&2; exit 2 ;;
  esac
done
exec "$here/perf-report.sh" --no-write --sections matrix --workloads "$workloads" \
  --threads "$threads" \
  --configs "baseline statements duty sampled waits exact traps pfs-stages pfs" "${args[@]}"
