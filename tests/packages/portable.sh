#!/usr/bin/env bash
# Checks that the server in dist/'s NuGet and npm packages runs on a plain Linux x64 machine:
# it names no shared library but glibc's and libgcc_s, asks for no glibc symbol newer than 2.34,
# and serves from a root that holds nothing else (chroot; needs root).
# Ends with "N passed, N failed"; exits non-zero iff something failed.
#   bash tests/packages/portable.sh
# Environment: DIST_DIR (default <repo>/dist).
set -uo pipefail
{

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dist=${DIST_DIR:-$repo/dist}
# shellcheck source=check.sh
source "$here/check.sh"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/cerulean-portable.XXXXXX")
server_pid=""
trap '[[ -n $server_pid ]] && kill -KILL "$server_pid" 2>/dev/null; rm -rf "$scratch"' EXIT
tarball=$(ls "$dist"/cerulean-tables-linux-x64-[0-9]*.tgz 2>/dev/null | head -n1)
nupkg=$(ls "$dist"/Cerulean.Testing.*.nupkg 2>/dev/null | head -n1)
if [[ ! -f $tarball || ! -f $nupkg ]]; then
  echo "portable: the npm and NuGet packages are not in $dist (bash scripts/package.sh)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
tar -xzf "$tarball" -C "$scratch" package/bin/cerulean
bin=$scratch/package/bin/cerulean
(cd "$scratch" && unzip -q "$nupkg" runtimes/linux-x64/native/cerulean)

check "the NuGet and npm packages carry the same server" cmp -s "$bin" "$scratch/runtimes/linux-x64/native/cerulean"
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
echo "# NEEDED: $needed"
check "it needs only glibc and libgcc_s" \
  bash -c '[[ $1 == "ld-linux-x86-64.so.2 libc.so.6 libgcc_s.so.1 libm.so.6 " ]]' _ "$needed"
newest=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -n1)
echo "# newest glibc symbol version: $newest"
check "no glibc symbol is newer than 2.34" \
  bash -c '[[ $(printf "%s\n" "$1" GLIBC_2.34 | sort -V | tail -n1) == GLIBC_2.34 ]]' _ "$newest"

if [[ $(id -u) -eq 0 ]]; then
  root=$scratch/root
  mkdir -p "$root/lib64" "$root/lib/x86_64-linux-gnu" "$root/tmp"
  for lib in libc.so.6 libm.so.6 libgcc_s.so.1; do
    cp "$(readlink -f "/lib/x86_64-linux-gnu/$lib")" "$root/lib/x86_64-linux-gnu/$lib"
  done
  cp "$(readlink -f /lib64/ld-linux-x86-64.so.2)" "$root/lib64/ld-linux-x86-64.so.2"
  cp "$bin" "$root/cerulean"
  check "in a root with only those libraries, --version answers" \
    bash -c '[[ $(chroot "$1" /cerulean --version) == "cerulean "* ]]' _ "$root"
  log=$scratch/server.log
  chroot "$root" /cerulean --inMemoryPersistence --tablePort 0 --silent >"$log" 2>&1 &
  server_pid=$!
  serving() {
    local port
    for _ in $(seq 100); do
      port=$(sed -n 's/.*successfully listening at http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log")
      [[ -n $port ]] && break
      sleep 0.1
    done
    [[ -n $port ]] || { cat "$log" >&2; return 1; }
    # GET /_health over a plain socket: the root has no client.
    exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
    printf 'GET /_health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    local status
    status=$(head -n1 <&3)
    exec 3<&-
    [[ $status == "HTTP/1.1 200"* ]]
  }
  check "... and it serves /_health" serving
  kill -TERM "$server_pid" 2>/dev/null
  wait "$server_pid"
  check "... and stops on SIGTERM" test $? -eq 0
  server_pid=""
else
  echo "# not root: the chroot checks are skipped"
fi

echo "$passed passed, $failed failed"
((failed == 0))
}
