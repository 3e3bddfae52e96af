# Sourced by the npm package tests: `start_registry DIR TARBALL...` starts node/registry.js
# serving those tarballs on 127.0.0.1 (its log in DIR) and sets $registry to its URL and
# $registry_pid; returns non-zero if it did not start. `stop_registry` stops it.
registry=""
registry_pid=""

start_registry() {
  local dir=$1
  shift
  node "$(dirname "${BASH_SOURCE[0]}")/registry.js" "$@" >"$dir/registry.log" 2>&1 &
  registry_pid=$!
  local _
  for _ in $(seq 1 100); do
    registry=$(sed -n 's/^registry //p' "$dir/registry.log")
    [[ -n $registry ]] && return 0
    kill -0 "$registry_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$dir/registry.log" >&2
  return 1
}

stop_registry() {
  [[ -n $registry_pid ]] && kill "$registry_pid" 2>/dev/null && wait "$registry_pid" 2>/dev/null
  registry_pid=""
}
