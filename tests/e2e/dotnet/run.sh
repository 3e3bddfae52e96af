#!/usr/bin/env bash
# .NET end-to-end suite: Azure.Data.Tables, Microsoft.Azure.Cosmos.Table and WindowsAzure.Storage
# drive the real server binary through xunit (`dotnet test`).
#   bash tests/e2e/dotnet/run.sh [FILTER]     e.g. CosmosTableTests or "FullyQualifiedName~Paging"
# Environment: CERULEAN_BIN (default <repo>/${BUILD_DIR:-build}/cerulean), DOTNET (default dotnet).
# The last line is always "N passed, N failed"; the exit status is non-zero iff something failed.
set -uo pipefail
{

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
dotnet="${DOTNET:-dotnet}"
export CERULEAN_BIN="${CERULEAN_BIN:-$repo/${BUILD_DIR:-build}/cerulean}"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

give_up() {
  echo "dotnet e2e: $1" >&2
  echo "0 passed, 1 failed"
  exit 1
}

command -v "$dotnet" >/dev/null || give_up "the .NET SDK (dotnet) is not installed"
[ -x "$CERULEAN_BIN" ] || give_up "server binary not found: $CERULEAN_BIN (build it, or set CERULEAN_BIN)"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
args=(test "$here/Cerulean.E2E.DotNet.csproj" --nologo -v quiet --logger "console;verbosity=normal")
[ $# -gt 0 ] && args+=(--filter "$1")
# Bounded: restore, build and a hung server or client cannot stall CI.
timeout -k 10 "${DOTNET_E2E_TIMEOUT:-900}" "$dotnet" "${args[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

# vstest's summary: "Passed!  - Failed:     0, Passed:    41, Skipped:     0, Total:    41, ..."
# (or "Failed!  - ..."); the newer one: "Test summary: total: 41, failed: 0, succeeded: 41, ...";
# with the console logger at normal verbosity: "Total tests: 41" then "     Passed: 41" / "     Failed: 0".
counts="$(sed -e 's/\x1b\[[0-9;]*m//g' "$log" | awk '
  /(Passed|Failed)! +- +Failed: +[0-9]+, +Passed: +[0-9]+/ {
    f = $0; sub(/.*Failed: +/, "", f); sub(/,.*/, "", f)
    p = $0; sub(/.*Passed: +/, "", p); sub(/,.*/, "", p)
    tp += p; tf += f; seen = 1
  }
  /Test summary: total: [0-9]+, failed: [0-9]+, succeeded: [0-9]+/ && !seen {
    f = $0; sub(/.*failed: /, "", f); sub(/,.*/, "", f)
    p = $0; sub(/.*succeeded: /, "", p); sub(/,.*/, "", p)
    tp = p; tf = f; seen2 = 1
  }
  /^Total tests: [0-9]+/ && !seen && !seen2 { seen3 = 1; tp = 0; tf = 0 }
  seen3 && /^ +Passed: +[0-9]+/ { tp = $2 }
  seen3 && /^ +Failed: +[0-9]+/ { tf = $2 }
  END { if (seen || seen2 || seen3) print tp + 0, tf + 0 }')"
if [ -n "$counts" ]; then
  read -r passed failed <<<"$counts"
  echo "$passed passed, $failed failed"
  [ "$failed" = 0 ] && [ "$status" = 0 ] && exit 0
  exit 1
fi
echo "dotnet e2e: dotnet test ended with status $status before reporting (restore, build, timeout or crash)" >&2
echo "0 passed, 1 failed"
exit 1
}
