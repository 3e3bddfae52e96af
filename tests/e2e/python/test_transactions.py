"""submit_transaction: every operation kind, atomic failure, limits."""

import unittest

from azure.core import MatchConditions
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.data.tables import (EdmType, EntityProperty, RequestTooLargeError, TableTransactionError,
                               UpdateMode)

from cerulean_e2e import ServerTestCase, error_code, unique_name


class TransactionTest(ServerTestCase):

    def setUp(self):
        self.table = self.new_table("batch")

    def state(self, pk="p"):
        """{RowKey: properties} of one partition."""
        return {e["RowKey"]: {k: v for k, v in e.items() if k not in ("PartitionKey", "RowKey")}
                for e in self.table.query_entities("PartitionKey eq @pk", parameters={"pk": pk})}

    def seed(self):
        for rk in ("upd", "mrg", "ups_r", "ups_m", "del", "del_etag"):
            self.table.create_entity({"PartitionKey": "p", "RowKey": rk, "Old": 1, "Keep": "k"})

    def test_every_operation_kind(self):
        self.seed()
        del_etag = self.table.get_entity("p", "del_etag").metadata["etag"]
        upd = self.table.get_entity("p", "upd")
        upd["New"] = 2
        del upd["Old"]
        operations = [
            ("create", {"PartitionKey": "p", "RowKey": "new", "A": 1,
                        "L": EntityProperty(2**40, EdmType.INT64)}),
            ("update", upd, {"mode": UpdateMode.REPLACE, "match_condition": MatchConditions.IfNotModified}),
            ("update", {"PartitionKey": "p", "RowKey": "mrg", "New": 2}, {"mode": UpdateMode.MERGE}),
            ("upsert", {"PartitionKey": "p", "RowKey": "ups_r", "New": 2}, {"mode": UpdateMode.REPLACE}),
            ("upsert", {"PartitionKey": "p", "RowKey": "ups_m", "New": 2}, {"mode": UpdateMode.MERGE}),
            ("upsert", {"PartitionKey": "p", "RowKey": "ins_r", "New": 3}, {"mode": UpdateMode.REPLACE}),
            ("upsert", {"PartitionKey": "p", "RowKey": "ins_m", "New": 4}, {"mode": UpdateMode.MERGE}),
            ("delete", {"PartitionKey": "p", "RowKey": "del"}),
            ("delete", {"PartitionKey": "p", "RowKey": "del_etag"},
             {"etag": del_etag, "match_condition": MatchConditions.IfNotModified}),
        ]
        results = self.table.submit_transaction(operations)
        self.assertEqual(len(results), len(operations))
        for i, (kind, entity, *_) in enumerate(operations):
            if kind != "delete":
                with self.subTest(op=i):
                    got = self.table.get_entity("p", entity["RowKey"])
                    self.assertEqual(results[i].get("etag"), got.metadata["etag"])
        self.assertEqual(self.state(), {
            "new": {"A": 1, "L": EntityProperty(2**40, EdmType.INT64)},
            "upd": {"Keep": "k", "New": 2},
            "mrg": {"Old": 1, "Keep": "k", "New": 2},
            "ups_r": {"New": 2},
            "ups_m": {"Old": 1, "Keep": "k", "New": 2},
            "ins_r": {"New": 3},
            "ins_m": {"New": 4},
        })

    def test_transaction_enum_operation_names(self):
        from azure.data.tables import TransactionOperation
        self.table.submit_transaction([
            (TransactionOperation.CREATE, {"PartitionKey": "p", "RowKey": "1"}),
            (TransactionOperation.UPSERT, {"PartitionKey": "p", "RowKey": "2"}),
        ])
        self.assertEqual(sorted(self.state()), ["1", "2"])

    def assert_unchanged_after_failure(self, operations, index, status, code):
        before = self.state()
        with self.assertRaises(TableTransactionError) as ctx:
            self.table.submit_transaction(operations)
        self.assertEqual(ctx.exception.status_code, status)
        self.assertEqual(error_code(ctx.exception), code)
        self.assertEqual(ctx.exception.index, index)
        self.assertEqual(self.state(), before)

    def test_conflict_in_the_middle_rolls_back(self):
        self.seed()
        self.assert_unchanged_after_failure([
            ("create", {"PartitionKey": "p", "RowKey": "n1"}),
            ("update", {"PartitionKey": "p", "RowKey": "mrg", "Changed": True}),
            ("delete", {"PartitionKey": "p", "RowKey": "del"}),
            ("create", {"PartitionKey": "p", "RowKey": "upd"}),  # exists
            ("create", {"PartitionKey": "p", "RowKey": "n2"}),
        ], 3, 409, "EntityAlreadyExists")

    def test_stale_etag_in_the_middle_rolls_back(self):
        self.seed()
        stale = self.table.get_entity("p", "upd")
        self.table.update_entity({"PartitionKey": "p", "RowKey": "upd", "Bump": 1})
        self.assert_unchanged_after_failure([
            ("upsert", {"PartitionKey": "p", "RowKey": "n1"}),
            ("update", stale, {"mode": UpdateMode.MERGE, "match_condition": MatchConditions.IfNotModified}),
            ("create", {"PartitionKey": "p", "RowKey": "n2"}),
        ], 1, 412, "UpdateConditionNotSatisfied")

    def test_missing_entity_in_the_middle_rolls_back(self):
        self.seed()
        self.assert_unchanged_after_failure([
            ("delete", {"PartitionKey": "p", "RowKey": "del"}),
            ("update", {"PartitionKey": "p", "RowKey": "absent", "X": 1}),
            ("create", {"PartitionKey": "p", "RowKey": "n2"}),
        ], 1, 404, "ResourceNotFound")
        self.assert_unchanged_after_failure([
            ("create", {"PartitionKey": "p", "RowKey": "n1"}),
            ("delete", {"PartitionKey": "p", "RowKey": "absent"}),
        ], 1, 404, "ResourceNotFound")

    def test_duplicate_row_is_rejected(self):
        self.assert_unchanged_after_failure([
            ("create", {"PartitionKey": "p", "RowKey": "a"}),
            ("upsert", {"PartitionKey": "p", "RowKey": "b"}),
            ("upsert", {"PartitionKey": "p", "RowKey": "a"}),
        ], 2, 400, "InvalidDuplicateRow")

    def test_invalid_entity_in_the_middle_rolls_back(self):
        self.assert_unchanged_after_failure([
            ("create", {"PartitionKey": "p", "RowKey": "ok"}),
            ("create", {"PartitionKey": "p", "RowKey": "bad#key"}),
        ], 1, 400, "OutOfRangeInput")

    def test_hundred_operations(self):
        ops = [("create", {"PartitionKey": "p", "RowKey": "%03d" % i, "I": i}) for i in range(100)]
        self.assertEqual(len(self.table.submit_transaction(ops)), 100)
        self.assertEqual(len(self.state()), 100)
        ops = [("upsert", {"PartitionKey": "p", "RowKey": "%03d" % i, "I": i}) for i in range(101)]
        with self.assertRaises(TableTransactionError) as ctx:
            self.table.submit_transaction(ops)
        self.assertEqual(ctx.exception.status_code, 400)
        self.assertEqual(error_code(ctx.exception), "InvalidInput")
        self.assertEqual(ctx.exception.index, 99)  # the real service names the 100th operation
        self.assertEqual(len(self.state()), 100)

    def test_other_partitions_are_untouched(self):
        self.table.create_entity({"PartitionKey": "q", "RowKey": "a", "V": 1})
        self.table.submit_transaction([("upsert", {"PartitionKey": "p", "RowKey": "a", "V": 2}),
                                       ("create", {"PartitionKey": "p", "RowKey": "b"})])
        self.assertEqual(self.state("q"), {"a": {"V": 1}})
        self.assertEqual(sorted(self.state("p")), ["a", "b"])

    def test_special_keys(self):
        pk = "O'Brien \U0001F600"
        rows = ["it's", "a b", "x+y", "\u00e9"]
        self.table.submit_transaction([("create", {"PartitionKey": pk, "RowKey": rk, "V": 1}) for rk in rows])
        self.table.submit_transaction([("update", {"PartitionKey": pk, "RowKey": rk, "V": 2}) for rk in rows])
        self.assertEqual(self.state(pk), {rk: {"V": 2} for rk in rows})
        self.table.submit_transaction([("delete", {"PartitionKey": pk, "RowKey": rk}) for rk in rows])
        self.assertEqual(self.state(pk), {})

    def test_missing_table(self):
        client = self.table_client(unique_name("nobatch"))
        with self.assertRaises((ResourceNotFoundError, TableTransactionError)) as ctx:
            client.submit_transaction([("create", {"PartitionKey": "p", "RowKey": "a"})])
        self.assertEqual(ctx.exception.status_code, 404)
        self.assertEqual(error_code(ctx.exception), "TableNotFound")

    def test_request_over_4mib_is_413(self):
        blob = b"\x07" * 60000  # about 80 KB of base64 per entity, 5.6 MB in all
        ops = [("create", {"PartitionKey": "p", "RowKey": "%02d" % i, "B": blob}) for i in range(70)]
        with self.assertRaises(RequestTooLargeError) as ctx:
            self.table.submit_transaction(ops)
        self.assertEqual(ctx.exception.status_code, 413)
        self.assertEqual(self.state(), {})
        # The connection stays usable afterwards.
        self.table.submit_transaction(ops[:10])
        self.assertEqual(len(self.state()), 10)

    def test_empty_transaction(self):
        with self.assertRaises((HttpResponseError, ValueError)):
            self.table.submit_transaction([])


if __name__ == "__main__":
    unittest.main()
