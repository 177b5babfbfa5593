#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The performance report: what mysqltrace costs the programs it traces, side
# by side with performance_schema, and the limits of its pipeline. Prints a
# markdown report on stdout and writes it to docs/PERFORMANCE.md (or
# --output; not with --smoke or --no-write unless --write; a smoke report
# says in its first line that its numbers are not the report's). --keep
# keeps the raw results. Never asserts on speed: the exit status only says
# whether everything ran.
#
#   bench/perf-report.sh [--matrix standard|full|smoke] [--smoke]
#       [--rounds N] [--seconds S] [--workloads "W ..."] [--threads "T ..."]
#       [--configs "C ..."] [--mysql-configs "C ..."] [--sections "S ..."] [--build DIR]
#       [--output FILE] [--no-write] [--write] [--keep]
#
# Matrices (sysbench workload:threads cells, every configuration in each):
#   full      oltp_point_select, oltp_read_only, oltp_read_write x 1, 2, 8
#             threads; 3 rounds x 8 s                              (~100 min)
#   standard  the three at 2 threads, oltp_point_select also at 1 and 8;
#             3 rounds x 5 s (the default)                          (~45 min)
#   smoke     oltp_point_select at 2 threads; 1 round x 2 s; short
#             versions of every other section, cost and probe hits for
#             statements and client only, memory for client only; writes
#             no report unless --write (CI: bench/run.sh --smoke)   (~3 min)
# --workloads/--threads replace the cells by their cross product.
# Configurations: see bench/lib.sh (default: every one but client-summary
# and run-no-api). Sections (default all, in this order): probes pipeline
# decoder matrix mysql cost shim hits memory profile.
#
# The cost section: on oltp_point_select at 2 threads (or the first cell),
# sysbench held at 0.35 of the untraced rate (BENCH_COST_LOAD), each
# configuration run next to an untraced run; the extra CPU a query costs the
# server, sysbench and the tracer (each process's exact CPU time), and the
# share of untraced QPS it would leave where CPU is the limit: what each
# configuration costs, without the +-15 point swings of saturated QPS on a
# small machine.
#
# The shim section: what each call libmysqltrace-shim.so interposes costs
# with no tracer attached (bench/shim_idle_bench, without and with
# LD_PRELOAD), times the interposed calls a query makes in each workload
# (`mysqltrace calls` on the shim's functions in a preloaded sysbench), over
# an untraced query's CPU: the idle shim's loss, exact where saturated QPS
# swings by +-10 points.
#
# The mysql section: the same kind of cells against Oracle MySQL 9.7
# (scripts/mysql-sandbox.sh), oltp_point_select and oltp_read_only at 2
# threads (smoke: point_select only), with --mysql-configs (default
# baseline statements locks sampled exact pfs-stages pfs), each divided by
# MySQL's own untraced baseline. mysqltrace's configurations only run if
# `mysqltrace server` attaches to that mysqld; the report says why not.
#
# In each round, each cell runs every configuration once, in an order
# rotated from round to round; each configuration's QPS is divided by the
# untraced baseline's QPS of the same cell and round, and the report gives
# the median and min-max of those ratios.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench_name=perf-report
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

usage() {
  awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0" >&2
  exit 2
}

matrix="" rounds="" seconds="" workloads="" threads="" configs="" sections="" force_write=0
mysql_configs="baseline statements duty locks sampled exact pfs-stages pfs"
build="${BUILD_DIR:-$bench_root/build}" output="$bench_root/docs/PERFORMANCE.md" write=1
argv_text="bench/perf-report.sh $*"
while [ $# -gt 0 ]; do
  case "$1" in
    --matrix) matrix=$2; shift 2 ;;
    --smoke) matrix=smoke; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --mysql-configs) mysql_configs=$2; shift 2 ;;
    --sections) sections=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --output) output=$2; shift 2 ;;
    --no-write) write=0; shift ;;
    --write) force_write=1; shift ;;
    --keep) bench_keep=1; shift ;;
    -h | --help) usage ;;
    *) echo "perf-report: unknown argument $1" >&2; usage ;;
  esac
done
: "${matrix:=standard}"
# Per matrix: cells, rounds, seconds, and the other sections' sizes:
# pipeline seconds per rate and rates, probe hits x repetitions, decoder
# seconds per case, seconds of the BPF-statistics, memory and profile runs,
# decoder passes under callgrind.
all3="oltp_point_select oltp_read_only oltp_read_write"
mysql_cells="oltp_point_select:2 oltp_read_only:2"
rates="100000,250000,500000,750000,1000000,1500000,2000000,3000000,0"
case $matrix in
  full)
    cells="oltp_point_select:1 oltp_point_select:2 oltp_point_select:8 oltp_read_only:1
      oltp_read_only:2 oltp_read_only:8 oltp_read_write:1 oltp_read_write:2 oltp_read_write:8"
    d_rounds=3 d_seconds=8 pipe_s=3 probe_hits=200000 probe_reps=7 dec_s=3 hits_s=3 mem_s=5 prof_s=5 cg_passes=10 cost_s=8 shim_n=10000000 ;;
  standard)
    cells="oltp_point_select:1 oltp_point_select:2 oltp_point_select:8 oltp_read_only:2
      oltp_read_write:2"
    d_rounds=3 d_seconds=5 pipe_s=2 probe_hits=200000 probe_reps=5 dec_s=2 hits_s=3 mem_s=5 prof_s=5 cg_passes=10 cost_s=5 shim_n=10000000 ;;
  smoke)
    cells="oltp_point_select:2"
    mysql_cells="oltp_point_select:2"
    rates="100000,1000000,0"
    d_rounds=1 d_seconds=2 pipe_s=0.5 probe_hits=20000 probe_reps=3 dec_s=0.3 hits_s=1 mem_s=2 prof_s=1 cg_passes=1 cost_s=1 shim_n=1000000
    # The matrix runs every configuration; the cost, probe hits and memory
    # sections only have to show they work, on one server and one client
    # configuration.
    side_configs="statements client" mem_configs="client"
    write=0 ;;
  *) echo "perf-report: --matrix is standard, full or smoke" >&2; exit 2 ;;
esac
: "${rounds:=$d_rounds}" "${seconds:=$d_seconds}"
[ "$force_write" = 0 ] || write=1
if [ -n "$workloads$threads" ]; then
  cells=""
  for w in ${workloads:-$all3}; do
    for t in ${threads:-2}; do
      cells+=" $w:$t"
    done
  done
  matrix_name="custom"
else
  matrix_name=$matrix
fi
read -r -d '' -a cell_list <<<"$cells" || true
: "${configs:=baseline statements duty duty-sampled sampled exact traps waits table-io transactions locks client run shim-idle pfs-stages pfs}"
read -r -a config_list <<<"$configs"
[[ " $configs " == *" baseline "* ]] || { echo "perf-report: --configs must include baseline" >&2; exit 2; }
for c in "${config_list[@]}"; do
  [[ " $BENCH_ALL_CONFIGS " == *" $c "* ]] || { echo "perf-report: unknown configuration $c" >&2; exit 2; }
done
: "${sections:=probes pipeline decoder matrix mysql cost shim hits memory profile}"
has() { [[ " $sections " == *" $1 "* ]]; }
# A configuration the cost and probe-hits sections run (all but in a smoke).
on_side() { [ -z "${side_configs:-}" ] || [[ " $side_configs " == *" $1 "* ]]; }
[ "${#cell_list[@]}" -gt 0 ] || { echo "perf-report: no cells" >&2; exit 2; }
read -r -a mysql_config_list <<<"$mysql_configs"
read -r -d '' -a mysql_cell_list <<<"$mysql_cells" || true
[[ " $mysql_configs " == *" baseline "* ]] || { echo "perf-report: --mysql-configs must include baseline" >&2; exit 2; }
for c in "${mysql_config_list[@]}"; do
  case $c in
    baseline | floor | statements* | duty* | sampled | exact | traps | waits | table-io | transactions | locks | pfs-stages | pfs) ;;
    *) echo "perf-report: $c is not a server configuration (--mysql-configs)" >&2; exit 2 ;;
  esac
done

bench_setup "$build"
results="$work/results"
mkdir -p "$results"
started=$(date +%s)

# ---- what ran, where ----
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "matrix=$matrix_name"
  echo "argv=$argv_text"
  echo "cells=${cell_list[*]}"
  echo "configs=${config_list[*]}"
  echo "rounds=$rounds"
  echo "seconds=$seconds"
  echo "sections=$sections"
  echo "smoke=$([ "$matrix" = smoke ] && echo 1 || echo 0)"
  echo "cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
  echo "cpus=$(nproc)"
  echo "hypervisor=$(lscpu | sed -n 's/^Hypervisor vendor: *//p' | head -1)"
  echo "mem=$(free -g | awk '/^Mem:/ { print $2 " GiB" }')"
  echo "kernel=$(uname -r)"
  echo "os=$(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "mariadbd=$(${MARIADBD:-/usr/sbin/mariadbd} --version 2>/dev/null | head -1)"
  echo "sysbench=$(sysbench --version 2>/dev/null | head -1)"
  if has mysql; then
    echo "mysqld=$(chroot "$("$bench_root/scripts/mysql-sandbox.sh" chroot)" /usr/sbin/mysqld --version 2>/dev/null | head -1)"
    echo "mysql_cells=${mysql_cell_list[*]}"
    echo "mysql_configs=${mysql_config_list[*]}"
  fi
  echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "clk_tck=$(getconf CLK_TCK)"
} >"$results/meta.env"

# ---- per-probe cost microbenchmark ----
if has probes; then
  bench_log "probe cost: $probe_hits hits x $probe_reps"
  "$pb" probe-cost --hits "$probe_hits" --reps "$probe_reps" --json "$results/probes.json" >&2
fi

# ---- pipeline limits ----
if has pipeline; then
  for src in usdt syscall; do
    bench_log "pipeline: $src producer, rates $rates, $pipe_s s each"
    "$pb" rate --source "$src" --rates "$rates" --seconds "$pipe_s" \
      --json "$results/pipeline-$src.json" >&2
  done
  # Drops are also counted exactly when the consumer is the bottleneck: a
  # 16 KiB ring, below the 64 KiB wakeup threshold, is only drained on the
  # loop's 100 ms tick, so an unthrottled producer overruns it.
  bench_log "pipeline: overload (16 KiB rings)"
  "$pb" rate --source usdt --rates 0 --seconds "$pipe_s" --ring-kib 16 \
    --json "$results/pipeline-overload.json" >&2
fi

# ---- decoder ----
if has decoder; then
  bench_log "decoder: $dec_s s per case"
  "$db" "$dec_s" | tee "$results/decoder.md" >&2
fi

# ---- servers ----
need_servers=0
for s in matrix cost shim hits memory profile; do has "$s" && need_servers=1; done
if [ "$need_servers" = 1 ]; then
  servers="plain"
  if has matrix || has cost; then servers=$(bench_servers_for "${config_list[@]}"); fi
  bench_log "starting servers: $servers"
  # shellcheck disable=SC2086
  bench_start_servers $servers
  # Warm-up, not counted: every workload once on every server.
  declare -A warm=()
  for cell in "${cell_list[@]}"; do warm[${cell%:*}]=1; done
  for s in $servers; do
    for w in "${!warm[@]}"; do
      bench_sysbench "$work/$s" "$w" --threads=2 --time=1 run >/dev/null
    done
  done
fi

# ---- the matrix ----
if has matrix; then
  n=${#config_list[@]}
  total=$((rounds * ${#cell_list[@]} * n))
  k=0
  bench_log "matrix $matrix_name: ${#cell_list[@]} cells x $n configurations x $rounds rounds of $seconds s = $total runs"
  for r in $(seq "$rounds"); do
    for cell in "${cell_list[@]}"; do
      w=${cell%:*} t=${cell#*:}
      for i in $(seq 0 $((n - 1))); do
        c=${config_list[$(((i + r - 1) % n))]}
        k=$((k + 1))
        bench_log "[$k/$total] round $r: $w, $t threads: $c"
        bench_run "$c" "$w" "$t" "$seconds" "m.$w.$t.$c.$r"
        echo "$w $t $r $c $bench_result" >>"$results/matrix.txt"
      done
    done
  done
fi

# ---- the MySQL 9.7 cells ----
if has mysql; then
  bench_prefix=my-
  my_servers=$(bench_servers_for "${mysql_config_list[@]}")
  bench_log "starting MySQL 9.7 servers: $my_servers"
  # shellcheck disable=SC2086
  bench_start_servers $my_servers
  for s in $my_servers; do
    for cell in "${mysql_cell_list[@]}"; do
      bench_sysbench "$work/$s" "${cell%:*}" --threads=2 --time=1 run >/dev/null
    done
  done
  # mysqltrace's configurations only where it can trace this mysqld at all;
  # otherwise the report shows why, and the untraced ones still run.
  my_configs=()
  if "$mt" server --pid "$(bench_server_pid "$work/my-plain")" --stages off --duration 1 \
    --output /dev/null 2>"$work/my-attach.err"; then
    my_configs=("${mysql_config_list[@]}")
  else
    why=$(grep -m1 '^mysqltrace' "$work/my-attach.err" || head -1 "$work/my-attach.err")
    bench_log "mysqltrace server cannot trace MySQL 9.7 here: $why"
    echo "mysql_tracer_error=$why" >>"$results/meta.env"
    for c in "${mysql_config_list[@]}"; do
      case $c in baseline | pfs | pfs-stages) my_configs+=("$c") ;; esac
    done
  fi
  n=${#my_configs[@]}
  total=$((rounds * ${#mysql_cell_list[@]} * n))
  k=0
  bench_log "MySQL 9.7: ${#mysql_cell_list[@]} cells x $n configurations x $rounds rounds of $seconds s = $total runs"
  for r in $(seq "$rounds"); do
    for cell in "${mysql_cell_list[@]}"; do
      w=${cell%:*} t=${cell#*:}
      for i in $(seq 0 $((n - 1))); do
        c=${my_configs[$(((i + r - 1) % n))]}
        k=$((k + 1))
        bench_log "[$k/$total] MySQL round $r: $w, $t threads: $c"
        bench_run "$c" "$w" "$t" "$seconds" "my.$w.$t.$c.$r"
        echo "$w $t $r $c $bench_result" >>"$results/mysql.txt"
      done
    done
  done
  bench_prefix=""
fi

# The cell the per-hit and profile runs use: point_select at 2 threads if
# the matrix has it.
side_cell=${cell_list[0]}
for cell in "${cell_list[@]}"; do
  [ "$cell" = oltp_point_select:2 ] && side_cell=$cell
done
side_w=${side_cell%:*} side_t=${side_cell#*:}
echo "side_cell=$side_cell" >>"$results/meta.env"

# ---- CPU per query at a fixed rate ----
# Saturated QPS swings by +-15 points from round to round on a small
# machine. Held at a rate every configuration sustains, sysbench runs the
# same queries whatever traces it, and what changes is the CPU they take:
# the server's, the client's and the tracer's, each measured exactly (not
# sampled). Each configuration runs right next to an untraced run (first in
# even rounds, second in odd ones), so that slow drift of the machine cancels
# out of the difference.
if has cost; then
  # The rate: a share (BENCH_COST_LOAD) of what the untraced server does now,
  # in sysbench events. At half, sysbench's paced threads (each event handed
  # over through a queue) already took 80% of this 2-CPU machine and fell
  # behind now and then; at 0.35 every configuration keeps up.
  cost_load=${BENCH_COST_LOAD:-0.35}
  bench_run baseline "$side_w" "$side_t" 3 "cost.probe"
  echo "cost_saturated=$bench_result" >>"$results/meta.env"
  cost_rate=$(bench_tps "$work/runs/cost.probe.out" | awk -v f="$cost_load" '{ printf "%d", $1 * f }')
  [ "${cost_rate:-0}" -gt 0 ] || bench_die "cost: no transaction rate in the untraced run"
  printf 'cost_rate=%s\ncost_load=%s\ncost_seconds=%s\n' "$cost_rate" "$cost_load" "$cost_s" \
    >>"$results/meta.env"
  cost_configs=()
  for c in "${config_list[@]}"; do
    if [ "$c" != baseline ] && on_side "$c"; then cost_configs+=("$c"); fi
  done
  n=${#cost_configs[@]}
  bench_log "cost: $side_cell at $cost_rate events/s, $n configurations x $rounds rounds, each next to an untraced run, $cost_s s each"
  for r in $(seq "$rounds"); do
    for i in $(seq 0 $((n - 1))); do
      c=${cost_configs[$(((i + r - 1) % n))]}
      pair=("$c" baseline)
      [ $((r % 2)) = 1 ] || pair=(baseline "$c")
      for x in "${pair[@]}"; do
        BENCH_RATE=$cost_rate bench_run "$x" "$side_w" "$side_t" "$cost_s" "c.$c.$x.$r"
        echo "$side_w $side_t $r $x $c $bench_result" >>"$results/cost.txt"
      done
    done
  done
fi

# ---- the idle shim: what an interposed call adds, and calls per query ----
# What the shim preloaded without a tracer costs, exactly rather than in
# saturated QPS (+-10 points): bench/shim_idle_bench times each kind of
# interposed call against stand-ins that return at once, without and with
# LD_PRELOAD, alternated; `mysqltrace calls` on the shim's own functions in
# a preloaded sysbench counts the interposed calls a query makes (each
# sysbench query is one top-level mysql_stmt_execute or *_query call; the
# other calls are nested in those or made between them).
if has shim; then
  sib="$build/bench/shim_idle_bench"
  [ -x "$sib" ] || bench_die "build first ($sib missing)"
  echo "shim_calls_per_case=$shim_n" >>"$results/meta.env"
  bench_log "idle shim: $shim_n calls per case, fastest of 7, x $probe_reps without and with LD_PRELOAD"
  for rep in $(seq "$probe_reps"); do
    "$sib" "$shim_n" | sed "s/^/plain $rep /" >>"$results/shim-calls.txt"
    LD_PRELOAD="$shim" "$sib" "$shim_n" | sed "s/^/shim $rep /" >>"$results/shim-calls.txt"
  done
  declare -A shim_seen=()
  for cell in "${cell_list[@]}"; do
    w=${cell%:*}
    [ -z "${shim_seen[$w]:-}" ] || continue
    shim_seen[$w]=1
    bench_log "idle shim: interposed calls a query, $w (mysqltrace calls, $hits_s s at 200 events/s)"
    bench_sysbench_argv "$work/plain" "$w"
    LD_PRELOAD="$shim" "${sb[@]}" --threads=2 --rate=200 --time=$((${hits_s%.*} + 4)) run \
      >"$work/shim-count.$w.out" 2>&1 &
    sbpid=$!
    sleep 1
    "$mt" calls --pid "$sbpid" --binary libmysqltrace-shim.so --match '*' --max-depth 1 \
      --duration "$hits_s" --output "$work/shim-count.$w.txt" 2>"$work/shim-count.$w.err" ||
      { cat "$work/shim-count.$w.err" >&2; bench_die "idle shim: mysqltrace calls failed"; }
    wait "$sbpid" || bench_die "idle shim: sysbench $w failed"
    all=$(sed -n 's/^mysqltrace: \([0-9]*\) calls,.*/\1/p' "$work/shim-count.$w.err" | tail -1)
    queries=$(grep -cE ' -> .* > (mysql_stmt_execute|mysql_real_query|mysql_query|mysql_send_query) ' \
      "$work/shim-count.$w.txt" || true)
    echo "$w ${all:--} ${queries:--}" >>"$results/shim-count.txt"
  done
fi

# ---- probe hits per query (kernel BPF statistics, untimed) ----
if has hits; then
  bench_stats_on
  BENCH_PROG_STATS=1
  for c in "${config_list[@]}"; do
    case $c in baseline | shim-idle | pfs | pfs-stages) continue ;; esac
    on_side "$c" || continue
    bench_log "probe hits: $side_w, $side_t threads: $c"
    bench_run "$c" "$side_w" "$side_t" "$hits_s" "h.$c"
    echo "$c $bench_result" >>"$results/hits.txt"
    cp "$work/runs/h.$c.ps0" "$results/hits.$c.ps0"
    cp "$work/runs/h.$c.ps1" "$results/hits.$c.ps1"
  done
  BENCH_PROG_STATS=""
  bench_stats_off
fi

# ---- memory: the tracer's peak RSS at 1 and 200 connections ----
if has memory; then
  echo "mem_seconds=$mem_s" >>"$results/meta.env"
  for c in ${mem_configs:-client run waits}; do
    for conns in 1 200; do
      bench_log "memory: $c, $conns connections"
      bench_run "$c" oltp_point_select "$conns" "$mem_s" "mem.$c.$conns"
      echo "$c $conns $bench_result" >>"$results/memory.txt"
    done
  done
fi

# ---- why: profiles ----
if has profile; then
  mkdir -p "$results/profile"
  if perf record -q -e cpu-clock -a -o "$work/perf.probe" -- true >/dev/null 2>&1; then
    # The whole machine while `mysqltrace server --stages off` traces the
    # side cell: where the CPU goes (server, tracer, client, kernel).
    perf_pid=""
    bench_on_start() {
      perf record -q -e cpu-clock -F 999 -a -o "$work/perf.data" >/dev/null 2>&1 &
      perf_pid=$!
    }
    bench_on_end() {
      kill -INT "$perf_pid" 2>/dev/null || true
      wait "$perf_pid" 2>/dev/null || true
    }
    BENCH_ON_START=bench_on_start BENCH_ON_END=bench_on_end
    bench_log "profile: perf record -a during statements on $side_cell"
    bench_run statements "$side_w" "$side_t" "$prof_s" "prof.statements"
    BENCH_ON_START="" BENCH_ON_END=""
    echo "statements $side_cell $bench_result" >"$results/profile/run.txt"
    pr() {
      perf report -i "$work/perf.data" --stdio --no-children -q "$@" 2>/dev/null |
        grep -v '^$' | head -12 | cut -c1-160
    }
    pr --sort comm >"$results/profile/by-comm.txt" || true
    pr --sort dso,sym --comms mysqltrace >"$results/profile/mysqltrace.txt" || true
    pr --sort dso,sym --comms mariadbd >"$results/profile/mariadbd.txt" || true
    # Every kernel symbol of the server's threads, to add up trap handling.
    perf report -i "$work/perf.data" --stdio --no-children -q --sort sym --comms mariadbd \
      2>/dev/null | grep '\[k\]' >"$results/profile/mariadbd-kernel.txt" || true
  else
    echo "perf record does not work here" >"$results/profile/perf-unavailable.txt"
  fi
  if command -v valgrind >/dev/null; then
    bench_log "profile: callgrind on the decoder ($cg_passes passes)"
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" --toggle-collect='*run_case*' \
      "$db" --passes "$cg_passes" --decode-only >"$results/profile/cg.md" 2>"$work/cg.log"
    sed -n 's/^summary: *//p' "$work/cg.out" >"$results/profile/cg.ir"
    callgrind_annotate --inclusive=no "$work/cg.out" 2>/dev/null |
      grep -E '^ *[0-9,]+ +\(' | head -16 >"$results/profile/cg.top.txt" || true
  fi
fi

echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$results/meta.env"
echo "elapsed_s=$(($(date +%s) - started))" >>"$results/meta.env"
report=$(python3 "$here/report.py" "$results")
echo "$report"
if [ "$write" = 1 ]; then
  printf '%s\n' "$report" >"$output"
  bench_log "report written to $output"
fi
