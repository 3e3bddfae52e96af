"""Single-entity operations: create, get, update (replace/merge), upsert, delete, ETag conditions."""

import datetime
import threading
import unittest

from azure.core import MatchConditions
from azure.core.exceptions import (HttpResponseError, ResourceExistsError, ResourceModifiedError,
                                   ResourceNotFoundError)
from azure.data.tables import EdmType, EntityProperty, UpdateMode

from cerulean_e2e import ServerTestCase, error_code

ETAG_SHAPE = r"""^W/"datetime'\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d(\.\d{1,7})?Z'"$"""


class EntityTest(ServerTestCase):

    def setUp(self):
        self.table = self.new_table("ent")

    def props(self, entity):
        """The custom properties of an entity read back (system keys removed)."""
        return {k: v for k, v in entity.items() if k not in ("PartitionKey", "RowKey")}

    def test_create_and_get(self):
        before = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=5)
        meta = self.table.create_entity({"PartitionKey": "p", "RowKey": "r", "Name": "Ann", "Age": 30})
        self.assertRegex(meta["etag"], ETAG_SHAPE)
        got = self.table.get_entity("p", "r")
        self.assertEqual(got["PartitionKey"], "p")
        self.assertEqual(got["RowKey"], "r")
        self.assertEqual(self.props(got), {"Name": "Ann", "Age": 30})
        self.assertEqual(got.metadata["etag"], meta["etag"])
        stamp = got.metadata["timestamp"]
        after = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=5)
        self.assertTrue(before <= stamp <= after, stamp)

    def test_create_existing_raises_resource_exists(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r", "V": 1})
        with self.assertRaises(ResourceExistsError) as ctx:
            self.table.create_entity({"PartitionKey": "p", "RowKey": "r", "V": 2})
        self.assertEqual(ctx.exception.status_code, 409)
        self.assertEqual(error_code(ctx.exception), "EntityAlreadyExists")
        self.assertEqual(self.table.get_entity("p", "r")["V"], 1)

    def test_get_missing_raises_not_found(self):
        with self.assertRaises(ResourceNotFoundError) as ctx:
            self.table.get_entity("p", "nope")
        self.assertEqual(ctx.exception.status_code, 404)
        self.assertEqual(error_code(ctx.exception), "ResourceNotFound")

    def test_get_with_select(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "two", "C": True})
        got = self.table.get_entity("p", "r", select=["B", "C"])
        self.assertEqual(dict(got), {"B": "two", "C": True})
        self.assertRegex(got.metadata["etag"], ETAG_SHAPE)

    def test_update_replace_drops_other_properties(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b"})
        self.table.update_entity({"PartitionKey": "p", "RowKey": "r", "C": 3.5}, mode=UpdateMode.REPLACE)
        self.assertEqual(self.props(self.table.get_entity("p", "r")), {"C": 3.5})

    def test_update_merge_keeps_other_properties(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b"})
        self.table.update_entity({"PartitionKey": "p", "RowKey": "r", "B": "B2", "C": False},
                                 mode=UpdateMode.MERGE)
        self.assertEqual(self.props(self.table.get_entity("p", "r")), {"A": 1, "B": "B2", "C": False})

    def test_merge_may_change_a_property_type(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 1})
        self.table.update_entity({"PartitionKey": "p", "RowKey": "r", "A": "now a string"})
        self.assertEqual(self.table.get_entity("p", "r")["A"], "now a string")

    def test_update_missing_raises_not_found(self):
        for mode in (UpdateMode.REPLACE, UpdateMode.MERGE):
            with self.subTest(mode=mode):
                with self.assertRaises(ResourceNotFoundError) as ctx:
                    self.table.update_entity({"PartitionKey": "p", "RowKey": "none", "A": 1}, mode=mode)
                self.assertEqual(ctx.exception.status_code, 404)
                self.assertEqual(error_code(ctx.exception), "ResourceNotFound")
        self.assertEqual(list(self.table.list_entities()), [])

    def test_upsert_inserts_then_replaces_or_merges(self):
        self.table.upsert_entity({"PartitionKey": "p", "RowKey": "m", "A": 1}, mode=UpdateMode.MERGE)
        self.table.upsert_entity({"PartitionKey": "p", "RowKey": "x", "A": 1}, mode=UpdateMode.REPLACE)
        self.assertEqual(self.props(self.table.get_entity("p", "m")), {"A": 1})
        self.assertEqual(self.props(self.table.get_entity("p", "x")), {"A": 1})
        self.table.upsert_entity({"PartitionKey": "p", "RowKey": "m", "B": 2}, mode=UpdateMode.MERGE)
        self.table.upsert_entity({"PartitionKey": "p", "RowKey": "x", "B": 2}, mode=UpdateMode.REPLACE)
        self.assertEqual(self.props(self.table.get_entity("p", "m")), {"A": 1, "B": 2})
        self.assertEqual(self.props(self.table.get_entity("p", "x")), {"B": 2})

    def test_upsert_returns_the_new_etag(self):
        meta = self.table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "A": 1})
        self.assertEqual(self.table.get_entity("p", "r").metadata["etag"], meta["etag"])

    def test_delete(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r"})
        self.table.create_entity({"PartitionKey": "p", "RowKey": "keep"})
        self.table.delete_entity("p", "r")
        with self.assertRaises(ResourceNotFoundError):
            self.table.get_entity("p", "r")
        self.assertEqual([e["RowKey"] for e in self.table.list_entities()], ["keep"])
        # The SDK swallows the 404 of a delete of an absent entity.
        self.table.delete_entity("p", "r")

    def test_delete_by_entity(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r"})
        entity = self.table.get_entity("p", "r")
        self.table.delete_entity(entity)
        self.assertEqual(list(self.table.list_entities()), [])

    def test_every_write_changes_the_etag(self):
        etags = [self.table.create_entity({"PartitionKey": "p", "RowKey": "r", "N": 0})["etag"]]
        for i in range(1, 6):
            etags.append(self.table.update_entity({"PartitionKey": "p", "RowKey": "r", "N": i})["etag"])
        self.assertEqual(len(set(etags)), len(etags), etags)
        for etag in etags:
            self.assertRegex(etag, ETAG_SHAPE)
        self.assertEqual(self.table.get_entity("p", "r").metadata["etag"], etags[-1])

    def test_update_if_not_modified(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r", "V": 1})
        first = self.table.get_entity("p", "r")
        first["V"] = 2
        meta = self.table.update_entity(first, mode=UpdateMode.REPLACE,
                                        match_condition=MatchConditions.IfNotModified)
        self.assertNotEqual(meta["etag"], first.metadata["etag"])
        # The same (now stale) ETag no longer matches: 412 for replace, merge and delete.
        for mode in (UpdateMode.REPLACE, UpdateMode.MERGE):
            with self.subTest(mode=mode):
                with self.assertRaises(ResourceModifiedError) as ctx:
                    self.table.update_entity({"PartitionKey": "p", "RowKey": "r", "V": 3}, mode=mode,
                                             etag=first.metadata["etag"],
                                             match_condition=MatchConditions.IfNotModified)
                self.assertEqual(ctx.exception.status_code, 412)
                self.assertEqual(error_code(ctx.exception), "UpdateConditionNotSatisfied")
        with self.assertRaises(ResourceModifiedError) as ctx:
            self.table.delete_entity("p", "r", etag=first.metadata["etag"],
                                     match_condition=MatchConditions.IfNotModified)
        self.assertEqual(ctx.exception.status_code, 412)
        self.assertEqual(self.table.get_entity("p", "r")["V"], 2)
        # The current ETag matches.
        self.table.update_entity({"PartitionKey": "p", "RowKey": "r", "V": 4}, mode=UpdateMode.MERGE,
                                 etag=meta["etag"], match_condition=MatchConditions.IfNotModified)
        current = self.table.get_entity("p", "r")
        self.assertEqual(current["V"], 4)
        self.table.delete_entity(current, match_condition=MatchConditions.IfNotModified)
        with self.assertRaises(ResourceNotFoundError):
            self.table.get_entity("p", "r")

    def test_unmatchable_weak_etag_gives_412(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r"})
        with self.assertRaises(ResourceModifiedError):
            self.table.update_entity({"PartitionKey": "p", "RowKey": "r"}, etag='W/"wrong"',
                                     match_condition=MatchConditions.IfNotModified)

    def test_keys_with_special_characters(self):
        keys = ["O'Brien", "a b", "100%", "a&b=c+d", "über", "日本", "😀 emoji", "''", "(x,y)",
                "semi;colon", "~!@$^*", "\uff21 fullwidth"]
        for i, key in enumerate(keys):
            with self.subTest(key=key):
                self.table.create_entity({"PartitionKey": key, "RowKey": key, "I": i})
                got = self.table.get_entity(key, key)
                self.assertEqual((got["PartitionKey"], got["RowKey"], got["I"]), (key, key, i))
                self.table.update_entity({"PartitionKey": key, "RowKey": key, "J": i}, mode=UpdateMode.MERGE)
                self.assertEqual(self.table.get_entity(key, key)["J"], i)
        listed = [e["PartitionKey"] for e in self.table.list_entities()]
        self.assertEqual(sorted(listed, key=lambda s: s.encode("utf-16-be")), listed)
        self.assertEqual(sorted(listed), sorted(keys))
        for key in keys:
            self.table.delete_entity(key, key)
        self.assertEqual(list(self.table.list_entities()), [])

    def test_forbidden_key_characters_are_rejected(self):
        for key in ("a/b", "a\\b", "a#b", "a?b", "tab\there"):
            with self.subTest(key=key):
                with self.assertRaises(HttpResponseError) as ctx:
                    self.table.create_entity({"PartitionKey": "p", "RowKey": key})
                self.assertEqual(ctx.exception.status_code, 400)
                self.assertEqual(error_code(ctx.exception), "OutOfRangeInput")
        self.assertEqual(list(self.table.list_entities()), [])

    def test_missing_row_key_is_rejected(self):
        with self.assertRaises((ValueError, HttpResponseError)):
            self.table.create_entity({"PartitionKey": "p", "V": 1})
        self.assertEqual(list(self.table.list_entities()), [])

    def test_timestamp_in_body_is_ignored(self):
        old = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r", "Timestamp": old, "A": 1})
        got = self.table.get_entity("p", "r")
        self.assertNotIn("Timestamp", got)
        self.assertGreater(got.metadata["timestamp"], old)

    def test_null_property_is_not_stored(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 1, "Gone": None})
        self.assertEqual(self.props(self.table.get_entity("p", "r")), {"A": 1})

    def test_property_count_limit(self):
        props = {"P%03d" % i: i for i in range(252)}
        self.table.create_entity(dict(props, PartitionKey="p", RowKey="max"))
        self.assertEqual(self.props(self.table.get_entity("p", "max")), props)
        with self.assertRaises(HttpResponseError) as ctx:
            self.table.create_entity(dict(props, PartitionKey="p", RowKey="over", Extra=1))
        self.assertEqual(ctx.exception.status_code, 400)
        self.assertEqual(error_code(ctx.exception), "TooManyProperties")
        # A merge is checked on the merged property set.
        with self.assertRaises(HttpResponseError) as ctx:
            self.table.update_entity({"PartitionKey": "p", "RowKey": "max", "Extra": 1}, mode=UpdateMode.MERGE)
        self.assertEqual(error_code(ctx.exception), "TooManyProperties")
        self.assertEqual(self.props(self.table.get_entity("p", "max")), props)

    def test_entity_size_limit(self):
        blob = b"\x01" * 65536
        fifteen = {"B%02d" % i: blob for i in range(15)}
        self.table.create_entity(dict(fifteen, PartitionKey="p", RowKey="ok"))
        self.assertEqual(len(self.table.get_entity("p", "ok")), 17)
        with self.assertRaises(HttpResponseError) as ctx:
            self.table.create_entity(dict(fifteen, PartitionKey="p", RowKey="big", B15=blob))
        self.assertEqual(ctx.exception.status_code, 400)
        self.assertEqual(error_code(ctx.exception), "EntityTooLarge")

    def test_property_names(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r", "_under": 1, "\u00dcn\u00efc\u00f6de": 2,
                                  "a" * 255: 3, "CaseSensitive": 4, "casesensitive": 5})
        self.assertEqual(self.props(self.table.get_entity("p", "r")),
                         {"_under": 1, "\u00dcn\u00efc\u00f6de": 2, "a" * 255: 3, "CaseSensitive": 4,
                          "casesensitive": 5})
        for name, code in (("a" * 256, "PropertyNameTooLong"), ("bad-name", "PropertyNameInvalid"),
                           ("has space", "PropertyNameInvalid"), ("1digit", "PropertyNameInvalid")):
            with self.subTest(name=name[:20]):
                with self.assertRaises(HttpResponseError) as ctx:
                    self.table.create_entity({"PartitionKey": "p", "RowKey": "bad", name: 1})
                self.assertEqual(ctx.exception.status_code, 400)
                self.assertEqual(error_code(ctx.exception), code)

    def test_concurrent_conditional_increments(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "counter", "N": 0})
        threads, per_thread, errors = 4, 10, []

        def work():
            client = self.table_client(self.table.table_name)
            try:
                done = 0
                while done < per_thread:
                    entity = client.get_entity("p", "counter")
                    entity["N"] += 1
                    try:
                        client.update_entity(entity, mode=UpdateMode.REPLACE,
                                             match_condition=MatchConditions.IfNotModified)
                        done += 1
                    except ResourceModifiedError:
                        pass  # somebody else won; read again
            except Exception as err:  # pylint: disable=broad-except
                errors.append(err)
            finally:
                client.close()

        pool = [threading.Thread(target=work) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join(120)
        self.assertEqual(errors, [])
        self.assertEqual(self.table.get_entity("p", "counter")["N"], threads * per_thread)

    def test_int64_entity_property_roundtrip_via_update(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "r",
                                  "Big": EntityProperty(2**40, EdmType.INT64)})
        got = self.table.get_entity("p", "r")
        got["Big"] = EntityProperty(got["Big"].value + 1, EdmType.INT64)
        self.table.update_entity(got, mode=UpdateMode.REPLACE)
        self.assertEqual(self.table.get_entity("p", "r")["Big"], EntityProperty(2**40 + 1, EdmType.INT64))


if __name__ == "__main__":
    unittest.main()
