#!/usr/bin/env bash
# Runs the Windows build (build/cross/win-x64/cerulean.exe, scripts/cross.sh win-x64) under
# Wine with the arguments given, as CERULEAN_BIN for the Node suites (scripts/test.sh
# platforms). The Wine prefix lives in the cross cache; Unix paths such as --location /tmp/x
# reach the server as Z:\tmp\x.
#
# Wine ends a process on SIGTERM at once, with no Windows event, while SIGINT reaches it as
# Ctrl+C: so this script turns a SIGTERM into a SIGINT (the graceful stop a Windows user gets
# with Ctrl+C), and exits with the server's status. A SIGKILL of this script kills the server
# too (its parent-death signal), as a SIGKILL of the server itself would. The server keeps this
# script's stdin (a background job's would be /dev/null), so --exitWithParent sees its parent's pipe.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export WINEPREFIX=${WINEPREFIX:-${CERULEAN_CROSS_CACHE:-$HOME/.cache/cerulean-cross}/wine}
export WINEDEBUG=-all
setpriv --pdeathsig KILL /usr/lib/wine/wine64 \
  "${CERULEAN_WIN_EXE:-$repo/build/cross/win-x64/cerulean.exe}" "$@" <&0 &
child=$!
trap 'kill -INT "$child" 2>/dev/null' TERM INT
while :; do
  wait "$child" && rc=0 || rc=$?
  kill -0 "$child" 2>/dev/null || break
done
exit "$rc"
