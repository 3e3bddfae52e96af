#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for the tests: installs Debian's
# `postgresql` if initdb is missing, runs `initdb` in a fresh temporary
# folder as an unprivileged user (creates the system user cerulean-pg when
# run as root), starts the server on a free loopback port (listen_addresses
# 127.0.0.1, its unix socket inside the folder) and prints the connection URL
# on stdout. `stop` shuts it down and removes the folder.
#
# Usage: scripts/pg-test-cluster.sh COMMAND [STATE]
#   start       prints postgresql://cerulean@127.0.0.1:PORT/cerulean
#   start-pair  a primary and a streaming standby that every commit waits for
#               (synchronous_standby_names '*'); records the standby in
#               STATE.standby and prints the multi-host URL
#               postgresql://cerulean@127.0.0.1:P1,127.0.0.1:P2/cerulean?target_session_attrs=read-write
#   down / up   stop and restart the server, keeping its data and port
#   freeze / thaw  SIGSTOP / SIGCONT the server and all its backends: it
#               keeps its connections and the kernel still accepts, but
#               nothing answers
#   kill        SIGKILL the server and all its backends (a crashed host)
#   promote     make a standby the primary (pg_ctl promote)
#   stop        shut it down (killing it if frozen) and remove the folder
#   STATE (default ${TMPDIR:-/tmp}/cerulean-pg-cluster) records the cluster's
#   folder between start and stop; for the standby of a pair, STATE.standby.
set -euo pipefail

usage() { echo "usage: $0 start|start-pair|stop|down|up|freeze|thaw|kill|promote [STATE]" >&2; exit 2; }
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

# Installs PostgreSQL if missing and creates the owner; sets $bindir.
prepare() {
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
}

# A new folder for a cluster, recorded in state file $1; prints it.
new_dir() {
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/cerulean-pg.XXXXXX")
  chmod 755 "$dir"
  [[ $(id -u) -eq 0 ]] && chown "$run_user" "$dir"
  echo "$dir" >"$1"
  echo "$dir"
}

# The server's options, for every start of the cluster in $2 on port $1
# (plus the cluster's own, kept in its folder).
server_options() {
  echo "-c listen_addresses=127.0.0.1 -p $1 -k $2 -c fsync=off -c max_connections=200 $(cat "$2/options" 2>/dev/null || true)"
}

# Starts the cluster in folder $1 on a free port (a few tries); records the
# port in the folder.
launch() {
  local dir=$1 port attempt
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    if as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "$(server_options "$port" "$dir")" start >/dev/null; then
      echo "$port" >"$dir/port"
      return 0
    fi
    log "start on port $port failed (attempt $attempt)"
  done
  cat "$dir/server.log" >&2 || true
  return 1
}

# initdb in folder $1 and start it; the database `cerulean` exists after.
init_and_launch() {
  local dir=$1
  as_owner "$bindir/initdb" -D "$dir/data" -U cerulean --auth=trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; return 1; }
  launch "$dir"
  as_owner timeout 60 "$bindir/createdb" -h 127.0.0.1 -p "$(cat "$dir/port")" -U cerulean cerulean
}

# Runs SQL $2 on the cluster in folder $1; prints the result.
sql() {
  as_owner timeout 60 "$bindir/psql" -h 127.0.0.1 -p "$(cat "$1/port")" -U cerulean -d cerulean -Atc "$2"
}

start() {
  prepare
  local dir
  dir=$(new_dir "$state")
  init_and_launch "$dir"
  echo "postgresql://cerulean@127.0.0.1:$(cat "$dir/port")/cerulean"
}

start_pair() {
  prepare
  local primary standby attempt
  primary=$(new_dir "$state")
  init_and_launch "$primary"
  standby=$(new_dir "$state.standby")
  as_owner timeout 120 "$bindir/pg_basebackup" -h 127.0.0.1 -p "$(cat "$primary/port")" -U cerulean \
    -D "$standby/data" -X stream --write-recovery-conf --checkpoint=fast --no-sync >"$standby/basebackup.log" 2>&1 ||
    { cat "$standby/basebackup.log" >&2; return 1; }
  launch "$standby"
  # Only now does every commit wait for a standby: the setting is not in what
  # the base backup copied, so a promoted standby commits on its own.
  sql "$primary" "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
  sql "$primary" "SELECT pg_reload_conf()" >/dev/null
  for attempt in $(seq 1 300); do
    if [[ $(sql "$primary" "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") == 1 ]]; then
      echo "postgresql://cerulean@127.0.0.1:$(cat "$primary/port"),127.0.0.1:$(cat "$standby/port")/cerulean?target_session_attrs=read-write"
      return 0
    fi
    sleep 0.1
  done
  log "the standby did not become synchronous"
  return 1
}

# Sends signal $1 to the postmaster, then (once it can fork no more) to each
# of its children: each child leads a process group of its own, so no one
# group holds the cluster. SIGCONT goes the other way round. The children are
# listed first: a killed postmaster's children are re-parented at once, and
# frozen ones would then outlive the cluster.
signal_cluster() {
  local dir pid children
  dir=$(cat "$state")
  pid=$(head -n 1 "$dir/data/postmaster.pid")
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || { log "no postmaster in $dir"; return 1; }
  children=$(pgrep -P "$pid" || true)
  [[ $1 == CONT ]] || kill "-$1" "$pid"
  children="$children $(pgrep -P "$pid" || true)"
  [[ -z ${children// /} ]] || kill "-$1" $children 2>/dev/null || true
  [[ $1 != CONT ]] || kill "-$1" "$pid"
  case $1 in
    STOP) touch "$dir/frozen" ;;
    CONT) rm -f "$dir/frozen" ;;
    KILL)
      rm -f "$dir/frozen"
      local i
      for i in $(seq 1 200); do
        [[ $(ps -o stat= -p "$pid" 2>/dev/null) == [^Z]* ]] || break
        sleep 0.05
      done
      ;;
  esac
}

stop() {
  [[ -f $state ]] || { log "no cluster recorded in $state"; return 0; }
  local dir bindir
  dir=$(cat "$state")
  bindir=$(pg_bindir || true)
  # A frozen server would never act on pg_ctl's signal.
  [[ -f $dir/frozen ]] && { signal_cluster KILL || true; }
  if [[ -n $bindir && -d $dir/data ]]; then
    as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  [[ $dir == */cerulean-pg.* ]] && rm -rf "$dir"
  rm -f "$state"
}

down() {
  local dir
  dir=$(cat "$state")
  as_owner "$(pg_bindir)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
}

up() {
  local dir
  dir=$(cat "$state")
  bindir=$(pg_bindir)
  as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "$(server_options "$(cat "$dir/port")" "$dir")" start >/dev/null
}

promote() {
  local dir
  dir=$(cat "$state")
  as_owner "$(pg_bindir)/pg_ctl" -D "$dir/data" -w -t 30 promote >/dev/null
}

case $command in
  start) start ;;
  start-pair) start_pair ;;
  stop) stop ;;
  down) down ;;
  up) up ;;
  freeze) signal_cluster STOP ;;
  thaw) signal_cluster CONT ;;
  kill) signal_cluster KILL ;;
  promote) promote ;;
  *) usage ;;
esac
