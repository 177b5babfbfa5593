#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs the npm packages of the test programs (tests/testprogs: mysql2 for
# mysql2_client.js; @opentelemetry/otlp-transformer for otlp_receiver.js,
# whose protobuf classes generated from the OTLP .proto files decode the
# OTLP export) into tests/testprogs/node_modules, exactly as locked in
# tests/testprogs/package-lock.json (npm ci). Idempotent: does nothing when
# node_modules already matches package.json and the lock file. Without a lock
# file it runs npm install, which writes one (to be committed).
set -euo pipefail

dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/testprogs" && pwd)

die() {
    echo "install-node-deps: $*" >&2
    exit 1
}

command -v npm >/dev/null 2>&1 ||
    die "npm not found: install Node.js and npm first (scripts/install-deps.sh)"
command -v node >/dev/null 2>&1 ||
    die "node not found: install Node.js first (scripts/install-deps.sh)"
[[ -f $dir/package.json ]] || die "missing $dir/package.json"

cd "$dir"

# What node_modules was installed from; kept inside node_modules, which
# npm ci removes first, so a failed install never looks done.
stamp=node_modules/.mysqltrace-installed
want() {
    { node --version; cat package.json package-lock.json 2>/dev/null; } | sha256sum | cut -d' ' -f1
}

if [[ -f package-lock.json && -f $stamp && $(<"$stamp") == "$(want)" ]]; then
    echo "install-node-deps: tests/testprogs/node_modules up to date"
    exit 0
fi

npm_flags=(--no-audit --no-fund --no-update-notifier --ignore-scripts --loglevel=error)
if [[ -f package-lock.json ]]; then
    echo "install-node-deps: npm ci in tests/testprogs"
    if ! npm ci "${npm_flags[@]}" >/dev/null; then
        die "npm ci failed in $dir (if package.json changed, run 'npm install' there and commit package-lock.json)"
    fi
else
    echo "install-node-deps: no package-lock.json, npm install in tests/testprogs"
    npm install "${npm_flags[@]}" >/dev/null || die "npm install failed in $dir"
fi

node -e 'require("mysql2")' || die "mysql2 does not load after the install"
node -e 'require("@opentelemetry/otlp-transformer/build/src/generated/root.js")' ||
    die "the OTLP protobuf classes do not load after the install"
want >"$stamp"
echo "install-node-deps: done"
