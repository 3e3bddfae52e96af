#!/usr/bin/env bash
# Container test: builds docker/Dockerfile and runs the image's binary, driven by azure.data.tables.
#   bash tests/container/run.sh
#
# It needs neither a Docker engine nor a container registry: the image is built by Podman (chroot
# isolation) on a Debian base image made locally with debootstrap and tagged debian:bookworm-slim,
# and the binary is started with `buildah run` on the host network (which works where podman run
# cannot set rlimits, as in an unprivileged or nested environment). The base image and the build's layer cache
# stay in Podman's storage, so later runs only recompile the sources.
#
# Environment: CONTAINER_IMAGE (default localhost/cerulean-test), DEBIAN_MIRROR
# (default: the first Debian mirror in this machine's apt sources), PYTHON (default /usr/bin/python3),
# CONTAINER_BUILD_TIMEOUT (seconds, default 1500). A build that must recompile everything takes
# about 6 minutes on 2 cores; a fresh machine adds about 2 minutes for debootstrap and apt.
# Skips (exit 0, "0 passed, 0 failed") only when Podman/Buildah cannot be installed.
# The last line is always "N passed, N failed"; the exit status is non-zero iff something failed.
set -uo pipefail
# Braces: bash parses the whole script before running it, so editing it mid-run is harmless.
{

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
image="${CONTAINER_IMAGE:-localhost/cerulean-test}"
base="docker.io/library/debian:bookworm-slim"
# The mirror debootstrap fetches from: the one this machine's apt already uses (deb822 `URIs:`
# lines, or the classic `deb URI suite` lines), so no host name is built in.
apt_mirror() {
  local uri
  uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null)
  [[ -n $uri ]] || uri=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' \
    /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -1)
  printf '%s' "$uri"
}
mirror="${DEBIAN_MIRROR:-$(apt_mirror)}"
python="${PYTHON:-/usr/bin/python3}"
work="$(mktemp -d /tmp/cerulean-container.XXXXXX)"
passed=0
failed=0
container=""
buildah_pid=""

say() { echo "container: $*"; }
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1${2:+ — $2}"; failed=$((failed + 1)); }
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" = 0 ]
  exit
}
skip() {
  say "skipped: $1"
  echo "0 passed, 0 failed"
  exit 0
}
cleanup() {
  [ -n "$buildah_pid" ] && kill "$buildah_pid" 2>/dev/null && wait "$buildah_pid" 2>/dev/null
  [ -n "$container" ] && buildah rm "$container" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# --- tools --------------------------------------------------------------------------------------
missing=()
for tool in podman buildah runc debootstrap; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ "${#missing[@]}" != 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    skip "${missing[*]} not installed and cannot apt-get install as $(id -un)"
  fi
  say "installing podman buildah runc debootstrap"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get install -y podman buildah runc debootstrap > "$work/apt.log" 2>&1 ||
    { timeout 300 apt-get update > "$work/apt.log" 2>&1 &&
      timeout 600 apt-get install -y podman buildah runc debootstrap > "$work/apt.log" 2>&1; } ||
    { tail -5 "$work/apt.log"; skip "apt-get install podman buildah runc debootstrap failed"; }
fi
if ! "$python" -c 'import azure.data.tables' 2>/dev/null && [ "$(id -u)" = 0 ]; then
  say "installing python3-azure"
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y python3-azure > "$work/apt.log" 2>&1 ||
    tail -5 "$work/apt.log"
fi

# --- base image ---------------------------------------------------------------------------------
if podman image exists "$base"; then
  pass "base image $base present"
else
  if [[ -z $mirror ]]; then
    fail "base image" "no Debian mirror found in the apt sources; set DEBIAN_MIRROR"
    finish
  fi
  say "making $base with debootstrap from $mirror (about a minute)"
  rootfs="$work/rootfs"
  if timeout 900 debootstrap --variant=minbase bookworm "$rootfs" "$mirror" > "$work/debootstrap.log" 2>&1 &&
     tar -C "$rootfs" -c . | podman import - localhost/debian-base:bookworm > /dev/null 2>&1 &&
     podman tag localhost/debian-base:bookworm "$base"; then
    pass "base image $base made locally"
  else
    tail -20 "$work/debootstrap.log"
    fail "base image" "debootstrap/podman import failed"
    finish
  fi
  rm -rf "$rootfs"
fi

# --- build --------------------------------------------------------------------------------------
old_id="$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"
say "building $image from docker/Dockerfile"
start=$SECONDS
# Docker image format, as `docker build` makes: the OCI format has no HEALTHCHECK and drops it.
if timeout "${CONTAINER_BUILD_TIMEOUT:-1500}" podman build --pull=never --runtime runc --isolation chroot --layers --format docker \
     -f "$repo/docker/Dockerfile" -t "$image" "$repo" > "$work/build.log" 2>&1; then
  pass "image builds ($((SECONDS - start)) s)"
  new_id="$(podman image inspect --format '{{.Id}}' "$image")"
  # Keep the layer cache (base and apt layers have children, so they stay) but not the
  # superseded image and the dangling compile layers of earlier builds.
  [ -n "$old_id" ] && [ "$old_id" != "$new_id" ] && podman rmi "$old_id" > /dev/null 2>&1
  podman image prune -f --filter "until=$((SECONDS - start + 120))s" > /dev/null 2>&1
else
  tail -40 "$work/build.log"
  fail "image builds" "podman build failed after $((SECONDS - start)) s"
  finish
fi

# --- image configuration (buildah run does not use ENTRYPOINT/CMD, so read them) ---------------
podman image inspect "$image" > "$work/inspect.json"
config_check() {  # NAME PYTHON-EXPRESSION over c (Config) and h (Healthcheck)
  if "$python" -c "
import json, sys
d = json.load(open(sys.argv[1]))[0]
c = d.get('Config') or {}
h = d.get('Healthcheck') or c.get('Healthcheck') or {}
sys.exit(0 if ($2) else 1)" "$work/inspect.json"; then
    pass "$1"
  else
    fail "$1" "$(podman image inspect --format '{{json .Config}} {{json .Healthcheck}}' "$image")"
  fi
}
inspect_get() {  # PYTHON-EXPRESSION over c and h printing one line per item
  "$python" -c "
import json, sys
d = json.load(open(sys.argv[1]))[0]
c = d.get('Config') or {}
h = d.get('Healthcheck') or c.get('Healthcheck') or {}
print('\\n'.join($1))" "$work/inspect.json"
}
config_check "entrypoint listens on 0.0.0.0 with data in /data" \
  'c.get("Entrypoint") == ["/usr/local/bin/cerulean", "--tableHost", "0.0.0.0", "--location", "/data"]'
config_check "no default arguments (CMD empty)" 'not c.get("Cmd")'
config_check "exposes 10002/tcp" '"10002/tcp" in (c.get("ExposedPorts") or {})'
config_check "declares the /data volume" '"/data" in (c.get("Volumes") or {})'
config_check "runs as the unprivileged user" 'c.get("User") == "cerulean"'
config_check "health check probes /_health on 10002" \
  'h.get("Test", [""])[0] in ("CMD", "CMD-SHELL") and "127.0.0.1:10002/_health" in " ".join(h["Test"][1:])'
entrypoint=()
while IFS= read -r arg; do entrypoint+=("$arg"); done < <(inspect_get 'c.get("Entrypoint") or []')
[ "${#entrypoint[@]}" = 0 ] && entrypoint=(/usr/local/bin/cerulean --tableHost 0.0.0.0 --location /data)
healthcheck="$(inspect_get '[" ".join(h.get("Test", ["", ""])[1:])]')"

# --- run ----------------------------------------------------------------------------------------
if ! container="$(buildah from --pull-never "$image" 2>"$work/from.log")"; then
  cat "$work/from.log"
  container=""
  fail "working container" "buildah from failed"
  finish
fi
in_container() { timeout 60 buildah run --isolation chroot --network host "$container" "$@"; }

if out="$(in_container /usr/local/bin/cerulean --version 2>&1)" && [[ "$out" == cerulean* ]]; then
  pass "binary runs in the image ($out)"
else
  fail "binary runs in the image" "$out"
fi

# shellcheck source=serve.sh
source "$here/serve.sh"
# Starts the entrypoint command (plus --tablePort 0) in the background; sets port and buildah_pid.
start_server() { serve_in_container "$1" "${entrypoint[@]}" --tablePort 0; }

table="container$(date +%s)$RANDOM"
if start_server 1; then
  pass "server starts as the entrypoint with --tablePort 0 (port $port)"
  endpoint="http://127.0.0.1:$port/devstoreaccount1"
  if curl -fsS -m 10 "http://127.0.0.1:$port/_health" > /dev/null; then
    pass "GET /_health from the host"
  else
    fail "GET /_health from the host"
  fi
  # The image's HEALTHCHECK command, run inside the image against this run's port.
  if [ -n "$healthcheck" ] &&
     in_container sh -c "${healthcheck//:10002/:$port}" > "$work/health.log" 2>&1; then
    pass "HEALTHCHECK command succeeds inside the image"
  else
    fail "HEALTHCHECK command succeeds inside the image" "$(cat "$work/health.log" 2>/dev/null)"
  fi
  if timeout 120 "$python" "$here/smoke.py" "$endpoint" write "$table"; then
    pass "azure.data.tables writes and reads every type, transactions, paging"
  else
    fail "azure.data.tables writes and reads every type, transactions, paging"
  fi
  stop_server "graceful stop on SIGTERM (exit 0)"
else
  fail "server starts as the entrypoint with --tablePort 0"
  finish
fi

if start_server 2; then
  if timeout 120 "$python" "$here/smoke.py" "http://127.0.0.1:$port/devstoreaccount1" verify "$table"; then
    pass "data in /data survives a restart"
  else
    fail "data in /data survives a restart"
  fi
  stop_server "second graceful stop"
else
  fail "server restarts on its /data"
fi

finish
}
