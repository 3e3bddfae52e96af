"""query_entities / list_entities: filters with @parameters, select, paging and continuation."""

import datetime
import unittest

from azure.core.exceptions import HttpResponseError

from cerulean_e2e import ServerTestCase, error_code, unique_name

# Partitions of the shared paging table and their sizes (2,700 entities in all).
PARTITIONS = {"pA": 1200, "pB": 900, "pC": 600}


def utf16_order(keys):
    """Ordinal UTF-16 code-unit order, the order of the Table service."""
    return sorted(keys, key=lambda s: s.encode("utf-16-be"))


class PagingTest(ServerTestCase):
    """Reads one table of 2,700 entities in three partitions in many ways."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.name = unique_name("paging")
        cls.table = cls.service.create_table(cls.name)
        cls.expected = []
        for pk, count in PARTITIONS.items():
            rows = [{"PartitionKey": pk, "RowKey": "%05d" % i, "N": i, "Odd": i % 2 == 1,
                     "Pad": "x" * 50} for i in range(count)]
            for start in range(0, count, 100):
                cls.table.submit_transaction([("create", row) for row in rows[start:start + 100]])
            cls.expected.extend((pk, row["RowKey"]) for row in rows)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.table.delete_table()
            cls.table.close()
        finally:
            super().tearDownClass()

    def pages(self, paged):
        result = []
        for page in paged.by_page():
            result.append([(e["PartitionKey"], e["RowKey"]) for e in page])
        return result

    def test_list_all_default_page_size(self):
        got = [(e["PartitionKey"], e["RowKey"]) for e in self.table.list_entities()]
        self.assertEqual(len(got), 2700)
        self.assertEqual(got, self.expected)

    def test_list_pages_of_1000(self):
        pages = self.pages(self.table.list_entities(results_per_page=1000))
        self.assertEqual([len(p) for p in pages], [1000, 1000, 700])
        self.assertEqual([k for p in pages for k in p], self.expected)

    def test_list_small_pages_cross_partition_boundaries(self):
        pages = self.pages(self.table.list_entities(results_per_page=7))
        self.assertEqual([k for p in pages for k in p], self.expected)
        self.assertTrue(all(len(p) == 7 for p in pages[:-1]), [len(p) for p in pages])
        self.assertEqual(len(pages), (2700 + 6) // 7)

    def test_partition_query_pages(self):
        pages = self.pages(self.table.query_entities("PartitionKey eq @pk", parameters={"pk": "pB"},
                                                     results_per_page=250))
        self.assertEqual([len(p) for p in pages], [250, 250, 250, 150])
        self.assertEqual([k for p in pages for k in p], [k for k in self.expected if k[0] == "pB"])

    def test_filtered_query_across_partitions(self):
        pages = self.pages(self.table.query_entities("RowKey ge @rk", parameters={"rk": "00500"},
                                                     results_per_page=333))
        got = [k for p in pages for k in p]
        self.assertTrue(all(len(p) <= 333 for p in pages))
        want = [k for k in self.expected if k[1] >= "00500"]
        self.assertEqual(len(want), 1200)
        self.assertEqual(got, want)

    def test_filtered_page_sizes_are_bounded(self):
        pages = self.pages(self.table.query_entities("Odd eq @o and N lt @n", parameters={"o": True, "n": 1000},
                                                     results_per_page=100))
        got = [k for p in pages for k in p]
        want = [k for k in self.expected if int(k[1]) % 2 == 1 and int(k[1]) < 1000]
        self.assertEqual(got, want)
        self.assertTrue(all(len(p) <= 100 for p in pages))

    def test_key_range_query(self):
        got = [(e["PartitionKey"], e["RowKey"]) for e in self.table.query_entities(
            "PartitionKey gt @a and PartitionKey le @b and RowKey lt @r",
            parameters={"a": "pA", "b": "pC", "r": "00010"}, results_per_page=4)]
        self.assertEqual(got, [(pk, "%05d" % i) for pk in ("pB", "pC") for i in range(10)])

    def test_select_with_paging(self):
        entities = list(self.table.query_entities("PartitionKey eq @pk", parameters={"pk": "pC"},
                                                  select=["RowKey", "N"], results_per_page=200))
        self.assertEqual(len(entities), 600)
        for i, e in enumerate(entities):
            self.assertEqual(dict(e), {"RowKey": "%05d" % i, "N": i})

    def test_select_on_list(self):
        entities = list(self.table.list_entities(select="N,Odd", results_per_page=1000))
        self.assertEqual(len(entities), 2700)
        self.assertTrue(all(set(e) == {"N", "Odd"} for e in entities))

    def test_no_match(self):
        self.assertEqual(list(self.table.query_entities("N gt @n", parameters={"n": 5000})), [])
        self.assertEqual(list(self.table.query_entities("PartitionKey eq @p", parameters={"p": "zz"})), [])


class QueryTest(ServerTestCase):

    def setUp(self):
        self.table = self.new_table("query")

    def keys(self, flt, **kwargs):
        return [e["RowKey"] for e in self.table.query_entities(flt, **kwargs)]

    def test_string_parameters_with_quotes(self):
        for rk, owner in (("1", "O'Brien"), ("2", "it''s"), ("3", "plain"), ("4", "'")):
            self.table.create_entity({"PartitionKey": "p", "RowKey": rk, "Owner": owner})
        for rk, owner in (("1", "O'Brien"), ("2", "it''s"), ("3", "plain"), ("4", "'")):
            with self.subTest(owner=owner):
                self.assertEqual(self.keys("Owner eq @o", parameters={"o": owner}), [rk])
        self.assertEqual(self.keys("PartitionKey eq @pk and Owner ne @o", parameters={"pk": "p", "o": "plain"}),
                         ["1", "2", "4"])

    def test_parameters_mixed_types(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "a", "Age": 30, "Name": "Ann", "Score": 1.5})
        self.table.create_entity({"PartitionKey": "p", "RowKey": "b", "Age": "30"})
        self.table.create_entity({"PartitionKey": "p", "RowKey": "c", "Age": 45, "Name": "bob", "Score": 9.0})
        self.assertEqual(self.keys("Age eq @a", parameters={"a": 30}), ["a"])
        self.assertEqual(self.keys("Age eq @a", parameters={"a": "30"}), ["b"])
        self.assertEqual(self.keys("Age ge @lo and Age le @hi", parameters={"lo": 30, "hi": 50}), ["a", "c"])
        self.assertEqual(self.keys("Name ne @n", parameters={"n": "Ann"}), ["c"])
        self.assertEqual(self.keys("not (Name eq @n )", parameters={"n": "Ann"}), ["b", "c"])
        self.assertEqual(self.keys("Name ge @n", parameters={"n": "B"}), ["c"])
        self.assertEqual(self.keys("Score gt @s or Age eq @a", parameters={"s": 5.0, "a": "30"}), ["b", "c"])
        self.assertEqual(self.keys("(Age eq @a ) and (Name eq @n )", parameters={"a": 45, "n": "bob"}), ["c"])

    def test_filter_without_parameters(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "a", "V": 1})
        self.table.create_entity({"PartitionKey": "q", "RowKey": "b", "V": 2})
        self.assertEqual(self.keys("PartitionKey eq 'q' and V eq 2"), ["b"])
        self.assertEqual(self.keys("'p' eq PartitionKey"), ["a"])
        self.assertEqual(self.keys("V eq 2L"), [])

    def test_timestamp_filter(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "a"})
        self.table.create_entity({"PartitionKey": "p", "RowKey": "b"})
        now = datetime.datetime.now(datetime.timezone.utc)
        self.assertEqual(self.keys("Timestamp ge @t", parameters={"t": now - datetime.timedelta(hours=1)}),
                         ["a", "b"])
        self.assertEqual(self.keys("Timestamp gt @t", parameters={"t": now + datetime.timedelta(hours=1)}), [])
        stamp = self.table.get_entity("p", "b").metadata["timestamp"]
        self.assertEqual(self.keys("Timestamp ge @t and RowKey eq @r",
                                   parameters={"t": stamp - datetime.timedelta(seconds=1), "r": "b"}), ["b"])

    def test_select_missing_property_is_null(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "a", "A": 1})
        [entity] = list(self.table.query_entities("RowKey eq @r", parameters={"r": "a"}, select=["A", "Missing"]))
        self.assertEqual(entity["A"], 1)
        self.assertIn("Missing", entity)
        self.assertIsNone(entity["Missing"])
        self.assertNotIn("PartitionKey", entity)
        self.assertTrue(entity.metadata["etag"])

    def test_ordinal_utf16_order_and_comparison(self):
        rks = ["a", "B", "\u00e9", "\uff21", "\U0001F600", "Z", "", "0"]
        for rk in rks:
            self.table.create_entity({"PartitionKey": "p", "RowKey": rk})
        listed = [e.get("RowKey", "") for e in self.table.list_entities()]
        self.assertEqual(listed, utf16_order(rks))
        # U+1F600 is encoded D83D DE00 in UTF-16, so it sorts before U+FF21.
        self.assertEqual(self.keys("RowKey gt @r", parameters={"r": "\U0001F600"}), ["\uff21"])

    def test_continuation_with_awkward_keys(self):
        keys = ["'", "''", "a'b", "a b", "a+b", "a%2Fb", "a=b", "\u00e9", "\U0001F600", "\uff21", "~", "!"]
        for pk in ("x'", "y\u00e9"):
            for rk in keys:
                self.table.create_entity({"PartitionKey": pk, "RowKey": rk})
        want = [(pk, rk) for pk in utf16_order(["x'", "y\u00e9"]) for rk in utf16_order(keys)]
        for size in (1, 2, 5):
            with self.subTest(results_per_page=size):
                got = [(e["PartitionKey"], e["RowKey"]) for e in self.table.list_entities(results_per_page=size)]
                self.assertEqual(got, want)

    def test_bad_filter_is_rejected(self):
        self.table.create_entity({"PartitionKey": "p", "RowKey": "a"})
        for flt in ("PartitionKey eq", "PartitionKey eqq 'a'", "(RowKey eq 'a'", "Age eq null"):
            with self.subTest(filter=flt):
                with self.assertRaises(HttpResponseError) as ctx:
                    list(self.table.query_entities(flt))
                self.assertEqual(ctx.exception.status_code, 400)
                self.assertEqual(error_code(ctx.exception), "InvalidInput")

    def test_int_parameter_of_32_bits_without_suffix_is_rejected(self):
        # The SDK writes 2**31 without the L suffix (bit_length 32); the service refuses the literal.
        self.table.create_entity({"PartitionKey": "p", "RowKey": "a", "V": 1})
        with self.assertRaises(HttpResponseError) as ctx:
            list(self.table.query_entities("V eq @v", parameters={"v": 2**31}))
        self.assertEqual(ctx.exception.status_code, 400)


if __name__ == "__main__":
    unittest.main()
