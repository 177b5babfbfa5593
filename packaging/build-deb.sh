#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Builds the Debian package from a clean export of the source tree.
#
#   packaging/build-deb.sh [--suite SUITE] [--out DIR] [--work DIR] [--copy] [--keep]
#   packaging/build-deb.sh --export-only DIR [--copy]
#   packaging/build-deb.sh --from EXPORT [--suite SUITE] [--out DIR] [--work DIR] [--keep]
#
# Exports the tree's files (git ls-files in a git checkout: the tracked files
# plus new ones that are not ignored; else, or with --copy or
# MYSQLTRACE_DEB_EXPORT=copy, a copy without build directories, VCS data and
# editor files) to WORK/mysqltrace-VERSION (WORK defaults to a temporary
# directory, removed unless --keep), puts packaging/debian there as debian/
# and runs `dpkg-buildpackage -us -uc -b`, which also checks the
# Build-Depends. The .deb, the dbgsym .deb, .buildinfo and .changes land in
# DIR (default: build-deb/ in the tree). --export-only DIR stops after the
# export (to DIR/mysqltrace-VERSION); --from builds such an export, so that
# one export can be built twice (packaging/test-deb.sh compares the builds).
#
# The version comes from `project(mysqltrace VERSION ...)` in CMakeLists.txt;
# debian/changelog's top entry must carry the same version, and its date is
# SOURCE_DATE_EPOCH, so that two builds of one tree are identical.
# DEB_BUILD_OPTIONS is honoured (parallel=N defaults to all CPUs; nocheck,
# noopt, nostrip as debhelper reads them).
#
# --suite bookworm|trixie builds for that Debian release (12, 13) in a clean
# chroot of it (packaging/deb-chroot.sh: its buildd set and the
# Build-Depends, from that suite), so the package links that suite's
# libraries and depends on them, and its version says which release it is
# for: a changelog entry VERSION~deb12u1 (bookworm) or VERSION~deb13u1
# (trixie) goes on top of the exported changelog, dated one second after the
# entry below it. Needs root (chroot, mounts). Without --suite the build runs here.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$root/build-deb
work=
keep=0
export_only=
from=
export_how=${MYSQLTRACE_DEB_EXPORT:-git}
suite=
while [[ $# -gt 0 ]]; do
  case $1 in
  --out) out=$2; shift ;;
  --work) work=$2; shift ;;
  --keep) keep=1 ;;
  --copy) export_how=copy ;;
  --export-only) export_only=$2; shift ;;
  --from) from=$2; shift ;;
  --suite) suite=$2; shift ;;
  -h | --help) sed -n '4,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "build-deb: unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

die() {
  echo "build-deb: $*" >&2
  exit 1
}

tools=(dpkg-parsechangelog)
if [[ -n $suite ]]; then
  suite_number=$("$root/packaging/deb-chroot.sh" suites | awk -v s="$suite" '$1 == s { print $2 }')
  [[ -n $suite_number ]] || die "unknown suite '$suite' (bookworm or trixie)"
  [[ $(id -u) -eq 0 ]] || die "--suite builds in a chroot: run as root"
  tools+=(mmdebstrap unshare)
else
  tools+=(dpkg-buildpackage fakeroot)
fi
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/install-deps.sh installs it)"
done

# The version of the tree at $1, checked against its debian changelog.
tree_version() {
  local version deb_version
  version=$(sed -n 's/^project(mysqltrace VERSION \([0-9][0-9.]*\).*/\1/p' "$1/CMakeLists.txt")
  [[ -n $version ]] || die "no 'project(mysqltrace VERSION x.y.z' in $1/CMakeLists.txt"
  deb_version=$(dpkg-parsechangelog -l "$1/packaging/debian/changelog" -S Version)
  if [[ $deb_version != "$version" ]]; then
    die "packaging/debian/changelog is at $deb_version but CMakeLists.txt says $version: add an" \
      "entry (dch --changelog packaging/debian/changelog -v $version)"
  fi
  echo "$version"
}

# Exports the repository's files to the new directory $1.
export_tree() {
  local dest=$1 how
  mkdir -p "$dest"
  if [[ $export_how != copy ]] && command -v git >/dev/null &&
    git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    how="git ls-files"
    git -C "$root" ls-files -z --cached --others --exclude-standard |
      tar -C "$root" --null --no-recursion --ignore-failed-read -T - -cf - |
      tar -C "$dest" -xf -
  else
    how="a copy (no git checkout, or --copy)"
    tar -C "$root" -cf - --exclude-vcs --anchored \
      --exclude='./build*' --exclude='./obj-*' --exclude='./debian' \
      --no-anchored --exclude='*.swp' --exclude='*~' --exclude='node_modules' \
      --exclude='__pycache__' \
      . | tar -C "$dest" -xf -
  fi
  [[ -f $dest/CMakeLists.txt && -d $dest/packaging/debian ]] ||
    die "the export of $root is incomplete"
  rm -rf "$dest/debian"
  cp -a "$dest/packaging/debian" "$dest/debian"
  echo "build-deb: exported $root to $dest with $how" >&2
}

if [[ -n $export_only ]]; then
  version=$(tree_version "$root")
  mkdir -p "$export_only"
  dest=$(cd "$export_only" && pwd)/mysqltrace-$version
  [[ ! -e $dest ]] || die "$dest exists"
  export_tree "$dest"
  echo "$dest"
  exit 0
fi

version=$(tree_version "${from:-$root}")
SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l "${from:-$root}/packaging/debian/changelog" -S Timestamp)
export SOURCE_DATE_EPOCH

own_work=0
if [[ -z $work ]]; then
  work=$(mktemp -d -t mysqltrace-deb-XXXXXX)
  own_work=1
fi
mkdir -p "$work" "$out"
work=$(cd "$work" && pwd)
out=$(cd "$out" && pwd)
cleanup() {
  if [[ $own_work = 1 && $keep = 0 ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT

src=$work/mysqltrace-$version
rm -rf "$src"
if [[ -n $from ]]; then
  [[ -f $from/debian/rules ]] || die "$from is not an export (no debian/rules)"
  cp -a "$from" "$src"
else
  export_tree "$src"
fi
if [[ -n $suite ]]; then
  # Debian's style for a rebuild of one version for a stable release: sorts
  # before VERSION itself, and a later ~deb13u1 before ~deb13u2. One second
  # after the entry below it (lintian: latest-changelog-entry-without-new-date);
  # SOURCE_DATE_EPOCH is the newest entry's date, as dpkg would take it.
  SOURCE_DATE_EPOCH=$((SOURCE_DATE_EPOCH + 1))
  entry=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Maintainer)
  version=$version~deb${suite_number}u1
  {
    echo "mysqltrace ($version) $suite; urgency=medium"
    echo
    echo "  * Built for Debian $suite_number ($suite) with its libraries."
    echo
    echo " -- $entry  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
    echo
    cat "$src/debian/changelog"
  } >"$src/debian/changelog.new"
  mv "$src/debian/changelog.new" "$src/debian/changelog"
fi
# Checkout times differ from clone to clone; nothing built should see them.
find "$src" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

if [[ " ${DEB_BUILD_OPTIONS:-} " != *" parallel="* ]]; then
  DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }parallel=$(nproc)"
fi
export DEB_BUILD_OPTIONS
echo "build-deb: building mysqltrace $version in $src${suite:+ in a $suite chroot}" \
  "(DEB_BUILD_OPTIONS=$DEB_BUILD_OPTIONS, SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH)"
if [[ -n $suite ]]; then
  # The work directory at its own path, so the build's paths are the same
  # as a build here would have.
  # shellcheck disable=SC2016 # expanded by the inner sh
  "$root/packaging/deb-chroot.sh" run build "$suite" --bind "$work" \
    --env SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" --env DEB_BUILD_OPTIONS="$DEB_BUILD_OPTIONS" \
    -- /bin/sh -ec 'cd "$1" && dpkg-buildpackage -us -uc -b' build "$src"
else
  (cd "$src" && dpkg-buildpackage -us -uc -b)
fi

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
changes=$work/mysqltrace_${version}_${arch}.changes
[[ -f $changes ]] || die "dpkg-buildpackage made no $changes"
# The .changes lists what the build made.
files=("$changes")
while read -r name; do
  files+=("$work/$name")
done < <(sed -n '/^Files:/,/^[^ ]/s/^ [0-9a-f]\{32\} [0-9]* [^ ]* [^ ]* //p' "$changes")
cp "${files[@]}" "$out/"
for f in "${files[@]}"; do
  echo "build-deb: $out/$(basename "$f")"
done
