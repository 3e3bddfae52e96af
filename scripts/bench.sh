#!/usr/bin/env bash
# Runs the reference comparison of the performance issue with the harness in
# ../shared/bench: Cerulean on disk (A, built here in Release) against
# Azurite in memory (B), server pinned to CPU 1, load generator on CPU 0.
# Results (JSON and the .md tables) are kept in scripts/bench-results/, so
# that the figures the README quotes stay with the code that made them.
#
#   bash scripts/bench.sh [small|medium|large] [harness options]
#   bash scripts/bench.sh small --label s11              # ~8 min
#   bash scripts/bench.sh medium --only bulk,range,startup   # 1M entities, ~7 min
#
# Installs what is missing: the build's dependencies (scripts/build.sh), the
# harness's npm packages (its lib/ensure-deps.sh) and wrk.
# Environment: BENCH (default ../shared/bench), BUILD_DIR (default build).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
scale=${1:-small}
shift || true
bench=${BENCH:-../shared/bench}
build_dir=${BUILD_DIR:-build}

bash scripts/build.sh
if ! command -v wrk >/dev/null 2>&1; then
  if [[ $(id -u) == 0 ]]; then apt-get install -y wrk; else sudo apt-get install -y wrk; fi
fi
(cd "$bench" && bash lib/ensure-deps.sh)

cerulean=$(realpath "$build_dir/cerulean")
mkdir -p scripts/bench-results
out=$(realpath scripts/bench-results)
cd "$bench"
./compare --cmd-a "$cerulean --tableHost 127.0.0.1 --tablePort {PORT} --location {DATA} --silent" \
  --cmd-b azurite:memory --scale "$scale" --out "$out" "$@"
