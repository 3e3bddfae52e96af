"""Every EDM type written by azure.data.tables comes back with the same value and Python type."""

import datetime
import math
import unittest
import uuid

from azure.core.exceptions import HttpResponseError
from azure.data.tables import EdmType, EntityProperty

from cerulean_e2e import ServerTestCase, error_code

UTC = datetime.timezone.utc


class TypeTest(ServerTestCase):

    def setUp(self):
        self.table = self.new_table("types")
        self.row = 0

    def roundtrip(self, value):
        """Writes {V: value} as a new entity and returns V as read by get_entity and by a query."""
        self.row += 1
        rk = "r%03d" % self.row
        self.table.create_entity({"PartitionKey": "p", "RowKey": rk, "V": value})
        got = self.table.get_entity("p", rk)
        queried = list(self.table.query_entities("RowKey eq @rk", parameters={"rk": rk}))
        self.assertEqual(len(queried), 1)
        self.assertIn("V", got)
        return got["V"], queried[0]["V"]

    def check(self, value, expected, expected_type):
        for got in self.roundtrip(value):
            self.assertIsInstance(got, expected_type)
            self.assertEqual(got, expected)

    def test_string(self):
        for text in ("", "plain", "quote ' and \" and \\ / \t\n\r", "\u00e9\u4e2d\u0416",
                     "non-BMP \U0001F600\U0001D11E\U00010348", "\u0001\u001f\u007f",
                     "looks like a number 123", "2024-01-01T00:00:00Z", "   spaces   "):
            with self.subTest(text=text):
                self.check(text, text, str)

    def test_string_entity_property(self):
        self.check(EntityProperty("typed", EdmType.STRING), "typed", str)

    def test_int32(self):
        for n in (0, 1, -1, 2**31 - 1, -2**31, 123456):
            with self.subTest(n=n):
                got = self.roundtrip(n)
                for v in got:
                    self.assertIs(type(v), int)
                    self.assertEqual(v, n)
        self.check(EntityProperty(7, EdmType.INT32), 7, int)

    def test_int64(self):
        for n in (0, 1, -1, 2**31, 2**53 + 1, 2**63 - 1, -2**63, 1234567890123456789):
            with self.subTest(n=n):
                self.check(EntityProperty(n, EdmType.INT64), EntityProperty(n, EdmType.INT64), EntityProperty)

    def test_double(self):
        for x in (0.5, -1.25, 0.1, 1.1, 3.141592653589793, 1e-300, 1.7976931348623157e308,
                  5e-324, -2.5e-7, 1e20, 123456789.123):
            with self.subTest(x=x):
                self.check(x, x, float)

    def test_double_whole_numbers_stay_double(self):
        for x in (0.0, 1.0, -3.0, 100.0, 2.0**53, 1e15):
            with self.subTest(x=x):
                self.check(x, x, float)
        # An integer value declared as Edm.Double must come back as a float too.
        self.check(EntityProperty(5, EdmType.DOUBLE), 5.0, float)

    def test_double_specials(self):
        for got in self.roundtrip(float("nan")):
            self.assertIsInstance(got, float)
            self.assertTrue(math.isnan(got))
        self.check(float("inf"), float("inf"), float)
        self.check(float("-inf"), float("-inf"), float)
        for got in self.roundtrip(EntityProperty(float("nan"), EdmType.DOUBLE)):
            self.assertTrue(math.isnan(got))

    def test_negative_zero(self):
        for got in self.roundtrip(-0.0):
            self.assertIsInstance(got, float)
            self.assertEqual(got, 0.0)

    def test_boolean(self):
        for b in (True, False):
            with self.subTest(b=b):
                for got in self.roundtrip(b):
                    self.assertIs(got, b)
        self.check(EntityProperty(True, EdmType.BOOLEAN), True, bool)

    def test_datetime_with_microseconds(self):
        values = [
            datetime.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
            datetime.datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=UTC),
            datetime.datetime(2024, 1, 2, 3, 4, 5, 1, tzinfo=UTC),
            datetime.datetime(1601, 1, 1, 0, 0, 0, 0, tzinfo=UTC),
            datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            datetime.datetime(2000, 2, 29, 12, 0, 0, tzinfo=UTC),
        ]
        for dt in values:
            with self.subTest(dt=dt):
                for got in self.roundtrip(dt):
                    self.assertIsInstance(got, datetime.datetime)
                    self.assertEqual(got, dt)
                    self.assertEqual(got.utcoffset(), datetime.timedelta(0))

    def test_datetime_with_offset_is_stored_as_utc(self):
        plus2 = datetime.timezone(datetime.timedelta(hours=2))
        dt = datetime.datetime(2024, 6, 1, 12, 30, 0, 500000, tzinfo=plus2)
        for got in self.roundtrip(dt):
            self.assertEqual(got, dt)
            self.assertEqual(got.hour, 10)

    def test_datetime_service_string_and_seven_digits(self):
        # A 7-digit value written as a string keeps its 100 ns digit on the server.
        self.check(EntityProperty("2024-01-02T03:04:05.1234567Z", EdmType.DATETIME),
                   datetime.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC), datetime.datetime)
        got = self.table.get_entity("p", "r%03d" % self.row)["V"]
        self.assertEqual(got.tables_service_value, "2024-01-02T03:04:05.1234567Z")
        # Trailing fraction zeros are dropped; whole seconds have no fraction at all.
        self.roundtrip(datetime.datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=UTC))
        got = self.table.get_entity("p", "r%03d" % self.row)["V"]
        self.assertEqual(got.tables_service_value, "2024-01-02T03:04:05.5Z")
        self.roundtrip(datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC))
        got = self.table.get_entity("p", "r%03d" % self.row)["V"]
        self.assertEqual(got.tables_service_value, "2024-01-02T03:04:05Z")

    def test_datetime_before_1601_is_rejected(self):
        with self.assertRaises(HttpResponseError) as ctx:
            self.table.create_entity({"PartitionKey": "p", "RowKey": "old",
                                      "V": datetime.datetime(1600, 12, 31, 23, 59, 59, tzinfo=UTC)})
        self.assertEqual(ctx.exception.status_code, 400)
        self.assertEqual(error_code(ctx.exception), "OutOfRangeInput")

    def test_guid(self):
        for g in (uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"), uuid.uuid4(),
                  uuid.UUID(int=0), uuid.UUID("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")):
            with self.subTest(g=g):
                self.check(g, g, uuid.UUID)
        self.check(EntityProperty("C9DA6455-213D-42C9-9A79-3E9149A57833", EdmType.GUID),
                   uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"), uuid.UUID)

    def test_binary(self):
        for blob in (b"\x00", b"hello", bytes(range(256)), b"\xff" * 1000, b"ab", b"abc", b"abcd"):
            with self.subTest(n=len(blob)):
                self.check(blob, blob, bytes)
        self.check(EntityProperty(b"\x01\x02\x03", EdmType.BINARY), b"\x01\x02\x03", bytes)

    def test_binary_64k(self):
        blob = bytes(i % 251 for i in range(65536))
        self.check(blob, blob, bytes)
        with self.assertRaises(HttpResponseError) as ctx:
            self.table.create_entity({"PartitionKey": "p", "RowKey": "big", "V": blob + b"x"})
        self.assertEqual(ctx.exception.status_code, 400)
        self.assertEqual(error_code(ctx.exception), "PropertyValueTooLarge")

    def test_string_limit_counts_utf16_units(self):
        self.check("a" * 32768, "a" * 32768, str)
        self.check("\U0001F600" * 16384, "\U0001F600" * 16384, str)
        for too_long in ("a" * 32769, "\U0001F600" * 16384 + "a"):
            with self.subTest(n=len(too_long)):
                with self.assertRaises(HttpResponseError) as ctx:
                    self.table.create_entity({"PartitionKey": "p", "RowKey": "long", "V": too_long})
                self.assertEqual(ctx.exception.status_code, 400)
                self.assertEqual(error_code(ctx.exception), "PropertyValueTooLarge")

    def test_all_types_in_one_entity_and_same_name_different_types(self):
        entity = {
            "PartitionKey": "all", "RowKey": "1",
            "S": "s\U0001F600", "I": 42, "L": EntityProperty(-2**40, EdmType.INT64), "D": 2.0,
            "N": float("nan"), "B": False, "T": datetime.datetime(2020, 5, 6, 7, 8, 9, 654321, tzinfo=UTC),
            "G": uuid.UUID("12345678-1234-5678-1234-567812345678"), "X": b"\x00\x01",
        }
        self.table.create_entity(entity)
        # Same property name, another type, in another entity of the same table.
        self.table.create_entity({"PartitionKey": "all", "RowKey": "2", "S": 5, "I": "five"})
        got = self.table.get_entity("all", "1")
        for name in ("S", "I", "L", "D", "B", "T", "G", "X"):
            with self.subTest(name=name):
                self.assertEqual(got[name], entity[name])
                self.assertIs(type(got[name]) is float, type(entity[name]) is float)
        self.assertTrue(math.isnan(got["N"]))
        self.assertIsInstance(got["D"], float)
        other = self.table.get_entity("all", "2")
        self.assertEqual((other["S"], other["I"]), (5, "five"))

    def test_typed_filters(self):
        rows = [
            {"I": 1, "L": EntityProperty(2**40, EdmType.INT64), "D": 1.5, "B": True,
             "T": datetime.datetime(2020, 1, 1, tzinfo=UTC), "G": uuid.UUID(int=1), "X": b"\x0a\x0b", "S": "a"},
            {"I": 2, "L": EntityProperty(2**41, EdmType.INT64), "D": 2.5, "B": False,
             "T": datetime.datetime(2021, 1, 1, 0, 0, 0, 250000, tzinfo=UTC), "G": uuid.UUID(int=2),
             "X": b"\x0c", "S": "b"},
        ]
        for i, row in enumerate(rows):
            self.table.create_entity(dict(row, PartitionKey="f", RowKey=str(i)))

        def keys(flt, **params):
            return [e["RowKey"] for e in self.table.query_entities(flt, parameters=params)]

        self.assertEqual(keys("I eq @v", v=2), ["1"])
        self.assertEqual(keys("L eq @v", v=2**41), ["1"])           # sent as 2199023255552L
        self.assertEqual(keys("L gt @v", v=2**35), ["0", "1"])        # 34359738368L
        self.assertEqual(keys("D lt @v", v=2.0), ["0"])
        self.assertEqual(keys("B eq @v", v=True), ["0"])
        self.assertEqual(keys("T ge @v", v=datetime.datetime(2020, 6, 1, tzinfo=UTC)), ["1"])
        self.assertEqual(keys("T eq @v", v=datetime.datetime(2021, 1, 1, 0, 0, 0, 250000, tzinfo=UTC)), ["1"])
        self.assertEqual(keys("G eq @v", v=uuid.UUID(int=1)), ["0"])
        self.assertEqual(keys("X eq @v", v=b"\x0a\x0b"), ["0"])
        self.assertEqual(keys("S eq @v and I eq @n", v="b", n=2), ["1"])
        self.assertEqual(keys("S eq @v or D gt @d", v="a", d=2.0), ["0", "1"])


if __name__ == "__main__":
    unittest.main()
