#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Tests the Debian package end to end, as root on Debian 12:
#
#   packaging/test-deb.sh [--once | --use DIR] [--keep]
#   packaging/test-deb.sh --suite SUITE [--suite SUITE]... [--once | --twice SUITE... | --use DIR]
#                         [--export EXPORT] [--builds-to DIR] [--keep]
#   packaging/test-deb.sh --compare DIR1 DIR2
#
# 1. Exports the tree once and builds the package from it twice, in two
#    directories: the builds must be identical (diffoscope, or file lists and
#    checksums, show what differs). --once builds once and skips this;
#    --use DIR tests the package already built in DIR (build-deb.sh --out).
#    With --suite, --twice SUITE (repeatable) builds only the suites it
#    names twice and the others once (each build takes ~6 minutes of 2
#    CPUs; CI makes its second build itself, in the background, and
#    --compare's the two). --export EXPORT builds
#    the export whose path build-deb.sh --export-only printed (as its
#    --from takes it);
#    --builds-to DIR leaves each suite's (first) build in DIR/SUITE.
#    --compare DIR1 DIR2 only compares two builds' packages, as step 1 does
#    (scripts/test.sh makes the second one while the test suites run).
# 2. lintian on the .changes: no error, and every warning is listed with its
#    reason in packaging/README.md.
# 3. apt-get install ./mysqltrace_*.deb, then checks the installed files, the
#    man pages, the completion and the systemd units (valid; the agent's
#    enabled, the template not), and the default agent.conf (--check-config).
# 4. Using only installed paths: mysqltrace doctor; a throwaway MariaDB
#    server traced by `mysqltrace server` into rotating files; a client run
#    under `mysqltrace run` (the installed shim); the agent service's command
#    with the installed agent.conf and the unit's capabilities (and its
#    reload); the template service's wrapper with the installed settings and
#    the unit's capabilities; pfs-sql trace files merged and loaded into the
#    tables of the installed schema.sql.
# 5. apt-get purge: no file of the package, nor /etc/mysqltrace or
#    /var/log/mysqltrace, nor the links of the agent's unit and of an
#    instance enabled in step 3, is left, and nothing else named *mysqltrace*.
#
# With --suite (bookworm, trixie), for each suite in its own chroots
# (packaging/deb-chroot.sh) rather than here: 1. with build-deb.sh --suite,
# 2. with that suite's lintian; then one signed APT repository holding every
# suite's packages (packaging/apt-repo.sh, a throwaway key), and 3.-5. in a
# clean chroot of each suite (its MariaDB server and client, systemd's tools
# and man-db, nothing of the package's dependencies): the repository's
# sources.list line and key installed as README.md says, then plain
# `apt-get install mysqltrace`, which must bring the suite's ~debNNu1
# version, and the same checks, traces (that suite's own mariadbd and
# mariadb) and purge as here. --use DIR takes each suite's packages from
# DIR/SUITE (build-deb.sh --suite SUITE --out DIR/SUITE). That inner run is this script with
# --from-repo URI KEYRING (not for use on a machine of one's own).
#
# It needs root. Without, it skips, unless MYSQLTRACE_REQUIRE_PRIV=1, when it
# fails (as CI runs it). --keep keeps the work directory. Times per step are
# printed at the end.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
once=0
twice=()
keep=0
use=
suites=()
repo_uri=
repo_key=
export_given=
builds_to=
compare=()
while [[ $# -gt 0 ]]; do
  case $1 in
  --once) once=1 ;;
  --twice) twice+=("$2"); shift ;;
  --suite) suites+=("$2"); shift ;;
  --from-repo) repo_uri=$2 repo_key=$3; shift 2 ;;
  --keep) keep=1 ;;
  --use) use=$(cd "$2" && pwd); shift ;;
  --export) export_given=$(cd "$2" && pwd); shift ;;
  --builds-to) mkdir -p "$2" && builds_to=$(cd "$2" && pwd); shift ;;
  --compare) compare=("$2" "$3"); shift 2 ;;
  -h | --help) sed -n '4,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "test-deb: unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
for t in "${twice[@]}"; do
  if [[ " ${suites[*]} " != *" $t "* ]]; then
    echo "test-deb: --twice $t: not one of the --suite given" >&2
    exit 2
  fi
done

log() { echo "test-deb: $*"; }
fail() {
  echo "test-deb: FAIL: $*" >&2
  exit 1
}
cannot_run() {
  if [[ ${MYSQLTRACE_REQUIRE_PRIV:-0} = 1 ]]; then
    fail "cannot run: $* (MYSQLTRACE_REQUIRE_PRIV=1)"
  fi
  log "SKIPPED: $*"
  exit 0
}

if [[ ${#compare[@]} -gt 0 ]]; then
  tools=(dpkg-deb)
elif [[ $(id -u) -ne 0 ]]; then
  cannot_run "needs root (apt-get install and purge, BPF)"
elif [[ ${#suites[@]} -gt 0 ]]; then
  tools=(mmdebstrap unshare apt-ftparchive gpg dpkg-parsechangelog)
elif [[ -n $repo_uri ]]; then
  tools=(apt-get setpriv systemd-escape mariadbd mariadb)
else
  tools=(dpkg-buildpackage lintian apt-get setpriv systemd-escape mariadbd mariadb)
fi
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null ||
    cannot_run "$tool is missing (scripts/install-deps.sh installs it)"
done
if [[ ${#suites[@]} -eq 0 && ${#compare[@]} -eq 0 ]] && dpkg-query -W -f='${Status}' mysqltrace 2>/dev/null | grep -q ' installed$'; then
  fail "the mysqltrace package is installed here already; this test installs and purges it"
fi

build=$root/packaging/build-deb.sh
sandbox=$root/scripts/mariadb-sandbox.sh
arch=$(dpkg --print-architecture)
# (The package is amd64 only; a test chroot has no dpkg-dev.)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
mt=/usr/sbin/mysqltrace
shim=/usr/lib/$multiarch/mysqltrace/libmysqltrace-shim.so
# Debian 13's debhelper installs units under /usr (merged /usr).
unit=/lib/systemd/system/mysqltrace@.service
agent_unit=/lib/systemd/system/mysqltrace.service
work=$(mktemp -d -t mysqltrace-test-deb-XXXXXX)
installed=0
bg=""
times=()

cleanup() {
  local rc=$?
  if [[ -n $bg ]]; then kill "$bg" 2>/dev/null || true; fi
  if [[ -d $work/server ]]; then "$sandbox" stop "$work/server" >/dev/null 2>&1 || true; fi
  if [[ $installed = 1 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mysqltrace >/dev/null 2>&1 || true
  fi
  if [[ $keep = 1 || $rc -ne 0 ]]; then
    echo "test-deb: work directory kept: $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

step_start=$SECONDS
step_done() {
  times+=("$1 $((SECONDS - step_start))s")
  step_start=$SECONDS
}

# Files named *mysqltrace* outside the work trees: the same before install
# and after purge.
leftovers() {
  find /etc /usr /var /lib /opt /srv -xdev -name '*mysqltrace*' 2>/dev/null | sort
}
# build_twice OUT-PREFIX [build-deb.sh options]: builds the export into
# OUT-PREFIX-one and (unless --once) OUT-PREFIX-two-in-a-longer-directory.
build_twice() {
  local prefix=$1 b
  shift
  local -a builds=(one)
  [[ $once = 1 ]] || builds+=(two-in-a-longer-directory)
  for b in "${builds[@]}"; do
    log "building the package ($b${1:+ $*})"
    if ! "$build" --from "$export_dir" --out "$prefix-$b" --work "$prefix-build-$b" "$@" \
      >"$prefix-build-$b.log" 2>&1; then
      tail -n 40 "$prefix-build-$b.log" >&2
      fail "the package build failed (log: $prefix-build-$b.log)"
    fi
    step_done "build-$b${1:+-$2}"
  done
}

# Contents of a .deb, to compare when the archives themselves differ: the
# control files and every data member's metadata and checksum.
deb_contents() {
  local d=$2/x
  rm -rf "$d"
  mkdir -p "$d/control" "$d/data"
  dpkg-deb --ctrl-tarfile "$1" | tar -C "$d/control" -xf -
  dpkg-deb --fsys-tarfile "$1" | tar -C "$d/data" -xf -
  dpkg-deb --fsys-tarfile "$1" | tar -tvf - | sort -k6
  (cd "$d" && find . -type f -print0 | sort -z | xargs -0 md5sum)
}

# compare_builds OUT1 OUT2: the two builds made the same packages.
compare_builds() {
  local out=$1 two=$2 f
  (cd "$out" && ls -- *.deb) >"$work/debs-one"
  (cd "$two" && ls -- *.deb) >"$work/debs-two"
  diff -u "$work/debs-one" "$work/debs-two" || fail "the two builds made different packages"
  while read -r f; do
    if cmp -s "$out/$f" "$two/$f"; then
      log "reproducible: $f is byte for byte the same in both builds"
      continue
    fi
    deb_contents "$out/$f" "$work/cmp-one" >"$work/contents-one"
    deb_contents "$two/$f" "$work/cmp-two" >"$work/contents-two"
    if diff -u "$work/contents-one" "$work/contents-two" >"$work/contents.diff"; then
      log "reproducible: $f has the same contents in both builds (the archives differ)"
      continue
    fi
    if command -v diffoscope >/dev/null; then
      diffoscope --text - "$out/$f" "$two/$f" | head -n 200 >&2 || true
    else
      head -n 100 "$work/contents.diff" >&2
    fi
    fail "not reproducible: $f differs between two builds of the same tree"
  done <"$work/debs-one"
}

# check_lintian OUTPUT: no error, no warning that packaging/README.md does
# not list.
check_lintian() {
  local tag
  grep -v '^running with root privileges' "$1" | sed 's/^/  /' || true
  if grep -q '^E: ' "$1"; then
    fail "lintian reports errors"
  fi
  while read -r tag; do
    grep -q "\`$tag\`" "$root/packaging/README.md" ||
      fail "lintian warning $tag is neither fixed nor listed in packaging/README.md"
  done < <(sed -n 's/^W: [^:]*: \([^ ]*\).*/\1/p' "$1" | sort -u)
}

if [[ ${#compare[@]} -gt 0 ]]; then
  for d in "${compare[@]}"; do
    [[ -d $d ]] || fail "--compare: no directory $d"
  done
  compare_builds "${compare[@]}"
  exit 0
fi

# ---- --suite: build, lintian and the APT repository here, the rest in chroots ----
if [[ ${#suites[@]} -gt 0 ]]; then
  chroots=$root/packaging/deb-chroot.sh
  if [[ -n $export_given ]]; then
    export_dir=$export_given
    [[ -f $export_dir/debian/rules ]] || fail "--export $export_dir is not an export (no debian/rules)"
  elif [[ -z $use ]]; then
    export_dir=$("$build" --export-only "$work/export")
    step_done "export"
  fi
  repo_args=()
  # Making a chroot mostly waits for the mirror and the disk, a build for
  # the CPUs: the other chroots are made meanwhile, one at a time (a
  # build that needs one first waits on its lock).
  (
    for s in "${suites[@]:1}"; do "$chroots" path build "$s"; done
    for s in "${suites[@]}"; do "$chroots" path test "$s"; done
  ) >"$work/chroots.log" 2>&1 &
  bg=$!
  for s in "${suites[@]}"; do
    "$chroots" path build "$s" >/dev/null
    step_done "build-chroot-$s"
    built=$work/$s-one
    if [[ -n $use ]]; then
      built=$(cd "$use/$s" && pwd -P)
    else
      # once=1 for this suite alone when --twice names others only.
      local_once=$once
      if [[ ${#twice[@]} -gt 0 && " ${twice[*]} " != *" $s "* ]]; then
        local_once=1
      fi
      once=$local_once build_twice "$work/$s" --suite "$s"
      if [[ $local_once = 0 ]]; then
        compare_builds "$work/$s-one" "$work/$s-two-in-a-longer-directory"
        step_done "compare-$s"
      fi
      if [[ -n $builds_to ]]; then
        rm -rf "${builds_to:?}/$s"
        cp -a "$built" "$builds_to/$s"
      fi
    fi
    changes=$(echo "$built"/mysqltrace_*_"$arch".changes)
    [[ -f $changes ]] || fail "no .changes in $built"
    log "lintian $(basename "$changes") (in a $s chroot)"
    "$chroots" run build "$s" --ro-bind "$built" -- \
      lintian --display-info --tag-display-limit 0 "$changes" >"$work/lintian-$s.out" 2>&1 || true
    check_lintian "$work/lintian-$s.out"
    step_done "lintian-$s"
    repo_args+=("$s=$built")
  done
  log "an APT repository of ${suites[*]}"
  "$root/packaging/apt-repo.sh" --out "$work/repo" "${repo_args[@]}" >"$work/repo.log" 2>&1 ||
    fail "apt-repo.sh failed: $(cat "$work/repo.log")"
  # apt's unprivileged _apt user reads a file: repository.
  chmod 755 "$work"
  step_done "repository"
  wait "$bg" || fail "making the test chroots failed: $(tail -n 20 "$work/chroots.log")"
  bg=""
  step_done "test-chroots"
  for s in "${suites[@]}"; do
    log "$s: apt-get install mysqltrace from the repository in a clean chroot, trace, purge"
    "$chroots" run test "$s" --ro-bind "$root" --ro-bind "$work/repo" \
      --env MYSQLTRACE_REQUIRE_PRIV=1 -- \
      "$root/packaging/test-deb.sh" --from-repo "file:$work/repo" \
      "$work/repo/mysqltrace-archive-keyring.gpg" >"$work/chroot-$s.log" 2>&1 || {
      tail -n 40 "$work/chroot-$s.log" >&2
      fail "$s: the test of the installed package failed (log: $work/chroot-$s.log)"
    }
    sed 's/^/  /' "$work/chroot-$s.log"
    step_done "install-trace-purge-$s"
  done
  log "passed: ${times[*]}; total $((SECONDS))s"
  exit 0
fi

if [[ -n $repo_uri ]]; then
  # As README.md says ("Install from the APT repository"); before the
  # snapshot of files named *mysqltrace*, which these two are.
  . /etc/os-release
  install -D -m 0644 "$repo_key" /etc/apt/keyrings/mysqltrace.gpg
  echo "deb [signed-by=/etc/apt/keyrings/mysqltrace.gpg] $repo_uri $VERSION_CODENAME main" \
    >/etc/apt/sources.list.d/mysqltrace.list
  apt-get update -q >"$work/update.log" 2>&1 || fail "apt-get update: $(cat "$work/update.log")"
  if grep -q '^[WE]:' "$work/update.log"; then
    fail "apt-get update complains: $(grep '^[WE]:' "$work/update.log")"
  fi
fi
leftovers >"$work/before"

# ---- 1. Two builds of one export ----
if [[ -n $repo_uri ]]; then
  once=1
elif [[ -z $use ]]; then
  export_dir=$("$build" --export-only "$work/export")
  build_twice "$work/out"
else
  once=1
fi
if [[ -z $repo_uri ]]; then
  out=${use:-$work/out-one}
  debs=("$out"/mysqltrace_*_"$arch".deb)
  deb=${debs[0]}
  [[ ${#debs[@]} -eq 1 && -f $deb ]] || fail "not one mysqltrace .deb in $out"
  changes=${deb%.deb}.changes
  if [[ $once = 0 ]]; then
    compare_builds "$work/out-one" "$work/out-two-in-a-longer-directory"
    step_done "compare"
  fi

  # ---- 2. lintian ----
  log "lintian $(basename "$changes")"
  lintian --display-info --tag-display-limit 0 "$changes" >"$work/lintian.out" 2>&1 || true
  check_lintian "$work/lintian.out"
  step_done "lintian"
fi

# ---- 3. Install ----
installed=1
if [[ -n $repo_uri ]]; then
  log "apt-get install mysqltrace ($PRETTY_NAME, from $repo_uri)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q mysqltrace >"$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2
    fail "apt-get install mysqltrace failed"
  }
  sed -n '/^The following NEW packages/,/^[0-9]* upgraded/p' "$work/install.log"
  # That suite's build, with that suite's libraries.
  [[ $(dpkg-query -W -f='${Version}' mysqltrace) == *~deb${VERSION_ID}u[0-9]* ]] ||
    fail "installed mysqltrace $(dpkg-query -W -f='${Version}' mysqltrace), not a ~deb${VERSION_ID}u build"
  log "installed mysqltrace $(dpkg-query -W -f='${Version} (Depends: ${Depends})' mysqltrace)"
else
  log "apt-get install $deb"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$deb" \
    >"$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2
    fail "apt-get install failed"
  }
fi
dpkg -L mysqltrace | sort >"$work/files"
version=$(dpkg-query -W -f='${Version}' mysqltrace)
if grep -qxF "/usr$unit" "$work/files"; then
  unit=/usr$unit
  agent_unit=/usr$agent_unit
fi
for f in "$mt" "$shim" /usr/share/mysqltrace/schema.sql /usr/share/man/man8/mysqltrace.8.gz \
  /usr/share/bash-completion/completions/mysqltrace /usr/share/doc/mysqltrace/copyright \
  /usr/share/doc/mysqltrace/changelog.gz /usr/libexec/mysqltrace/mysqltrace-service "$unit" \
  /etc/mysqltrace/mysqltrace.conf "$agent_unit" /etc/mysqltrace/agent.conf \
  /usr/share/mysqltrace/grafana/mysqltrace-dashboard.json; do
  grep -qxF "$f" "$work/files" || fail "the package does not install $f"
  [[ -f $f ]] || fail "$f is missing after install"
done
# (A suite's build, VERSION~debNNuM, is of the program's VERSION.)
[[ $("$mt" --version) = "mysqltrace ${version%%~deb*}" ]] || fail "mysqltrace --version: $("$mt" --version)"
for f in /etc/mysqltrace/mysqltrace.conf /etc/mysqltrace/agent.conf; do
  dpkg-query -W -f='${Conffiles}\n' mysqltrace | grep -q " $f " || fail "$f is not a conffile"
done
[[ $(stat -c %a /var/log/mysqltrace) = 750 ]] || fail "/var/log/mysqltrace is not 0750"

# The man page: found by man, and a section for every subcommand there is.
[[ $(man -w mysqltrace) = /usr/share/man/man8/mysqltrace.8.gz ]] || fail "man -w mysqltrace"
MANWIDTH=100 MANPAGER=cat man mysqltrace 2>"$work/man.err" >"$work/man.txt"
[[ ! -s $work/man.err ]] || fail "man mysqltrace: $(cat "$work/man.err")"
subs=$("$mt" --help | sed -n '/^Subcommands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
[[ -n $subs ]] || fail "mysqltrace --help lists no subcommands"
# ... and a page of its own, which man finds and formats.
for s in $subs; do
  grep -q "^   mysqltrace $s\$" "$work/man.txt" || fail "man mysqltrace has no section for $s"
  [[ $(man -w "mysqltrace-$s") = /usr/share/man/man8/mysqltrace-$s.8.gz ]] ||
    fail "man -w mysqltrace-$s"
  MANWIDTH=100 MANPAGER=cat man "mysqltrace-$s" 2>"$work/man-$s.err" >"$work/man-$s.txt"
  [[ ! -s $work/man-$s.err ]] || fail "man mysqltrace-$s: $(cat "$work/man-$s.err")"
done
grep -q "^CONFIGURATION FILE" "$work/man-agent.txt" ||
  fail "man mysqltrace-agent does not describe the configuration file"
# The completion: subcommands, and options of each.
complete_line() {
  bash -c 'source /usr/share/bash-completion/completions/mysqltrace
    read -r -a COMP_WORDS <<<"$1"; COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _mysqltrace
    echo "${COMPREPLY[*]}"' complete "$1"
}
[[ $(complete_line "mysqltrace serv") = server ]] || fail "completion of 'mysqltrace serv'"
[[ $(complete_line "mysqltrace server --rotate-s") = --rotate-size ]] ||
  fail "completion of 'mysqltrace server --rotate-s'"
# The units: valid; installing enabled the agent's and not the template.
if command -v systemd-analyze >/dev/null; then
  mkdir -p "$work/unit"
  cp "$unit" "$work/unit/mysqltrace@mariadb.service"
  cp "$agent_unit" "$work/unit/mysqltrace.service"
  # --man=no: its check of Documentation=man:... formats the page as root,
  # which leaves a copy under /var/cache/man (man-db's to expire, not the
  # package's to purge); `man -w` above found the page already.
  systemd-analyze verify --man=no "$work/unit/mysqltrace@mariadb.service" \
    "$work/unit/mysqltrace.service" >"$work/verify.log" 2>&1 || true
  if [[ -s $work/verify.log ]]; then
    cat "$work/verify.log" >&2
    fail "systemd-analyze verify $unit $agent_unit"
  fi
fi
enabled=$(find /etc/systemd -name 'mysqltrace*' | sort | tr '\n' ' ')
[[ $enabled = "/etc/systemd/system/multi-user.target.wants/mysqltrace.service " ]] ||
  fail "installing enabled '$enabled', not the agent's unit alone"
# The documented default configuration: valid, json under /var/log/mysqltrace.
"$mt" agent --config /etc/mysqltrace/agent.conf --check-config >"$work/check-config.out" \
  2>"$work/check-config.err" ||
  fail "the installed agent.conf does not check: $(cat "$work/check-config.err")"
for line in "output_dir = /var/log/mysqltrace" "formats = json" "stages = sampled" \
  "metrics_listen = 127.0.0.1:9715" "control_socket = /run/mysqltrace/agent.sock"; do
  grep -qxF "$line" "$work/check-config.out" ||
    fail "agent --check-config of the installed agent.conf lacks '$line': $(cat "$work/check-config.out")"
done
printf '[agent]\nformats = json\nstagez = off\n' >"$work/bad.conf"
rc=0
"$mt" agent --config "$work/bad.conf" --check-config >/dev/null 2>"$work/bad.err" || rc=$?
[[ $rc -eq 2 ]] || fail "agent --check-config of a bad file exited $rc, not 2"
grep -q "^mysqltrace: $work/bad.conf:3: key 'stagez': unknown key (known: " "$work/bad.err" ||
  fail "agent --check-config of a bad file: $(cat "$work/bad.err")"
# An administrator's instance (systemctl enable works without a running
# systemd): the purge must not leave its link behind.
systemctl enable mysqltrace@mariadb.service >"$work/enable.log" 2>&1 ||
  fail "systemctl enable mysqltrace@mariadb.service: $(cat "$work/enable.log")"
[[ -L /etc/systemd/system/multi-user.target.wants/mysqltrace@mariadb.service ]] ||
  fail "systemctl enable made no link: $(cat "$work/enable.log")"
step_done "install"

# ---- 4. Trace with the installed program ----
log "$mt doctor"
"$mt" doctor >"$work/doctor.out" 2>&1 || {
  cat "$work/doctor.out" >&2
  fail "mysqltrace doctor failed"
}

log "a throwaway MariaDB server"
eval "$("$sandbox" start "$work/server")"
client() {
  mariadb --no-defaults --socket="$MT_SOCKET" -u"$MT_USER" -p"$MT_PASSWORD" "$@"
}
client -e "CREATE DATABASE debtest; CREATE TABLE debtest.t (id INT PRIMARY KEY, v VARCHAR(64))"

# Starts "$@" in the background, stderr to $1 (stdout next to it), until it
# reports its probes attached ("Ctrl-C to stop").
start_traced() {
  local err=$1
  shift
  "$@" >"${err%.err}.out" 2>"$err" &
  bg=$!
  for _ in $(seq 300); do
    grep -q "Ctrl-C to stop" "$err" 2>/dev/null && return 0
    kill -0 "$bg" 2>/dev/null || break
    sleep 0.1
  done
  cat "$err" >&2
  fail "$* did not start tracing"
}
# Ends the background trace with Ctrl-C; it must exit 0.
stop_traced() {
  sleep 0.5
  kill -INT "$bg"
  wait "$bg" || fail "the trace exited $? (stderr: $(cat "$1"))"
  bg=""
}

log "mysqltrace server with rotating output"
start_traced "$work/server.err" "$mt" server --pid "$MT_PID" --format json \
  --output "$work/server.json" --rotate-size 4k --rotate-keep 100
for i in $(seq 1 40); do
  echo "INSERT INTO t VALUES ($i, 'row $i of the package test');"
done | client debtest
# (The mariadb client strips comments: markers are string literals.)
client debtest -e "SELECT v, 'mysqltrace-deb-server' FROM t WHERE id = 7" >/dev/null
stop_traced "$work/server.err"
# (grep -q of a pipe would end cat with SIGPIPE, a failure under pipefail.)
grep -q "SELECT v, 'mysqltrace-deb-server' FROM t WHERE id = 7" "$work/server.json"* ||
  fail "the server trace lacks the statement (stderr: $(cat "$work/server.err"))"
# Every INSERT, across the rotated files (the default one-probe path sees
# statements, not MariaDB's Init DB and Quit commands).
[[ $(cat "$work/server.json"* | grep -c '"kind":"statement",.*"EVENT_NAME":"statement/sql/insert"') -eq 40 ]] ||
  fail "the server trace lacks statements"
[[ -f $work/server.json.1 ]] || fail "--rotate-size 4k did not rotate the trace"
for f in "$work/server.json"*; do
  [[ $(stat -c %s "$f") -le 4096 ]] || fail "$f is over the 4k rotation size"
done

log "mysqltrace run (the installed shim)"
# Debian 13's client (MariaDB 11.8) asks for TLS even over the socket, and
# its Connector/C puts the session on a BIO of its own, which names no
# socket; Debian 12's does not ask. The statement says which it was.
env -u MYSQLTRACE_SHIM "$mt" run --output "$work/run.trace" -- \
  mariadb --no-defaults --socket="$MT_SOCKET" -u"$MT_USER" -p"$MT_PASSWORD" debtest -N \
  -e "SELECT v, 'mysqltrace-deb-run', IF(VARIABLE_VALUE = '', 'plain', 'tls') FROM t,
      information_schema.SESSION_STATUS WHERE id = 8 AND VARIABLE_NAME = 'Ssl_cipher'" \
  >"$work/run.out" 2>"$work/run.err" ||
  fail "mysqltrace run failed: $(cat "$work/run.err")"
grep -q "row 8 of the package test" "$work/run.out" ||
  fail "the command's output did not pass through"
grep -q "with $shim," "$work/run.err" || fail "run did not use $shim: $(cat "$work/run.err")"
grep -q "SQL: SELECT v, 'mysqltrace-deb-run'" "$work/run.trace" ||
  fail "the run trace lacks the statement: $(cat "$work/run.err")"
if grep -q "tls$" "$work/run.out"; then
  grep -q "event: SSL_CONNECTED" "$work/run.trace" || fail "the run trace lacks the TLS handshake"
  log "run traced a TLS session"
fi

# systemd runs a service as root with only its unit's capabilities and no
# new privileges: unit_bounding UNIT sets `bounding` to setpriv's spelling
# of that set.
declare -A cap_bit=([CAP_DAC_READ_SEARCH]=2 [CAP_SYS_PTRACE]=19 [CAP_SYS_ADMIN]=21
  [CAP_SYS_RESOURCE]=24 [CAP_PERFMON]=38 [CAP_BPF]=39)
machine_caps=$((16#$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status)))
unit_bounding() {
  local c
  local -a unit_caps
  bounding=-all
  # (systemd adds up several CapabilityBoundingSet= lines.)
  read -r -a unit_caps < <(sed -n 's/^CapabilityBoundingSet=//p' "$1" | tr '\n' ' ' && echo)
  [[ ${#unit_caps[@]} -gt 0 ]] || fail "$1 sets no CapabilityBoundingSet"
  for c in "${unit_caps[@]}"; do
    [[ -n ${cap_bit[$c]:-} ]] || fail "$1 has $c: teach this test its number"
    # A container may lack one itself (CAP_SYS_RESOURCE, which kernels since
    # 5.11 do not need for BPF): setpriv cannot grant it.
    if (((machine_caps >> cap_bit[$c]) & 1)); then
      bounding+=",+$(echo "${c#CAP_}" | tr '[:upper:]' '[:lower:]')"
    else
      log "this machine's bounding set lacks $c: $(basename "$1")'s command runs without it"
    fi
  done
}

log "mysqltrace agent (the agent unit's command, agent.conf and capabilities)"
unit_bounding "$agent_unit"
read -r -a agent_cmd < <(sed -n 's/^ExecStart=//p' "$agent_unit")
[[ "${agent_cmd[*]}" = "$mt agent --config /etc/mysqltrace/agent.conf" ]] ||
  fail "$agent_unit runs '${agent_cmd[*]}'"
# Only the throwaway server: the machine's own (or other tests') are not ours.
# The file's metrics endpoint and control socket, on a free port and a
# socket of the test's (the machine may run an agent of its own).
start_traced "$work/agent.err" setpriv --no-new-privs --inh-caps=-all --bounding-set="$bounding" -- \
  "${agent_cmd[@]}" --socket-prefix "$work/server/" --metrics-listen 127.0.0.1:0 \
  --control-socket "$work/agent.sock"
for _ in $(seq 600); do
  grep -q "^mysqltrace: attached pid=$MT_PID " "$work/agent.err" && break
  kill -0 "$bg" 2>/dev/null || break
  sleep 0.1
done
agent_dir=$(sed -n "s/^mysqltrace: attached pid=$MT_PID .* dir=\([^ ]*\) formats=json .*/\1/p" "$work/agent.err")
[[ $agent_dir = /var/log/mysqltrace/*mariadb-$MT_PORT ]] ||
  fail "the agent did not attach the server into /var/log/mysqltrace: $(cat "$work/agent.err")"
for i in $(seq 1 5); do
  echo "SELECT v, 'mysqltrace-deb-agent' FROM t WHERE id = $i;"
done | client debtest >/dev/null
# The statements on the metrics page (a scrape over bash's /dev/tcp: no
# HTTP client in the chroot) and through the control socket (mysqltrace top).
metrics=$(sed -n 's|^mysqltrace: metrics at http://\([^/]*\)/metrics$|\1|p' "$work/agent.err")
[[ -n $metrics ]] || fail "the agent did not serve its metrics: $(cat "$work/agent.err")"
for _ in $(seq 50); do
  exec 3<>"/dev/tcp/${metrics%:*}/${metrics##*:}"
  printf 'GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n' "$metrics" >&3
  cat <&3 >"$work/metrics.txt"
  exec 3<&-
  grep -q "^mysqltrace_statements_total{.*command=\"statement/sql/select\".*} 5$" \
    "$work/metrics.txt" && break
  sleep 0.1
done
grep -q "^mysqltrace_statements_total{.*command=\"statement/sql/select\".*} 5$" "$work/metrics.txt" ||
  fail "the metrics page does not count the 5 SELECTs: $(grep '^mysqltrace_statements_total' "$work/metrics.txt")"
"$mt" top --control-socket "$work/agent.sock" --batch --duration 1.5 >"$work/top.out" 2>&1 ||
  fail "mysqltrace top failed: $(cat "$work/top.out")"
grep -qF "SELECT v, ? FROM t WHERE id = ?" "$work/top.out" ||
  fail "mysqltrace top does not show the SELECTs: $(cat "$work/top.out")"
# The unit's ExecReload (kill -HUP): the file read again, nothing changed.
kill -HUP "$bg"
for _ in $(seq 100); do
  grep -q "SIGHUP: read /etc/mysqltrace/agent.conf again" "$work/agent.err" && break
  sleep 0.1
done
grep -q "SIGHUP: read /etc/mysqltrace/agent.conf again" "$work/agent.err" ||
  fail "the agent did not read its configuration again on SIGHUP: $(cat "$work/agent.err")"
client debtest -e "SELECT v, 'mysqltrace-deb-agent' FROM t WHERE id = 6" >/dev/null
kill -TERM "$bg"
wait "$bg" || fail "the agent exited $? (stderr: $(cat "$work/agent.err"))"
bg=""
# The 6 SELECTs; on a server without the one-probe path (Debian 13's
# MariaDB 11.8) also the clients' commands (statement/com/...): the totals
# count every one the file holds.
[[ $(grep -c '"kind":"statement",.*"EVENT_NAME":"statement/sql/select"' "$agent_dir/statements.json") -eq 6 &&
  $(grep -c "'mysqltrace-deb-agent' FROM t WHERE id = [1-6]\"" "$agent_dir/statements.json") -eq 6 ]] ||
  fail "$agent_dir/statements.json does not hold the 6 statements: $(cat "$work/agent.err")"
n=$(grep -c '"kind":"statement"' "$agent_dir/statements.json")
grep -q "^mysqltrace: detached pid=$MT_PID (terminated): $n statements, 0 records dropped" \
  "$work/agent.err" || fail "the agent's totals are not the file's $n statements: $(cat "$work/agent.err")"
[[ $(stat -c %a "$agent_dir/statements.json") = 600 ]] || fail "the agent's trace is not 0600"
[[ ! -e $agent_dir/slow.log ]] || fail "the default agent.conf wrote a slow log"

log "mysqltrace-service (the unit's wrapper, settings and capabilities)"
pidfile=$work/server/mariadbd.pid
instance=$(systemd-escape --path "$pidfile")
mkdir -p "$work/conf"
cp /etc/mysqltrace/mysqltrace.conf "$work/conf/"
cat >"$work/conf/$instance.conf" <<'EOF'
SERVER_OPTIONS="--duration 4"
ROTATE_SIZE=2k
ROTATE_KEEP=3
EOF
# %I is the unescaped instance, %i the escaped one.
unit_bounding "$unit"
start_traced "$work/service.err" env MYSQLTRACE_CONF_DIR="$work/conf" \
  setpriv --no-new-privs --inh-caps=-all --bounding-set="$bounding" -- \
  /usr/libexec/mysqltrace/mysqltrace-service "${pidfile#/}" "$instance"
client debtest -e "SELECT v, 'mysqltrace-deb-service' FROM t WHERE id = 9" >/dev/null
wait "$bg" || fail "mysqltrace-service exited $? ($(cat "$work/service.err"))"
bg=""
grep -q 'mysqltrace-deb-service' "/var/log/mysqltrace/$instance.json"* ||
  fail "the service's trace /var/log/mysqltrace/$instance.json lacks the statement" \
    "($(cat "$work/service.err"))"
[[ $(stat -c %a "/var/log/mysqltrace/$instance.json") = 600 ]] ||
  fail "the service's trace is not 0600"
mkdir -p "$work/conf-nopid"
echo "WAIT_SECONDS=2" >"$work/conf-nopid/mysqltrace.conf"
if MYSQLTRACE_CONF_DIR="$work/conf-nopid" /usr/libexec/mysqltrace/mysqltrace-service \
  "$work/no-such.pid" >/dev/null 2>"$work/nopid.err"; then
  fail "mysqltrace-service traced a server that does not exist"
fi
grep -q "no server running for $work/no-such.pid after 2s" "$work/nopid.err" ||
  fail "mysqltrace-service without a server: $(cat "$work/nopid.err")"

log "pfs-sql trace files, merged and loaded into schema.sql's tables"
start_traced "$work/pfs.err" "$mt" server --pid "$MT_PID" --format pfs-sql --output "$work/pfs"
client debtest -e "SELECT COUNT(*), 'mysqltrace-deb-pfs' FROM t WHERE v LIKE 'row 1%'" >/dev/null
stop_traced "$work/pfs.err"
"$mt" merge "$work/pfs"/thread.* >"$work/merged.sql" || fail "mysqltrace merge failed"
client -e "CREATE DATABASE pfs_trace"
client pfs_trace </usr/share/mysqltrace/schema.sql || fail "schema.sql does not load"
client pfs_trace <"$work/merged.sql" ||
  fail "the merged trace does not load into schema.sql's tables"
n=$(client -N pfs_trace -e "SELECT COUNT(*) FROM events_statements_current
                            WHERE SQL_TEXT LIKE '%mysqltrace-deb-pfs%'")
[[ $n -ge 1 ]] || fail "the loaded trace lacks the statement"
"$sandbox" stop "$work/server"
step_done "trace"

# ---- 5. Purge ----
log "apt-get purge mysqltrace"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mysqltrace >"$work/purge.log" 2>&1 || {
  cat "$work/purge.log" >&2
  fail "apt-get purge failed"
}
installed=0
if dpkg-query -W -f='${Status}' mysqltrace 2>/dev/null | grep -qv '^unknown ok not-installed$'; then
  fail "dpkg still knows mysqltrace after the purge: $(dpkg-query -W -f='${Status}' mysqltrace)"
fi
# Directories shared with others (/usr/sbin, /usr/share/man/man8, ...) stay;
# those of the package are named *mysqltrace* and checked below.
while read -r f; do
  if [[ -d $f ]]; then continue; fi
  [[ ! -e $f && ! -L $f ]] || fail "$f is left after the purge"
done <"$work/files"
for d in /etc/mysqltrace /var/log/mysqltrace /usr/libexec/mysqltrace /usr/share/mysqltrace \
  "/usr/lib/$multiarch/mysqltrace" /usr/share/doc/mysqltrace; do
  [[ ! -e $d ]] || fail "$d is left after the purge"
done
leftovers >"$work/after"
diff -u "$work/before" "$work/after" >&2 || fail "files named *mysqltrace* are left after the purge"
step_done "purge"

log "passed: ${times[*]}; total $((SECONDS))s"
