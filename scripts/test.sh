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
# the tree in a clean chroot of its release, Debian 12's twice (the builds
# must be identical; ~6 minutes a build) and checked by that release's
# lintian; an APT repository of
# both, from which a clean chroot of each release installs mysqltrace,
# traces that release's own MariaDB with it and purges it. The chroots are
# cached in /var/cache/mysqltrace like the MySQL one.
deb_start=$SECONDS
MYSQLTRACE_REQUIRE_PRIV=1 "$mt_root/packaging/test-deb.sh" --suite bookworm --suite trixie --twice bookworm
echo "test: Debian packages tested in $((SECONDS - deb_start)) s"
# Last, so that the test summary closes the output.
export MYSQLTRACE_REQUIRE_PRIV=1
cd "$BUILD_DIR"
ctest --output-on-failure -j2 -L 'unit|priv' "$@"
