#!/usr/bin/env python3
"""Compares two SQLite layouts for the entities table, outside the server.

  A (what storage/ uses): one WITHOUT ROWID B-tree on (table_id, pk, rk)
    holding the whole row. SQLite's interior cells of such a tree hold whole
    rows as dividers, so with ~270-byte rows the fanout is ~12.
  B: the keys in a WITHOUT ROWID tree pointing at a rowid table of the
    properties (fanout ~110 for the keys; properties appended in write order).

Writes: WAL frames (4 KiB pages) per commit for the bench's single-insert
pattern (10k entities in 100 partitions, then inserts at the partitions'
tails, 13 per commit as at 16 connections) and its bulk load (100k entities
in one partition, keys c{i%1000}-{i}, 8 batches of 100 per commit).
Reads, on the bulk-loaded data: a starts-with range, a point read, a
1,000-row page; microseconds per query through Python's sqlite3 (the same
SQLite as the server's; Python's own per-row cost is in both columns).

  /usr/bin/python3 scripts/layout-experiment.py
"""
import os
import random
import sqlite3
import tempfile
import time


def open_db(path):
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA page_size=4096")
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA wal_autocheckpoint=0")
    c.execute("PRAGMA synchronous=OFF")
    return c


def setup(c, layout):
    if layout == "A":
        c.execute("CREATE TABLE entities(table_id INTEGER NOT NULL, pk BLOB NOT NULL, rk BLOB NOT NULL,"
                  " ts INTEGER NOT NULL, props BLOB NOT NULL, PRIMARY KEY(table_id, pk, rk)) WITHOUT ROWID")
    else:
        c.execute("CREATE TABLE entities(table_id INTEGER NOT NULL, pk BLOB NOT NULL, rk BLOB NOT NULL,"
                  " ts INTEGER NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY(table_id, pk, rk)) WITHOUT ROWID")
        c.execute("CREATE TABLE props(rid INTEGER PRIMARY KEY, props BLOB NOT NULL)")


def insert(c, layout, rows):
    c.execute("BEGIN")
    for pk, rk, props in rows:
        if layout == "A":
            c.execute("INSERT INTO entities VALUES(1,?,?,?,?)", (pk, rk, 0, props))
        else:
            rid = c.execute("INSERT INTO props(props) VALUES(?)", (props,)).lastrowid
            c.execute("INSERT INTO entities VALUES(1,?,?,?,?)", (pk, rk, 0, rid))
    c.execute("COMMIT")


def wal_frames(c):
    """Frames in the WAL; then empties it."""
    n = c.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return n


def props():
    return os.urandom(266)  # the bench entity's stored properties, ~266 bytes


def bulk_load(c, layout):
    total = commits = 0
    for b in range(0, 1000, 8):
        rows = []
        for bb in range(b, b + 8):
            rows += [(b"p00000", b"c%03d-%08d" % (i % 1000, i), props())
                     for i in range(bb * 100, bb * 100 + 100)]
        insert(c, layout, rows)
        total += wal_frames(c)
        commits += 1
    return total / commits, 800


def single_inserts(c, layout):
    for p in range(100):
        insert(c, layout, [(b"p%05d" % p, b"c%03d-%08d" % (i, p * 100 + i), props()) for i in range(100)])
    wal_frames(c)
    total = n = 0
    commits = 13000
    for _ in range(commits):
        rows = []
        for _ in range(13):
            n += 1
            rows.append((b"p%05d" % random.randrange(100), b"xt1-%09d" % n, props()))
        insert(c, layout, rows)
        total += wal_frames(c)
    return total / commits, 13


def fanout(c):
    return c.execute("SELECT round(avg(ncell), 1) FROM dbstat WHERE name = 'entities' AND pagetype = 'internal'").fetchone()[0]


def reads(c, layout):
    cols = "pk, rk, ts, props FROM entities" if layout == "A" else \
        "e.pk, e.rk, e.ts, p.props FROM entities e JOIN props p ON p.rid = e.rid"
    key = "" if layout == "A" else "e."
    queries = [
        ("range", f"SELECT {cols} WHERE {key}table_id=1 AND {key}pk=? AND {key}rk>=? AND {key}rk<? LIMIT 100",
         lambda: (b"p00000", b"c%03d-" % (k := random.randrange(1000)), b"c%03d." % k), 3000),
        ("point", f"SELECT {cols} WHERE {key}table_id=1 AND {key}pk=? AND {key}rk=?",
         lambda: (b"p00000", b"c%03d-%08d" % ((i := random.randrange(100000)) % 1000, i)), 50000),
        ("page of 1,000", f"SELECT {cols} WHERE {key}table_id=1 AND ({key}pk, {key}rk) > (?, ?) LIMIT 1000",
         lambda: (b"p00000", b"c%03d-" % random.randrange(900)), 300),
    ]
    out = []
    for name, sql, args, n in queries:
        best = 1e9
        for _ in range(3):
            t = time.perf_counter()
            rows = 0
            for _ in range(n):
                rows += len(c.execute(sql, args()).fetchall())
            best = min(best, (time.perf_counter() - t) / n * 1e6)
        out.append(f"{name} {best:.1f} us ({rows // n} rows)")
    return out


def main():
    for layout in "AB":
        random.seed(1)
        c = open_db(tempfile.mkdtemp() + "/db")
        setup(c, layout)
        per_commit, n = single_inserts(c, layout)
        print(f"{layout} single inserts: {per_commit:.1f} WAL frames per commit of {n}, "
              f"{per_commit / n:.2f} per entity; interior fanout {fanout(c)}")
        c = open_db(tempfile.mkdtemp() + "/db")
        setup(c, layout)
        per_commit, n = bulk_load(c, layout)
        print(f"{layout} bulk load: {per_commit:.1f} WAL frames per commit of {n}, "
              f"{per_commit / n:.2f} per entity; interior fanout {fanout(c)}")
        print(f"{layout} reads: " + ", ".join(reads(c, layout)))


if __name__ == "__main__":
    main()
