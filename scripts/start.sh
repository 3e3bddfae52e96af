#!/usr/bin/env bash
# Builds the server (installing missing apt packages first; only the
# `cerulean` target, not the unit tests) and runs it in the foreground.
# Arguments are passed to the server; without arguments it listens on
# 127.0.0.1:10002 and keeps its SQLite database under ./data, like
# azurite-table.
#
#   bash scripts/start.sh
#   bash scripts/start.sh --inMemoryPersistence --tablePort 0
#
# Environment: BUILD_DIR (default build).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

SKIP_NPM=1 bash scripts/build.sh cerulean >&2

binary=${BUILD_DIR:-build}/cerulean
if (($# == 0)); then
  set -- --location ./data --tablePort 10002
fi
exec "$binary" "$@"
