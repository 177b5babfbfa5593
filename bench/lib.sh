# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-only
# Shared by the benchmark scripts (perf-report.sh, overhead.sh, server.sh):
# throwaway MariaDB servers, sysbench, and one function that runs sysbench
# under any tracing configuration and reports what it got.
#
# Configurations (bench_run's first argument):
#   baseline        no tracer, performance_schema OFF (server "plain")
#   statements      `mysqltrace server --stages off` on plain
#   statements-json     the same, --format json to a file
#   statements-slowlog  the same, --format slowlog to a file
#   statements-multi    `--stages off` on the entry and end probes per
#                   statement (MYSQLTRACE_SERVER_PATH=multi), the path before
#                   the one-probe path
#   floor           one uprobe on log_slow_statement with a program that only
#                   counts (`pipeline_bench floor`): the one-trap floor
#   sampled         `mysqltrace server` (--stages sampled, the default)
#   duty            the leave-on mode: `mysqltrace server --stages off --duty 10
#                   --format digests-json` to a file (probe attached 10% of
#                   the time, per-digest estimates)
#   duty-sampled    the same with --stages sampled
#   exact           `mysqltrace server --stages exact`
#   traps           `mysqltrace server --stages traps`: exact's probes with
#                   programs that return at once (the floor exact is judged by)
#   waits           `mysqltrace server --waits` (sampled stages + waits)
#   table-io        `mysqltrace server --stages off --table-io` (statements
#                   and one wait per row through the handler)
#   transactions    `mysqltrace server --stages off --transactions`
#                   (statements and transactions: a probe per statement
#                   that uses InnoDB)
#   locks           `mysqltrace server --stages off --locks` (statements, and
#                   probes on the lock wait paths: sysbench's point selects
#                   never wait, so this is --locks' cost without contention)
#   client          `mysqltrace client` attached to sysbench
#   client-summary  the same with --summary-only
#   client-json     the same with --format json (to /dev/null, as client's text)
#   run             `mysqltrace run -- sysbench` (the shim's USDT probes)
#   run-no-api      the same with --no-api
#   shim-idle       sysbench with libmysqltrace-shim.so preloaded, no tracer
#   pfs-stages      server "pfs-stages": performance_schema ON, statement and
#                   stage instruments and consumers only
#   pfs             server "pfs": performance_schema ON, every instrument and
#                   consumer
# Every server is the same /usr/sbin/mariadbd (MARIADBD), 1 table x 10000
# rows, sysbench over the unix socket. With bench_prefix=my- the same
# configurations run against Oracle MySQL 9.7 servers instead
# (scripts/mysql-sandbox.sh; servers my-plain, my-pfs-stages, my-pfs), whose
# performance_schema is OFF only where asked.

bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_ALL_CONFIGS="baseline floor statements statements-json statements-slowlog statements-multi duty duty-sampled sampled exact traps waits table-io transactions locks client client-summary client-json run run-no-api shim-idle pfs-stages pfs"
# Enough for the 200-connection memory runs (the default is 151).
BENCH_MAX_CONNECTIONS=${BENCH_MAX_CONNECTIONS:-512}
BENCH_TABLE_SIZE=${BENCH_TABLE_SIZE:-10000}
bench_tracer=""
bench_keeper=""
bench_servers=()
# "" for MariaDB's servers, "my-" for MySQL's (see above).
bench_prefix=""

# Messages carry the minutes:seconds since the script started.
bench_log() { printf '%s [%02d:%02d]: %s\n' "${bench_name:-bench}" $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }
bench_die() {
  bench_log "$*"
  exit 1
}

# bench_setup BUILD_DIR: the binaries, a work directory and its cleanup.
bench_setup() {
  local build=$1
  mt="$build/userspace/mysqltrace"
  shim="$build/shim/libmysqltrace-shim.so"
  pb="$build/bench/pipeline_bench"
  db="$build/bench/decoder_bench"
  sandbox="$bench_root/scripts/mariadb-sandbox.sh"
  mysql_sandbox="$bench_root/scripts/mysql-sandbox.sh"
  local f
  for f in "$mt" "$shim" "$pb" "$db"; do
    [ -e "$f" ] || bench_die "build first ($f missing)"
  done
  [ "$(id -u)" -eq 0 ] || bench_die "run as root (BPF, uprobes)"
  command -v sysbench >/dev/null || bench_die "sysbench is not installed (scripts/install-deps.sh)"
  work=$(mktemp -d /tmp/mysqltrace-bench-XXXXXX)
  mkdir -p "$work/runs"
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

bench_cleanup() {
  bench_stats_off
  [ -z "$bench_keeper" ] || kill "$bench_keeper" 2>/dev/null || true
  if [ -n "$bench_tracer" ]; then
    kill -INT "$bench_tracer" 2>/dev/null || true
    wait "$bench_tracer" 2>/dev/null || true
  fi
  local s
  for s in "${bench_servers[@]}"; do
    "$(bench_sandbox_of "$s")" stop "$work/$s" >/dev/null 2>&1 || true
  done
  if [ -n "${bench_keep:-}" ]; then
    bench_log "raw results kept in $work"
  else
    rm -rf "$work"
  fi
}

bench_sql() {  # dir statements
  # shellcheck disable=SC1091
  (source "$1/env" && mariadb --no-defaults -S "$MT_SOCKET" -u"$MT_USER" -p"$MT_PASSWORD" \
     --batch --skip-column-names -e "$2")
}

# bench_sysbench DIR WORKLOAD ARGS...: sysbench against the server in DIR.
bench_sysbench_argv() {  # dir workload: fills the array sb
  # shellcheck disable=SC1091
  source "$1/env"
  sb=(sysbench "$2" --db-driver=mysql --mysql-socket="$MT_SOCKET"
      --mysql-user="$MT_USER" --mysql-password="$MT_PASSWORD" --mysql-db=sbtest
      --tables=1 --table-size="$BENCH_TABLE_SIZE")
}
bench_sysbench() {
  local dir=$1 workload=$2; shift 2
  bench_sysbench_argv "$dir" "$workload"
  "${sb[@]}" "$@"
}

# The sandbox script of a server: my-* are MySQL's.
bench_sandbox_of() {  # name
  case $1 in
    my-*) echo "$mysql_sandbox" ;;
    *) echo "$sandbox" ;;
  esac
}

# bench_start_server NAME [--performance-schema[=off]]: a server in
# $work/NAME with sbtest prepared (every oltp_* workload shares
# oltp_common's table).
bench_start_server() {
  local name=$1 dir="$work/$1"; shift
  "$(bench_sandbox_of "$name")" start "$dir" "$@" -- \
    --max-connections="$BENCH_MAX_CONNECTIONS" >/dev/null
  bench_servers+=("$name")
  bench_sql "$dir" "CREATE DATABASE sbtest"
  bench_sysbench "$dir" oltp_point_select prepare >/dev/null
  if [ "${name#my-}" = pfs-stages ]; then
    bench_limit_pfs_to_stages "$dir"
  fi
}

# performance_schema as it would be run to see statements and where their
# time goes: statement and stage instruments (timed), their current and
# history consumers and the digests; everything else off.
bench_limit_pfs_to_stages() {  # dir
  bench_sql "$1" "UPDATE performance_schema.setup_instruments SET ENABLED = 'NO', TIMED = 'NO';
    UPDATE performance_schema.setup_instruments SET ENABLED = 'YES', TIMED = 'YES'
      WHERE NAME LIKE 'statement/%' OR NAME LIKE 'stage/%';
    UPDATE performance_schema.setup_consumers SET ENABLED = IF(NAME IN
      ('global_instrumentation', 'thread_instrumentation', 'events_statements_current',
       'events_statements_history', 'events_stages_current', 'events_stages_history',
       'statements_digest'), 'YES', 'NO');"
  local consumers
  consumers=$(bench_sql "$1" "SELECT COUNT(*) FROM performance_schema.setup_consumers WHERE ENABLED = 'YES'")
  [ "$consumers" = 7 ] || bench_die "performance_schema setup failed ($consumers consumers on)"
}

# The servers a list of configurations needs (named with bench_prefix).
bench_servers_for() {  # configs...
  local need="${bench_prefix}plain" c
  for c in "$@"; do
    case $c in
      pfs | pfs-stages)
        [[ " $need " == *" $bench_prefix$c "* ]] || need+=" $bench_prefix$c" ;;
    esac
  done
  echo "$need"
}
bench_start_servers() {  # names...
  local s
  for s in "$@"; do
    case $s in
      plain) bench_start_server plain ;;
      pfs | pfs-stages | my-pfs | my-pfs-stages) bench_start_server "$s" --performance-schema ;;
      # MySQL 9.7's performance_schema is ON unless told otherwise.
      my-plain) bench_start_server "$s" --performance-schema=off ;;
      *) bench_die "unknown server $s" ;;
    esac
  done
}

# shellcheck disable=SC1091
bench_server_pid() { (source "$1/env"; echo "$MT_PID"); }
bench_qps() { sed -n 's/^ *queries: *[0-9]* *(\([0-9.]*\) per sec.)/\1/p' "$1"; }
bench_queries() { sed -n 's/^ *queries: *\([0-9]*\) .*/\1/p' "$1"; }
bench_drops() { sed -n 's/.* \([0-9]*\) records dropped.*/\1/p' "$1" | tail -1; }
bench_tps() { sed -n 's/^ *transactions: *[0-9]* *(\([0-9.]*\) per sec.)/\1/p' "$1"; }

# A sysbench run's CPU, as "BUSY SERVER CLIENT TRACER" clock ticks between
# two bench_window calls around it: the whole machine's busy time (user,
# nice, system, irq and softirq of /proc/stat's cpu line: sampled at each
# tick), the server's and the tracer's user+system time, and that of the
# children this shell reaped meanwhile, i.e. sysbench. A process's times are
# its exact run time in ticks (the kernel scales the sampled split to it),
# so the last three carry no sampling error.
# bench_window SERVER_PID TRACER_PID (0: none) [REAPER_PID, default this shell]
bench_window() {
  local busy server children tracer=0
  busy=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8; exit }' /proc/stat)
  server=$(bench_cpu_ticks "$1")
  children=$(awk '{ print $16 + $17 }' "/proc/${3:-$$}/stat")
  [ "$2" = 0 ] || tracer=$(bench_cpu_ticks "$2")
  echo "$busy ${server:-0} $children ${tracer:-0}"
}

# utime + stime of a process, in clock ticks.
bench_cpu_ticks() {
  local st
  read -r -a st <"/proc/$1/stat" 2>/dev/null || { echo ""; return; }
  echo $((st[13] + st[14]))
}

# bench_watch PID FILE: until PID is gone, every 0.1 s, "VmHWM_kB cpu_ticks"
# into FILE (the last sample stays). The watcher's pid is in bench_watcher.
# It forks nothing while it runs (it sleeps in `read -t` on a fifo nobody
# writes), so it takes no CPU worth measuring from the configuration.
bench_watch() {
  local pid=$1 file=$2
  (
    fifo="$work/watch.$BASHPID"
    mkfifo "$fifo"
    exec {fd}<>"$fifo"
    rm -f "$fifo"
    while [ -r "/proc/$pid/status" ]; do
      hwm=""
      while read -r k v _; do
        if [ "$k" = VmHWM: ]; then hwm=$v; fi
      done <"/proc/$pid/status" 2>/dev/null
      read -r -a st <"/proc/$pid/stat" 2>/dev/null || break
      # A zombie has no memory left to report; keep the last full sample.
      if [ -z "$hwm" ] || [ "${#st[@]}" -lt 15 ]; then break; fi
      echo "$hwm $((st[13] + st[14]))" >"$file"
      read -r -t 0.1 -u "$fd" _ || true
    done
  ) >/dev/null 2>&1 &
  bench_watcher=$!
}

bench_wait_ready() {  # stderr-file: exact attaches a few hundred probes, allow 30 s
  for _ in $(seq 600); do
    grep -q "Ctrl-C to stop" "$1" 2>/dev/null && return 0
    kill -0 "$bench_tracer" 2>/dev/null || break
    sleep 0.05
  done
  bench_log "tracer did not start:"
  cat "$1" >&2
  return 1
}

bench_wait_attached() {  # stderr-file pid: the agent's "attached pid=PID" line, 10 s at most
  for _ in $(seq 200); do
    grep -q "attached pid=$2 " "$1" 2>/dev/null && return 0
    kill -0 "$bench_tracer" 2>/dev/null || bench_die "agent exited: $(cat "$1")"
    sleep 0.05
  done
  bench_die "agent did not attach pid $2: $(cat "$1")"
}

bench_stop_tracer() {  # stderr-file
  local rc=0
  kill -INT "$bench_tracer" 2>/dev/null || true
  wait "$bench_tracer" || rc=$?
  bench_tracer=""
  [ "$rc" -eq 0 ] && return 0
  bench_log "tracer exited with status $rc:"
  cat "$1" >&2
  return 1
}

# When set, bench_run records the BPF run counts of the tracer's programs
# just before and after sysbench (kernel BPF statistics must be on: see
# bench_stats_on) in $work/runs/TAG.ps0 and TAG.ps1.
BENCH_PROG_STATS=${BENCH_PROG_STATS:-}
# Functions called just before and after sysbench under the server and
# client configurations (e.g. to profile the machine meanwhile).
BENCH_ON_START="" BENCH_ON_END=""
bench_prog_stats() {  # pid file
  [ -n "$BENCH_PROG_STATS" ] || return 0
  "$pb" prog-stats --pid "$1" >"$2"
}

# bench_run CONFIG WORKLOAD THREADS SECONDS TAG: one sysbench run under
# CONFIG against the server it uses. Raw output in $work/runs/TAG.*. Sets
# bench_result to "QPS QUERIES DROPS TRACER_CPU_S TRACER_HWM_KIB BUSY SERVER
# CLIENT TRACER" ("-" where nothing applies; the last four: bench_window's
# ticks over the sysbench run). Runs in the calling shell (not in $(...)),
# so that a failure ends the script through its cleanup.
bench_run() {
  local cfg=$1 workload=$2 threads=$3 seconds=$4 tag=$5
  local out="$work/runs/$tag.out" err="$work/runs/$tag.err" watchf="$work/runs/$tag.watch"
  # BENCH_RATE: sysbench events per second (none: as fast as it can).
  local args=(--threads="$threads" --time="$seconds" ${BENCH_RATE:+--rate="$BENCH_RATE"} run)
  local plain="$work/${bench_prefix}plain" cpu0="" cpu1="" extra=() mode win0="" win1="" spid
  bench_watcher=""
  rm -f "$watchf"
  case $cfg in
    baseline | pfs | pfs-stages | shim-idle)
      local dir=$plain
      [ "$cfg" = baseline ] || [ "$cfg" = shim-idle ] || dir="$work/$bench_prefix$cfg"
      spid=$(bench_server_pid "$dir")
      win0=$(bench_window "$spid" 0)
      if [ "$cfg" = shim-idle ]; then
        LD_PRELOAD="$shim" bench_sysbench "$dir" "$workload" "${args[@]}" >"$out"
      else
        bench_sysbench "$dir" "$workload" "${args[@]}" >"$out"
      fi
      win1=$(bench_window "$spid" 0) ;;
    floor | statements* | duty* | sampled | exact | traps | waits | table-io | transactions | locks)
      mode=$cfg
      spid=$(bench_server_pid "$plain")
      local path="" dest=/dev/null
      case $cfg in statements*) mode=off ;; esac
      [ "$cfg" = statements-json ] && extra=(--format json) && dest="$work/trace.out"
      [ "$cfg" = statements-slowlog ] && extra=(--format slowlog) && dest="$work/trace.out"
      [ "$cfg" = statements-multi ] && path=multi
      if [[ $cfg == duty* ]]; then
        mode=off
        [ "$cfg" = duty-sampled ] && mode=sampled
        extra=(--duty "${BENCH_DUTY:-10}" --format digests-json) && dest="$work/trace.out"
      fi
      [ "$cfg" = waits ] && mode=sampled && extra=(--waits)
      [ "$cfg" = table-io ] && mode=off && extra=(--table-io)
      [ "$cfg" = transactions ] && mode=off && extra=(--transactions)
      [ "$cfg" = locks ] && mode=off && extra=(--locks)
      rm -f "$work/trace.out"
      if [ "$cfg" = floor ]; then
        "$pb" floor --pid "$spid" 2>"$err" &
      else
        MYSQLTRACE_SERVER_PATH=$path "$mt" server --pid "$spid" \
          --stages "$mode" "${extra[@]}" --output "$dest" 2>"$err" &
      fi
      bench_tracer=$!
      bench_watch "$bench_tracer" "$watchf"
      bench_wait_ready "$err"
      bench_prog_stats "$bench_tracer" "$work/runs/$tag.ps0"
      [ -z "$BENCH_ON_START" ] || "$BENCH_ON_START"
      win0=$(bench_window "$spid" "$bench_tracer")
      bench_sysbench "$plain" "$workload" "${args[@]}" >"$out"
      win1=$(bench_window "$spid" "$bench_tracer")
      [ -z "$BENCH_ON_END" ] || "$BENCH_ON_END"
      # The tracer's CPU during sysbench: the windows' last field.
      cpu0=${win0##* } cpu1=${win1##* }
      bench_prog_stats "$bench_tracer" "$work/runs/$tag.ps1"
      bench_stop_tracer "$err" ;;
    client | client-summary | client-json)
      [ "$cfg" = client-summary ] && extra=(--summary-only)
      [ "$cfg" = client-json ] && extra=(--format json)
      # sysbench waits at a gate until the tracer is attached to its pid.
      rm -f "$work/gate"
      mkfifo "$work/gate"
      bench_sysbench_argv "$plain" "$workload"
      (read -r _ <"$work/gate"; exec "${sb[@]}" "${args[@]}") >"$out" &
      local sbpid=$! keeper=""
      if [ -n "$BENCH_PROG_STATS" ]; then
        # A second traced pid that outlives sysbench keeps the trace (and
        # its programs' counters) until they are read.
        sleep 3600 &
        keeper=$!
        bench_keeper=$keeper
        extra+=(--pid "$keeper")
      fi
      "$mt" client --pid "$sbpid" "${extra[@]}" --output /dev/null 2>"$err" &
      bench_tracer=$!
      bench_watch "$bench_tracer" "$watchf"
      bench_wait_ready "$err"
      bench_prog_stats "$bench_tracer" "$work/runs/$tag.ps0"
      [ -z "$BENCH_ON_START" ] || "$BENCH_ON_START"
      spid=$(bench_server_pid "$plain")
      win0=$(bench_window "$spid" "$bench_tracer")
      echo go >"$work/gate"
      wait "$sbpid"
      win1=$(bench_window "$spid" "$bench_tracer")
      [ -z "$BENCH_ON_END" ] || "$BENCH_ON_END"
      cpu0=${win0##* } cpu1=${win1##* }
      bench_prog_stats "$bench_tracer" "$work/runs/$tag.ps1"
      rm -f "$work/gate"
      if [ -n "$keeper" ]; then
        bench_stop_tracer "$err"
        kill "$keeper" 2>/dev/null || true
        wait "$keeper" 2>/dev/null || true
        bench_keeper=""
      else
        # The trace ends by itself when sysbench exits.
        local rc=0
        wait "$bench_tracer" || rc=$?
        bench_tracer=""
        [ "$rc" -eq 0 ] || { cat "$err" >&2; bench_die "mysqltrace client exited with status $rc"; }
      fi ;;
    run | run-no-api)
      [ "$cfg" = run-no-api ] && extra=(--no-api)
      bench_sysbench_argv "$plain" "$workload"
      local cmd=("${sb[@]}" "${args[@]}")
      # The CPU around sysbench alone, not the tracer's attach before it:
      # taken by a parent of sysbench that the run starts, which finds the
      # tracer among its ancestors.
      spid=$(bench_server_pid "$plain")
      rm -f "$work/runs/$tag.win0" "$work/runs/$tag.win1"
      # shellcheck disable=SC2016
      cmd=(bash -c "$(declare -f bench_cpu_ticks bench_window)"'
        out=$1 server=$2; shift 2
        tracer=$PPID
        while [ "$tracer" -gt 1 ] && [ "$(cat "/proc/$tracer/comm")" != mysqltrace ]; do
          tracer=$(awk "{ print \$4 }" "/proc/$tracer/stat")
        done
        bench_window "$server" "$tracer" $$ >"${out}0"; "$@"; rc=$?
        bench_window "$server" "$tracer" $$ >"${out}1"; exit $rc' bash "$work/runs/$tag.win" "$spid" "${cmd[@]}")
      if [ -n "$BENCH_PROG_STATS" ]; then
        # The run's own child reads the counters of its parent, the tracer.
        # shellcheck disable=SC2016
        cmd=(sh -c 'pb=$1 s0=$2 s1=$3; shift 3
          "$pb" prog-stats --pid "$PPID" >"$s0"; "$@"; rc=$?
          "$pb" prog-stats --pid "$PPID" >"$s1"; exit $rc' \
          sh "$pb" "$work/runs/$tag.ps0" "$work/runs/$tag.ps1" "${cmd[@]}")
      fi
      "$mt" run "${extra[@]}" --output /dev/null -- "${cmd[@]}" >"$out" 2>"$err" &
      bench_tracer=$!
      bench_watch "$bench_tracer" "$watchf"
      local rc=0
      wait "$bench_tracer" || rc=$?
      bench_tracer=""
      [ "$rc" -eq 0 ] || { cat "$err" "$out" >&2; bench_die "mysqltrace run exited with status $rc"; }
      win0=$(cat "$work/runs/$tag.win0" 2>/dev/null || true)
      win1=$(cat "$work/runs/$tag.win1" 2>/dev/null || true) ;;
    *) bench_die "unknown configuration $cfg (one of: $BENCH_ALL_CONFIGS)" ;;
  esac
  [ -z "$bench_watcher" ] || wait "$bench_watcher" 2>/dev/null || true
  local qps queries drops="-" cpu="-" hwm="-"
  qps=$(bench_qps "$out")
  queries=$(bench_queries "$out")
  [ -n "$qps" ] || { cat "$out" >&2; bench_die "$tag: no QPS in sysbench's output"; }
  if [ -s "$err" ]; then
    drops=$(bench_drops "$err")
    [ -n "$drops" ] || drops="-"
  fi
  if [ -s "$watchf" ]; then
    local w
    read -r -a w <"$watchf"
    hwm=${w[0]}
    # `run` is measured whole (attach included): its tracer lives exactly as
    # long as sysbench. The others from sysbench's start to its end.
    [ -n "$cpu0" ] || cpu0=0
    [ -n "$cpu1" ] || cpu1=${w[1]:-0}
    cpu=$(awk -v a="$cpu0" -v b="$cpu1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz }')
  fi
  local win="- - - -"
  if [ -n "$win0" ] && [ -n "$win1" ]; then
    local a b
    read -r -a a <<<"$win0"
    read -r -a b <<<"$win1"
    win="$((b[0] - a[0])) $((b[1] - a[1])) $((b[2] - a[2])) $((b[3] - a[3]))"
  fi
  # shellcheck disable=SC2034
  bench_result="$qps $queries $drops $cpu $hwm $win"
}

# Kernel BPF run-time statistics (run_cnt, run_time_ns per program) on until
# bench_stats_off; they cost a little per program run, so never during a
# timed comparison. The holder process dies with us at worst: they go off.
bench_stats_pid=""
bench_stats_on() {
  "$pb" stats-on >"$work/stats-on.out" &
  bench_stats_pid=$!
  for _ in $(seq 100); do
    grep -q on "$work/stats-on.out" 2>/dev/null && return 0
    kill -0 "$bench_stats_pid" 2>/dev/null || break
    sleep 0.05
  done
  bench_die "cannot turn kernel BPF statistics on"
}
bench_stats_off() {
  [ -n "$bench_stats_pid" ] || return 0
  kill "$bench_stats_pid" 2>/dev/null || true
  wait "$bench_stats_pid" 2>/dev/null || true
  bench_stats_pid=""
}
