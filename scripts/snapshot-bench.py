#!/usr/bin/env python3
"""Times snapshot save and restore (/_snapshots) at several account sizes.

usage: scripts/snapshot-bench.py [--bin build/cerulean] [--sizes 10000,100000,1000000]
                                 [--runs 3] [--in-memory]

For each size N: an account with table "big" (N entities, 1,000 per partition) and table
"small" (100 entities) is loaded offline with `cerulean import`, a server is started on it
(a file store unless --in-memory, which seeds it at start-up instead), and the script times
  save              PUT  /_snapshots/{account}/benchR (a new snapshot each run R)
  restore, rows     one entity inserted into each table, then POST .../restore (puts back
                    the two rows' state: both tables patched)
  restore, dropped  table "big" dropped, then POST .../restore (copies its N rows)
over HTTP from this process (median of --runs). Prints a Markdown table.
"""

import argparse
import base64
import hashlib
import hmac
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from email.utils import formatdate

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
READY = re.compile(rb"listening at http://(\S+):(\d+)")


def call(port, method, path, body=None):
    """A Shared Key signed request; returns (status, body bytes)."""
    payload = json.dumps(body).encode() if body is not None else b""
    content_type = "application/json" if body is not None else ""
    date = formatdate(usegmt=True)
    sts = "\n".join([method, "", content_type, date, "/" + ACCOUNT + path])
    sig = base64.b64encode(hmac.new(base64.b64decode(KEY), sts.encode(), hashlib.sha256).digest())
    headers = {"x-ms-date": date, "x-ms-version": "2019-02-02", "Content-Length": str(len(payload)),
               "Authorization": "SharedKey %s:%s" % (ACCOUNT, sig.decode()),
               "Accept": "application/json;odata=nometadata"}
    if content_type:
        headers["Content-Type"] = content_type
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request(method, path, body=payload, headers=headers)
        res = conn.getresponse()
        return res.status, res.read()
    finally:
        conn.close()


def timed(port, method, path):
    start = time.perf_counter()
    status, body = call(port, method, path)
    elapsed = time.perf_counter() - start
    if status >= 300:
        sys.exit("%s %s: %d %s" % (method, path, status, body[:300]))
    return elapsed, json.loads(body) if body else None


def insert(port, table, pk, rk):
    status, body = call(port, "POST", "/%s/%s" % (ACCOUNT, table),
                        {"PartitionKey": pk, "RowKey": rk})
    if status != 201 and status != 204:
        sys.exit("insert: %d %s" % (status, body[:300]))


def write_fixture(path, n):
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"table": "big", "entity": {
                "PartitionKey": "p%05d" % (i // 1000), "RowKey": "r%07d" % i,
                "name": "customer %d" % i, "amount": i, "note": "x" * 40}}) + "\n")
        for i in range(100):
            f.write(json.dumps({"table": "small", "entity": {
                "PartitionKey": "s", "RowKey": "%03d" % i, "v": i}}) + "\n")


def measure(binary, n, runs, in_memory):
    work = tempfile.mkdtemp(prefix="cerulean-snapbench-")
    try:
        seed = os.path.join(work, "seed")
        os.mkdir(seed)
        fixture = os.path.join(seed, "fixture.jsonl")
        write_fixture(fixture, n)
        location = os.path.join(work, "data")
        args = [binary, "--tablePort", "0", "--silent"]
        if in_memory:
            args += ["--inMemoryPersistence", "--seed", seed]
        else:
            subprocess.run([binary, "import", "--location", location, "--file", fixture],
                           check=True, stderr=subprocess.DEVNULL)
            args += ["--location", location]
        server = subprocess.Popen(args, stdout=subprocess.PIPE)
        try:
            line = server.stdout.readline()
            match = READY.search(line)
            if not match:
                sys.exit("server did not start: %r" % line)
            port = int(match.group(2))
            saves, small, full = [], [], []
            for run in range(runs):
                snapshot = "/_snapshots/%s/bench%d" % (ACCOUNT, run)
                elapsed, _ = timed(port, "PUT", snapshot)
                saves.append(elapsed)
                insert(port, "small", "s", "new%d" % run)
                insert(port, "big", "p00000", "new%d" % run)
                elapsed, stats = timed(port, "POST", snapshot + "/restore")
                assert stats["tablesPatched"] == 2 and stats["tablesCopied"] == 0, stats
                small.append(elapsed)
                status, body = call(port, "DELETE", "/%s/Tables('big')" % ACCOUNT)
                assert status == 204, (status, body)
                elapsed, stats = timed(port, "POST", snapshot + "/restore")
                assert stats["tablesCopied"] == 1 and stats["entitiesCopied"] == n, stats
                full.append(elapsed)
            return [statistics.median(x) for x in (saves, small, full)]
        finally:
            server.terminate()
            server.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                      "cerulean"))
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--in-memory", action="store_true")
    opts = parser.parse_args()
    print("| entities | save | restore after a row was inserted in each table "
          "| restore after \"big\" was dropped |")
    print("| ---: | ---: | ---: | ---: |")
    for n in (int(s) for s in opts.sizes.split(",")):
        save, small, full = measure(os.path.abspath(opts.bin), n, opts.runs, opts.in_memory)
        print("| %s | %.0f ms | %.1f ms | %.0f ms |" % (format(n, ","), save * 1e3, small * 1e3,
                                                      full * 1e3), flush=True)


if __name__ == "__main__":
    main()
