#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What tracing costs the traced client: sysbench oltp_point_select QPS
# against a throwaway MariaDB, side by side in interleaved rounds, under
# `mysqltrace client`, `mysqltrace run` (and with the shim preloaded but no
# tracer), `mysqltrace server`, and performance_schema fully on. The client
# side of bench/perf-report.sh's matrix (configurations: bench/lib.sh);
# prints its tables and goals, never writes docs/PERFORMANCE.md.
#   bench/overhead.sh [--rounds N] [--seconds S] [--threads "T ..."] [--build DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
args=() threads=2
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds | --seconds | --build) args+=("$1" "$2"); shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "overhead: unknown argument $1" >&2; exit 2 ;;
  esac
done
exec "$here/perf-report.sh" --no-write --sections matrix --workloads oltp_point_select \
  --threads "$threads" \
  --configs "baseline shim-idle run run-no-api client client-summary sampled pfs" "${args[@]}"
