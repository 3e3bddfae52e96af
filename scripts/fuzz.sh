#!/usr/bin/env bash
# Builds the libFuzzer targets (CMake preset `fuzz`: clang with libFuzzer,
# ASan and UBSan, in build/fuzz) and runs each for a bounded time, starting
# from its committed seeds, failing on any crash, sanitizer report, timeout
# or out-of-memory. Every <module>/X_fuzz.cc is target X_fuzz, seeded from
# <module>/fuzz_seeds/X/. Ends with "N passed, N failed" (one per target).
#
#   bash scripts/fuzz.sh                    # every target, FUZZ_SECONDS each
#   bash scripts/fuzz.sh filter_fuzz        # some targets
#   FUZZ_SECONDS=600 nice bash scripts/fuzz.sh auth_fuzz   # a longer run
#
# Environment: FUZZ_SECONDS (default 20) per target; FUZZ_CORPUS_DIR keeps
# the inputs each run adds (default: a temporary directory, removed);
# FUZZ_LOG_DIR for logs and crash inputs (default build/fuzz/logs); JOBS for
# the build (default nproc); SKIP_FUZZ_BUILD=1 to run an existing build.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds=${FUZZ_SECONDS:-20}
build_dir=build/fuzz
log_dir=${FUZZ_LOG_DIR:-$build_dir/logs}
jobs=${JOBS:-$(nproc)}

if [[ ${SKIP_FUZZ_BUILD:-0} != 1 ]]; then
  if command -v ccache >/dev/null 2>&1; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
  if ! { cmake --preset fuzz >/dev/null && cmake --build --preset fuzz -j"$jobs"; }; then
    echo "fuzz: build failed"
    echo "0 passed, 1 failed"
    exit 1
  fi
fi
mkdir -p "$log_dir"

targets=("$@")
if ((${#targets[@]} == 0)); then
  while IFS= read -r src; do
    targets+=("$(basename "$src" .cc)")
  done < <(find odata server storage -name '*_fuzz.cc' | sort)
fi

corpus_root=${FUZZ_CORPUS_DIR:-}
tmp_root=""
if [[ -z $corpus_root ]]; then
  tmp_root=$(mktemp -d)
  corpus_root=$tmp_root
fi

passed=0
failed=0
for name in "${targets[@]}"; do
  src=$(find odata server storage -name "$name.cc" | head -n 1)
  if [[ -z $src || ! -x $build_dir/$name ]]; then
    echo "FAIL $name: no source or no executable at $build_dir/$name"
    failed=$((failed + 1))
    continue
  fi
  seeds=${src%%/*}/fuzz_seeds/${name%_fuzz}
  corpus=$corpus_root/$name
  mkdir -p "$corpus"
  log=$log_dir/$name.log
  # New inputs go to the first directory (never the committed seeds).
  "$build_dir/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$log_dir/$name-" "$corpus" \
    $([[ -d $seeds ]] && echo "$seeds") >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if ((rc == 0)); then
    echo "ok   $name: ${execs:-?} executions in ${seconds}s, corpus $(ls "$corpus" | wc -l) inputs"
    passed=$((passed + 1))
  else
    echo "FAIL $name (exit $rc): see $log"
    grep -m 20 -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" || tail -n 20 "$log"
    failed=$((failed + 1))
  fi
done

[[ -n $tmp_root ]] && rm -rf "$tmp_root"
echo "$passed passed, $failed failed"
((failed == 0))
