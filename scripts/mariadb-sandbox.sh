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

SELF=$(readlink -f "${BASH_SOURCE[0]}")
SANDBOX_NAME=mariadb-sandbox
SANDBOX_SERVER=mariadbd
SANDBOX_PID_FILE=mariadbd.pid
SANDBOX_PORT_TAKEN='Bind on TCP/IP port'
# shellcheck source=scripts/sandbox-lib.sh
source "${SELF%/*}/sandbox-lib.sh"
MARIADBD=${MARIADBD:-/usr/sbin/mariadbd}
MARIADB_INSTALL_DB=${MARIADB_INSTALL_DB:-/usr/bin/mariadb-install-db}

PFS_CONSUMERS=(
    events-stages-current events-stages-history events-stages-history-long
    events-statements-current events-statements-history events-statements-history-long
    events-transactions-current events-transactions-history events-transactions-history-long
    events-waits-current events-waits-history events-waits-history-long
    global-instrumentation statements-digest thread-instrumentation
)

usage() {
    sed -n '9,15p' "$SELF" | sed 's/^# \{0,1\}//' >&2
    exit 2
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

    sandbox_make_dir "$dir"
    local sock=$dir/mysql.sock

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
        sandbox_pfs_full "${PFS_CONSUMERS[@]}"
    fi

    launch() {
        # setsid: the server outlives this script and the caller's terminal.
        setsid "$MARIADBD" --no-defaults \
            --datadir="$dir/data" --socket="$sock" --port="$1" \
            --bind-address=127.0.0.1 --pid-file="$dir/$SANDBOX_PID_FILE" \
            --log-error="$dir/error.log" --tmpdir="$dir" \
            --skip-log-bin --skip-name-resolve --innodb-log-file-size=16M \
            "${user_arg[@]}" "${pfs_args[@]}" "${extra[@]}" \
            </dev/null >>"$dir/error.log" 2>&1 &
    }
    local port pid
    sandbox_run "$dir" launch
    sandbox_env "$dir" "$port" "$pid"
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
