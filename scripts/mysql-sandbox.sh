#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A throwaway Oracle MySQL server (Debian sid's mysql-server-core, 9.7) in a
# directory of its own, next to scripts/mariadb-sandbox.sh and with its
# conventions: user mt / password mtpass over TCP (127.0.0.1) and the unix
# socket, root (no password) over the socket, no binary log.
#
#   mysql-sandbox.sh start DIR [--performance-schema[=off]] [-- MYSQLD-ARGS...]
#       Initialise and start a server in DIR (must not exist or be empty),
#       wait until it answers, print MT_* shell assignments (also in DIR/env).
#       performance_schema stays at 9.7's default (ON, default instruments)
#       unless --performance-schema (everything on) or =off.
#   mysql-sandbox.sh status DIR    exit 0 if the server answers, 1 if not
#   mysql-sandbox.sh stop DIR      shut it down and remove DIR
#   mysql-sandbox.sh chroot        print the sid chroot's path (built if needed)
#   mysql-sandbox.sh exec DIR -- PROGRAM [ARGS...]
#       Run a program of the chroot (e.g. /usr/bin/mysql) with DIR visible at
#       its host path; the process keeps the pid this script started with.
#   mysql-sandbox.sh client DIR [MYSQL-ARGS...]
#       The chroot's mysql CLI, logged in as mt over DIR's socket.
#
# The server is the chroot's /usr/sbin/mysqld started from the host, so its
# pid is a host pid, in a private mount namespace holding /proc and DIR
# (bind-mounted at DIR's own path, on a tmpfs of that namespace, so paths
# agree inside and out): the mounts go away with the process, nothing stays
# mounted on the host and the shared chroot does not change. From the host,
# /proc/PID/exe and /proc/PID/maps show the chroot's files at their host
# paths (/var/cache/mysqltrace/mysql-sid/usr/sbin/mysqld), /proc/PID/root is
# the chroot, and /proc/PID/fd shows DIR's files under the chroot's path.
#
# Environment: MYSQL_CHROOT (default /var/cache/mysqltrace/mysql-sid),
# MYSQL_MIRROR (default: the Debian URI apt uses), MARIADB_CLIENT (the host
# client used to ping, default /usr/bin/mariadb), MT_START_TIMEOUT (s, 60),
# MT_STOP_TIMEOUT (s, 30), MT_CHROOT_TIMEOUT (s to wait for another build, 900).
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
SANDBOX_NAME=mysql-sandbox
SANDBOX_SERVER=mysqld
SANDBOX_PID_FILE=mysqld.pid
SANDBOX_PORT_TAKEN='Do you already have another mysqld server running on port'
# shellcheck source=scripts/sandbox-lib.sh
source "${SELF%/*}/sandbox-lib.sh"
# shellcheck source=scripts/chroot-lib.sh
source "${SELF%/*}/chroot-lib.sh"
# Everything the chroot holds besides sid's essentials: the server, Oracle's
# CLI and client library (headers too, for programs built against it), and CA
# certificates for TLS tests. Changing the list rebuilds the cached chroot.
readonly CHROOT_PACKAGES=(mysql-server-core mysql-client libmysqlclient-dev ca-certificates)
# Bump when the chroot's preparation below changes, to rebuild caches.
readonly CHROOT_FORMAT=1
MYSQL_CHROOT=${MYSQL_CHROOT:-/var/cache/mysqltrace/mysql-sid}

# MariaDB's list plus MySQL's events_statements_cpu.
PFS_CONSUMERS=(
    events-stages-current events-stages-history events-stages-history-long
    events-statements-cpu events-statements-current events-statements-history
    events-statements-history-long events-transactions-current events-transactions-history events-transactions-history-long
    events-waits-current events-waits-history events-waits-history-long
    global-instrumentation statements-digest thread-instrumentation
)

usage() {
    sed -n '9,22p' "$SELF" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# Builds the chroot once (scripts/chroot-lib.sh: cached, under a lock, published
# by rename; an older stamp is rebuilt).
ensure_chroot() {
    chroot_ensure "$MYSQL_CHROOT" sid apt "format $CHROOT_FORMAT; packages ${CHROOT_PACKAGES[*]}" \
        "${CHROOT_PACKAGES[@]}"
}

# Where DIR's mount point goes, without a directory per sandbox in the
# shared chroot: prints the chroot directory that the server's namespace
# covers with a tmpfs of its own, in which the rest of DIR's path is then
# made. That is DIR's deepest ancestor the chroot has, if it holds nothing a
# server needs (/tmp, /home, ...: hidden in that namespace only), so every
# sandbox under /tmp leaves nothing behind. Elsewhere (under /var, or /work
# which the chroot lacks) the next component below it is created on disk
# once and kept: removing it while another sandbox's namespace has a mount
# on it would detach that mount (rmdir succeeds on mount points of other
# namespaces). Prints nothing when the chroot has DIR itself.
mount_base() {
    local dir=$1 path="" part
    local IFS=/
    for part in ${dir#/}; do
        if [[ -d $MYSQL_CHROOT$path/$part ]]; then
            path+=/$part
            continue
        fi
        case $path/ in
        /tmp/* | /var/tmp/* | /home/* | /root/* | /srv/* | /mnt/* | /media/* | /opt/*)
            echo "$path"
            ;;
        *)
            mkdir "$MYSQL_CHROOT$path/$part" 2>/dev/null || [[ -d $MYSQL_CHROOT$path/$part ]] ||
                die "cannot create $MYSQL_CHROOT$path/$part"
            echo "$path/$part"
            ;;
        esac
        return
    done
}

# exec DIR -- PROGRAM ARGS...: replaces this shell with PROGRAM run in the
# chroot, in a private mount namespace (unshare's default propagation is
# private, so nothing mounted there reaches the host). exec all the way
# down, so the caller's child pid is PROGRAM's pid.
cmd_exec() {
    [[ $# -ge 3 && $2 == -- ]] || usage
    [[ -d $1 ]] || die "no such directory: $1"
    local dir
    dir=$(abs_dir "$1")
    shift 2
    ensure_chroot
    local base
    base=$(mount_base "$dir")
    # shellcheck disable=SC2016 # expanded by the inner sh
    exec unshare --mount --propagation private -- /bin/sh -ec '
        root=$1 dir=$2 base=$3
        shift 3
        mount -t proc proc "$root/proc"
        if [ -n "$base" ]; then
            mount -t tmpfs -o mode=0755,size=1m mysqltrace "$root$base"
            mkdir -p "$root$dir"
        fi
        mount --bind "$dir" "$root$dir"
        exec chroot "$root" "$@"' sh "$MYSQL_CHROOT" "$dir" "$base" "$@"
}

cmd_start() {
    [[ $# -ge 1 ]] || usage
    local dir=$1
    shift
    local pfs=default
    local -a extra=()
    while [[ $# -gt 0 ]]; do
        case $1 in
        --performance-schema | --performance-schema=on) pfs=full ;;
        --performance-schema=off) pfs=off ;;
        --)
            shift
            extra=("$@")
            break
            ;;
        *) die "unknown option: $1" ;;
        esac
        shift
    done
    [[ $(id -u) -eq 0 ]] || die "start needs root (chroot, mount namespace)"

    sandbox_make_dir "$dir"
    ensure_chroot

    # Runs at the end of --initialize. caching_sha2_password is 9.x's only
    # password plugin; two hosts because a socket login is 'localhost' and a
    # TCP login under --skip-name-resolve is '127.0.0.1' (matched by '%').
    cat >"$dir/init.sql" <<EOF
CREATE USER '$MT_USER_NAME'@'localhost' IDENTIFIED WITH caching_sha2_password BY '$MT_USER_PASSWORD';
CREATE USER '$MT_USER_NAME'@'%' IDENTIFIED WITH caching_sha2_password BY '$MT_USER_PASSWORD';
GRANT ALL PRIVILEGES ON *.* TO '$MT_USER_NAME'@'localhost' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO '$MT_USER_NAME'@'%' WITH GRANT OPTION;
EOF
    # --tmpdir: keep the bootstrap's temporary files out of a shared /tmp.
    if ! "$SELF" exec "$dir" -- /usr/sbin/mysqld --no-defaults --user=root \
        --initialize-insecure --datadir="$dir/data" --init-file="$dir/init.sql" \
        --tmpdir="$dir" --log-error="$dir/install.log" </dev/null >>"$dir/install.log" 2>&1; then
        tail -n 20 "$dir/install.log" >&2
        die "mysqld --initialize-insecure failed (log: $dir/install.log)"
    fi

    local -a pfs_args=()
    case $pfs in
    off) pfs_args=(--performance-schema=OFF) ;;
    full) sandbox_pfs_full "${PFS_CONSUMERS[@]}" ;;
    esac

    launch() {
        # setsid: the server outlives this script and the caller's terminal.
        setsid "$SELF" exec "$dir" -- /usr/sbin/mysqld --no-defaults --user=root \
            --datadir="$dir/data" --socket="$dir/mysql.sock" --port="$1" \
            --bind-address=127.0.0.1 --pid-file="$dir/$SANDBOX_PID_FILE" \
            --log-error="$dir/error.log" --tmpdir="$dir" \
            --secure-file-priv= --mysqlx=OFF --skip-log-bin --skip-name-resolve \
            "${pfs_args[@]}" "${extra[@]}" \
            </dev/null >>"$dir/error.log" 2>&1 &
    }
    local port pid
    sandbox_run "$dir" launch
    sandbox_env "$dir" "$port" "$pid" MT_CHROOT="$MYSQL_CHROOT"
}

cmd_client() {
    [[ $# -ge 1 ]] || usage
    local dir
    dir=$(abs_dir "$1")
    shift
    exec "$SELF" exec "$dir" -- /usr/bin/mysql --no-defaults --protocol=socket \
        --socket="$dir/mysql.sock" --user="$MT_USER_NAME" --password="$MT_USER_PASSWORD" "$@"
}

cmd_chroot() {
    [[ $# -eq 0 ]] || usage
    ensure_chroot
    echo "$MYSQL_CHROOT"
}

[[ $# -ge 1 ]] || usage
command=$1
shift
case $command in
start) cmd_start "$@" ;;
stop) cmd_stop "$@" ;;
status) cmd_status "$@" ;;
chroot) cmd_chroot "$@" ;;
exec) cmd_exec "$@" ;;
client) cmd_client "$@" ;;
*) usage ;;
esac
