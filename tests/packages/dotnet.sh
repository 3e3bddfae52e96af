#!/usr/bin/env bash
# Runs the sample xunit v2 project tests/packages/dotnet, then the xunit v3 project
# tests/packages/dotnet-v3, as a user's projects would run: each copied to a scratch folder,
# beside a nuget.config whose sources are dist/ and the machine's own, with only a package
# reference to dist/Cerulean.Testing.<version>.nupkg. The restores use a packages folder of their
# own (under the build directory), from which the previous Cerulean.Testing is removed first.
# Ends with "N passed, N failed"; exits non-zero iff something failed.
#   bash tests/packages/dotnet.sh [FILTER]
# Environment: DIST_DIR (default <repo>/dist), BUILD_DIR (default build), DOTNET (default dotnet).
set -uo pipefail
{

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dist=${DIST_DIR:-$repo/dist}
build_dir=${BUILD_DIR:-build}
[[ $build_dir == /* ]] || build_dir=$repo/$build_dir
dotnet=${DOTNET:-dotnet}
filter=${1:-}
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
# The samples must find the packaged server, not one named by the environment.
unset CERULEAN_BINARY

give_up() {
  echo "packages dotnet: $1" >&2
  echo "0 passed, 1 failed"
  exit 1
}

command -v "$dotnet" >/dev/null || give_up "the .NET SDK (dotnet) is not installed"
nupkg=$(ls "$dist"/Cerulean.Testing.*.nupkg 2>/dev/null | head -n1)
[[ -f $nupkg ]] || give_up "no Cerulean.Testing package in $dist (bash scripts/package.sh nuget)"
version=$(basename "$nupkg" .nupkg)
version=${version#Cerulean.Testing.}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/cerulean-nuget-sample.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export NUGET_PACKAGES=$build_dir/package-tests/nuget-packages
rm -rf "$NUGET_PACKAGES/cerulean.testing"

passed=0
failed=0

# Runs `dotnet test` on a copy of tests/packages/$1 and adds up its console logger's counts.
run_project() {
  local project=$scratch/$1 log status counts p f
  mkdir -p "$project"
  cp "$here/$1"/*.csproj "$here/$1"/*.cs "$project/"
  printf '%s\n' '<?xml version="1.0" encoding="utf-8"?>' '<configuration>' '  <packageSources>' \
    "    <add key=\"cerulean-dist\" value=\"$dist\" />" '  </packageSources>' '</configuration>' \
    >"$project/nuget.config"
  log=$(mktemp)
  local args=(test "$project" --nologo -v quiet --logger "console;verbosity=detailed"
    -p:CeruleanTestingVersion="$version")
  [[ -n $filter ]] && args+=(--filter "$filter")
  timeout -k 10 "${DOTNET_PACKAGES_TIMEOUT:-600}" "$dotnet" "${args[@]}" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  # The console logger at detailed verbosity: "Total tests: N" then "     Passed: N" / "     Failed: N".
  counts=$(sed -e 's/\x1b\[[0-9;]*m//g' "$log" | awk '
    /^Total tests: [0-9]+/ { seen = 1; p = 0; f = 0 }
    seen && /^ +Passed: +[0-9]+/ { p = $2 }
    seen && /^ +Failed: +[0-9]+/ { f = $2 }
    END { if (seen) print p + 0, f + 0 }')
  rm -f "$log"
  if [[ -z $counts ]]; then
    echo "packages dotnet: $1: dotnet test ended with status $status before reporting" \
      "(restore, build, timeout or crash)" >&2
    failed=$((failed + 1))
    return
  fi
  read -r p f <<<"$counts"
  passed=$((passed + p))
  failed=$((failed + f))
  ((status != 0 && f == 0)) && failed=$((failed + 1))
}

run_project dotnet
run_project dotnet-v3
echo "$passed passed, $failed failed"
((failed == 0))
}
