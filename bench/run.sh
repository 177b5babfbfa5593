#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs the performance report (bench/perf-report.sh): the standard matrix,
# written to docs/PERFORMANCE.md. `--smoke`: one round of a tiny matrix and
# short versions of every section, as CI does (it checks they run, never how
# fast); it does not write the report. Then bench/calls.sh: the cost of
# `mysqltrace calls` per traced call against the uprobe floor; then
# bench/agent-rss.sh: the agent's memory over a long run of mixed load;
# then bench/agent-reload.sh: the agent's reloads under a saturating load.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
if [ "${1:-}" = "--smoke" ]; then
  "$root/bench/perf-report.sh" --build "$build" --smoke
  "$root/bench/calls.sh" --build "$build" --rounds 1 --calls 20000
  "$root/bench/agent-rss.sh" --build "$build" --minutes 0.2 --sample 4
  "$root/bench/agent-reload.sh" --build "$build" --seconds 6 --every 2
else
  "$root/bench/perf-report.sh" --build "$build" --matrix standard
  "$root/bench/calls.sh" --build "$build" --rounds 3
  "$root/bench/agent-rss.sh" --build "$build" --minutes 10 --mysql
  "$root/bench/agent-reload.sh" --build "$build" --seconds 60 --every 5
fi
