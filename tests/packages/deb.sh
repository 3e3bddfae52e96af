#!/usr/bin/env bash
# Installs dist/cerulean_<version>_amd64.deb with apt as an administrator would, checks what it
# put where, runs the installed server as its systemd unit would (no systemd runs in a CI
# container: the unit's user, EnvironmentFile and ExecStart by hand), drives it with Python's
# azure.data.tables, then removes and purges the package and checks that nothing is left.
# Needs root. Ends with "N passed, N failed"; exits non-zero iff something failed.
#   bash tests/packages/deb.sh [DEB]
# Environment: DIST_DIR (default <repo>/dist), PYTHON (default /usr/bin/python3).
set -uo pipefail
{

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dist=${DIST_DIR:-$repo/dist}
python=${PYTHON:-/usr/bin/python3}
deb=${1:-$(ls "$dist"/cerulean_*_amd64.deb 2>/dev/null | head -n1)}
# shellcheck source=check.sh
source "$here/check.sh"

finish() {
  echo "$passed passed, $failed failed"
  ((failed == 0))
  exit
}

give_up() {
  echo "deb: $1" >&2
  failed=$((failed + 1))
  finish
}

[[ $(id -u) -eq 0 ]] || give_up "needs root (apt install)"
[[ -f $deb ]] || give_up "no package in $dist (bash scripts/package.sh deb)"
deb=$(readlink -f "$deb")
export DEBIAN_FRONTEND=noninteractive

if dpkg-query -W cerulean >/dev/null 2>&1; then
  echo "deb: purging an earlier installation of cerulean" >&2
  apt-get -o DPkg::Lock::Timeout=300 purge -y -qq cerulean >/dev/null
fi
if ! "$python" -c 'import azure.data.tables' 2>/dev/null; then
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq python3-azure >/dev/null 2>&1 ||
    { apt-get -o DPkg::Lock::Timeout=300 update -qq && apt-get -o DPkg::Lock::Timeout=300 install -y -qq python3-azure >/dev/null; }
fi

# --- the package file ---------------------------------------------------------------
depends=$(dpkg-deb -f "$deb" Depends)
check "Depends names the shared libraries the binary links" \
  bash -c '[[ $1 == *libsimdjson* && $1 == *libstdc++6* && $1 == *libc6* && $1 == *adduser* ]]' _ "$depends"
check "libpq5 (dlopen'ed with --database) is suggested" \
  bash -c '[[ $(dpkg-deb -f "$1" Suggests) == *libpq5* ]]' _ "$deb"
if command -v lintian >/dev/null 2>&1; then
  check "lintian finds no error" bash -c 'out=$(lintian --fail-on error "$1" 2>&1); rc=$?; echo "$out"; exit $rc' _ "$deb"
else
  echo "# lintian not installed: skipped"
fi

# --- install --------------------------------------------------------------------------
check "apt installs the package and what it depends on" \
  bash -c 'apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$1" >/dev/null 2>&1 || { apt-get -o DPkg::Lock::Timeout=300 update -qq && apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$1"; }' _ "$deb"
check "cerulean is on the PATH" bash -c '[[ $(command -v cerulean) == /usr/bin/cerulean ]]'
check "every shared library is found" bash -c '! ldd /usr/bin/cerulean | grep -q "not found"'
check "cerulean --version names the package version" \
  bash -c '[[ $(cerulean --version) == "cerulean $(dpkg-query -W -f="\${Version}" cerulean)" ]]'
check "the system user and group cerulean exist" \
  bash -c 'getent passwd cerulean >/dev/null && getent group cerulean >/dev/null &&
           (( $(id -u cerulean) < 1000 )) && [[ $(getent passwd cerulean | cut -d: -f7) == */nologin ]]'
check "/var/lib/cerulean belongs to cerulean, mode 750" \
  bash -c '[[ $(stat -c "%U:%G %a" /var/lib/cerulean) == "cerulean:cerulean 750" ]]'
check "/etc/default/cerulean is a conffile" bash -c 'dpkg-query -W -f="\${Conffiles}" cerulean | grep -q "/etc/default/cerulean"'
check "the default configuration listens on 127.0.0.1:10002 with data in /var/lib/cerulean" \
  bash -c 'grep -q "^CERULEAN_OPTS=\"--tableHost 127.0.0.1 --tablePort 10002 --location /var/lib/cerulean\"" /etc/default/cerulean'
unit=/lib/systemd/system/cerulean.service
check "the unit runs /usr/bin/cerulean as cerulean with /etc/default/cerulean" \
  bash -c 'grep -qx "User=cerulean" "$1" && grep -qx "EnvironmentFile=-/etc/default/cerulean" "$1" &&
           grep -qx "ExecStart=/usr/bin/cerulean \$CERULEAN_OPTS" "$1" && grep -qx "StateDirectory=cerulean" "$1"' _ "$unit"
check "the unit is enabled for multi-user.target" test -L /etc/systemd/system/multi-user.target.wants/cerulean.service
if command -v systemd-analyze >/dev/null 2>&1; then
  check "systemd-analyze verify accepts the unit" bash -c 'out=$(systemd-analyze verify "$1" 2>&1); rc=$?; echo "$out" | grep -v "^$" | sed "s/^/# /"; exit $rc' _ "$unit"
fi

# --- run it as the service would ------------------------------------------------------
# The unit: User=cerulean, EnvironmentFile=/etc/default/cerulean, WorkingDirectory=/var/lib/cerulean,
# ExecStart=/usr/bin/cerulean $CERULEAN_OPTS. Port 10002 may be taken on a shared machine, so the
# administrator's edit of the conffile picks a free one.
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -i "s/--tablePort 10002/--tablePort $port/" /etc/default/cerulean
log=$(mktemp)
server_pid=""
start_service() {
  : >"$log"
  (cd /var/lib/cerulean && exec setpriv --reuid=cerulean --regid=cerulean --init-groups \
    sh -c 'set -a; . /etc/default/cerulean; exec /usr/bin/cerulean $CERULEAN_OPTS') >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    grep -q "successfully listening at http://127.0.0.1:$port" "$log" && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$log" >&2
  return 1
}
stop_service() {
  [[ -n $server_pid ]] || return 0
  kill -TERM "$server_pid" 2>/dev/null
  wait "$server_pid"
  local rc=$?
  server_pid=""
  return $rc
}
trap 'stop_service >/dev/null 2>&1; rm -f "$log"' EXIT

check "the server starts as the service would, on the configured port" start_service
check "it runs as the user cerulean" bash -c '[[ $(ps -o user= -p "$1") == cerulean ]]' _ "$server_pid"
endpoint="http://127.0.0.1:$port/devstoreaccount1"
drive() {
  "$python" - "$endpoint" "$1" <<'EOF'
import sys
from azure.data.tables import TableServiceClient
endpoint, step = sys.argv[1], sys.argv[2]
key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
service = TableServiceClient.from_connection_string(
    f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={key};TableEndpoint={endpoint};")
orders = service.get_table_client("orders")
if step == "write":
    orders.create_table()
    orders.create_entity({"PartitionKey": "alice", "RowKey": "001", "Amount": 10.5})
    orders.create_entity({"PartitionKey": "bob", "RowKey": "001", "Amount": 7.25})
found = list(orders.query_entities("PartitionKey eq 'alice'"))
assert [e["RowKey"] for e in found] == ["001"], found
assert found[0]["Amount"] == 10.5
assert [t.name for t in service.list_tables()] == ["orders"]
EOF
}
check "azure.data.tables creates a table, inserts and queries" drive write
check "the database is /var/lib/cerulean/cerulean.sqlite, owned by cerulean" \
  bash -c '[[ $(stat -c %U /var/lib/cerulean/cerulean.sqlite) == cerulean ]]'
check "SIGTERM stops it cleanly" stop_service
check "a restarted server has the data" start_service
check "... and answers the same query" drive read
check "... and stops again" stop_service

# --- remove, then purge ---------------------------------------------------------------
check "apt remove succeeds" bash -c 'apt-get -o DPkg::Lock::Timeout=300 remove -y -qq cerulean >/dev/null'
check "remove takes the binary and the unit" bash -c '[[ ! -e /usr/bin/cerulean && ! -e /lib/systemd/system/cerulean.service ]]'
check "remove keeps the data, the user and the edited /etc/default/cerulean" \
  bash -c '[[ -f /var/lib/cerulean/cerulean.sqlite ]] && getent passwd cerulean >/dev/null &&
           grep -q -- "--tablePort '"$port"'" /etc/default/cerulean'
check "apt purge succeeds" bash -c 'apt-get -o DPkg::Lock::Timeout=300 purge -y -qq cerulean >/dev/null'
check "purge leaves no package record" bash -c '! dpkg-query -W -f="\${Status}" cerulean 2>/dev/null | grep -q .'
check "purge removes /etc/default/cerulean and /var/lib/cerulean" \
  bash -c '[[ ! -e /etc/default/cerulean && ! -e /var/lib/cerulean ]]'
check "purge removes the user and group cerulean" bash -c '! getent passwd cerulean && ! getent group cerulean'
check "purge leaves no systemd state of the unit" \
  bash -c '! ls /etc/systemd/system/*/cerulean.service /etc/systemd/system/cerulean.service \
             /var/lib/systemd/deb-systemd-helper-enabled/cerulean.service* \
             /var/lib/systemd/deb-systemd-helper-masked/cerulean.service 2>/dev/null | grep -q .'
finish
}
