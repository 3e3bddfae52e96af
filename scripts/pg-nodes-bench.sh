#!/usr/bin/env bash
# Point reads served by one Cerulean node and by two nodes over one
# PostgreSQL database: how the stateless node tier scales out.
#
#   BENCH_HARNESS=DIR bash scripts/pg-nodes-bench.sh [--quota FRACTION] [--seconds S] [--rounds R]
#
# Two nodes start on free loopback ports over $CERULEAN_DATABASE (or over a
# throw-away cluster from scripts/pg-test-cluster.sh, removed afterwards);
# node 1 is pinned to the last CPU, node 2 to CPU 0, wrk (the harness's Lua
# script, account SAS, random keys of 10k entities in 100 partitions) to
# CPU 0. Each round measures node 1 alone at 16 and at 32 connections, then
# both nodes at once at 16 connections each, and prints the two nodes'
# total against the better of the one-node figures.
#
# --quota FRACTION caps each node at that share of one CPU (a cgroup CPU
# quota; needs root and the cgroup v1 `cpu` controller or cgroup v2): each
# node then has its own small core while the database and the load
# generator have the rest, as on a machine with cores for each. Without it,
# on a 2-core machine one node, PostgreSQL and wrk already use both cores,
# so a second node has no CPU to add.
#
# Environment: BENCH_HARNESS (required; its lua/table.lua, lib/rest.js and
# node_modules), BUILD_DIR (default build), CERULEAN_DATABASE.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
quota="" seconds=8 rounds=2
while (($#)); do
  case $1 in
    --quota) quota=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: BENCH_HARNESS=DIR $0 [--quota FRACTION] [--seconds S] [--rounds R]" >&2; exit 2 ;;
  esac
done
bench=${BENCH_HARNESS:-}
if [[ -z $bench || ! -f $bench/lua/table.lua || ! -f $bench/lib/ensure-deps.sh ]]; then
  echo "pg-nodes-bench.sh: set BENCH_HARNESS to the benchmark harness's directory" >&2
  exit 2
fi
bench=$(cd "$bench" && pwd)
bin=$(pwd)/${BUILD_DIR:-build}/cerulean
[[ -x $bin ]] || { echo "pg-nodes-bench.sh: no $bin (bash scripts/build.sh)" >&2; exit 2; }
bash "$bench/lib/ensure-deps.sh" >&2

work=$(mktemp -d)
nodes=() groups=() cluster=""
cleanup() {
  for pid in "${nodes[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for g in "${groups[@]}"; do rmdir "$g" 2>/dev/null || true; done
  [[ -n $cluster ]] && bash scripts/pg-test-cluster.sh stop "$cluster"
  rm -rf "$work"
}
trap cleanup EXIT

url=${CERULEAN_DATABASE:-}
if [[ -z $url ]]; then
  cluster=$work/cluster
  url=$(bash scripts/pg-test-cluster.sh start "$cluster")
fi

# A cgroup capped at `quota` of one CPU; prints its directory.
make_group() {
  local name=cerulean-nodes-$$-$1 period=100000 dir
  local us
  us=$(awk -v q="$quota" -v p=$period 'BEGIN { printf "%d", q * p }')
  if [[ -d /sys/fs/cgroup/cpu && -w /sys/fs/cgroup/cpu ]]; then
    dir=/sys/fs/cgroup/cpu/$name
    mkdir "$dir"
    echo $period >"$dir/cpu.cfs_period_us"
    echo "$us" >"$dir/cpu.cfs_quota_us"
  elif [[ -f /sys/fs/cgroup/cgroup.controllers ]] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
    dir=/sys/fs/cgroup/$name
    mkdir "$dir"
    echo "$us $period" >"$dir/cpu.max"
  else
    echo "pg-nodes-bench.sh: --quota needs a writable cgroup cpu controller (root)" >&2
    exit 2
  fi
  echo "$dir"
}

last_cpu=$(($(nproc) - 1))
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
port1=$(free_port)
port2=$(free_port)
start_node() { # index port cpu
  local group=""
  if [[ -n $quota ]]; then
    group=$(make_group "$1")
    groups+=("$group")
  fi
  GROUP=$group taskset -c "$3" bash -c '[[ -z $GROUP ]] || echo $$ >"$GROUP/cgroup.procs"; exec "$@"' \
    node "$bin" --tableHost 127.0.0.1 --tablePort "$2" --silent --database "$url" \
    >"$work/node$1.log" 2>&1 &
  nodes+=($!)
}
start_node 1 "$port1" "$last_cpu"
start_node 2 "$port2" 0

# 10k entities through node 1, written with the harness's own client.
sas=$(cd "$bench" && node -e '
  const { generateAccountSas, AzureNamedKeyCredential } = require("@azure/data-tables");
  const { TableRest, bulkLoad, keyedKeys, WELL_KNOWN_KEY } = require("./lib/rest.js");
  const sas = generateAccountSas(new AzureNamedKeyCredential("devstoreaccount1", WELL_KNOWN_KEY), {
    expiresOn: new Date(Date.now() + 86400e3),
    permissions: { query: true, write: true, delete: true, list: true, add: true, update: true },
    resourceTypes: "sco" }).replace(/^\?/, "");
  (async () => {
    const url = "http://127.0.0.1:" + process.argv[1] + "/devstoreaccount1";
    for (const port of [process.argv[1], process.argv[2]]) {
      for (let i = 0; ; i++) {
        try { await fetch("http://127.0.0.1:" + port + "/_health"); break; } catch (e) {
          if (i === 600) throw e;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
    const rest = new TableRest({ endpoint: url, account: "devstoreaccount1", sas });
    await rest.createTable("pread");
    const r = await bulkLoad(rest, "pread", { total: 10000, keysAt: (i) => keyedKeys(i, 100), seed: 1 });
    rest.close();
    if (r.loaded !== 10000) throw new Error("load: " + JSON.stringify(r).slice(0, 400));
    process.stdout.write(sas);
  })().catch((e) => { console.error(e); process.exit(1); });
' "$port1" "$port2")

# Requests per second of `seconds` of point reads at port $1 with $2 connections.
reads() {
  taskset -c 0 wrk -t1 -c"$2" -d"${3:-$seconds}s" --timeout 60s -s "$bench/lua/table.lua" \
    "http://127.0.0.1:$1" -- mode=point base=/devstoreaccount1 sas="$sas" table=pread n=10000 \
    per=100 seed=$RANDOM origin="http://127.0.0.1:$1" prefix=x >"$work/wrk.$1.$2" 2>&1
  if grep -q "Non-2xx" "$work/wrk.$1.$2"; then
    echo "pg-nodes-bench.sh: errors from port $1:" >&2
    cat "$work/wrk.$1.$2" >&2
    exit 1
  fi
  awk '/Requests\/sec/ {print $2}' "$work/wrk.$1.$2"
}

echo "nodes over $url; ${quota:+each node capped at $quota CPU; }$seconds s per figure"
reads "$port1" 16 2 >/dev/null
reads "$port2" 16 2 >/dev/null
for round in $(seq "$rounds"); do
  one16=$(reads "$port1" 16)
  one32=$(reads "$port1" 32)
  reads "$port1" 16 >"$work/two.1" &
  first=$!
  reads "$port2" 16 >"$work/two.2"
  wait "$first"
  awk -v r="$round" -v a="$one16" -v b="$one32" -v x="$(cat "$work/two.1")" -v y="$(cat "$work/two.2")" \
    'BEGIN { one = a > b ? a : b
             printf "round %d: one node %.0f req/s (c16) / %.0f (c32); two nodes %.0f + %.0f = %.0f req/s: %.2fx\n",
                    r, a, b, x, y, x + y, (x + y) / one }'
done
