"""Table operations through TableServiceClient / TableClient: create, list, query, delete."""

import unittest

from azure.core.exceptions import (ClientAuthenticationError, HttpResponseError,
                                   ResourceExistsError, ResourceNotFoundError)
from azure.data.tables import TableServiceClient

from cerulean_e2e import ACCOUNT, CLIENT_OPTIONS, ServerTestCase, error_code, unique_name


class TableTest(ServerTestCase):

    def listed(self):
        return {t.name for t in self.service.list_tables()}

    def test_create_list_delete(self):
        name = unique_name("create")
        client = self.service.create_table(name)
        self.assertEqual(client.table_name, name)
        self.assertIn(name, self.listed())
        self.service.delete_table(name)
        self.assertNotIn(name, self.listed())

    def test_create_existing_raises_resource_exists(self):
        name = unique_name("dup")
        self.service.create_table(name)
        self.addCleanup(self.service.delete_table, name)
        with self.assertRaises(ResourceExistsError) as ctx:
            self.service.create_table(name)
        self.assertEqual(ctx.exception.status_code, 409)
        self.assertEqual(error_code(ctx.exception), "TableAlreadyExists")

    def test_errors_carry_x_ms_error_code(self):
        name = unique_name("hdr")
        client = self.service.create_table(name)
        self.addCleanup(self.service.delete_table, name)
        with self.assertRaises(ResourceExistsError) as ctx:
            self.service.create_table(name)
        self.assertEqual(ctx.exception.response.headers.get("x-ms-error-code"), "TableAlreadyExists")
        with self.assertRaises(ResourceNotFoundError) as ctx:
            client.get_entity("p", "r")
        self.assertEqual(ctx.exception.response.headers.get("x-ms-error-code"), "ResourceNotFound")

    def test_names_are_case_insensitive_and_keep_their_case(self):
        name = "Mixed" + unique_name("Case")
        self.service.create_table(name)
        self.addCleanup(self.service.delete_table, name)
        with self.assertRaises(ResourceExistsError):
            self.service.create_table(name.lower())
        self.assertIn(name, self.listed())
        # The lower-case spelling addresses the same table.
        lower = self.table_client(name.lower())
        lower.create_entity({"PartitionKey": "p", "RowKey": "r"})
        self.assertEqual(len(list(self.table_client(name).list_entities())), 1)

    def test_create_table_if_not_exists(self):
        name = unique_name("ifne")
        first = self.service.create_table_if_not_exists(name)
        self.addCleanup(self.service.delete_table, name)
        first.create_entity({"PartitionKey": "p", "RowKey": "r"})
        second = self.service.create_table_if_not_exists(name)
        self.assertEqual(second.table_name, name)
        self.assertEqual(len(list(second.list_entities())), 1)

    def test_table_client_create_and_delete(self):
        client = self.table_client(unique_name("tc"))
        client.create_table()
        self.assertIn(client.table_name, self.listed())
        with self.assertRaises(ResourceExistsError):
            client.create_table()
        client.delete_table()
        self.assertNotIn(client.table_name, self.listed())
        # The SDK ignores 404 on delete_table; it must still not raise anything else.
        client.delete_table()

    def test_operations_on_missing_table_raise_not_found(self):
        client = self.table_client(unique_name("missing"))
        with self.assertRaises(ResourceNotFoundError) as ctx:
            client.create_entity({"PartitionKey": "p", "RowKey": "r"})
        self.assertEqual(ctx.exception.status_code, 404)
        self.assertEqual(error_code(ctx.exception), "TableNotFound")
        with self.assertRaises(ResourceNotFoundError) as ctx:
            client.get_entity("p", "r")
        self.assertEqual(error_code(ctx.exception), "TableNotFound")
        with self.assertRaises(ResourceNotFoundError) as ctx:
            list(client.list_entities())
        self.assertEqual(error_code(ctx.exception), "TableNotFound")

    def test_deleted_table_is_gone_and_can_be_recreated(self):
        name = unique_name("again")
        client = self.service.create_table(name)
        client.create_entity({"PartitionKey": "p", "RowKey": "r", "V": 1})
        self.service.delete_table(name)
        with self.assertRaises(ResourceNotFoundError):
            client.get_entity("p", "r")
        client = self.service.create_table(name)
        self.addCleanup(self.service.delete_table, name)
        self.assertEqual(list(client.list_entities()), [])

    def test_query_tables_with_parameters(self):
        prefix = unique_name("q")
        names = [prefix + suffix for suffix in ("a", "b", "c", "d")]
        for name in names:
            self.service.create_table(name)
            self.addCleanup(self.service.delete_table, name)
        found = [t.name for t in self.service.query_tables(
            "TableName ge @lo and TableName lt @hi", parameters={"lo": prefix + "b", "hi": prefix + "d"})]
        self.assertEqual(found, names[1:3])
        found = [t.name for t in self.service.query_tables("TableName eq @n", parameters={"n": names[3]})]
        self.assertEqual(found, [names[3]])

    def test_list_tables_paging(self):
        prefix = unique_name("page")
        names = sorted(prefix + "x%02d" % i for i in range(7))
        for name in names:
            self.service.create_table(name)
            self.addCleanup(self.service.delete_table, name)
        pages = self.service.query_tables(
            "TableName ge @lo and TableName le @hi",
            parameters={"lo": names[0], "hi": names[-1]}, results_per_page=3).by_page()
        sizes, seen = [], []
        for page in pages:
            items = [t.name for t in page]
            sizes.append(len(items))
            seen.extend(items)
        self.assertEqual(seen, names)
        self.assertEqual(sizes, [3, 3, 1])

    def test_reserved_name_tables_is_rejected(self):
        with self.assertRaises(HttpResponseError) as ctx:
            self.service.create_table("Tables")
        self.assertEqual(ctx.exception.status_code, 400)
        self.assertEqual(error_code(ctx.exception), "InvalidInput")

    def test_invalid_table_names(self):
        # The SDK turns the server's InvalidResourceName / OutOfRangeInput (name length) answers into
        # ValueError after checking the message; either way the server must refuse the name.
        for bad in ("1abc", "ab", "a" * 64, "has-dash"):
            with self.subTest(name=bad):
                with self.assertRaises((ValueError, HttpResponseError)):
                    self.service.create_table(bad)
                self.assertNotIn(bad, self.listed())

    def test_wrong_account_key_is_refused(self):
        bad_key = "A" * 86 + "=="
        conn = self.conn_str.replace(self.conn_str.split("AccountKey=")[1].split(";")[0], bad_key)
        with TableServiceClient.from_connection_string(conn, **CLIENT_OPTIONS) as bad:
            with self.assertRaises(ClientAuthenticationError) as ctx:
                list(bad.list_tables())
        self.assertEqual(ctx.exception.status_code, 403)
        self.assertEqual(error_code(ctx.exception), "AuthenticationFailed")

    def test_service_client_from_endpoint_and_named_key(self):
        with TableServiceClient(self.endpoint, credential=self.credential, **CLIENT_OPTIONS) as svc:
            name = unique_name("ep")
            svc.create_table(name)
            self.addCleanup(self.service.delete_table, name)
            self.assertIn(name, {t.name for t in svc.list_tables()})
        self.assertEqual(self.service.account_name, ACCOUNT)


if __name__ == "__main__":
    unittest.main()
