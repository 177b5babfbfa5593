#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a
# while: the protocol decoder from seeds made of the recorded sessions, the
# binary analysis (ELF reader, symbol tables, THD layout, stage sites) on
# mutated copies of the real server binaries (mariadbd, and the MySQL 9.7
# chroot's mysqld when it has been built: scripts/mysql-sandbox.sh chroot).
#   scripts/fuzz.sh [SECONDS] [protocol|binary|all]   (default 30 s each, all)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
seconds=${1:-30}
which=${2:-all}
case $which in protocol | binary | all) ;; *)
  echo "fuzz.sh: unknown target $which (protocol, binary or all)" >&2
  exit 2
  ;;
esac
fuzz_dir=${FUZZ_BUILD_DIR:-$mt_root/build-fuzz}

cmake -S "$mt_root" -B "$fuzz_dir" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DMYSQLTRACE_WERROR=ON >/dev/null
targets=()
names=()
[[ $which == binary ]] || targets+=(protocol_fuzz)
[[ $which == protocol ]] || targets+=(binary_fuzz)
cmake --build "$fuzz_dir" --target "${targets[@]}" -j"$(nproc)"

work=$(mktemp -d /tmp/mysqltrace-fuzz-XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
# Both at once, one CPU each (libFuzzer runs one process); each one's log is
# printed when it ends.
if [[ $which != binary ]]; then
  mkdir -p "$work/seeds" "$work/corpus"
  /usr/bin/python3 "$mt_root/tests/fuzz/make_protocol_seeds.py" "$work/seeds"
  "$fuzz_dir/tests/fuzz/protocol_fuzz" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -print_final_stats=1 "$work/corpus" "$work/seeds" >"$work/protocol.log" 2>&1 &
  pids+=($!)
  names+=(protocol_fuzz)
fi
if [[ $which != protocol ]]; then
  # The real binaries are the seeds (a run maps one copy-on-write and
  # patches it): a few runs a second, each a whole analysis.
  mkdir -p "$work/binary-corpus"
  "$fuzz_dir/tests/fuzz/binary_fuzz" -max_total_time="$seconds" -rss_limit_mb=4096 \
    -timeout=120 -print_final_stats=1 "$work/binary-corpus" >"$work/binary.log" 2>&1 &
  pids+=($!)
  names+=(binary_fuzz)
fi
failed=0
for i in "${!pids[@]}"; do
  status=0
  wait "${pids[$i]}" || status=$?
  log=$work/${names[$i]%_fuzz}.log
  if [[ $status -eq 0 ]]; then
    grep -E '^(stat::|INFO: (Loaded|seed corpus)|[a-z_]+: )' "$log" || true
    echo "fuzz: ${names[$i]} ran ${seconds}s without a crash"
  else
    cat "$log"
    echo "fuzz: ${names[$i]} FAILED (exit $status); its log is above" >&2
    failed=1
  fi
done
pids=()
exit "$failed"
