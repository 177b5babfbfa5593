#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs every benchmark and prints their tables. `--smoke`: one short round
# of each, as CI does (it checks they run, never how fast).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
if [ "${1:-}" = "--smoke" ]; then
  "$build/bench/decoder_bench" 0.3
  echo
  "$root/bench/overhead.sh" --build "$build" --rounds 1 --seconds 2
  echo
  "$root/bench/server.sh" --build "$build" --rounds 1 --seconds 2 --workloads oltp_point_select
else
  "$build/bench/decoder_bench" 3
  echo
  "$root/bench/overhead.sh" --build "$build" --rounds 3 --seconds 8
  echo
  "$root/bench/server.sh" --build "$build" --rounds 3 --seconds 8
fi
