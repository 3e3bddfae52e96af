# Sourced by the package tests: `check NAME CMD...` runs CMD, prints "ok - NAME" or
# "not ok - NAME" and counts it in $passed / $failed (which the caller reports).
passed=0
failed=0

check() {
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
    echo "ok - $name"
  else
    failed=$((failed + 1))
    echo "not ok - $name"
  fi
}

# server_runner TARGET FILE: sets `runner` to the command that runs FILE, a server of TARGET
# (scripts/cross.sh names), on this x86-64 Linux machine with the platforms suite's wrappers
# (tests/platforms/): as it is for x64 Linux, under qemu-user for arm64 Linux, under Wine for
# Windows; empty when this machine cannot run it (macOS, or the emulator is not installed).
server_runner() {
  runner=() runner_name=
  [[ $(uname -s)-$(uname -m) == Linux-x86_64 ]] || return 0
  case $1 in
    linux-x64 | linux-musl-x64) runner=("$2") runner_name=natively ;;
    linux-arm64 | linux-musl-arm64)
      command -v qemu-aarch64-static >/dev/null 2>&1 &&
        runner=(env CERULEAN_ARM64_BIN="$2" "$repo/tests/platforms/qemu-cerulean.sh")
      runner_name="under qemu"
      ;;
    win-x64)
      [[ -x /usr/lib/wine/wine64 ]] &&
        runner=(env CERULEAN_WIN_EXE="$2" "$repo/tests/platforms/wine-cerulean.sh")
      runner_name="under Wine"
      ;;
  esac
  return 0
}

# check_packed_server NAME TARGET FILE VERSION: FILE, TARGET's server as a package carries it,
# is the one scripts/cross.sh built (build/cross/TARGET, which the platforms suite tests) when
# that exists, and answers --version with "cerulean VERSION" where this machine can run it.
check_packed_server() {
  local name=$1 target=$2 file=$3 version=$4 built
  built=$repo/build/cross/$target/$(basename "$file")
  if [[ $target != linux-x64 && -f $built ]]; then
    check "$name is the $target server the platforms suite tests (build/cross/$target)" cmp -s "$file" "$built"
  fi
  server_runner "$target" "$file"
  if ((${#runner[@]} > 0)); then
    check "$name answers --version here, $runner_name" \
      bash -c '[[ $("${@:2}" --version | tr -d "\r") == "cerulean $1" ]]' _ "$version" "${runner[@]}"
  fi
}
