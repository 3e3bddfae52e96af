#!/usr/bin/env bash
# Checks that cerulean-tables picks the server of the platform it is installed on, for every
# platform of packaging/npm/lib/platforms.js. npm resolves the main package's optionalDependencies
# from node/registry.js (a registry on 127.0.0.1 serving only the platform tarballs, as the one
# scope @cerulean-tables), once per platform with npm's --os/--cpu/--libc standing for that
# machine; then node/fake-platform.js makes Node report that platform, and binaryPath() must name
# the installed package's server. On this machine's own platform nothing is faked and the
# installed `cerulean` command runs. A platform whose tarball is not in dist/ (no server was
# built for it) is checked with a stand-in package of the same manifest, and the main package is
# re-packed listing every platform; the output names each stand-in.
# Ends with "N passed, N failed"; exits non-zero iff something failed.
#   bash tests/packages/node-platforms.sh
# Environment: DIST_DIR (default <repo>/dist).
set -uo pipefail
{

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dist=${DIST_DIR:-$repo/dist}
unset CERULEAN_BINARY
# shellcheck source=check.sh
source "$here/check.sh"
# shellcheck source=node/registry.sh
source "$here/node/registry.sh"
platforms="$repo/packaging/npm/lib/platforms.js"

finish() {
  echo "$passed passed, $failed failed"
  ((failed == 0))
  exit
}
give_up() {
  echo "packages node-platforms: $1" >&2
  failed=$((failed + 1))
  finish
}

command -v npm >/dev/null || give_up "npm is not installed"
main=$(ls "$dist"/cerulean-tables-[0-9]*.tgz 2>/dev/null | head -n1)
[[ -f $main ]] || give_up "no cerulean-tables package in $dist (bash scripts/package.sh npm)"
version=$(basename "$main" .tgz)
version=${version#cerulean-tables-}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/cerulean-npm-platforms.XXXXXX")
cleanup() {
  stop_registry
  rm -rf "$scratch"
}
trap cleanup EXIT
mkdir -p "$scratch/tarballs"

# --- the platform tarballs: dist/'s, or stand-ins ----------------------------------------
tarballs=()
declare -A real
while read -r target name executable; do
  base=${name#@}
  base=${base/\//-}-$version.tgz  # npm pack's name for @scope/name
  file=$dist/$base
  if [[ -f $file ]]; then
    real[$target]=1
    tarballs+=("$file")
    continue
  fi
  echo "# $name: no $file (no server built for $target): a stand-in package"
  pkg=$scratch/standin-$target
  mkdir -p "$pkg/bin"
  echo "stand-in for the $target server" >"$pkg/bin/$executable"
  node "$platforms" manifest "$target" "$version" >"$pkg/package.json"
  (cd "$pkg" && npm pack --silent --pack-destination "$scratch/tarballs" >/dev/null) || give_up "npm pack of the stand-in $name failed"
  tarballs+=("$scratch/tarballs/$base")
done < <(node "$platforms")

# The main package must list every platform; re-packed when it lists fewer (some not built).
listed=$(tar -xOzf "$main" package/package.json | node -e '
  const m = JSON.parse(require("fs").readFileSync(0, "utf8"));
  console.log(Object.keys(m.optionalDependencies ?? {}).length)')
if [[ $listed != $(node "$platforms" | wc -l) ]]; then
  echo "# $(basename "$main") lists $listed platform packages: re-packed listing all of them"
  mkdir -p "$scratch/main"
  tar -xzf "$main" -C "$scratch/main"
  node -e '
    const fs = require("fs");
    const [file, version, platforms] = process.argv.slice(1);
    const m = JSON.parse(fs.readFileSync(file, "utf8"));
    m.optionalDependencies = Object.fromEntries(require(platforms).PLATFORMS.map((p) => [p.package, version]));
    fs.writeFileSync(file, JSON.stringify(m, null, 2) + "\n");
  ' "$scratch/main/package/package.json" "$version" "$platforms"
  (cd "$scratch/main/package" && npm pack --silent --pack-destination "$scratch" >/dev/null) || give_up "re-packing $main failed"
  main=$scratch/cerulean-tables-$version.tgz
fi

start_registry "$scratch" "${tarballs[@]}" || give_up "the local registry did not start"

# Installs the main package into a new project for the machine OS CPU [LIBC] (npm's emulation
# flags; none for this machine itself). Prints the project's folder.
install_for() {
  local project=$scratch/project-$1-$2-${3:-none}
  mkdir -p "$project"
  echo '{ "name": "sample", "version": "1.0.0", "private": true }' >"$project/package.json"
  local flags=()
  [[ ${4:-} == emulate ]] && flags=(--os="$1" --cpu="$2" ${3:+--libc="$3"})
  (cd "$project" && npm install --no-audit --no-fund --loglevel=error --cache "$scratch/npm-cache" \
    --@cerulean-tables:registry="$registry" "${flags[@]}" "$main" >"$project/npm.log" 2>&1) || cat "$project/npm.log" >&2
  echo "$project"
}

# The platform packages installed in PROJECT, one line.
installed() { (cd "$1/node_modules/@cerulean-tables" 2>/dev/null && ls | tr '\n' ' '); }

# binaryPath() in PROJECT as seen by a Node that reports OS CPU LIBC.
binary_path_as() {
  (cd "$1" && CERULEAN_FAKE_PLATFORM=$2 CERULEAN_FAKE_ARCH=$3 CERULEAN_FAKE_LIBC=$4 \
    node -r "$here/node/fake-platform.js" -p 'require("cerulean-tables").binaryPath()' 2>&1)
}

host=$(node -p 'process.platform + " " + process.arch + " " + (require(process.argv[1]).detectLibc() ?? "")' \
  "$repo/packaging/npm/lib/binary.js")
read -r host_os host_cpu host_libc <<<"$host"

# --- every platform ------------------------------------------------------------------------
host_project=""
while read -r target name executable; do
  read -r os cpu libc < <(node -e '
    const p = require(process.argv[1]).PLATFORMS.find((x) => x.target === process.argv[2]);
    console.log(p.os, p.cpu, p.libc ?? "")' "$platforms" "$target")
  machine="$os-$cpu${libc:+ ($libc)}"
  if [[ $os == "$host_os" && $cpu == "$host_cpu" && $libc == "$host_libc" ]]; then
    project=$(install_for "$os" "$cpu" "$libc")
    host_project=$project
    machine="$machine, this machine"
  else
    project=$(install_for "$os" "$cpu" "$libc" emulate)
  fi
  check "npm on $machine installs $name and no other platform package" \
    test "$(installed "$project")" == "${name#@cerulean-tables/} "
  expected=$project/node_modules/$name/bin/$executable
  check "binaryPath() on $machine is $name/bin/$executable" \
    test "$(binary_path_as "$project" "$os" "$cpu" "${libc:-glibc}")" == "$expected"
  # The installed server: executable, the one the platforms suite tested, and running here
  # natively, under qemu (arm64) or under Wine (Windows) (check.sh, check_packed_server).
  if [[ -n ${real[$target]:-} ]]; then
    check "$name holds an executable server" test -x "$expected"
    check_packed_server "$name's server" "$target" "$expected" "$version"
  fi
done < <(node "$platforms")

# --- this machine: the command runs the server; a missing platform package is named ------------
if [[ -n $host_project ]]; then
  if [[ -n ${real[linux-x64]:-} && $host_os-$host_cpu-$host_libc == linux-x64-glibc ]]; then
    check "the installed cerulean command runs the server (--version)" \
      bash -c '[[ $(cd "$1" && npx --no-install cerulean --version) == "cerulean $2" ]]' _ "$host_project" "$version"
  fi
  message=$(binary_path_as "$host_project" linux arm64 glibc)
  check "without its platform package, CeruleanBinaryNotFoundError names @cerulean-tables/linux-arm64" \
    bash -c '[[ $1 == *CeruleanBinaryNotFoundError* && $1 == *"package @cerulean-tables/linux-arm64, which is not installed"* ]]' _ "$message"
  out=$(cd "$host_project" && CERULEAN_FAKE_PLATFORM=darwin CERULEAN_FAKE_ARCH=arm64 \
    node -r "$here/node/fake-platform.js" node_modules/cerulean-tables/bin/cerulean.js --version 2>&1)
  status=$?
  check "the cerulean command without its platform package exits 127 naming @cerulean-tables/darwin-arm64" \
    bash -c '[[ $1 == 127 && $2 == *"@cerulean-tables/darwin-arm64"* ]]' _ "$status" "$out"
  message=$(binary_path_as "$host_project" freebsd x64 glibc)
  check "on a platform without a server, the error says so and lists the platforms" \
    bash -c '[[ $1 == *"no prebuilt server for freebsd-x64"* && $1 == *"win32-x64"* ]]' _ "$message"
else
  echo "# this machine ($host) is none of the platforms: the command is not run"
fi

finish
}
