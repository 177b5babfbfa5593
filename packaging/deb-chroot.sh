#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The Debian chroots the package is built and tested in, one pair per suite
# (bookworm = Debian 12, trixie = Debian 13), made with mmdebstrap from the
# machine's Debian mirror and cached (scripts/chroot-lib.sh):
#
#   deb-chroot.sh path build|test SUITE
#       Print the chroot's path, building it first if needed.
#   deb-chroot.sh run build|test SUITE [--bind DIR]... [--ro-bind DIR]... [--env N=V]... -- COMMAND...
#       Run COMMAND as root in a throwaway overlay of the chroot (the cached
#       chroot never changes), DIRs at their own paths, in a private mount
#       namespace with /proc, /sys, tracefs, the BPF file system and /dev.
#   deb-chroot.sh suites
#       Print the suites, one a line, with their Debian release number.
#
# build: the buildd set, the Build-Depends of packaging/debian/control (so a
# change of them rebuilds it), fakeroot and that suite's lintian.
# test: what the smoke test of an installed package runs besides it: the
# suite's MariaDB server and client, systemd's tools (systemctl,
# systemd-escape, systemd-analyze; not running), man-db. The package's own
# dependencies are not there: installing it must bring them.
#
# Environment: MYSQLTRACE_CHROOTS (where the chroots live, default
# /var/cache/mysqltrace), DEBIAN_MIRROR, MT_CHROOT_TIMEOUT.
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
root=${SELF%/packaging/*}
die() {
    echo "deb-chroot: $*" >&2
    exit 1
}
# shellcheck source=scripts/chroot-lib.sh
source "$root/scripts/chroot-lib.sh"

# Bump when what goes into a chroot changes other than by its package list.
readonly FORMAT=1
readonly TEST_PACKAGES=(mariadb-server mariadb-client systemd man-db)
CHROOTS=${MYSQLTRACE_CHROOTS:-/var/cache/mysqltrace}

usage() {
    sed -n '8,18p' "$SELF" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

suite_number() {
    case $1 in
    bookworm) echo 12 ;;
    trixie) echo 13 ;;
    *) die "unknown suite '$1' (bookworm or trixie)" ;;
    esac
}

# The Build-Depends as package names (debhelper-compat is debhelper's).
build_depends() {
    sed -n '/^Build-Depends:/,/^[A-Z][A-Za-z-]*:/{/^ /p}' "$root/packaging/debian/control" |
        sed 's/^ *//; s/,.*//; s/ *(.*//; s/:any$//; s/^debhelper-compat$/debhelper/'
}

# Sets chroot_dir, and packages to what goes in.
chroot_spec() {
    local kind=$1 suite=$2
    suite_number "$suite" >/dev/null
    case $kind in
    build) mapfile -t packages < <(build_depends && printf '%s\n' fakeroot lintian) ;;
    test) packages=("${TEST_PACKAGES[@]}") ;;
    *) usage ;;
    esac
    chroot_dir=$CHROOTS/deb-$kind-$suite
}

ensure() {
    local kind=$1 suite=$2 chroot_dir variant
    local -a packages
    chroot_spec "$kind" "$suite"
    variant=apt
    [[ $kind == test ]] || variant=buildd
    chroot_ensure "$chroot_dir" "$suite" "$variant" \
        "format $FORMAT; $variant; packages ${packages[*]}" "${packages[@]}"
    echo "$chroot_dir"
}

cmd_run() {
    [[ $# -ge 4 ]] || usage
    local kind=$1 suite=$2 dir rc=0
    shift 2
    dir=$(ensure "$kind" "$suite")
    # (Global: the EXIT trap runs after this function has returned.)
    scratch=$(mktemp -d /var/tmp/mysqltrace-chroot-XXXXXX)
    # (The overlay is unmounted with its namespace; only the files stay.)
    trap 'rm -rf --one-file-system -- "$scratch"' EXIT
    trap 'exit 130' INT TERM
    chroot_overlay_run "$dir" "$scratch" "$@" || rc=$?
    return "$rc"
}

[[ $# -ge 1 ]] || usage
command=$1
shift
case $command in
path)
    [[ $# -eq 2 ]] || usage
    ensure "$@"
    ;;
run) cmd_run "$@" ;;
suites) printf '%s\n' "bookworm 12" "trixie 13" ;;
*) usage ;;
esac
