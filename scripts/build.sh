#!/usr/bin/env bash
# Installs missing dependencies (scripts/setup.sh), then configures and builds
# Cerulean in Release mode into ${BUILD_DIR:-build}. Incremental: rerunning
# only rebuilds what changed.
#
# Environment: BUILD_DIR (default build), JOBS (default nproc),
# SKIP_SETUP=1 to skip the dependency check.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}

if [[ ${SKIP_SETUP:-0} != 1 ]]; then
  bash scripts/setup.sh
fi

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j"$jobs"
