#!/usr/bin/env bash
# Measures what a new user waits for: the time from `git clone` of this
# repository to the "successfully listening" line of `bash scripts/start.sh`,
# with the apt packages already installed (scripts/setup.sh then only checks
# them) and ccache as installed but with an empty cache, as a new user's first
# build runs: every file compiles, and through ccache when it is on the PATH.
# The server runs in memory on a free port and is stopped once it listens.
# Prints the wall time and the CPU time (user + system) of everything it ran,
# then removes the clone.
#
#   bash scripts/clone-to-serve.sh              # clones this checkout's HEAD
#   SOURCE=URL bash scripts/clone-to-serve.sh   # clones another repository
#   CCACHE=off bash scripts/clone-to-serve.sh   # compiles without ccache
#
# Environment: JOBS (default nproc), passed to scripts/build.sh.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

source=${SOURCE:-$PWD}
work=$(mktemp -d)
server=""
cleanup() {
  [[ -n $server ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
start=$(now)
git clone --quiet --no-local "$source" "$work/cerulean"
case ${CCACHE:-empty} in
  empty) export CCACHE_DIR=$work/ccache ;;
  off) export CCACHE_DISABLE=1 ;;
  *)
    echo "clone-to-serve: CCACHE must be empty or off, not $CCACHE" >&2
    exit 2
    ;;
esac
bash "$work/cerulean/scripts/start.sh" --inMemoryPersistence --tablePort 0 \
  >"$work/out.log" 2>"$work/build.log" &
server=$!
until grep -q 'successfully listening' "$work/out.log"; do
  if ! kill -0 "$server" 2>/dev/null; then
    echo "clone-to-serve: start.sh ended before listening; its output:" >&2
    tail -20 "$work/build.log" "$work/out.log" >&2
    exit 1
  fi
  sleep 0.1
done
end=$(now)
kill "$server"
wait "$server" 2>/dev/null || true
server=""

# The children's CPU time, from this shell's `times` (second line: children;
# a builtin with a redirection runs in this shell, not a subshell).
times >"$work/times"
read -r cpu_user cpu_sys < <(sed -n 2p "$work/times" | awk '
  function sec(t,   m) { m = t; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", t); sub(/s$/, "", t)
                         return m * 60 + t }
  { print sec($1), sec($2) }')
awk -v s="$start" -v e="$end" -v u="$cpu_user" -v y="$cpu_sys" -v n="$(nproc)" 'BEGIN {
  printf "clone to listening: %.0f s wall on %d cores, %.0f s CPU (user %.0f + system %.0f)\n",
    e - s, n, u + y, u, y }'
