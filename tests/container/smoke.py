"""Drives a Cerulean server (here: the one inside the container image) with azure.data.tables.

usage: smoke.py ENDPOINT write|verify TABLE
  write   creates TABLE and writes entities of every type, single and in a transaction,
          then reads them back
  verify  checks that what `write` left is still there (after a server restart)
Exit status 0 iff every check passed; one line per failed check on stderr.
"""

import datetime
import sys
import uuid

from azure.data.tables import (EdmType, EntityProperty, TableServiceClient, UpdateMode)

KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
WHEN = datetime.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.timezone.utc)
GUID = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")
ENTITY = {
    "PartitionKey": "p", "RowKey": "all-types", "S": "h\u00e9llo \U0001F600", "I": 42,
    "L": EntityProperty(2**40 + 1, EdmType.INT64), "D": 2.0, "B": True, "T": WHEN, "G": GUID,
    "X": b"\x00\x01\xff",
}


def expected_state():
    state = {"all-types": {k: v for k, v in ENTITY.items() if k not in ("PartitionKey", "RowKey")}}
    for i in range(20):
        state["batch%02d" % i] = {"N": i * 10}
    return state


def read_state(table):
    return {e["RowKey"]: {k: v for k, v in e.items() if k not in ("PartitionKey", "RowKey")}
            for e in table.list_entities(results_per_page=7)}


def main():
    endpoint, mode, name = sys.argv[1:4]
    conn = ("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=%s;TableEndpoint=%s;"
            % (KEY, endpoint))
    service = TableServiceClient.from_connection_string(conn, retry_total=0, connection_timeout=10,
                                                        read_timeout=60)
    failures = []

    def check(what, got, want):
        if got != want:
            failures.append("%s: got %r, want %r" % (what, got, want))

    if mode == "write":
        table = service.create_table(name)
        table.create_entity(ENTITY)
        check("get_entity", dict(table.get_entity("p", "all-types")), ENTITY)
        table.submit_transaction([("create", {"PartitionKey": "p", "RowKey": "batch%02d" % i, "N": i})
                                  for i in range(20)])
        table.submit_transaction([("update", {"PartitionKey": "p", "RowKey": "batch%02d" % i, "N": i * 10},
                                   {"mode": UpdateMode.MERGE}) for i in range(20)])
    else:
        table = service.get_table_client(name)
    check("tables", name in {t.name for t in service.list_tables()}, True)
    check("entities", read_state(table), expected_state())
    check("query", [e["RowKey"] for e in table.query_entities("N ge @n", parameters={"n": 150})],
          ["batch%02d" % i for i in range(15, 20)])
    for failure in failures:
        print("smoke: " + failure, file=sys.stderr)
    print("smoke %s: %d checks failed" % (mode, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
