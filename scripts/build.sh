#!/usr/bin/env bash
# Installs missing dependencies (scripts/setup.sh), then configures and builds
# Cerulean in Release mode into ${BUILD_DIR:-build}. Incremental: rerunning
# only rebuilds what changed. Compiles through ccache when it is on the PATH.
#
#   bash scripts/build.sh              # every target, unit tests included
#   bash scripts/build.sh cerulean     # only the named targets (start.sh: the server)
#
# Environment: BUILD_DIR (default build), JOBS (default nproc),
# SKIP_SETUP=1 to skip the dependency check, CMAKE_CXX_COMPILER_LAUNCHER to
# use another launcher than ccache (empty: none).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
targets=()
for t in "$@"; do targets+=(--target "$t"); done

if [[ ${SKIP_SETUP:-0} != 1 ]]; then
  bash scripts/setup.sh
fi

if [[ -z ${CMAKE_CXX_COMPILER_LAUNCHER+set} ]] && command -v ccache >/dev/null 2>&1; then
  CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-}"
cmake --build "$build_dir" -j"$jobs" "${targets[@]}"
