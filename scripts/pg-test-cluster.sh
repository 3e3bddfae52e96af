#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for the tests: installs Debian's
# `postgresql` if initdb is missing, runs `initdb` in a fresh temporary
# folder as an unprivileged user (creates the system user cerulean-pg when
# run as root), starts the server on a free loopback port (listen_addresses
# 127.0.0.1, its unix socket inside the folder) and prints the connection URL
# on stdout. `stop` shuts it down and removes the folder.
#
# Usage: scripts/pg-test-cluster.sh start|stop|down|up [DIR-FILE]
#   start  prints postgresql://cerulean@127.0.0.1:PORT/cerulean
#   down / up  stop and restart the server, keeping its data and port (tests
#   of a database outage)
#   DIR-FILE (default ${TMPDIR:-/tmp}/cerulean-pg-cluster) records the
#   cluster's folder between start and stop.
set -euo pipefail

usage() { echo "usage: $0 start|stop|down|up [DIR-FILE]" >&2; exit 2; }
(($# >= 1)) || usage
command=$1
state=${2:-${TMPDIR:-/tmp}/cerulean-pg-cluster}
run_user=cerulean-pg

log() { printf 'pg-test-cluster: %s\n' "$*" >&2; }

# The PostgreSQL server programs (initdb, pg_ctl, postgres), newest first.
pg_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [[ -x $d/initdb && -x $d/pg_ctl ]] && { echo "$d"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

# Runs a command as the unprivileged cluster owner (as ourselves unless root).
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u "$run_user" -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start() {
  if ! bindir=$(pg_bindir); then
    log "installing postgresql"
    local sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql
    bindir=$(pg_bindir)
  fi
  if [[ $(id -u) -eq 0 ]] && ! id "$run_user" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$run_user"
  fi
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/cerulean-pg.XXXXXX")
  chmod 755 "$dir"
  [[ $(id -u) -eq 0 ]] && chown "$run_user" "$dir"
  echo "$dir" >"$state"
  as_owner "$bindir/initdb" -D "$dir/data" -U cerulean --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; return 1; }
  local port attempt
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    if as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "$(server_options "$port" "$dir")" start >/dev/null; then
      echo "$port" >"$dir/port"
      as_owner "$bindir/createdb" -h 127.0.0.1 -p "$port" -U cerulean cerulean
      echo "postgresql://cerulean@127.0.0.1:$port/cerulean"
      return 0
    fi
    log "start on port $port failed (attempt $attempt)"
  done
  cat "$dir/server.log" >&2 || true
  return 1
}

stop() {
  [[ -f $state ]] || { log "no cluster recorded in $state"; return 0; }
  local dir bindir
  dir=$(cat "$state")
  bindir=$(pg_bindir || true)
  if [[ -n $bindir && -d $dir/data ]]; then
    as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  [[ $dir == */cerulean-pg.* ]] && rm -rf "$dir"
  rm -f "$state"
}

# The server's options, for start and up.
server_options() { echo "-c listen_addresses=127.0.0.1 -p $1 -k $2 -c fsync=off -c max_connections=200"; }

down() {
  local dir
  dir=$(cat "$state")
  as_owner "$(pg_bindir)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
}

up() {
  local dir
  dir=$(cat "$state")
  as_owner "$(pg_bindir)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "$(server_options "$(cat "$dir/port")" "$dir")" start >/dev/null
}

case $command in
  start) start ;;
  stop) stop ;;
  down) down ;;
  up) up ;;
  *) usage ;;
esac
