#!/usr/bin/env bash
# Runs tests/packages/aspire as a user's Aspire solution: an AppHost whose one Cerulean package
# reference is dist/Cerulean.Aspire.Hosting.<version>.nupkg (AddCerulean("tables")), a worker
# project that it references to it, and a test project that starts the AppHost with
# Aspire.Hosting.Testing (the dcp orchestrator of Aspire.Hosting.Orchestration.linux-x64 runs
# the resources) and reads back what the worker wrote through the injected connection string.
# Copied to a scratch folder beside a nuget.config naming dist/ and the machine's own sources;
# packages restore into build/package-tests/nuget-packages, the previous Cerulean ones removed.
# Ends with "N passed, N failed"; exits non-zero iff something failed.
#   bash tests/packages/aspire.sh
# Environment: DIST_DIR (default <repo>/dist), BUILD_DIR (default build), DOTNET (default dotnet).
set -uo pipefail
{

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dist=${DIST_DIR:-$repo/dist}
build_dir=${BUILD_DIR:-build}
[[ $build_dir == /* ]] || build_dir=$repo/$build_dir
dotnet=${DOTNET:-dotnet}
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
# The AppHost must run the packaged server, not one named by the environment.
unset CERULEAN_BINARY

give_up() {
  echo "packages aspire: $1" >&2
  echo "0 passed, 1 failed"
  exit 1
}

command -v "$dotnet" >/dev/null || give_up "the .NET SDK (dotnet) is not installed"
nupkg=$(ls "$dist"/Cerulean.Aspire.Hosting.*.nupkg 2>/dev/null | head -n1)
[[ -f $nupkg ]] || give_up "no Cerulean.Aspire.Hosting package in $dist (bash scripts/package.sh nuget)"
version=$(basename "$nupkg" .nupkg)
version=${version#Cerulean.Aspire.Hosting.}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/cerulean-aspire-sample.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cp -r "$here"/aspire/. "$scratch/"
rm -rf "$scratch"/*/bin "$scratch"/*/obj
printf '%s\n' '<?xml version="1.0" encoding="utf-8"?>' '<configuration>' '  <packageSources>' \
  "    <add key=\"cerulean-dist\" value=\"$dist\" />" '  </packageSources>' '</configuration>' \
  >"$scratch/nuget.config"
export NUGET_PACKAGES=$build_dir/package-tests/nuget-packages
rm -rf "$NUGET_PACKAGES/cerulean.testing" "$NUGET_PACKAGES/cerulean.aspire.hosting"

log=$(mktemp)
timeout -k 10 "${ASPIRE_PACKAGES_TIMEOUT:-900}" "$dotnet" test "$scratch/Tests" --nologo -v quiet \
  --logger "console;verbosity=detailed" -p:CeruleanVersion="$version" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
counts=$(sed -e 's/\x1b\[[0-9;]*m//g' "$log" | awk '
  /^Total tests: [0-9]+/ { seen = 1; p = 0; f = 0 }
  seen && /^ +Passed: +[0-9]+/ { p = $2 }
  seen && /^ +Failed: +[0-9]+/ { f = $2 }
  END { if (seen) print p + 0, f + 0 }')
rm -f "$log"
[[ -n $counts ]] || give_up "dotnet test ended with status $status before reporting (restore, build, timeout or crash)"
read -r passed failed <<<"$counts"
((status != 0 && failed == 0)) && failed=1
echo "$passed passed, $failed failed"
((failed == 0))
}
