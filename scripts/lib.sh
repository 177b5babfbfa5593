# SPDX-License-Identifier: GPL-2.0-only
# Shared by the entry scripts: become root if needed, install dependencies,
# configure and build.

mt_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${BUILD_DIR:=$mt_root/build}"

# Tracing needs root (BPF, uprobes); re-run the calling script under sudo.
mt_need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      exec sudo --preserve-env=BUILD_DIR,MYSQLTRACE_REQUIRE_PRIV,CMAKE_ARGS "$0" "$@"
    fi
    echo "$(basename "$0"): run as root" >&2
    exit 1
  fi
}

mt_build() {
  "$mt_root/scripts/install-deps.sh"
  # shellcheck disable=SC2086
  cmake -S "$mt_root" -B "$BUILD_DIR" -DMYSQLTRACE_WERROR=ON ${CMAKE_ARGS:-}
  cmake --build "$BUILD_DIR" -j"$(nproc)"
}
