#!/usr/bin/env bash
# Checks that the modules and the server's layers depend one way: no source
# file includes a header of a layer above its own. The order, bottom first
# (one CMake library each, linked in this order; server/README.md, "Layout"):
#
#   storage  odata  server/formats  server/protocol  server/runtime
#   server/devtools  server/operations  server/http  server (main.cc, cli)
#
# A layer may include its own headers and those of any layer below it. Tests,
# fuzz entries and micro-benchmarks (*_test.cc, *_fuzz.cc, *_bench.cc) and the
# test harness server/http/test_server.h are exempt: their binaries link
# every layer of their module.
#
#   bash scripts/check-layers.sh    # prints each violation, then "N passed, M failed"
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Every quoted include of every library source, as "FILE:LINE", checked in
# one pass: a path's layer is the longest entry of the list that holds it.
git ls-files -- 'storage/*.h' 'storage/*.cc' 'odata/*.h' 'odata/*.cc' 'server/*.h' 'server/*.cc' |
  grep -Ev '(_test|_fuzz|_bench)\.cc$|^server/http/test_server\.h$' |
  xargs grep -H -e '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' /dev/null |
  awk -v order="storage odata server/formats server/protocol server/runtime server/devtools server/operations server/http server" '
    BEGIN { n = split(order, layer, " ") }
    function rank(path,   i, best, len) {
      best = 0; len = 0
      for (i = 1; i <= n; i++)
        if (index(path, layer[i] "/") == 1 && length(layer[i]) > len) { best = i; len = length(layer[i]) }
      return best
    }
    {
      file = substr($0, 1, index($0, ":") - 1)
      inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
      seen[file] = 1
      own = rank(file); target = rank(inc)
      if (own && target > own) {
        printf "%s includes \"%s\": %s is above %s\n", file, inc, layer[target], layer[own]
        bad[file] = 1
      }
    }
    END {
      for (f in seen) if (f in bad) failed++; else passed++
      printf "%d passed, %d failed\n", passed, failed
      exit failed > 0
    }'
