#!/usr/bin/env bash
# Container test of the multi-arch image (docker/static.Dockerfile, built by scripts/image.sh from
# the static musl servers): the image index lists linux/amd64 and linux/arm64, the amd64 image is
# configured as documented (non-root, a health check with no shell, no RUN layer), and its server,
# started with `buildah run` on the host network as tests/container/run.sh does, answers
# azure.data.tables, passes its own HEALTHCHECK command and keeps /data across a restart.
#   bash tests/container/static.sh
# Skips (exit 0, "0 passed, 0 failed") with a message when build/cross/linux-musl-x64/cerulean or
# build/cross/linux-musl-arm64/cerulean is absent (bash scripts/cross.sh TARGET builds them), or
# when Podman/Buildah cannot be installed.
# Environment: CROSS_DIR (default build/cross), STATIC_IMAGE (default localhost/cerulean-static-test),
# PYTHON (default /usr/bin/python3).
# The last line is always "N passed, N failed"; the exit status is non-zero iff something failed.
set -uo pipefail
{

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cross=${CROSS_DIR:-$repo/build/cross}
[[ $cross == /* ]] || cross=$repo/$cross
export CROSS_DIR=$cross
image=${STATIC_IMAGE:-localhost/cerulean-static-test}
python=${PYTHON:-/usr/bin/python3}
work="$(mktemp -d /tmp/cerulean-static.XXXXXX)"
passed=0
failed=0
container=""
buildah_pid=""

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1${2:+ — $2}"; failed=$((failed + 1)); }
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" = 0 ]
  exit
}
skip() {
  echo "container static: skipped: $1"
  echo "0 passed, 0 failed"
  exit 0
}
cleanup() {
  [ -n "$buildah_pid" ] && kill "$buildah_pid" 2>/dev/null && wait "$buildah_pid" 2>/dev/null
  [ -n "$container" ] && buildah rm "$container" >/dev/null 2>&1
  # Podman 4.3's `podman images` fails while a local manifest list exists ("locating item named
  # manifest-sha256:..."): the list and its images go once tested.
  podman manifest rm "$image" >/dev/null 2>&1
  podman rmi "$image-amd64" "$image-arm64" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

for target in linux-musl-x64 linux-musl-arm64; do
  [[ -f $cross/$target/cerulean ]] || skip "no $cross/$target/cerulean (bash scripts/cross.sh $target)"
done
for tool in podman buildah runc; do
  if ! command -v "$tool" >/dev/null; then
    [ "$(id -u)" = 0 ] || skip "$tool not installed and cannot apt-get install as $(id -un)"
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y podman buildah runc >"$work/apt.log" 2>&1 ||
      { tail -5 "$work/apt.log"; skip "apt-get install podman buildah runc failed"; }
  fi
done

# --- the image index ---------------------------------------------------------------------------
if bash "$repo/scripts/image.sh" "$image" >"$work/build.log" 2>&1; then
  pass "scripts/image.sh builds the image index $image"
else
  tail -30 "$work/build.log"
  fail "scripts/image.sh builds the image index $image"
  finish
fi
podman manifest inspect "$image" >"$work/manifest.json"
platforms=$("$python" -c '
import json, sys
m = json.load(open(sys.argv[1]))
print(" ".join(sorted(e["platform"]["os"] + "/" + e["platform"]["architecture"] for e in m["manifests"])))' "$work/manifest.json")
check "the index lists linux/amd64 and linux/arm64 ($platforms)" test "$platforms" == "linux/amd64 linux/arm64"

# The amd64 image of the index, and its configuration (buildah run ignores ENTRYPOINT/CMD).
digest=$("$python" -c '
import json, sys
m = json.load(open(sys.argv[1]))
print(next(e["digest"] for e in m["manifests"] if e["platform"]["architecture"] == "amd64"))' "$work/manifest.json")
amd64=$image-amd64
check "the index's amd64 entry is the image $amd64" \
  test "$(podman image inspect --format '{{.Digest}}' "$amd64")" == "$digest"
podman image inspect "$amd64" >"$work/inspect.json"
config_check() {  # NAME PYTHON-EXPRESSION over d (the image), c (Config) and h (Healthcheck)
  if "$python" -c "
import json, sys
d = json.load(open(sys.argv[1]))[0]
c = d.get('Config') or {}
h = d.get('Healthcheck') or c.get('Healthcheck') or {}
sys.exit(0 if ($2) else 1)" "$work/inspect.json"; then pass "$1"; else fail "$1"; fi
}
config_check "amd64 image: architecture amd64" 'd.get("Architecture") == "amd64"'
config_check "runs as the unprivileged user 65532" 'c.get("User") == "65532:65532"'
config_check "entrypoint listens on 0.0.0.0 with data in /data" \
  'c.get("Entrypoint") == ["/usr/local/bin/cerulean", "--tableHost", "0.0.0.0", "--location", "/data"]'
config_check "exposes 10002/tcp and declares the /data volume" \
  '"10002/tcp" in (c.get("ExposedPorts") or {}) and "/data" in (c.get("Volumes") or {})'
config_check "the health check is 'cerulean health' in exec form (no shell)" \
  'h.get("Test") == ["CMD", "/usr/local/bin/cerulean", "health", "--tableHost", "127.0.0.1", "--tablePort", "10002"]'
# No RUN step: in the history every instruction is a "#(nop)" one (COPY, USER, ENTRYPOINT, ...).
history=$(podman history --no-trunc --format '{{.CreatedBy}}' "$amd64")
check "no layer comes from a RUN step" bash -c '! grep -v "#(nop)" <<<"$1" | grep -q .' _ "$history"
size=$(podman image inspect --format '{{.Size}}' "$amd64")
echo "# amd64 image: $((size / 1024)) KiB"

# --- run the amd64 image ------------------------------------------------------------------------
container=$(buildah from --pull-never "$amd64" 2>"$work/from.log") || { cat "$work/from.log"; container=""; fail "working container"; finish; }
check "the image holds no shell" bash -c '! buildah run --isolation chroot "$1" /bin/sh -c true >/dev/null 2>&1' _ "$container"

# shellcheck source=serve.sh
source "$here/serve.sh"
start_server() {
  serve_in_container "$1" /usr/local/bin/cerulean --tableHost 0.0.0.0 --location /data --tablePort 0
}

table="static$(date +%s)$RANDOM"
if start_server 1; then
  pass "the server starts with its data in /data (port $port)"
  check "it runs as the image's user, uid 65532" \
    bash -c '[[ $(awk "/^Uid:/ { print \$2 }" /proc/"$1"/status) == 65532 ]]' _ "$(server_pid "$buildah_pid")"
  check "its HEALTHCHECK command succeeds inside the image" \
    timeout 30 buildah run --isolation chroot --network host "$container" \
      /usr/local/bin/cerulean health --tableHost 127.0.0.1 --tablePort "$port"
  check "azure.data.tables writes and reads every type, transactions, paging" \
    timeout 120 "$python" "$here/smoke.py" "http://127.0.0.1:$port/devstoreaccount1" write "$table"
  stop_server "graceful stop on SIGTERM (exit 0)"
else
  fail "the server starts in the image"
  finish
fi
check "the HEALTHCHECK command fails once the server is gone" \
  bash -c '! timeout 30 buildah run --isolation chroot --network host "$1" /usr/local/bin/cerulean health --tablePort "$2" 2>/dev/null' \
  _ "$container" "$port"
if start_server 2; then
  check "data in /data survives a restart" \
    timeout 120 "$python" "$here/smoke.py" "http://127.0.0.1:$port/devstoreaccount1" verify "$table"
  stop_server "second graceful stop"
else
  fail "the server restarts on its /data"
fi

finish
}
