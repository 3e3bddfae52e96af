#!/usr/bin/env bash
# Builds the multi-arch image of docker/static.Dockerfile (the static musl server alone, for
# linux/amd64 and linux/arm64) with Podman as one image index, from the servers of
# `scripts/cross.sh linux-musl-x64` and `scripts/cross.sh linux-musl-arm64`. Nothing is pushed.
#   bash scripts/image.sh [IMAGE]     # default localhost/cerulean:<version>; also IMAGE-amd64, IMAGE-arm64
# Environment: CROSS_DIR (default build/cross), BUILD_DIR (default build). Needs podman (apt-get install podman buildah runc).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)
version=$(sed -n 's/^project(cerulean VERSION \([0-9][0-9.]*\).*/\1/p' CMakeLists.txt)
image=${1:-localhost/cerulean:$version}
cross=${CROSS_DIR:-$repo/build/cross}
[[ $cross == /* ]] || cross=$repo/$cross

context=$(mktemp -d "${TMPDIR:-/tmp}/cerulean-image.XXXXXX")
trap 'rm -rf "$context"' EXIT
mkdir -p "$context/data" "$context/tmp"
for pair in amd64:linux-musl-x64 arm64:linux-musl-arm64; do
  server=$cross/${pair#*:}/cerulean
  [[ -f $server ]] || { echo "image: no $server (bash scripts/cross.sh ${pair#*:})" >&2; exit 1; }
  cp "$server" "$context/cerulean-${pair%%:*}"
done
# The notices of what the server links: those cross.sh wrote beside it, else scripts/package.sh's.
notices=$cross/linux-musl-x64/THIRD-PARTY-NOTICES.txt
[[ -f $notices ]] || notices=${BUILD_DIR:-$repo/build}/package/stage/THIRD-PARTY-NOTICES.portable.txt
[[ -f $notices ]] || { echo "image: no THIRD-PARTY-NOTICES.txt beside the server, nor $notices (bash scripts/package.sh npm)" >&2; exit 1; }
cp "$notices" "$context/THIRD-PARTY-NOTICES.txt"

# Each half is built and tagged IMAGE-ARCH (for `podman run` and inspection), then both are
# added to the manifest list IMAGE. Docker image format, as `docker build` makes: the OCI format
# has no HEALTHCHECK.
podman manifest exists "$image" 2>/dev/null && podman manifest rm "$image" >/dev/null
for arch in amd64 arm64; do
  podman build --pull=never --layers=false --runtime runc --isolation chroot --format docker --platform "linux/$arch" \
    -t "$image-$arch" -f docker/static.Dockerfile "$context" >&2
done
podman manifest create "$image" >/dev/null
for arch in amd64 arm64; do
  podman manifest add "$image" "containers-storage:$image-$arch" >/dev/null
done
echo "$image"
