# Sourced by the client-timing scripts (scan-phases.sh, bulk-trace.sh): starts
# $BUILD_DIR/cerulean (default build) on CPU 1, as the bench pins it, on a
# fresh data directory and a free loopback port, and stops it on exit. Sets
# `port`, `bench` (BENCH, default ../shared/bench) and `server`; SERVER_ARGS
# adds server options (e.g. --inMemoryPersistence).
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=${BUILD_DIR:-build}/cerulean
bench=${BENCH:-../shared/bench}
data=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
taskset -c 1 "$bin" --tableHost 127.0.0.1 --tablePort "$port" --location "$data" --silent ${SERVER_ARGS:-} >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$data"' EXIT
