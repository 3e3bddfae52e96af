#!/usr/bin/env bash
# Runs the linux-arm64 build (build/cross/linux-arm64/cerulean, scripts/cross.sh linux-arm64)
# under qemu-aarch64-static with the arguments given, as CERULEAN_BIN for the Node suites
# (scripts/test.sh platforms). Its glibc and libgcc_s come from Debian's arm64 cross packages.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
exec qemu-aarch64-static -L /usr/aarch64-linux-gnu \
  "${CERULEAN_ARM64_BIN:-$repo/build/cross/linux-arm64/cerulean}" "$@"
