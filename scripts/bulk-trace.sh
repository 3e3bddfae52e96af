#!/usr/bin/env bash
# Starts build/cerulean on CPU 1 (as the bench pins it) and bulk-loads the
# bench's 100k-entity table from CPU 0 into each table named (default: three,
# so that the second and third run on a warm server, as in the bench), with
# scripts/bulk-trace.js printing when the slow batches came.
#   bash scripts/bulk-trace.sh [table...]      # BUILD_DIR, BENCH, SERVER_ARGS as in profile.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/pinned-server.sh"
if [[ $# -eq 0 ]]; then set -- bulka bulkb bulkc; fi
taskset -c 0 node scripts/bulk-trace.js "$port" "$bench" "$@"
