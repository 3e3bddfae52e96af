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

# The RIDs the package carries, for RuntimeSelectionTests.
export CERULEAN_PACKED_RIDS=$(unzip -Z1 "$nupkg" 'runtimes/*' | cut -d/ -f2 | sort -u | tr '\n' ' ')
echo "# $(basename "$nupkg") ($(du -h "$nupkg" | cut -f1)) carries runtimes: $CERULEAN_PACKED_RIDS"

# shellcheck source=check.sh
source "$here/check.sh"  # check NAME CMD..., counting into $passed / $failed

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
[[ -n $filter ]] && { echo "$passed passed, $failed failed"; ((failed == 0)); exit; }

# --- the execute bit: what NuGet's restore and the build leave, and what the fixture does -------
extracted=$(ls -d "$NUGET_PACKAGES"/cerulean.testing/"$version"/runtimes/linux-x64/native/cerulean 2>/dev/null)
built=$(ls -d "$scratch/dotnet"/bin/Debug/*/runtimes/linux-x64/native/cerulean 2>/dev/null | head -n1)
# dotnet pack stores the server as -rw-r--r--; NuGet's restore on Unix extracts every file with
# its owner's execute bit (-rwxr--r--), and the build copies that mode. Where the owner differs
# (a shared packages folder), the fixture sets the bit, or runs a private copy.
zip_mode=$(unzip -Zl "$nupkg" runtimes/linux-x64/native/cerulean | awk '$NF == "runtimes/linux-x64/native/cerulean" { print $1 }')
echo "# server mode in the .nupkg: $zip_mode, as restored: $(stat -c %A "$extracted" 2>/dev/null)"
check "NuGet's restore leaves the server executable by its owner" test -x "$extracted"
check "the server in the build output is executable once a fixture ran (CeruleanBinary.EnsureExecutable)" test -x "$built"

# --- every RID's server, as the package carries it -------------------------------------------
# The one the platforms suite tested, and running here where this machine can (check.sh).
for rid in $CERULEAN_PACKED_RIDS; do
  entry=$(unzip -Z1 "$nupkg" "runtimes/$rid/native/cerulean*" 2>/dev/null | grep -v -i notices | head -n1)
  [[ -n $entry ]] || continue
  mkdir -p "$scratch/packed/$rid"
  unzip -q -o -j "$nupkg" "$entry" -d "$scratch/packed/$rid"
  packed=$scratch/packed/$rid/$(basename "$entry")
  chmod +x "$packed"
  check_packed_server "the package's $rid server" "$rid" "$packed" "$version"
done

# --- a killed test host takes its server along --------------------------------------------
parent=$(mktemp -d "${TMPDIR:-/tmp}/cerulean-nuget-parent.XXXXXX")
trap 'rm -rf "$scratch" "$parent"' EXIT
cp "$here"/dotnet-parent/*.csproj "$here"/dotnet-parent/*.cs "$scratch/dotnet/nuget.config" "$parent/"
if timeout -k 10 300 "$dotnet" build "$parent" --nologo -v quiet -p:CeruleanTestingVersion="$version" >"$parent/build.log" 2>&1; then
  exe=$(ls "$parent"/bin/Debug/*/Cerulean.Testing.Parent.dll | head -n1)
  coproc host { exec "$dotnet" "$exe"; }
  host_pid=$host_PID
  read -r -t 60 server_pid server_port <&"${host[0]}"
  if [[ -n ${server_pid:-} ]] && kill -0 "$server_pid" 2>/dev/null; then
    check "the server answers 'cerulean health' while its host runs" \
      "$(readlink -f /proc/"$server_pid"/exe)" health --tablePort "$server_port"
    server_exe=$(readlink -f /proc/"$server_pid"/exe)
    kill -KILL "$host_pid"
    wait "$host_pid" 2>/dev/null
    for _ in $(seq 1 500); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.02; done
    check "the server ends when its .NET host is killed with SIGKILL" bash -c '! kill -0 "$1" 2>/dev/null' _ "$server_pid"
    check "'cerulean health' then fails" bash -c '! "$1" health --tablePort "$2" 2>/dev/null' _ "$server_exe" "$server_port"
    kill -KILL "$server_pid" 2>/dev/null
  else
    kill -KILL "$host_pid" 2>/dev/null
    check "the .NET host started a server" false
  fi
else
  tail -20 "$parent/build.log"
  check "the .NET host builds" false
fi

echo "$passed passed, $failed failed"
((failed == 0))
}
