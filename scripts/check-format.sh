#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fails when a C++ source or header of the project is not clang-formatted.
# BPF programs and the small C test programs follow kernel style instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -- '*.cpp' '*.h' | grep -v '^bpf/')
if [ ${#files[@]} -eq 0 ]; then
  exit 0
fi
if ! clang-format --dry-run --Werror "${files[@]}"; then
  echo "check-format: run 'clang-format -i' on the files above" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
