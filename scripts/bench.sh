#!/usr/bin/env bash
# Runs the benchmark harness's comparison: Cerulean on disk (A, built here in
# Release, every write synced before it is acknowledged) against Azurite in
# memory (B), in one run, so that the figures are ratios. The harness pins the
# server to CPU 1 and its load generator to CPU 0.
#
#   BENCH_HARNESS=DIR bash scripts/bench.sh [small|medium|large] [harness options]
#   BENCH_HARNESS=DIR bash scripts/bench.sh small                          # ~8 min
#   BENCH_HARNESS=DIR bash scripts/bench.sh medium --only bulk,range,startup  # 1M entities
#
# With CERULEAN_DATABASE=postgresql://... in the environment, A serves from
# that PostgreSQL database instead (the server reads the variable; --location
# is then unused).
# BENCH_HARNESS is the harness's directory (it holds `compare` and
# `lib/ensure-deps.sh`); the harness is not part of this repository.
# Installs what is missing: the build's dependencies (scripts/build.sh), the
# harness's npm packages and wrk. Results (JSON and the printed tables) go to
# ${BENCH_OUT:-scripts/bench-results}, which git ignores.
# Environment: BENCH_HARNESS (required), BENCH_OUT, BUILD_DIR (default build).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
bench=${BENCH_HARNESS:-}
if [[ -z $bench || ! -x $bench/compare || ! -f $bench/lib/ensure-deps.sh ]]; then
  echo "bench.sh: set BENCH_HARNESS to the benchmark harness's directory" \
    "(the one holding compare and lib/ensure-deps.sh)${bench:+; '$bench' is not one}" >&2
  exit 2
fi
scale=${1:-small}
shift || true
build_dir=${BUILD_DIR:-build}

bash scripts/build.sh
if ! command -v wrk >/dev/null 2>&1; then
  if [[ $(id -u) == 0 ]]; then apt-get install -y wrk; else sudo apt-get install -y wrk; fi
fi
(cd "$bench" && bash lib/ensure-deps.sh)

cerulean=$(realpath "$build_dir/cerulean")
out_dir=${BENCH_OUT:-scripts/bench-results}
mkdir -p "$out_dir"
out=$(realpath "$out_dir")
cd "$bench"
./compare --cmd-a "$cerulean --tableHost 127.0.0.1 --tablePort {PORT} --location {DATA} --silent" \
  --cmd-b azurite:memory --scale "$scale" --out "$out" "$@"
