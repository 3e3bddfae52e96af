#!/usr/bin/python3
"""How long a WAL sync takes on a filesystem, and what that bounds.

    python3 scripts/fsync-latency.py [--seconds S] [--bytes B] [DIR]

Appends B bytes (default 16 KiB: a group of single inserts' WAL frames) to a
file in DIR (default: a temporary directory under the current one; use the
server's --location) and syncs it with fdatasync, over and over for S
seconds, from 1, 2 and 4 threads at once, each on a file of its own.
The file is rewound once it reaches 4 MiB, as SQLite rewinds its WAL, so
most syncs find the file's blocks allocated already. Prints each run's
syncs per second and the latency of one sync (p50, p99).

A write acknowledged by Cerulean waits for one sync of the WAL holding its
commit (storage/README.md, "Durability"), so a client that sends its next
write only after the answer to the last one makes at most 1 / latency writes
a second: N such clients at most N / p50. The syncer makes one sync at a
time, covering every commit made before it began, so the server's bound is
that and not the number of syncs a second.
"""
import argparse
import os
import statistics
import tempfile
import threading
import time


def run_syncs(path, seconds, size, out):
    block = os.urandom(size)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        offset = 0
        latencies = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            os.pwrite(fd, block, offset)
            offset = offset + size if offset + size < (4 << 20) else 0
            start = time.perf_counter()
            os.fdatasync(fd)
            latencies.append(time.perf_counter() - start)
        out.extend(latencies)
    finally:
        os.close(fd)
        os.unlink(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", help="directory on the filesystem to measure")
    parser.add_argument("--seconds", type=float, default=3.0, help="per run (default 3)")
    parser.add_argument("--bytes", type=int, default=16384, help="appended before each sync")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir or ".") as tmp:
        for threads in (1, 2, 4):
            results = [[] for _ in range(threads)]
            workers = [
                threading.Thread(
                    target=run_syncs,
                    args=(os.path.join(tmp, f"sync{i}"), args.seconds, args.bytes, results[i]),
                )
                for i in range(threads)
            ]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            latencies = sorted(x for r in results for x in r)
            p50 = statistics.median(latencies) * 1e3
            p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3
            rate = len(latencies) / args.seconds
            line = f"{threads} thread(s): {rate:,.0f} syncs/s, p50 {p50:.2f} ms, p99 {p99:.2f} ms"
            if threads == 1:
                line += f"; N waiting clients: at most {1e3 / p50:,.0f} x N writes/s"
            print(line)


if __name__ == "__main__":
    main()
