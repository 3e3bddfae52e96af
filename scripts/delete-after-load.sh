#!/usr/bin/env bash
# Starts build/cerulean on CPU 1 (as the bench pins it) and, from CPU 0, loads
# and drops the bench's 100k-entity table ROUNDS times on that one server,
# waiting WAIT_MS between each load and its Delete Table (which the bench
# itself measures only right after a restart).
#   bash scripts/delete-after-load.sh [ROUNDS [WAIT_MS]]  # BUILD_DIR, BENCH, SERVER_ARGS as in profile.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/pinned-server.sh"
taskset -c 0 node scripts/delete-after-load.js "$port" "$bench" "${1:-6}" "${2:-8000}"
