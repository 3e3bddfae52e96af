#!/usr/bin/python3
"""Milliseconds from starting the server to its first HTTP response.

    python3 scripts/startup-time.py [--rounds N] [--cpu C] BINARY [BINARY ...]

Starts each binary in turn (pinned to CPU C, default 1, as the bench pins the
server), once on a fresh data directory and once on the directory the
previous start left, polling GET /devstoreaccount1/Tables every 0.2 ms (any
status counts: the server is up), then stops it with SIGTERM. Prints one
line per binary and case with the times of each round. The bench's own
start-up figure polls every 5 ms from Node, so it reads higher and coarser.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_response_ms(binary, data, cpu):
    port = free_port()
    t0 = time.monotonic()
    proc = subprocess.Popen(
        ["taskset", "-c", str(cpu), binary, "--tableHost", "127.0.0.1", "--tablePort", str(port),
         "--location", data, "--silent"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    request = b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: x\r\nx-ms-version: 2019-02-02\r\n\r\n"
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"{binary} exited with {proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(request)
                    if s.recv(64):
                        return (time.monotonic() - t0) * 1000
            except OSError:
                time.sleep(0.0002)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--cpu", type=int, default=1)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    for binary in args.binaries:
        binary = os.path.realpath(binary)
        fresh, existing = [], []
        for _ in range(args.rounds):
            data = tempfile.mkdtemp(prefix="cerulean-startup-")
            try:
                fresh.append(first_response_ms(binary, data + "/data", args.cpu))
                existing.append(first_response_ms(binary, data + "/data", args.cpu))
            finally:
                shutil.rmtree(data, ignore_errors=True)
        for name, times in (("fresh directory", fresh), ("existing store", existing)):
            times_text = " ".join(f"{t:.1f}" for t in times)
            print(f"{binary} {name}: median {sorted(times)[len(times) // 2]:.1f} ms ({times_text})")


if __name__ == "__main__":
    main()
