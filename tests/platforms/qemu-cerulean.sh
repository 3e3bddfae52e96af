#!/usr/bin/env bash
# Runs the linux-arm64 build (build/cross/linux-arm64/cerulean, scripts/cross.sh linux-arm64)
# under qemu-aarch64-static with the arguments given, as CERULEAN_BIN for the Node suites
# (scripts/test.sh platforms); CERULEAN_ARM64_BIN runs another arm64 build instead (the static
# linux-musl-arm64 one, which loads no library, so -L and LD_LIBRARY_PATH go unused). The
# glibc build's glibc and libgcc_s come from Debian's arm64 cross packages: the loader from -L
# and the libraries from LD_LIBRARY_PATH. Without LD_LIBRARY_PATH that loader
# reads the host's /etc/ld.so.cache, which lists the multiarch :arm64 libc (a different build
# of glibc, installed for scripts/cross.sh); a loader and libc.so.6 of two builds disagree on
# their private data, and the first pthread_create then never returns.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
sysroot=/usr/aarch64-linux-gnu
libraries=()
[[ -d $sysroot ]] && libraries=(-L "$sysroot" -E LD_LIBRARY_PATH="$sysroot/lib")
exec qemu-aarch64-static "${libraries[@]}" \
  "${CERULEAN_ARM64_BIN:-$repo/build/cross/linux-arm64/cerulean}" "$@"
