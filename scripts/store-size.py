#!/usr/bin/python3
"""Where the bytes of a Cerulean data directory go.

    python3 scripts/store-size.py [--compare] DATA_DIR_OR_DB_FILE
    python3 scripts/store-size.py --fixture N FILE

--fixture writes a `cerulean --seed` file instead (FILE named TABLE.jsonl)
of N entities of the benchmark's bulk table: one partition, RowKeys
"c<i mod 1000>-<i>" in the order the bench loads them (each batch of 100
lands at 100 places of the partition), the bench's ten properties of mixed
types (random values, seeded).

Prints the sizes of the database file and its WAL, the page size, the pages
in use and free (PRAGMA freelist_count), and per table and index (SQLite's
dbstat virtual table) the bytes of its pages, of the cells' payload, and of
the space left unused in its pages. The server holds its database for
itself (SqliteStoreOptions::exclusive_process), so the files are read from a
copy taken in a temporary directory: on a live server, run this while it is
idle (the WAL is then fully copied, or truncated).

--compare also stores the same keys and value bytes in a plain SQLite table
(pk, rk, value; WITHOUT ROWID, primary key (pk, rk)), in 100-row
transactions, once in the order the bench's bulk load wrote them (RowKeys
ending in "-<load number>"; else key order) and once in key order, and prints
the bytes per row of each next to Cerulean's, and of `VACUUM INTO` the
database (every page filled).
"""
import argparse
import datetime
import json
import os
import random
import re
import shutil
import sqlite3
import string
import sys
import tempfile


def human(n):
    return f"{n / 1e6:,.1f} MB"


def database_file(path):
    if os.path.isdir(path):
        return os.path.join(path, "cerulean.sqlite")
    return path


def copy_database(db, into):
    """Copies the database file and its WAL (if any) into `into`."""
    copy = os.path.join(into, "copy.sqlite")
    shutil.copyfile(db, copy)
    if os.path.exists(db + "-wal"):
        shutil.copyfile(db + "-wal", copy + "-wal")
    return copy


def plain_table_bytes(rows, page_size, into, name):
    """Bytes of a fresh SQLite file holding `rows` (pk, rk, value) in that
    order, 100 rows a transaction (WAL, checkpointed at close)."""
    path = os.path.join(into, name)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA page_size={page_size}")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("CREATE TABLE t(pk BLOB NOT NULL, rk BLOB NOT NULL, v BLOB NOT NULL, "
               "PRIMARY KEY(pk, rk)) WITHOUT ROWID")
    for i in range(0, len(rows), 100):
        db.execute("BEGIN")
        db.executemany("INSERT INTO t VALUES (?, ?, ?)", rows[i:i + 100])
        db.execute("COMMIT")
    db.close()
    size = os.path.getsize(path)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return size


def write_fixture(count, path):
    """The bench's bulk-load entities (its lib/rest.js data model)."""
    r = random.Random(7)
    hexdigits, b64 = "0123456789abcdef", string.ascii_letters + string.digits + "+/"
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
             "juliet"]
    table = os.path.splitext(os.path.basename(path))[0]
    start = datetime.datetime(2024, 1, 1)
    with open(path, "w") as out:
        for i in range(count):
            guid = "".join(r.choice(hexdigits) for _ in range(32))
            guid = f"{guid[:8]}-{guid[8:12]}-{guid[12:16]}-{guid[16:20]}-{guid[20:]}"
            desc = ""
            while len(desc) < 50:
                desc += (" " if desc else "") + r.choice(words)
            created = start + datetime.timedelta(seconds=r.randrange(365 * 86400))
            entity = {
                "PartitionKey": "p00000", "RowKey": f"c{i % 1000:03d}-{i:08d}",
                "Amount": r.randrange(100000) / 100, "Amount@odata.type": "Edm.Double",
                "Active": r.random() < 0.5, "Quantity": r.randrange(1000),
                "Total": str(r.randrange(10**12)), "Total@odata.type": "Edm.Int64",
                "CreatedAt": created.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                "CreatedAt@odata.type": "Edm.DateTime",
                "CustomerId": guid, "CustomerId@odata.type": "Edm.Guid",
                "Region": r.choice(["eu-west", "eu-north", "us-east", "us-west", "ap-south"]),
                "Status": r.choice(["new", "paid", "shipped", "cancelled"]),
                "Description": desc,
                "Thumb": "".join(r.choice(b64) for _ in range(32)), "Thumb@odata.type": "Edm.Binary",
            }
            out.write(json.dumps({"table": table, "entity": entity}, separators=(",", ":")) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", help="data directory (or the database file); with --fixture, "
                        "the file to write")
    parser.add_argument("--compare", action="store_true",
                        help="also store the same rows in a plain SQLite table")
    parser.add_argument("--fixture", type=int, metavar="N",
                        help="write N bench entities as a --seed file instead")
    args = parser.parse_args()
    if args.fixture is not None:
        write_fixture(args.fixture, args.path)
        return
    db_path = database_file(args.path)
    if not os.path.exists(db_path):
        sys.exit(f"store-size.py: no database at {db_path}")

    db_bytes = os.path.getsize(db_path)
    wal_bytes = os.path.getsize(db_path + "-wal") if os.path.exists(db_path + "-wal") else 0
    total = sum(os.path.getsize(os.path.join(d, f))
                for d, _, files in os.walk(os.path.dirname(os.path.abspath(db_path)))
                for f in files)
    print(f"database file  {human(db_bytes)}")
    print(f"WAL            {human(wal_bytes)}")
    print(f"directory      {human(total)}")

    with tempfile.TemporaryDirectory(prefix="store-size-") as tmp:
        copy = copy_database(db_path, tmp)
        db = sqlite3.connect(copy)
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        auto_vacuum = db.execute("PRAGMA auto_vacuum").fetchone()[0]
        print(f"page size      {page_size} B, auto_vacuum {auto_vacuum}")
        print(f"pages          {pages:,} ({human(pages * page_size)}), "
              f"free {free:,} ({human(free * page_size)})")
        options = [r[0] for r in db.execute("PRAGMA compile_options")]
        if "ENABLE_DBSTAT_VTAB" in options:
            print(f"\n{'table or index':<28} {'pages':>9} {'bytes':>12} {'payload':>12} "
                  f"{'unused':>12} {'fill':>5}")
            for name, n, size, payload, unused in db.execute(
                    "SELECT name, count(*), sum(pgsize), sum(payload), sum(unused) "
                    "FROM dbstat GROUP BY name ORDER BY 3 DESC"):
                fill = 100 * (size - unused) / size if size else 0
                print(f"{name:<28} {n:>9,} {human(size):>12} {human(payload):>12} "
                      f"{human(unused):>12} {fill:>4.0f}%")
        else:
            print("(this SQLite has no dbstat table: no per-table breakdown)")

        entities, key_bytes, value_bytes = db.execute(
            "SELECT count(*), coalesce(sum(length(pk) + length(rk)), 0), "
            "coalesce(sum(length(props)), 0) FROM entities").fetchone()
        print(f"\nentities       {entities:,}: keys {key_bytes / max(entities, 1):.0f} B, "
              f"properties {value_bytes / max(entities, 1):.0f} B per entity on average")
        entity_bytes = db.execute(
            "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = 'entities'").fetchone()[0] \
            if "ENABLE_DBSTAT_VTAB" in options else 0
        if entities and entity_bytes:
            print(f"entities table {entity_bytes / entities:.0f} B per entity; whole file "
                  f"{db_bytes / entities:.0f} B, directory {total / entities:.0f} B per entity")

        if args.compare and entities:
            rows = db.execute("SELECT pk, rk, props FROM entities").fetchall()
            suffix = re.compile(rb"-(\d+)$")
            numbers = [suffix.search(rk) for _, rk, _ in rows]
            in_key_order = sorted(rows, key=lambda r: (r[0], r[1]))
            if all(numbers):
                in_load_order = [r for _, r in sorted(zip((int(m.group(1)) for m in numbers),
                                                          rows))]
                order = "load order"
            else:
                in_load_order, order = in_key_order, "key order"
            vacuumed = os.path.join(tmp, "vacuumed.sqlite")
            db.execute("VACUUM INTO ?", (vacuumed,))
            vacuumed_bytes = os.path.getsize(vacuumed)
            os.remove(vacuumed)
            db.close()
            os.remove(copy)
            loaded = plain_table_bytes(in_load_order, page_size, tmp, "load.sqlite")
            packed = plain_table_bytes(in_key_order, page_size, tmp, "keys.sqlite")
            print(f"\nper entity: Cerulean file {db_bytes / entities:.0f} B, "
                  f"VACUUM INTO {vacuumed_bytes / entities:.0f} B; "
                  f"SQLite alone ({order}) {loaded / entities:.0f} B, "
                  f"(key order) {packed / entities:.0f} B")
        else:
            db.close()


if __name__ == "__main__":
    main()
