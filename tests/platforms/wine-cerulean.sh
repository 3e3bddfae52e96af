#!/usr/bin/env bash
# Runs the Windows build (build/cross/win-x64/cerulean.exe, scripts/cross.sh win-x64) under
# Wine with the arguments given, as CERULEAN_BIN for the Node suites (scripts/test.sh
# platforms). The Wine prefix lives in the cross cache; Unix paths such as --location /tmp/x
# reach the server as Z:\tmp\x.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export WINEPREFIX=${WINEPREFIX:-${CERULEAN_CROSS_CACHE:-$HOME/.cache/cerulean-cross}/wine}
export WINEDEBUG=-all
exec /usr/lib/wine/wine64 "${CERULEAN_WIN_EXE:-$repo/build/cross/win-x64/cerulean.exe}" "$@"
