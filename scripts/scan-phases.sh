#!/usr/bin/env bash
# Starts build/cerulean on CPU 1 (as the bench pins it), loads the bench's
# 100k-entity table and reads it page by page from CPU 0 with
# scan-phases.js, which prints where each page's time went.
#   bash scripts/scan-phases.sh [passes]      # BUILD_DIR, BENCH as in profile.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/pinned-server.sh"
taskset -c 0 node scripts/scan-phases.js "$port" "$bench" "${1:-4}"
