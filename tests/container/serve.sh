# Sourced by the container tests, which define pass/fail and $container, $work and $buildah_pid.
# `serve_in_container N CMD...` starts CMD in $container with `buildah run` on the host network,
# in the background, logging to $work/serverN.log; sets buildah_pid, and port once the start-up
# line names it (returns non-zero if the server exits or 30 s pass first).
# `stop_server NAME` sends the server SIGTERM and records NAME as passed iff it exits with 0.
serve_in_container() {
  local log="$work/server$1.log"
  shift
  : > "$log"
  buildah run --isolation chroot --network host "$container" "$@" > "$log" 2>&1 &
  buildah_pid=$!
  port=""
  for _ in $(seq 1 300); do
    port="$(sed -n 's/.*successfully listening at http:\/\/[^ ]*:\([0-9][0-9]*\).*/\1/p' "$log" | head -1)"
    [ -n "$port" ] && return 0
    kill -0 "$buildah_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$log"
  return 1
}

# The server's process id: buildah run's descendant named cerulean (buildah itself would SIGKILL it).
server_pid() {
  local queue=("$1") p
  while [ "${#queue[@]}" != 0 ]; do
    p="${queue[0]}"
    queue=("${queue[@]:1}")
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = cerulean ] && { echo "$p"; return 0; }
    queue+=($(pgrep -P "$p" || true))
  done
  return 1
}

stop_server() {
  local pid
  pid="$(server_pid "$buildah_pid")" || { fail "$1" "server process not found"; return; }
  kill -TERM "$pid"
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    fail "$1" "still running 15 s after SIGTERM"
    kill -KILL "$pid" 2>/dev/null
  fi
  if wait "$buildah_pid"; then pass "$1"; else fail "$1" "exit status $? after SIGTERM"; fi
  buildah_pid=""
}
