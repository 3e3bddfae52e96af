#!/usr/bin/env bash
# Installs what building and testing Cerulean needs on Debian bookworm, and
# nothing that is already there: the apt packages (skipped entirely when
# dpkg reports them all installed), Node.js when `node`/`npm` are absent, and
# the end-to-end suite's npm packages when tests/e2e/node/node_modules is
# missing. Safe to run repeatedly.
#
# Environment: SETUP_SCOPE=server installs only what building the server
# needs (start.sh): no test toolchain, no Node.js, no npm step.
# SKIP_NPM=1 skips the npm step alone.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# What building the `cerulean` target needs.
readonly SERVER_PACKAGES=(
  build-essential cmake pkg-config
  libboost1.81-dev libboost-url1.81-dev libboost-program-options1.81-dev
  nlohmann-json3-dev libsimdjson-dev libsqlite3-dev libssl-dev libexpat1-dev libfast-float-dev
  libpq-dev  # the PostgreSQL backend's header (postgresql itself: scripts/pg-test-cluster.sh)
)
# What the unit tests, fuzzers, sanitizer builds and end-to-end suites add.
readonly TEST_PACKAGES=(
  doctest-dev
  python3-azure
  clang libclang-rt-14-dev ccache
  haproxy  # tests/e2e/python/test_compose.py runs docker/haproxy.cfg
)
scope=${SETUP_SCOPE:-all}
case $scope in
  server) APT_PACKAGES=("${SERVER_PACKAGES[@]}") ;;
  all) APT_PACKAGES=("${SERVER_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
  *)
    printf 'setup: SETUP_SCOPE must be server or all, not %s\n' "$scope" >&2
    exit 2
    ;;
esac

log() { printf 'setup: %s\n' "$*" >&2; }

# Runs a command as root: directly when we are root, else through sudo.
as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    log "need root or sudo to run: $*"
    return 1
  fi
}

# True iff dpkg records the package as fully installed (for some architecture: with a foreign
# architecture added, dpkg-query prints one status per architecture it knows the package for).
installed() {
  dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -qx "install ok installed"
}

apt_install() {
  log "apt-get install $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for pkg in "${APT_PACKAGES[@]}"; do
    installed "$pkg" || missing+=("$pkg")
  done
else
  log "dpkg not found; not a Debian system, skipping apt packages"
fi

# Node.js: any node/npm on PATH will do (NodeSource, nvm, Debian); only fall
# back to Debian's packages when one of them is absent.
if [[ $scope == all ]]; then
  if ! command -v node >/dev/null 2>&1; then missing+=(nodejs); fi
  if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi
fi

if ((${#missing[@]} > 0)); then
  apt_install "${missing[@]}"
else
  log "apt packages present"
fi

if [[ ${SKIP_NPM:-0} != 1 && $scope == all ]]; then
  node_dir=tests/e2e/node
  if [[ -f $node_dir/package.json && ! -d $node_dir/node_modules ]]; then
    if [[ -f $node_dir/package-lock.json ]]; then
      log "npm ci in $node_dir"
      (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
    else
      log "npm install in $node_dir"
      (cd "$node_dir" && npm install --no-audit --no-fund --loglevel=error)
    fi
  fi
fi
