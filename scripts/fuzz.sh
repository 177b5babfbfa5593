#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Builds the protocol decoder's libFuzzer target with clang (ASan + UBSan) and
# runs it for a while from seeds made of the recorded sessions.
#   scripts/fuzz.sh [SECONDS]        (default 30; CI runs it briefly)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
seconds=${1:-30}
fuzz_dir=${FUZZ_BUILD_DIR:-$mt_root/build-fuzz}

cmake -S "$mt_root" -B "$fuzz_dir" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DMYSQLTRACE_WERROR=ON >/dev/null
cmake --build "$fuzz_dir" --target protocol_fuzz -j"$(nproc)"

work=$(mktemp -d /tmp/mysqltrace-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/seeds" "$work/corpus"
/usr/bin/python3 "$mt_root/tests/fuzz/make_protocol_seeds.py" "$work/seeds"
"$fuzz_dir/tests/fuzz/protocol_fuzz" -max_total_time="$seconds" -rss_limit_mb=2048 \
  -print_final_stats=1 "$work/corpus" "$work/seeds"
echo "fuzz: protocol_fuzz ran ${seconds}s without a crash"
