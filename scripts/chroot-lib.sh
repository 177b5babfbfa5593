# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Sourced by scripts/mysql-sandbox.sh and the Debian package scripts
# (packaging/build-deb.sh --suite, packaging/test-deb.sh --suite): cached
# Debian chroots made with mmdebstrap, and commands run in a throwaway
# overlay of one, in a private mount namespace.
#
# The caller defines die MESSAGE... (prints and exits). Environment:
# DEBIAN_MIRROR (or MYSQL_MIRROR; default: the Debian URI apt uses here),
# MT_CHROOT_TIMEOUT (s to wait for another process building the same
# chroot, 900).

CHROOT_TIMEOUT=${MT_CHROOT_TIMEOUT:-900}

# The first Debian (not security) URI of apt's own sources: the machine's
# mirror, perhaps a frozen snapshot, is the one known to be reachable.
chroot_mirror() {
    local uri=${DEBIAN_MIRROR:-${MYSQL_MIRROR:-}}
    if [[ -n $uri ]]; then
        echo "$uri"
        return
    fi
    uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
        awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }')
    if [[ -z $uri ]]; then
        uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
            awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($i !~ /security/) { print $i; exit } break } }')
    fi
    [[ -n $uri ]] || die "no Debian mirror in /etc/apt/sources.list{,.d}; set DEBIAN_MIRROR"
    echo "$uri"
}

# chroot_ready DIR STAMP: DIR is a finished chroot made for STAMP.
chroot_ready() {
    [[ -r $1/.mysqltrace-chroot && $(<"$1/.mysqltrace-chroot") == "$2" ]]
}

chroot_in_use() { # dir
    local r
    for r in /proc/[0-9]*/root; do
        [[ $(readlink "$r" 2>/dev/null) == "$1"/* ]] && return 0
    done
    return 1
}

# chroot_ensure DIR SUITE VARIANT STAMP PACKAGE...: makes DIR a chroot of
# SUITE (mmdebstrap --variant=VARIANT) holding PACKAGE... unless it is one
# already for the same STAMP (which should name everything that went into
# it: a new STAMP rebuilds it). Built once: into a temporary directory next
# to DIR, published by rename, under a lock so parallel callers wait for one
# build.
chroot_ensure() {
    local dir=$1 suite=$2 variant=$3 stamp=$4
    shift 4
    chroot_ready "$dir" "$stamp" && return 0
    [[ $(id -u) -eq 0 ]] || die "building the $suite chroot $dir needs root"
    command -v mmdebstrap >/dev/null || die "mmdebstrap is missing (scripts/install-deps.sh installs it)"
    mkdir -p "$(dirname "$dir")"
    local lock_fd
    exec {lock_fd}>"$dir.lock"
    flock -w "$CHROOT_TIMEOUT" "$lock_fd" ||
        die "another build of $dir held its lock for ${CHROOT_TIMEOUT}s"
    if chroot_ready "$dir" "$stamp"; then
        exec {lock_fd}>&-
        return 0
    fi
    local mirror tmp started=$SECONDS packages
    mirror=$(chroot_mirror)
    tmp=$(mktemp -d "$dir.build.XXXXXX")
    packages=$(
        IFS=,
        echo "$*"
    )
    echo "chroot: building $dir ($suite, $variant: $*) from $mirror" >&2
    # The mirror may be a frozen snapshot whose Release files have expired;
    # the option stays in the chroot's apt configuration for later updates.
    # dpkg's fsyncs are most of the time of an install here; a chroot that a
    # crash interrupts is never published, so they buy nothing.
    local -a speed=(--dpkgopt=force-unsafe-io)
    if [[ -d /usr/share/mmdebstrap/hooks/eatmydata ]]; then
        speed+=(--hook-dir=/usr/share/mmdebstrap/hooks/eatmydata)
    fi
    if ! mmdebstrap --variant="$variant" --aptopt='Acquire::Check-Valid-Until "false"' \
        "${speed[@]}" ${packages:+--include="$packages"} "$suite" "$tmp" "$mirror" \
        >"$tmp.log" 2>&1; then
        tail -n 30 "$tmp.log" >&2
        rm -rf --one-file-system -- "$tmp"
        die "mmdebstrap failed (log: $tmp.log)"
    fi
    # Servers resolve 127.0.0.1/localhost through the chroot's files.
    cp /etc/hosts "$tmp/etc/hosts"
    echo "$stamp" >"$tmp/.mysqltrace-chroot"
    local old
    if [[ -e $dir ]]; then
        # An older stamp. Processes may still run in it: it goes aside, and
        # only once no process has its root there is it removed
        # (--one-file-system, in case something is mounted in it).
        old=$(mktemp -d "$dir.old.XXXXXX")
        mv -T "$dir" "$old/chroot"
    fi
    mv -T "$tmp" "$dir"
    for old in "$dir".old.*; do
        [[ -d $old ]] && ! chroot_in_use "$old" && rm -rf --one-file-system -- "$old"
    done
    rm -f "$tmp.log"
    echo "chroot: built $dir in $((SECONDS - started)) s" >&2
    exec {lock_fd}>&-
}

# chroot_overlay_run BASE SCRATCH [--bind DIR]... [--ro-bind DIR]... [--env NAME=VALUE]... -- COMMAND...
# Runs COMMAND as root in a writable overlay of the chroot BASE, so BASE is
# never changed and every run starts from the same clean tree. What the run
# writes goes to SCRATCH (a new or empty directory, on a file system that can
# hold an overlay's upper layer; the caller removes it). In a private mount
# namespace (nothing mounted there reaches the host, and everything goes
# away with the last process): /proc, /sys with tracefs and the BPF file
# system, the host's /dev, resolv.conf, and each DIR at its own path. No pid
# namespace: pids inside are host pids. COMMAND's environment is a clean
# one (PATH, HOME, LANG=C.UTF-8) plus the --env assignments.
chroot_overlay_run() {
    local base=$1 scratch=$2
    shift 2
    local -a binds=() ro_binds=() envs=()
    while [[ $# -gt 0 && $1 != -- ]]; do
        case $1 in
        --bind) binds+=("$(cd "$2" && pwd -P)") ;;
        --ro-bind) ro_binds+=("$(cd "$2" && pwd -P)") ;;
        --env) envs+=("$2") ;;
        *) die "chroot_overlay_run: unknown option $1" ;;
        esac
        shift 2
    done
    [[ $# -ge 2 && $1 == -- ]] || die "chroot_overlay_run: no command"
    shift
    mkdir -p "$scratch/upper" "$scratch/work" "$scratch/root"
    local spec
    spec="$(printf '%s\n' "${binds[@]/#/rw:}" "${ro_binds[@]/#/ro:}" | grep -v '^$' || true)"
    # shellcheck disable=SC2016 # expanded by the inner bash
    unshare --mount --propagation private -- /bin/bash -ec '
        base=$1 scratch=$2 spec=$3
        shift 3
        root=$scratch/root
        mount -t overlay -o "lowerdir=$base,upperdir=$scratch/upper,workdir=$scratch/work" \
            mysqltrace-chroot "$root"
        mount -t proc proc "$root/proc"
        mount -t sysfs sysfs "$root/sys"
        mount -t tracefs nodev "$root/sys/kernel/tracing"
        mount -t bpf bpf "$root/sys/fs/bpf"
        mount --rbind /dev "$root/dev"
        rm -f "$root/etc/resolv.conf"
        cp /etc/resolv.conf "$root/etc/resolv.conf"
        while IFS= read -r line; do
            [[ -n $line ]] || continue
            mode=${line%%:*} dir=${line#*:}
            mkdir -p "$root$dir"
            mount --bind "$dir" "$root$dir"
            if [[ $mode == ro ]]; then mount -o remount,bind,ro "$root$dir"; fi
        done <<<"$spec"
        exec chroot "$root" "$@"' \
        chroot-run "$base" "$scratch" "$spec" \
        /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "${envs[@]}" "$@"
}
