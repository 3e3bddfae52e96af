#!/usr/bin/env bash
# Profiles the server on one of the benchmark's request mixes: starts
# build/cerulean under valgrind (callgrind) or perf, drives it with wrk and the
# harness's Lua script ($BENCH_HARNESS/lua/table.lua, account SAS in the
# query string, as the harness does), stops it and prints the top functions.
#
#   BENCH_HARNESS=DIR bash scripts/profile.sh point  [seconds] [connections]   # point reads of 10k entities
#   bash scripts/profile.sh point100k ...  # point reads of the range table's 100k entities
#   bash scripts/profile.sh insert [seconds] [connections]
#   bash scripts/profile.sh upsert|batch ...
#   bash scripts/profile.sh range  ...   # starts-with $top=100 over 100k entities of one partition
#   bash scripts/profile.sh page   ...   # the first 1,000-entity page of that table (a scan page)
#   bash scripts/profile.sh chrono ...   # newest 20 of a device: 50 devices x 400 reverse-ticks events
#
# Environment: PROFILER=callgrind (default; instructions, exclusive and
# inclusive), perf (cycles, kernel included), strace (system calls counted;
# STRACE_ARGS replaces -c, e.g. "-T -e trace=fdatasync" for sync latencies)
# or none (wrk's figures and the server's CPU time per request). perf,
# strace and none pin the server to CPU 1 as the harness pins it (one I/O
# thread); callgrind runs it unpinned. BENCH_HARNESS (required), the
# benchmark harness's directory (see scripts/bench.sh); BUILD_DIR (default
# build); SERVER_ARGS, more server options (e.g.
# --inMemoryPersistence); SIDE_WRITES=N, a client (scripts/side-writes.js,
# on CPU 0 beside wrk) inserting N entities a second into another table
# while wrk runs. Output files go to $BUILD_DIR/profile/.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
mode=${1:-point}
seconds=${2:-20}
conns=${3:-4}
build_dir=${BUILD_DIR:-build}
bench=${BENCH_HARNESS:-}
if [[ -z $bench || ! -f $bench/lua/table.lua || ! -f $bench/lib/ensure-deps.sh ]]; then
  echo "profile.sh: set BENCH_HARNESS to the benchmark harness's directory" \
    "(the one holding lua/table.lua and lib/ensure-deps.sh)${bench:+; '$bench' is not one}" >&2
  exit 2
fi
profiler=${PROFILER:-callgrind}
out_dir=$build_dir/profile
mkdir -p "$out_dir"
# The harness's npm packages and wrk, when missing.
bash "$bench/lib/ensure-deps.sh" >&2
data=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
trap 'kill "$server" 2>/dev/null || true; rm -rf "$data"' EXIT

bin=$build_dir/cerulean
args=(--tableHost 127.0.0.1 --tablePort "$port" --location "$data" --silent ${SERVER_ARGS:-})
case $profiler in
  callgrind)
    # Instrumentation starts after the set-up (callgrind_control -i on below).
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out_dir/callgrind.$mode" \
      "$bin" "${args[@]}" >"$out_dir/server.log" 2>&1 &
    ;;
  perf)
    taskset -c 1 perf record -g -o "$out_dir/perf.$mode" "$bin" "${args[@]}" >"$out_dir/server.log" 2>&1 &
    ;;
  strace)
    taskset -c 1 strace ${STRACE_ARGS:--c} -f -o "$out_dir/strace.$mode" "$bin" "${args[@]}" >"$out_dir/server.log" 2>&1 &
    ;;
  none)
    taskset -c 1 "$bin" "${args[@]}" >"$out_dir/server.log" 2>&1 &
    ;;
  *) echo "PROFILER must be callgrind, perf, strace or none" >&2; exit 2 ;;
esac
server=$!

# Table, SAS and (for reads) 10k entities, written with the bench's own client.
sas=$(cd "$bench" && node -e '
  const { generateAccountSas, AzureNamedKeyCredential, TableClient } = require("@azure/data-tables");
  const key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
  const cred = new AzureNamedKeyCredential("devstoreaccount1", key);
  const sas = generateAccountSas(cred, { expiresOn: new Date(Date.now() + 86400e3),
    permissions: { query: true, write: true, delete: true, list: true, add: true, update: true },
    resourceTypes: "sco" });
  (async () => {
    const url = "http://127.0.0.1:'"$port"'/devstoreaccount1";
    for (let i = 0; i < 600; i++) {
      try { await fetch(url + "/Tables?" + sas); break; } catch { await new Promise(r => setTimeout(r, 100)); }
    }
    const t = new TableClient(url, "prof", cred, { allowInsecureConnection: true });
    await t.createTable();
    if (process.argv[1] === "point" || process.argv[1] === "upsert") {
      for (let p = 0; p < 100; p++) {
        const ops = [];
        for (let k = 0; k < 100; k++) {
          const i = p * 100 + k;
          ops.push(["create", { partitionKey: "p" + String(Math.floor(i / 100)).padStart(5, "0"),
            rowKey: "c" + String(i % 1000).padStart(3, "0") + "-" + String(i).padStart(8, "0"),
            Amount: 1.5, Region: "westeurope" }]);
        }
        await t.submitTransaction(ops);
      }
    }
    if (["range", "page", "point100k"].includes(process.argv[1])) {
      // The bench range table: 100k entities of its ~500-byte shape in one partition.
      const { TableRest, bulkLoad, keyedKeys } = require("./lib/rest.js");
      const rest = new TableRest({ endpoint: url, account: "devstoreaccount1", sas });
      const r = await bulkLoad(rest, "prof", { total: 100000, keysAt: (i) => keyedKeys(i, 100000), seed: 7 });
      rest.close();
      if (r.loaded !== 100000) throw new Error("range load: " + JSON.stringify(r).slice(0, 400));
    }
    if (process.argv[1] === "chrono") {
      // The bench chrono table: 50 devices x 400 events, RowKey = MaxTicks - ticks.
      const { TableRest, bulkLoad, chronoKeys } = require("./lib/rest.js");
      const rest = new TableRest({ endpoint: url, account: "devstoreaccount1", sas });
      const r = await bulkLoad(rest, "prof", { total: 20000, keysAt: (i) => chronoKeys(i, 400), seed: 7 });
      rest.close();
      if (r.loaded !== 20000) throw new Error("chrono load: " + JSON.stringify(r).slice(0, 400));
    }
    process.stdout.write(sas);
  })().catch(e => { console.error(e); process.exit(1); });
' "$mode")

[[ $profiler == callgrind ]] && callgrind_control -i on "$server" >/dev/null
# The server's CPU time (user + system, clock ticks) from /proc: CPU per
# request varies less than requests/s when other work shares the cores.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }
cpu_before=$(cpu_ticks)
# Read system calls (pread of database pages; recvmsg is not counted) from
# /proc/PID/io: how often a request misses the page caches.
read_calls() { awk '/^syscr/ {print $2}' "/proc/$server/io"; }
reads_before=$(read_calls)
# Context switches of all the server's threads (voluntary and not).
switches() { cat /proc/"$server"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {n += $2} END {print n}'; }
switches_before=$(switches)
base=/devstoreaccount1 wrk_mode=$mode n=10000 per=100
if [[ $mode == point100k ]]; then
  # The bench's point-read@100k: random keys of the 100k-entity range table.
  wrk_mode=point n=100000 per=100000
elif [[ $mode == page ]]; then
  # The Lua script's "static" mode GETs base + "/": a query without a filter.
  base="/devstoreaccount1/prof()?$sas&page=" wrk_mode=static
fi
side=""
if [[ ${SIDE_WRITES:-0} != 0 ]]; then
  taskset -c 0 node scripts/side-writes.js "$port" "$bench" "$SIDE_WRITES" &
  side=$!
  sleep 1
fi
taskset -c 0 wrk -t1 -c"$conns" -d"${seconds}s" -s "$bench/lua/table.lua" "http://127.0.0.1:$port" -- \
  mode="$wrk_mode" base="$base" table=prof sas="$sas" n="$n" per="$per" nparts=1 \
  origin="http://127.0.0.1:$port" prefix=prof ndev=50 | tee "$out_dir/wrk.$mode"
[[ -n $side ]] && kill -TERM "$side" && wait "$side"
requests=$(awk '/requests in/ {print $1}' "$out_dir/wrk.$mode")
cpu_after=$(cpu_ticks)
reads_after=$(read_calls)
switches_after=$(switches)
awk -v t=$((cpu_after - cpu_before)) -v hz="$(getconf CLK_TCK)" -v n="$requests" \
  'BEGIN { printf "server CPU: %.2f s, %.1f us per request\n", t / hz, t / hz * 1e6 / n }'
awk -v r=$((reads_after - reads_before)) -v n="$requests" \
  'BEGIN { printf "read calls: %d, %.2f per request\n", r, r / n }'
awk -v c=$((switches_after - switches_before)) -v n="$requests" \
  'BEGIN { printf "context switches: %d, %.2f per request\n", c, c / n }'
if [[ $profiler == strace ]]; then pkill -TERM -P "$server"; else kill -TERM "$server"; fi
wait "$server" || true

case $profiler in
  callgrind)
    echo "$requests requests; instructions per request = totals / $requests"
    callgrind_annotate --inclusive=yes "$out_dir/callgrind.$mode" 2>/dev/null | head -60
    echo "... exclusive:"
    callgrind_annotate "$out_dir/callgrind.$mode" 2>/dev/null | sed -n '1,45p' | tail -30
    echo "full: callgrind_annotate $out_dir/callgrind.$mode"
    ;;
  perf)
    perf report -i "$out_dir/perf.$mode" --no-children --stdio 2>/dev/null | grep -v '^$' | head -60
    ;;
  strace)
    echo "$requests requests (set-up included below)"
    head -30 "$out_dir/strace.$mode"
    ;;
esac
