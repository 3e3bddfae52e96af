#!/usr/bin/env bash
# Checks dist/cerulean_<version>_arm64.deb without installing it (this machine is not arm64):
# its control fields, that it holds the same files as the amd64 package, and that its server is
# an AArch64 executable whose Depends dpkg-shlibdeps computed for arm64. Needs the amd64 package
# beside it. Without an arm64 package (scripts/package.sh makes one only from
# build/cross/linux-arm64/cerulean) it says so and checks nothing.
# Ends with "N passed, N failed"; exits non-zero iff something failed.
#   bash tests/packages/deb-arm64.sh
# Environment: DIST_DIR (default <repo>/dist).
set -uo pipefail
{

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dist=${DIST_DIR:-$repo/dist}
# shellcheck source=check.sh
source "$here/check.sh"

arm=$(ls "$dist"/cerulean_*_arm64.deb 2>/dev/null | head -n1)
amd=$(ls "$dist"/cerulean_*_amd64.deb 2>/dev/null | head -n1)
if [[ ! -f $arm ]]; then
  echo "# skipped: no arm64 package in $dist (scripts/package.sh deb makes one from build/cross/linux-arm64/cerulean)"
  echo "0 passed, 0 failed"
  exit 0
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/cerulean-deb-arm64.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

dpkg-deb --info "$arm" | sed 's/^/# /'
check "Architecture: arm64" test "$(dpkg-deb -f "$arm" Architecture)" == arm64
check "Package, Version and Maintainer as in the amd64 package" \
  test "$(dpkg-deb -f "$arm" Package Version Maintainer)" == "$(dpkg-deb -f "$amd" Package Version Maintainer)"
check "Depends names adduser and an arm64 libc6" \
  bash -c '[[ $1 == adduser,* && $1 == *libc6* ]]' _ "$(dpkg-deb -f "$arm" Depends)"
check "the same files, modes and owners as the amd64 package" \
  bash -c 'diff <(dpkg-deb --contents "$1" | awk "{print \$1, \$2, \$6}") <(dpkg-deb --contents "$2" | awk "{print \$1, \$2, \$6}")' _ "$arm" "$amd"
check "the same maintainer scripts and conffiles" \
  bash -c 'mkdir -p "$3/a" "$3/b" && dpkg-deb -e "$1" "$3/a" && dpkg-deb -e "$2" "$3/b" &&
           diff <(cd "$3/a" && md5sum postinst prerm postrm conffiles) <(cd "$3/b" && md5sum postinst prerm postrm conffiles)' _ "$arm" "$amd" "$scratch"
dpkg-deb -x "$arm" "$scratch/root"
check "/usr/bin/cerulean is an AArch64 ELF executable, mode 755" \
  bash -c '[[ $(readelf -h "$1" | sed -n "s/^ *Machine: *//p") == AArch64 && $(stat -c %a "$1") == 755 ]]' _ "$scratch/root/usr/bin/cerulean"
if command -v qemu-aarch64-static >/dev/null 2>&1 && [[ -d /usr/aarch64-linux-gnu ]]; then
  check "the packaged server runs under qemu (--version names the package version)" \
    bash -c '[[ $(qemu-aarch64-static -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib "$1" --version) == "cerulean $2" ]]' \
    _ "$scratch/root/usr/bin/cerulean" "$(dpkg-deb -f "$arm" Version)"
fi

echo "$passed passed, $failed failed"
((failed == 0))
}
