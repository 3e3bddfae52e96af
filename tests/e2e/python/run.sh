#!/usr/bin/env bash
# Python end-to-end suite: Debian's python3-azure (azure.data.tables) drives the real server binary.
#   bash tests/e2e/python/run.sh [TEST_NAME ...]     e.g. test_types or test_sas.TableSasTest
# Environment: CERULEAN_BIN (default <repo>/${BUILD_DIR:-build}/cerulean), PYTHON (default
# /usr/bin/python3), CERULEAN_E2E_CONNECTION_STRING (run against an existing endpoint instead).
# The last line is always "N passed, N failed"; the exit status is non-zero iff something failed.
set -uo pipefail
# Braces: bash parses the whole script before running it, so editing it mid-run is harmless.
{

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
python="${PYTHON:-/usr/bin/python3}"
export CERULEAN_BIN="${CERULEAN_BIN:-$repo/${BUILD_DIR:-build}/cerulean}"

give_up() {
  echo "python e2e: $1" >&2
  echo "0 passed, 1 failed"
  exit 1
}

# Debian's package (python3-azure), so that the suite needs no pip: install it if it is missing.
if ! "$python" -c 'import azure.data.tables' 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "python e2e: installing python3-azure" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y python3-azure >/dev/null 2>&1 ||
      { apt-get update >/dev/null 2>&1 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y python3-azure >/dev/null 2>&1; }
  fi
  "$python" -c 'import azure.data.tables' 2>/dev/null ||
    give_up "cannot import azure.data.tables with $python (apt-get install python3-azure)"
fi
if [ -z "${CERULEAN_E2E_CONNECTION_STRING:-}" ] && [ ! -x "$CERULEAN_BIN" ]; then
  give_up "server binary not found: $CERULEAN_BIN (build it, or set CERULEAN_BIN)"
fi

counts="$(mktemp)"
trap 'rm -f "$counts"' EXIT
# Bounded: a hung server or client cannot stall CI (clients also time out after 60 s).
timeout -k 10 "${PY_E2E_TIMEOUT:-1200}" "$python" -u "$here/runner.py" "$counts" "$@"
status=$?

if read -r passed failed skipped < "$counts" 2>/dev/null && [ -n "${failed:-}" ]; then
  [ "${skipped:-0}" != 0 ] && echo "python e2e: $skipped skipped"
  echo "$passed passed, $failed failed"
  [ "$failed" = 0 ] && [ "$status" = 0 ] && exit 0
  exit 1
fi
echo "python e2e: runner ended with status $status before reporting (timeout or crash)" >&2
echo "0 passed, 1 failed"
exit 1
}
