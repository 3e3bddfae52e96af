#!/usr/bin/env bash
# Installs dist/cerulean-tables-<version>.tgz into a scratch npm project as a user would
# (`npm install <tarball> @azure/data-tables`, from the machine's configured registry; its
# platform packages from dist/, through node/registry.js), runs
# tests/packages/node/{cerulean-tables,fixture,parent-death}.test.js there with node --test, and
# compiles tests/packages/node/types.ts against the package's types with tsc --strict (no
# --skipLibCheck). A second scratch project installs the tarball without @azure/data-tables, its
# optional peer: there no-sdk.test.js runs and types-no-sdk.ts compiles. A third installs it with
# mocha and vitest, which run mocha.test.js and vitest.test.mjs (the fixture under each).
# Ends with "N passed, N failed"; exits non-zero iff something failed.
#   bash tests/packages/node.sh
# Environment: DIST_DIR (default <repo>/dist).
set -uo pipefail
{

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dist=${DIST_DIR:-$repo/dist}
# The tests must find the packaged server, not one named by the environment.
unset CERULEAN_BINARY

give_up() {
  echo "packages node: $1" >&2
  echo "0 passed, 1 failed"
  exit 1
}

command -v npm >/dev/null || give_up "npm is not installed"
tarball=$(ls "$dist"/cerulean-tables-[0-9]*.tgz 2>/dev/null | head -n1)
[[ -f $tarball ]] || give_up "no cerulean-tables package in $dist (bash scripts/package.sh npm)"
data_tables=$(node -p 'require(process.argv[1]).dependencies["@azure/data-tables"]' "$repo/tests/e2e/node/package.json")

scratch=$(mktemp -d "${TMPDIR:-/tmp}/cerulean-npm-sample.XXXXXX")
# shellcheck source=node/registry.sh
source "$here/node/registry.sh"
trap 'stop_registry; rm -rf "$scratch"' EXIT
# The platform packages (@cerulean-tables/*) come from dist/ through a registry on 127.0.0.1 for
# their scope; npm picks the one for this machine as it would from a public registry.
platform_tarballs=("$dist"/cerulean-tables-[a-z]*-*.tgz)
[[ -f ${platform_tarballs[0]} ]] || give_up "no platform package (cerulean-tables-PLATFORM-*.tgz) in $dist"
start_registry "$scratch" "${platform_tarballs[@]}" || give_up "the local registry did not start"

# Makes the scratch project $1 and npm-installs the tarball and the packages $2... into it.
make_project() {
  local dir=$scratch/$1
  shift
  mkdir -p "$dir"
  printf '{ "name": "cerulean-tables-sample", "version": "1.0.0", "private": true }\n' >"$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --prefer-offline \
    --@cerulean-tables:registry="$registry" "$tarball" "$@" >/dev/null) ||
    give_up "npm install of $tarball $* failed"
}

passed=0
failed=0

# Runs node --test on the files $2... in the project $1 and adds up the spec reporter's totals.
run_tests() {
  local dir=$scratch/$1 log status p f
  shift
  log=$(mktemp)
  (cd "$dir" && timeout -k 10 "${NODE_PACKAGES_TIMEOUT:-300}" node --test --test-reporter=spec "$@") 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  # "ℹ pass N" / "ℹ fail N".
  read -r p f < <(sed -e 's/\x1b\[[0-9;]*m//g' "$log" | awk '/^ℹ pass [0-9]+/ { p = $3 } /^ℹ fail [0-9]+/ { f = $3 }
    END { print p + 0, f + 0 }')
  rm -f "$log"
  passed=$((passed + p))
  failed=$((failed + f))
  ((status != 0 && f == 0)) && failed=$((failed + 1))
}

# Runs the test file $2 in the project $1 with mocha (spec reporter: "N passing", "N failing")
# or vitest (JSON report: numPassedTests, numFailedTests), as named by $3, and adds up its totals.
run_framework() {
  local dir=$scratch/$1 file=$2 runner=$3 log status p f
  log=$(mktemp)
  case $runner in
    mocha)
      (cd "$dir" && timeout -k 10 "${NODE_PACKAGES_TIMEOUT:-300}" npx --no-install mocha --reporter spec "$file") 2>&1 | tee "$log"
      status=${PIPESTATUS[0]}
      read -r p f < <(sed -e 's/\x1b\[[0-9;]*m//g' "$log" | awk '/^ *[0-9]+ passing/ { p = $1 } /^ *[0-9]+ failing/ { f = $1 }
        END { print p + 0, f + 0 }')
      ;;
    vitest)
      (cd "$dir" && timeout -k 10 "${NODE_PACKAGES_TIMEOUT:-300}" npx --no-install vitest run --reporter=default \
        --reporter=json --outputFile.json="$log.json" "$file") 2>&1
      status=$?
      read -r p f < <(node -e 'try { const r = require(process.argv[1]); console.log(r.numPassedTests, r.numFailedTests) }
        catch { console.log(0, 0) }' "$log.json")
      rm -f "$log.json"
      ;;
  esac
  rm -f "$log"
  echo "$runner $file: $p passed, $f failed"
  passed=$((passed + p))
  failed=$((failed + f))
  ((status != 0 && f == 0)) && failed=$((failed + 1))
}

# Compiles $2 in the project $1 with tsc --strict, the library check included.
check_types() {
  local what="$2 compiles against the package's index.d.ts in the project $1 (tsc --strict)"
  if (cd "$scratch/$1" && npx --no-install tsc --noEmit --strict --target es2022 --module nodenext \
    --moduleResolution nodenext --types node "$2"); then
    echo "ok - $what"
    passed=$((passed + 1))
  else
    echo "not ok - $what"
    failed=$((failed + 1))
  fi
}

make_project with-sdk "@azure/data-tables@$data_tables" typescript@5 @types/node@20
cp "$here"/node/cerulean-tables.test.js "$here"/node/fixture.test.js "$here"/node/parent-death.test.js \
  "$here"/node/types.ts "$scratch/with-sdk/"
make_project without-sdk typescript@5 @types/node@20
cp "$here"/node/no-sdk.test.js "$here"/node/types-no-sdk.ts "$scratch/without-sdk/"
make_project frameworks "@azure/data-tables@$data_tables" mocha@12 vitest@4
cp "$here"/node/mocha.test.js "$here"/node/vitest.test.mjs "$scratch/frameworks/"

run_tests with-sdk cerulean-tables.test.js fixture.test.js parent-death.test.js
check_types with-sdk types.ts
run_tests without-sdk no-sdk.test.js
check_types without-sdk types-no-sdk.ts
run_framework frameworks mocha.test.js mocha
run_framework frameworks vitest.test.mjs vitest

echo "$passed passed, $failed failed"
((failed == 0))
}
