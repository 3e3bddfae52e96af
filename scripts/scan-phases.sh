#!/usr/bin/env bash
# Starts build/cerulean on CPU 1 (as the bench pins it), loads the bench's
# 100k-entity table and reads it page by page from CPU 0 with
# scan-phases.js, which prints where each page's time went.
#   bash scripts/scan-phases.sh [passes]      # BUILD_DIR, BENCH as in profile.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=${BUILD_DIR:-build}/cerulean
bench=${BENCH:-../shared/bench}
data=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
taskset -c 1 "$bin" --tableHost 127.0.0.1 --tablePort "$port" --location "$data" --silent >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$data"' EXIT
taskset -c 0 node scripts/scan-phases.js "$port" "$bench" "${1:-4}"
