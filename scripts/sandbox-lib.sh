# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Sourced by scripts/mariadb-sandbox.sh and scripts/mysql-sandbox.sh: what a
# throwaway server in a directory of its own needs whatever its flavour (the
# sandbox directory, the start/retry loop, stop, status, the MT_* output).
# Before sourcing, a script sets
#   SANDBOX_NAME        its name without .sh, the prefix of its messages
#   SANDBOX_SERVER      the server's name in messages (mariadbd, mysqld)
#   SANDBOX_PID_FILE    the server's --pid-file, relative to DIR
#   SANDBOX_PORT_TAKEN  what the error log says when the port was taken

: "${SANDBOX_NAME:?}" "${SANDBOX_SERVER:?}" "${SANDBOX_PID_FILE:?}" "${SANDBOX_PORT_TAKEN:?}"

readonly MT_USER_NAME=mt
readonly MT_USER_PASSWORD=mtpass
# Marks a directory this script made, so stop never removes anything else.
readonly MARKER=.mysqltrace-sandbox
MARIADB_CLIENT=${MARIADB_CLIENT:-/usr/bin/mariadb}
START_TIMEOUT=${MT_START_TIMEOUT:-60}
STOP_TIMEOUT=${MT_STOP_TIMEOUT:-30}

die() {
    echo "$SANDBOX_NAME: $*" >&2
    exit 1
}

# The kernel hands out a port that is free now; sandbox_run retries if the
# server loses the race for it.
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

# Prints the pid only if it is a live server serving DIR's datadir, so a
# stale pid file never gets an unrelated process killed.
server_pid() {
    local dir=$1 pid
    [[ -r $dir/$SANDBOX_PID_FILE ]] || return 1
    pid=$(<"$dir/$SANDBOX_PID_FILE")
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

# sandbox_make_dir DIR: makes DIR (which must not exist or be empty) a
# sandbox directory and sets dir to its absolute path. Not a command
# substitution, which would run without set -e.
sandbox_make_dir() {
    dir=$1
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
    # sun_path holds 107 characters; the server would fail with a vaguer message.
    [[ ${#sock} -le 107 ]] || die "socket path too long (${#sock} > 107): $sock"
}

# sandbox_pfs_full CONSUMER...: sets pfs_args to every instrument and the
# given consumers on.
sandbox_pfs_full() {
    pfs_args=(--performance-schema=ON '--performance-schema-instrument=%=ON')
    local c
    for c in "$@"; do
        pfs_args+=("--performance-schema-consumer-$c=ON")
    done
}

# sandbox_run DIR LAUNCH: starts the server and waits until it answers on
# DIR/mysql.sock, retrying with another port when it lost the race for one.
# LAUNCH PORT must start the server in the background (so $! is its pid)
# with its output appended to DIR/error.log. Sets port and pid.
sandbox_run() {
    local dir=$1 launch=$2
    local sock=$dir/mysql.sock
    local log_start deadline attempt
    for ((attempt = 1; attempt <= 8; attempt++)); do
        port=$(free_port)
        log_start=$(($(stat -c %s "$dir/error.log" 2>/dev/null || echo 0) + 1))
        "$launch" "$port"
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
                die "$SANDBOX_SERVER did not answer within ${START_TIMEOUT}s (log: $dir/error.log; 'stop $dir' removes it)"
            fi
            sleep 0.05
        done
        [[ -z $pid ]] || break
        if ! tail -c +"$log_start" "$dir/error.log" | grep -q "$SANDBOX_PORT_TAKEN"; then
            tail -c +"$log_start" "$dir/error.log" | tail -n 20 >&2
            die "$SANDBOX_SERVER exited before answering (log: $dir/error.log; 'stop $dir' removes it)"
        fi
    done
    [[ -n $pid ]] || die "$SANDBOX_SERVER could not bind a free loopback port"
}

# sandbox_env DIR PORT PID [NAME=VALUE...]: writes the MT_* assignments to
# DIR/env, the extra ones last, and prints them.
sandbox_env() {
    local dir=$1 port=$2 pid=$3 extra
    shift 3
    {
        printf 'MT_SOCKET=%q\n' "$dir/mysql.sock"
        printf 'MT_HOST=127.0.0.1\n'
        printf 'MT_PORT=%q\n' "$port"
        printf 'MT_PID=%q\n' "$pid"
        printf 'MT_USER=%q\n' "$MT_USER_NAME"
        printf 'MT_PASSWORD=%q\n' "$MT_USER_PASSWORD"
        printf 'MT_DATADIR=%q\n' "$dir/data"
        printf 'MT_ERROR_LOG=%q\n' "$dir/error.log"
        for extra in "$@"; do
            printf '%s=%q\n' "${extra%%=*}" "${extra#*=}"
        done
    } >"$dir/env"
    cat "$dir/env"
}

cmd_stop() {
    [[ $# -eq 1 ]] || usage
    [[ -d $1 ]] || die "no such directory: $1"
    local dir
    dir=$(abs_dir "$1")
    [[ -e $dir/$MARKER ]] || die "$dir was not made by $SANDBOX_NAME.sh start; not touching it"
    local pid
    if pid=$(server_pid "$dir"); then
        # SIGTERM is the server's clean shutdown.
        kill -TERM "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + STOP_TIMEOUT))
        while alive "$pid" && ((SECONDS < deadline)); do
            sleep 0.05
        done
        if alive "$pid"; then
            echo "$SANDBOX_NAME: $SANDBOX_SERVER $pid did not stop within ${STOP_TIMEOUT}s; killing it" >&2
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
