#!/usr/bin/env bash
# Builds the server (installing the apt packages it needs first, not the test
# toolchain; only the `cerulean` target, not the unit tests) and runs it in
# the foreground, in the caller's directory: relative paths in the arguments
# (--location, --seed, --cert, ...) are the caller's. Arguments are passed to
# the server; without arguments it listens on 127.0.0.1:10002 and keeps its
# SQLite database under ./data, like azurite-table.
#
#   bash scripts/start.sh
#   bash scripts/start.sh --inMemoryPersistence --tablePort 0
#
# Environment: BUILD_DIR (default build).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# BUILD_DIR relative to the repository, as build.sh reads it.
build_dir=${BUILD_DIR:-build}
[[ $build_dir == /* ]] || build_dir=$repo/$build_dir

(cd "$repo" && BUILD_DIR=$build_dir SETUP_SCOPE=server bash scripts/build.sh cerulean >&2)

binary=$build_dir/cerulean
if (($# == 0)); then
  set -- --location ./data --tablePort 10002
fi
exec "$binary" "$@"
