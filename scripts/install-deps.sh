#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs everything mysqltrace needs to build, test, benchmark and package
# on Debian 12. Idempotent and non-interactive: safe to run any number of times.
set -euo pipefail

packages=(
  # build
  build-essential cmake pkg-config make git
  clang llvm libclang-rt-14-dev libbpf-dev bpftool libelf-dev zlib1g-dev libzstd-dev
  libcli11-dev nlohmann-json3-dev libcapstone-dev systemtap-sdt-dev
  # mysqltrace top's screen; its test drives it in tmux
  libncurses-dev tmux
  # the agent's /metrics HTTP server
  libcpp-httplib-dev
  # tests
  googletest libgtest-dev libgmock-dev clang-format
  mariadb-server mariadb-client libmariadb-dev libssl-dev libgnutls28-dev
  python3 python3-pymysql procps openssl
  # a Go client (go-sql-driver/mysql) for the client capture's Go TLS probes
  golang-go golang-github-go-sql-driver-mysql-dev
  # the Java agent's build (javac, jni.h, ASM) and a Java client for its
  # tests (MariaDB Connector/J; JNA for its unix socket)
  default-jdk-headless libasm-java libmariadb-java libjna-java
  # pt-query-digest reads `server --format slowlog` in the tests
  percona-toolkit
  # the agent's /metrics: promtool checks the page, and a Prometheus of the
  # test's own (never the package's service: see policy-rc.d below) scrapes it
  prometheus
  # Oracle MySQL 9.7 as the second test server: a Debian sid chroot
  # (scripts/mysql-sandbox.sh) started in a private mount namespace
  mmdebstrap debian-archive-keyring util-linux mount perl
  # benchmarks
  sysbench
  # packaging: build (packaging/debian/control's Build-Depends are above),
  # check and test the .deb (packaging/test-deb.sh), the APT repository of
  # the bookworm and trixie packages (packaging/apt-repo.sh)
  debhelper dpkg-dev lintian fakeroot diffoscope-minimal man-db systemd apt-utils gpg
)

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: must run as root (apt-get)" >&2
  exit 1
fi

# The machine image may ship Node.js with its own npm (which conflicts with
# Debian's npm package); only fall back to Debian's when there is none.
if ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
here=$(cd "$(dirname "$0")" && pwd)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  "$here/install-node-deps.sh"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The Debian mariadb-server and prometheus packages start a system service from
# their postinst; mysqltrace's tests and demo run their own throwaway servers
# (and Prometheus), so keep the packages from starting one while we install
# (policy-rc.d is the Debian hook).
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  own_policy=1
fi
cleanup() { if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
# The npm mysql2 client the tests drive, from the npm registry.
"$here/install-node-deps.sh"
echo "install-deps: done"
