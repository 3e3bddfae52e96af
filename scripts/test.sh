#!/usr/bin/env bash
# Builds Cerulean (installing missing apt and npm packages first), runs the
# doctest unit-test binaries and the layer check (scripts/check-layers.sh),
# then every end-to-end suite against the real binary. Prints one summary line per suite and ends with exactly
#
#   N passed, N failed
#
# exiting non-zero when anything failed (a suite that crashes, times out or
# exits non-zero without reporting a failure counts as one failure).
#
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh unit node       # only some suites (unit, node, python, dotnet, browser,
#                                        # container, resilience, isolation, packages, fuzz,
#                                        # sanitize, postgres, platforms)
#
# platforms: the other platforms' servers (scripts/cross.sh), built in the background while the
# other suites run and tested after them, under Wine, qemu or an empty root (macOS: built and
# checked); the packages are built after it, so that they carry those servers.
#
# Environment: BUILD_DIR (default build); SKIP_BUILD=1 to test an existing
# build; CERULEAN_BIN to test another binary with the e2e suites;
# UNIT_TIMEOUT / E2E_TIMEOUT per-suite limits in seconds (defaults 300 / 600);
# TEST_LOG_DIR for the per-suite logs (default $BUILD_DIR/test-logs);
# FUZZ_SECONDS per fuzz target (default 20); PLATFORM_TIMEOUT per platforms suite (default
# 1800: emulated servers are slower); PLATFORM_TARGETS the platforms suite's targets (default
# linux-arm64 linux-musl-x64 win-x64 linux-musl-arm64; the others are osx-arm64 osx-x64).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)

build_dir=${BUILD_DIR:-build}
[[ $build_dir == /* ]] || build_dir=$repo/$build_dir
unit_timeout=${UNIT_TIMEOUT:-300}
e2e_timeout=${E2E_TIMEOUT:-600}
# The container suite builds the image (a full compile inside it) on a cold cache.
container_timeout=${CONTAINER_TIMEOUT:-1500}
log_dir=${TEST_LOG_DIR:-$build_dir/test-logs}

selected=("$@")
wants() {
  ((${#selected[@]} == 0)) && return 0
  local s
  for s in "${selected[@]}"; do [[ $s == "$1" ]] && return 0; done
  return 1
}

summary=()
total_passed=0
total_failed=0

# record NAME PASSED FAILED [NOTE]: adds a suite's counts to the summary.
record() {
  local name=$1 passed=$2 failed=$3 note=${4:-}
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  summary+=("$(printf '%-22s %s passed, %s failed%s' "$name:" "$passed" "$failed" "${note:+ ($note)}")")
}

finish() {
  echo
  echo "==================== summary ===================="
  local line
  for line in "${summary[@]}"; do echo "$line"; done
  echo "================================================="
  echo "$total_passed passed, $total_failed failed"
  ((total_failed == 0))
}

# run_logged LOG CMD...: runs CMD with stdout+stderr shown and copied to LOG;
# returns CMD's exit status.
run_logged() {
  local log=$1
  shift
  set +o pipefail
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  set -o pipefail
  return "$rc"
}

# parse_counts LOG: prints "PASSED FAILED" from a runner's output, or nothing
# when it holds no recognisable summary. Understands, last occurrence winning:
#   our convention      "12 passed, 0 failed"
#   doctest             "[doctest] test cases: 12 | 12 passed | 0 failed | 0 skipped"
#   node --test (TAP)   "# pass 12" / "# fail 0"
#   pytest              "==== 2 failed, 10 passed, 1 error in 3.2s ===="
#   unittest            "Ran 12 tests" + "FAILED (failures=1, errors=1)"
parse_counts() {
  sed -e 's/\x1b\[[0-9;]*m//g' "$1" | awk '
    function num(s, re,   m) { return match(s, re) ? substr(s, RSTART, RLENGTH) + 0 : 0 }
    /^[[:space:]]*[0-9]+ passed, [0-9]+ failed[[:space:]]*$/ {
      k = split($0, a, /[^0-9]+/); n = 0
      for (i = 1; i <= k; i++) if (a[i] != "") v[++n] = a[i]
      fmt = "ours"; p = v[1] + 0; f = v[2] + 0; next
    }
    /\[doctest\] test cases:/ {
      line = $0; sub(/.*test cases:/, "", line); split(line, c, "|")
      dp = num(c[2], "[0-9]+"); df = num(c[3], "[0-9]+")
      fmt = "doctest"; p = dp; f = df; next
    }
    /^# pass [0-9]+/ { tp = $3 + 0; have_tap = 1 }
    /^# fail [0-9]+/ { tf = $3 + 0; have_tap = 1 }
    /^=+ .* in [0-9.]+s/ && /(passed|failed|error|no tests ran)/ {
      pp = 0; pf = 0
      if (match($0, /[0-9]+ passed/)) pp = substr($0, RSTART, RLENGTH) + 0
      if (match($0, /[0-9]+ failed/)) pf += substr($0, RSTART, RLENGTH) + 0
      if (match($0, /[0-9]+ error/)) pf += substr($0, RSTART, RLENGTH) + 0
      fmt = "pytest"; p = pp; f = pf; next
    }
    /^Ran [0-9]+ tests?/ { ur = $2 + 0; have_ut = 1 }
    /^FAILED \(/ {
      uf = 0
      if (match($0, /failures=[0-9]+/)) uf += substr($0, RSTART + 9, RLENGTH - 9) + 0
      if (match($0, /errors=[0-9]+/)) uf += substr($0, RSTART + 7, RLENGTH - 7) + 0
    }
    END {
      if (fmt != "") { print p, f; exit }
      if (have_tap) { print tp, tf; exit }
      if (have_ut) { print ur - uf, uf; exit }
    }'
}

# run_suite NAME TIMEOUT CMD...: runs one suite and records its counts.
run_suite() {
  local name=$1 limit=$2
  shift 2
  local log=$log_dir/$name.log
  echo
  echo "==================== $name ===================="
  local rc=0
  run_logged "$log" timeout --kill-after=15 "$limit" "$@" || rc=$?
  local counts passed=0 failed=0 note=""
  counts=$(parse_counts "$log")
  if [[ -n $counts ]]; then
    read -r passed failed <<<"$counts"
  else
    note="no test summary found"
  fi
  if ((rc == 124 || rc == 137)); then
    note="timed out after ${limit}s"
    failed=$((failed + 1))
  elif ((rc != 0 && failed == 0)); then
    note="${note:+$note; }exit status $rc"
    failed=1
  elif [[ -z $counts && $rc -eq 0 ]]; then
    failed=1
  fi
  record "$name" "$passed" "$failed" "$note"
}

# --- build --------------------------------------------------------------------
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  echo "==================== build ===================="
  if ! BUILD_DIR=$build_dir bash scripts/build.sh; then
    record build 0 1 "build failed"
    finish
    exit 1
  fi
else
  bash scripts/setup.sh
fi
mkdir -p "$log_dir"

export CERULEAN_BIN=${CERULEAN_BIN:-$build_dir/cerulean}
export BUILD_DIR=${BUILD_DIR:-build}

# What runs when the test command ends, however it ends (the background builds below, the
# PostgreSQL test cluster).
at_exit=()
run_at_exit() {
  local cmd
  for cmd in "${at_exit[@]}"; do eval "$cmd" || true; done
}
trap run_at_exit EXIT

# --- other platforms: their builds start now ----------------------------------------
# scripts/cross.sh builds the server for each target of the platforms suite (below, after the
# other suites). Their toolchains' Debian packages are installed first, here, so that no apt
# run of the builds meets one of a suite; the builds then run one after another in the
# background at idle priority (SCHED_IDLE, nice 19, idle I/O class): they take only the CPU
# time the suites leave, so the suites' own timing is unchanged, and the platforms suite waits
# for what is left of them. Their libraries and toolchains are built once into a cache outside
# the clone, ${CERULEAN_CROSS_CACHE:-~/.cache/cerulean-cross}; a warm cache leaves the
# server's own build.
# PLATFORM_TARGETS: the targets to build and test, in this order. The default is every target
# that can run here (Windows x64, Linux arm64, static musl x64 and arm64, the halves of the
# multi-arch image); each Zig target builds its own libc++ and OpenSSL on a cold cache, and the
# two macOS builds, which nothing here can run, do not fit the test command's hour beside them
# (README, "Platforms"): they are built and checked when named.
platform_targets=(${PLATFORM_TARGETS:-linux-arm64 linux-musl-x64 win-x64 linux-musl-arm64})
cross_pid=
if wants platforms; then
  echo
  echo "==================== cross builds (background) ===================="
  mkdir -p "$log_dir/cross"
  rm -f "$log_dir"/cross/*.status
  if bash scripts/cross.sh --install "${platform_targets[@]}" >"$log_dir/cross/install.log" 2>&1; then
    # A process group of its own (job control, set -m), so that an early exit ends every
    # build in it, in this session: a new session (setsid) is a new scheduler autogroup, which
    # Linux gives an equal share of the CPU whatever its tasks' priority, so that the builds
    # would take half of it from the suites.
    set -m
    chrt --idle 0 nice -n 19 ionice -c 3 bash -c '
      log_dir=$1
      shift
      for target in "$@"; do
        rc=0
        bash scripts/cross.sh "$target" >"$log_dir/cross-$target.log" 2>&1 || rc=$?
        echo "$rc" >"$log_dir/cross/$target.status"
      done' cross-builds "$log_dir" "${platform_targets[@]}" </dev/null &
    cross_pid=$!
    set +m
    at_exit+=('[[ -n $cross_pid ]] && kill -- "-$cross_pid" 2>/dev/null')
    echo "building ${platform_targets[*]} (logs: $log_dir/cross-TARGET.log)"
  else
    tail -n 20 "$log_dir/cross/install.log"
    record cross-install 0 1 "scripts/cross.sh --install failed"
  fi
fi

# --- unit tests -----------------------------------------------------------------
if wants unit; then
  run_suite layers "$unit_timeout" bash scripts/check-layers.sh
  for t in storage_test odata_test server_test; do
    if [[ -x $build_dir/$t ]]; then
      run_suite "$t" "$unit_timeout" "$build_dir/$t" --no-colors=true
    fi
  done
fi

# --- end-to-end suites ------------------------------------------------------------
if [[ ! -x $CERULEAN_BIN ]]; then
  record e2e 0 1 "no server binary at $CERULEAN_BIN"
else
  if wants node && [[ -f tests/e2e/node/run.js ]]; then
    run_suite e2e-node "$e2e_timeout" node tests/e2e/node/run.js
  fi
  if wants python && [[ -f tests/e2e/python/run.sh ]]; then
    run_suite e2e-python "$e2e_timeout" bash tests/e2e/python/run.sh
  fi
  if wants dotnet && [[ -f tests/e2e/dotnet/run.sh ]]; then
    run_suite e2e-dotnet "$e2e_timeout" bash tests/e2e/dotnet/run.sh
  fi
  if wants browser && [[ -f tests/e2e/browser/run.js ]]; then
    run_suite e2e-browser "$e2e_timeout" node tests/e2e/browser/run.js
  fi
  # Hostile clients against the binary (resilience, not a node e2e suite:
  # it uses only Node's standard library).
  if wants resilience && [[ -f tests/resilience/run.js ]]; then
    run_suite resilience "$e2e_timeout" node tests/resilience/run.js
  fi
  # Attacks while a victim client measures its latency and the server's
  # memory is watched (tests/isolation/README.md); standard library only.
  if wants isolation && [[ -f tests/isolation/run.js ]]; then
    run_suite isolation "$e2e_timeout" node tests/isolation/run.js
  fi
  if wants container && [[ -f tests/container/run.sh ]]; then
    run_suite container "$container_timeout" bash tests/container/run.sh
  fi
fi

# --- fuzzing and sanitizers (their own build directories) ------------------------
# fuzz: scripts/fuzz.sh builds the `fuzz` preset and runs every libFuzzer
# target for FUZZ_SECONDS from its seeds. sanitize: the unit tests and the
# server of that same build (clang, ASan + UBSan, build/fuzz, whose libraries
# the fuzz targets have compiled) run the unit tests and the end-to-end files
# that feed the parsers; any sanitizer report, written under the log
# directory, fails it. One instrumented build serves both: a second one (the
# GCC `debug` preset) costs more CPU than the hour leaves the platforms'
# builds (README, "Fuzzing and sanitizers").
if wants fuzz; then
  run_suite fuzz "${FUZZ_TIMEOUT:-1200}" bash scripts/fuzz.sh
fi
if wants sanitize; then
  san_dir=$repo/build/fuzz
  san_logs=$log_dir/sanitizer-reports
  rm -rf "$san_logs" && mkdir -p "$san_logs"
  echo
  echo "==================== sanitize build ===================="
  if command -v ccache >/dev/null 2>&1; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
  if ! { cmake --preset fuzz >/dev/null &&
    cmake --build "$san_dir" -j"${JOBS:-$(nproc)}" --target cerulean storage_test odata_test server_test; }; then
    record sanitize-build 0 1 "build failed"
  else
    export ASAN_OPTIONS="log_path=$san_logs/asan"
    export UBSAN_OPTIONS="log_path=$san_logs/ubsan:print_stacktrace=1:halt_on_error=1"
    # Two storage cases assert page-cache and checkpoint counts, which ASan's
    # allocator and slowdown change; the unit suite runs them.
    run_suite sanitize-storage_test "$unit_timeout" "$san_dir/storage_test" --no-colors=true \
      '--test-case-exclude=*page cache keeps the pages it rewrites*,*WAL is copied for the next write*'
    for t in odata_test server_test; do
      run_suite "sanitize-$t" "$unit_timeout" "$san_dir/$t" --no-colors=true
    done
    run_suite sanitize-e2e-node "$e2e_timeout" env CERULEAN_BIN="$san_dir/cerulean" \
      node tests/e2e/node/run.js raw-http.test.js query.test.js data-tables.test.js \
      azure-storage.test.js service.test.js
    unset ASAN_OPTIONS UBSAN_OPTIONS
    # A report goes to log_path, or (UBSan's, in the ASan runtime) to the
    # suite's output: both count.
    reports=$(($(find "$san_logs" -type f | wc -l) + $(cat "$log_dir"/sanitize-*.log 2>/dev/null |
      { grep -c -E 'runtime error:|ERROR: (Address|Leak)Sanitizer' || true; })))
    if ((reports > 0)); then
      echo "sanitizer reports:"
      grep -h -A12 -E 'runtime error:|ERROR: (Address|Leak)Sanitizer' "$log_dir"/sanitize-*.log | head -n 40 || true
      find "$san_logs" -type f -exec head -n 40 {} +
      record sanitizer-reports 0 "$reports" "see $san_logs"
    else
      record sanitizer-reports 1 0
    fi
  fi
fi

# --- PostgreSQL backend -----------------------------------------------------------
# A throw-away cluster (scripts/pg-test-cluster.sh: installs postgresql if
# missing, initdb in a temporary folder, a free loopback port), the storage
# suite's PostgreSQL cases, and the Node and Python suites against servers
# started with --database (a fresh database each); the cluster is removed
# afterwards. Then the outage suite on that cluster, and the failover suite
# on primary/standby pairs of its own.
if wants postgres; then
  pg_state=$(mktemp -u "${TMPDIR:-/tmp}/cerulean-pg-state.XXXXXX")
  if pg_url=$(bash scripts/pg-test-cluster.sh start "$pg_state"); then
    at_exit+=('bash scripts/pg-test-cluster.sh stop "$pg_state"')
    if [[ -x $build_dir/storage_test ]]; then
      run_suite storage_test-postgres "$unit_timeout" env CERULEAN_TEST_DATABASE="$pg_url" \
        "$build_dir/storage_test" --no-colors=true '-tc=postgres:*,*PostgresBackend*'
    fi
    if [[ -x $CERULEAN_BIN && -f tests/e2e/node/run.js ]]; then
      run_suite e2e-node-postgres "$e2e_timeout" env CERULEAN_E2E_DATABASE="$pg_url" \
        node tests/e2e/node/run.js
    fi
    if [[ -x $CERULEAN_BIN && -f tests/e2e/python/run.sh ]]; then
      run_suite e2e-python-postgres "$e2e_timeout" env CERULEAN_E2E_DATABASE="$pg_url" \
        bash tests/e2e/python/run.sh
    fi
    if [[ -x $CERULEAN_BIN && -f tests/e2e/node/pg-outage.test.js ]]; then
      # Alone: it stops, freezes and restarts the database under the servers.
      run_suite e2e-node-pg-outage "$e2e_timeout" env CERULEAN_E2E_DATABASE="$pg_url" \
        CERULEAN_E2E_PG_CLUSTER="$pg_state" node tests/e2e/node/run.js pg-outage.test.js
    fi
    if [[ -x $CERULEAN_BIN && -f tests/e2e/node/pg-failover.test.js ]]; then
      # Primaries and synchronous standbys of its own, killed and frozen.
      run_suite e2e-node-pg-failover "$e2e_timeout" env CERULEAN_E2E_PG_FAILOVER=1 \
        node tests/e2e/node/run.js pg-failover.test.js
    fi
    bash scripts/pg-test-cluster.sh stop "$pg_state"
    unset 'at_exit[-1]'
  else
    record postgres 0 1 "could not start a PostgreSQL test cluster"
  fi
fi

# --- other platforms: their tests ----------------------------------------------------
# Once the builds started above are done: the Windows build runs under Wine, the arm64 ones
# under qemu (tests/platforms/*.sh wrap them as CERULEAN_BIN) and the static musl x64 one as it
# is: each serves the Node suite over loopback, in memory and on disk (CERULEAN_E2E_ON_DISK=1),
# and crash.test.js kills it under writers. Under emulation the whole suite is too slow for the
# test command, so it runs the files listed below, which between them use every operation
# (tables, entities, batches, queries, ACLs, service properties, SAS, the CLI tools). The
# static musl servers also serve from an empty root (tests/platforms/empty-root.js); the macOS
# ones cannot run here, so they are built and their Mach-O files checked
# (tests/platforms/macho_check.py) only.
platform_timeout=${PLATFORM_TIMEOUT:-1800}
platform_files=(data-tables.test.js azure-storage.test.js query.test.js service.test.js
  access.test.js durability.test.js crash.test.js)
# Each target is tested as soon as its build is done, while the builds after it go on.
if wants platforms && [[ -n $cross_pid ]]; then
  for target in "${platform_targets[@]}"; do
    echo
    echo "==================== cross build $target: waiting ===================="
    while [[ ! -f $log_dir/cross/$target.status ]] && kill -0 "$cross_pid" 2>/dev/null; do
      sleep 2
    done
    status=$(cat "$log_dir/cross/$target.status" 2>/dev/null || echo "not run")
    if [[ $status != 0 ]]; then
      echo "cross-$target: scripts/cross.sh $target failed ($status):"
      tail -n 30 "$log_dir/cross-$target.log" 2>/dev/null || true
      record "cross-$target" 0 1 "scripts/cross.sh $target failed (see $log_dir/cross-$target.log)"
      continue
    fi
    record "cross-$target" 1 0
    server_env=()
    case $target in
      win-x64) server_env=(CERULEAN_BIN="$repo/tests/platforms/wine-cerulean.sh") ;;
      linux-arm64) server_env=(CERULEAN_BIN="$repo/tests/platforms/qemu-cerulean.sh") ;;
      linux-musl-x64) server_env=(CERULEAN_BIN="$repo/build/cross/$target/cerulean") ;;
      linux-musl-arm64)
        server_env=(CERULEAN_BIN="$repo/tests/platforms/qemu-cerulean.sh"
          CERULEAN_ARM64_BIN="$repo/build/cross/$target/cerulean")
        ;;
      osx-arm64 | osx-x64)
        run_suite "platform-$target-macho" 120 python3 tests/platforms/macho_check.py \
          "$([[ $target == osx-arm64 ]] && echo arm64 || echo x86_64)" "build/cross/$target/cerulean"
        continue
        ;;
    esac
    # A build that cannot serve at all fails here once, instead of once per server start.
    echo
    echo "==================== platform-$target-start ===================="
    if run_logged "$log_dir/platform-$target-start.log" timeout --kill-after=15 120 \
      env "${server_env[@]}" node tests/e2e/node/run.js service.test.js; then
      record "platform-$target-start" 1 0
      run_suite "platform-$target-memory" "$platform_timeout" env "${server_env[@]}" \
        node tests/e2e/node/run.js "${platform_files[@]}"
      run_suite "platform-$target-disk" "$platform_timeout" env "${server_env[@]}" \
        CERULEAN_E2E_ON_DISK=1 node tests/e2e/node/run.js "${platform_files[@]}"
      if [[ $target == linux-musl-* ]]; then
        run_suite "platform-$target-empty-root" 300 node tests/platforms/empty-root.js "$target"
      fi
    else
      record "platform-$target-start" 0 1 "the $target server did not serve service.test.js"
    fi
  done
  wait "$cross_pid" || true
  cross_pid=
fi

# --- packages -----------------------------------------------------------------------
# After the platforms suite, so that the packages carry the servers it built (the others get
# stand-ins in the platform-selection tests). scripts/package.sh builds the Debian, NuGet and
# npm packages into dist/; each is then
# installed from that file and used as a user would (tests/packages/: apt install and the
# service's command line, sample xunit v2 and v3 projects, an Aspire AppHost, scratch npm
# projects), and the server of the
# NuGet and npm packages is run in a root that holds only glibc.
if wants packages; then
  echo
  echo "==================== package build ===================="
  if run_logged "$log_dir/package-build.log" bash scripts/package.sh; then
    record package-build 1 0
    run_suite packages-deb "$e2e_timeout" bash tests/packages/deb.sh
    run_suite packages-deb-arm64 "$e2e_timeout" bash tests/packages/deb-arm64.sh
    run_suite packages-dotnet "$e2e_timeout" bash tests/packages/dotnet.sh
    run_suite packages-aspire "$e2e_timeout" bash tests/packages/aspire.sh
    run_suite packages-node "$e2e_timeout" bash tests/packages/node.sh
    run_suite packages-node-platforms "$e2e_timeout" bash tests/packages/node-platforms.sh
    run_suite packages-portable "$e2e_timeout" bash tests/packages/portable.sh
  else
    record package-build 0 1 "scripts/package.sh failed"
  fi
fi


# The multi-arch image of the static musl servers (scripts/image.sh); skips without them.
if wants container && [[ -f tests/container/static.sh ]]; then
  run_suite container-static "$container_timeout" bash tests/container/static.sh
fi

finish
