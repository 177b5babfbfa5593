#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A throwaway MariaDB server in a directory of its own, for the demo and the
# benchmarks. Same conventions as the C++ test harness
# (tests/harness/mariadb_server.cpp): user mt / password mtpass over TCP
# (127.0.0.1) and the unix socket, root over the socket, no binary log.
#
#   mariadb-sandbox.sh start DIR [--performance-schema] [-- MARIADBD-ARGS...]
#       Initialise and start a server in DIR (must not exist or be empty),
#       wait until it answers, print MT_* shell assignments (also in DIR/env).
#   mariadb-sandbox.sh status DIR    exit 0 if the server answers, 1 if not
#   mariadb-sandbox.sh stop DIR      shut it down and remove DIR
#
# Environment: MARIADBD (default /usr/sbin/mariadbd), MARIADB_INSTALL_DB,
# MARIADB_CLIENT, MT_START_TIMEOUT (s, default 60), MT_STOP_TIMEOUT (s, 30).
set -euo pipefail

readonly MT_USER_NAME=mt
readonly MT_USER_PASSWORD=mtpass
# Marks a directory this script made, so stop never removes anything else.
readonly MARKER=.mysqltrace-sandbox
MARIADBD=${MARIADBD:-/usr/sbin/mariadbd}
MARIADB_INSTALL_DB=${MARIADB_INSTALL_DB:-/usr/bin/mariadb-install-db}
MARIADB_CLIENT=${MARIADB_CLIENT:-/usr/bin/mariadb}
START_TIMEOUT=${MT_START_TIMEOUT:-60}
STOP_TIMEOUT=${MT_STOP_TIMEOUT:-30}

PFS_CONSUMERS=(
    events-stages-current events-stages-history events-stages-history-long
    events-statements-current events-statements-history events-statements-history-long
    events-transactions-current events-transactions-history events-transactions-history-long
    events-waits-current events-waits-history events-waits-history-long
    global-instrumentation statements-digest thread-instrumentation
)

die() {
    echo "mariadb-sandbox: $*" >&2
    exit 1
}

usage() {
    sed -n '9,15p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# The kernel hands out a port that is free now; start retries if mariadbd
# loses the race for it.
free_port() {
    perl -MIO::Socket::INET -e '
        my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0, Proto => "tcp")
            or die "cannot bind a loopback port: $!\n";
        print $s->sockport, "\n";'
}

ping_server() {
    "$MARIADB_CLIENT" --no-defaults --protocol=socket --socket="$1" \
        --user="$MT_USER_NAME" --password="$MT_USER_PASSWORD" \
        --connect-timeout=2 --batch --skip-column-names -e 'SELECT 1' >/dev/null 2>&1
}

# Prints the pid only if it is a live mariadbd serving DIR's datadir, so a
# stale pid file never gets an unrelated process killed.
server_pid() {
    local dir=$1 pid
    [[ -r $dir/mariadbd.pid ]] || return 1
    pid=$(<"$dir/mariadbd.pid")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [[ -r /proc/$pid/cmdline ]] || return 1
    tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qxF -- "--datadir=$dir/data" || return 1
    echo "$pid"
}

# A stopped server stays a zombie until init reaps it, which can take a
# while; it no longer holds the datadir, so it counts as gone.
alive() {
    local state
    state=$(sed -n 's/^.*) \(.\).*$/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ -n $state && $state != Z ]]
}

abs_dir() {
    (cd "$1" && pwd -P)
}

cmd_start() {
    [[ $# -ge 1 ]] || usage
    local dir=$1
    shift
    local pfs=0
    local -a extra=()
    while [[ $# -gt 0 ]]; do
        case $1 in
        --performance-schema) pfs=1 ;;
        --)
            shift
            extra=("$@")
            break
            ;;
        *) die "unknown option: $1" ;;
        esac
        shift
    done

    if [[ -e $dir ]]; then
        [[ -d $dir ]] || die "$dir exists and is not a directory"
        [[ -z $(ls -A "$dir") ]] || die "$dir is not empty"
    else
        mkdir -p "$dir"
    fi
    dir=$(abs_dir "$dir")
    chmod 700 "$dir"
    : >"$dir/$MARKER"

    local sock=$dir/mysql.sock
    # sun_path holds 107 characters; mariadbd would fail with a vaguer message.
    [[ ${#sock} -le 107 ]] || die "socket path too long (${#sock} > 107): $sock"

    local -a user_arg=()
    if [[ $(id -u) -eq 0 ]]; then
        user_arg=(--user=root)
    fi

    # FLUSH PRIVILEGES loads the grant tables, which the bootstrap server runs
    # without; CREATE USER is refused until then. Two hosts because a socket
    # login is 'localhost' and a TCP login under --skip-name-resolve is
    # '127.0.0.1'.
    cat >"$dir/init.sql" <<EOF
FLUSH PRIVILEGES;
CREATE USER '$MT_USER_NAME'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('$MT_USER_PASSWORD');
CREATE USER '$MT_USER_NAME'@'%' IDENTIFIED VIA mysql_native_password USING PASSWORD('$MT_USER_PASSWORD');
GRANT ALL PRIVILEGES ON *.* TO '$MT_USER_NAME'@'localhost' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO '$MT_USER_NAME'@'%' WITH GRANT OPTION;
EOF
    # --tmpdir: every mariadbd deletes #sql* files in its tmpdir at startup;
    # in a shared /tmp that would include this bootstrap's temporary tables.
    if ! "$MARIADB_INSTALL_DB" --no-defaults --datadir="$dir/data" --skip-test-db \
        --skip-name-resolve --auth-root-authentication-method=socket \
        --extra-file="$dir/init.sql" --tmpdir="$dir" --innodb-log-file-size=16M \
        "${user_arg[@]}" \
        >"$dir/install.log" 2>&1; then
        tail -n 20 "$dir/install.log" >&2
        die "mariadb-install-db failed (log: $dir/install.log)"
    fi

    local -a pfs_args=(--performance-schema=OFF)
    if [[ $pfs -eq 1 ]]; then
        pfs_args=(--performance-schema=ON '--performance-schema-instrument=%=ON')
        local c
        for c in "${PFS_CONSUMERS[@]}"; do
            pfs_args+=("--performance-schema-consumer-$c=ON")
        done
    fi

    local port pid log_start deadline
    local attempt
    for ((attempt = 1; attempt <= 8; attempt++)); do
        port=$(free_port)
        log_start=$(($(stat -c %s "$dir/error.log" 2>/dev/null || echo 0) + 1))
        # setsid: the server outlives this script and the caller's terminal.
        setsid "$MARIADBD" --no-defaults \
            --datadir="$dir/data" --socket="$sock" --port="$port" \
            --bind-address=127.0.0.1 --pid-file="$dir/mariadbd.pid" \
            --log-error="$dir/error.log" --tmpdir="$dir" \
            --skip-log-bin --skip-name-resolve --innodb-log-file-size=16M \
            "${user_arg[@]}" "${pfs_args[@]}" "${extra[@]}" \
            </dev/null >>"$dir/error.log" 2>&1 &
        pid=$!
        deadline=$((SECONDS + START_TIMEOUT))
        while ! ping_server "$sock"; do
            if ! kill -0 "$pid" 2>/dev/null; then
                wait "$pid" 2>/dev/null || true
                pid=
                break
            fi
            if ((SECONDS >= deadline)); then
                kill -KILL "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
                tail -c +"$log_start" "$dir/error.log" | tail -n 20 >&2
                die "mariadbd did not answer within ${START_TIMEOUT}s (log: $dir/error.log; 'stop $dir' removes it)"
            fi
            sleep 0.05
        done
        [[ -z $pid ]] || break
        if ! tail -c +"$log_start" "$dir/error.log" | grep -q 'Bind on TCP/IP port'; then
            tail -c +"$log_start" "$dir/error.log" | tail -n 20 >&2
            die "mariadbd exited before answering (log: $dir/error.log; 'stop $dir' removes it)"
        fi
    done
    [[ -n $pid ]] || die "mariadbd could not bind a free loopback port"

    {
        printf 'MT_SOCKET=%q\n' "$sock"
        printf 'MT_HOST=127.0.0.1\n'
        printf 'MT_PORT=%q\n' "$port"
        printf 'MT_PID=%q\n' "$pid"
        printf 'MT_USER=%q\n' "$MT_USER_NAME"
        printf 'MT_PASSWORD=%q\n' "$MT_USER_PASSWORD"
        printf 'MT_DATADIR=%q\n' "$dir/data"
        printf 'MT_ERROR_LOG=%q\n' "$dir/error.log"
    } >"$dir/env"
    cat "$dir/env"
}

cmd_stop() {
    [[ $# -eq 1 ]] || usage
    [[ -d $1 ]] || die "no such directory: $1"
    local dir
    dir=$(abs_dir "$1")
    [[ -e $dir/$MARKER ]] || die "$dir was not made by mariadb-sandbox.sh start; not touching it"
    local pid
    if pid=$(server_pid "$dir"); then
        # SIGTERM is mariadbd's clean shutdown.
        kill -TERM "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + STOP_TIMEOUT))
        while alive "$pid" && ((SECONDS < deadline)); do
            sleep 0.05
        done
        if alive "$pid"; then
            echo "mariadb-sandbox: mariadbd $pid did not stop within ${STOP_TIMEOUT}s; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
            while alive "$pid"; do
                sleep 0.05
            done
        fi
    fi
    rm -rf -- "$dir"
}

cmd_status() {
    [[ $# -eq 1 ]] || usage
    [[ -d $1 ]] || die "no such directory: $1"
    local dir pid
    dir=$(abs_dir "$1")
    if pid=$(server_pid "$dir") && ping_server "$dir/mysql.sock"; then
        echo "running (pid $pid)"
        [[ -r $dir/env ]] && cat "$dir/env"
        return 0
    fi
    echo "not running"
    return 1
}

[[ $# -ge 1 ]] || usage
command=$1
shift
case $command in
start) cmd_start "$@" ;;
stop) cmd_stop "$@" ;;
status) cmd_status "$@" ;;
*) usage ;;
esac
