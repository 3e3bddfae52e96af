#!/usr/bin/env bash
# Starts build/cerulean on CPU 1 (as the bench pins it) and bulk-loads the
# bench's 100k-entity table from CPU 0 into each table named (default: three,
# so that the second and third run on a warm server, as in the bench), with
# scripts/bulk-trace.js printing when the slow batches came.
#   bash scripts/bulk-trace.sh [table...]      # BUILD_DIR, BENCH, SERVER_ARGS as in profile.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=${BUILD_DIR:-build}/cerulean
bench=${BENCH:-../shared/bench}
data=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
taskset -c 1 "$bin" --tableHost 127.0.0.1 --tablePort "$port" --location "$data" --silent ${SERVER_ARGS:-} >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$data"' EXIT
if [[ $# -eq 0 ]]; then set -- bulka bulkb bulkc; fi
taskset -c 0 node scripts/bulk-trace.js "$port" "$bench" "$@"
