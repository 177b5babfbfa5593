#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs dependencies, builds with warnings as errors, checks formatting and
# runs both test tiers. Privileged tests fail (never skip) here.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
mt_need_root "$@"
mt_build
"$mt_root/scripts/check-format.sh"
# The sid chroot the MySQL 9.7 tests and benchmarks run their servers
# from: built once (~20 s) and cached, here rather than inside the first
# test that needs it.
chroot_start=$SECONDS
"$mt_root/scripts/mysql-sandbox.sh" chroot
echo "test: MySQL chroot ready in $((SECONDS - chroot_start)) s"
# The protocol decoder and the binary analysis under libFuzzer with
# ASan/UBSan, briefly: bad input must never crash or hang them.
"$mt_root/scripts/fuzz.sh" "${MYSQLTRACE_FUZZ_SECONDS:-30}"
# Benchmarks only have to run here; their numbers are read, not asserted.
BUILD_DIR="$BUILD_DIR" "$mt_root/bench/run.sh" --smoke
# The Debian packages for Debian 12 and 13, each built from one export of
# the tree in a clean chroot of its release (~6 minutes a build) and checked
# by that release's lintian; an APT repository of both, from which a clean
# chroot of each release installs mysqltrace, traces that release's own
# MariaDB with it and purges it. The chroots are cached in
# /var/cache/mysqltrace like the MySQL one. Debian 12's package is built a
# second time from the same export, in a longer directory, at the lowest CPU
# and I/O priority, while the rest runs: the test suites leave about half of
# the 2 CPUs idle. The two builds must be identical.
deb_start=$SECONDS
deb_work=$(mktemp -d /var/tmp/mysqltrace-ci-deb-XXXXXX)
export_dir=$("$mt_root/packaging/build-deb.sh" --export-only "$deb_work/export")
# (Its chroot first, at full speed: the first build waits for it too.)
"$mt_root/packaging/deb-chroot.sh" path build bookworm >/dev/null
second_log=$deb_work/bookworm-second-build.log
# A session of its own, to be killed as a group; its scheduler autogroup
# (the kernel makes one a session) niced too, or it would get as much CPU as
# everything else together.
# shellcheck disable=SC2016 # expanded by the inner sh
setsid sh -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 ionice -c 3 "$@"' \
  sh "$mt_root/packaging/build-deb.sh" --from "$export_dir" \
  --suite bookworm --out "$deb_work/bookworm-two" \
  --work "$deb_work/bookworm-second-build-in-a-longer-directory" >"$second_log" 2>&1 &
second_build=$!
trap 'kill -TERM -- "-$second_build" 2>/dev/null || true' EXIT
MYSQLTRACE_REQUIRE_PRIV=1 "$mt_root/packaging/test-deb.sh" --suite bookworm --suite trixie --once \
  --export "$export_dir" --builds-to "$deb_work"
echo "test: Debian packages tested in $((SECONDS - deb_start)) s"
# The test suites.
export MYSQLTRACE_REQUIRE_PRIV=1
status=0
(cd "$BUILD_DIR" && ctest --output-on-failure -j2 -L 'unit|priv' "$@") || status=$?
wait_start=$SECONDS
if ! wait "$second_build"; then
  tail -n 40 "$second_log" >&2
  echo "test: FAIL: the second build of Debian 12's package failed (log: $second_log)" >&2
  exit 1
fi
trap - EXIT
echo "test: the second build of Debian 12's package: waited $((SECONDS - wait_start)) s for it after the tests"
"$mt_root/packaging/test-deb.sh" --compare "$deb_work/bookworm" "$deb_work/bookworm-two"
rm -rf --one-file-system "$deb_work"
exit "$status"
