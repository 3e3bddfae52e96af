"""Shared access signatures made by generate_table_sas / generate_account_sas, used through
AzureSasCredential: permitted operations work, forbidden ones get 403 with the right code."""

import datetime
import unittest

from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.data.tables import (AccountSasPermissions, ResourceTypes, TableAccessPolicy, TableClient,
                               TableSasPermissions, TableServiceClient, TableTransactionError,
                               UpdateMode, generate_account_sas, generate_table_sas)

from cerulean_e2e import ACCOUNT, CLIENT_OPTIONS, ServerTestCase, error_code, unique_name, wait_for


def hours(n):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=n)


class SasTestBase(ServerTestCase):

    def setUp(self):
        self.table = self.new_table("sas")
        self.table.create_entity({"PartitionKey": "b", "RowKey": "1", "V": 1})

    def sas_table(self, sas, name=None):
        client = TableClient(self.endpoint, name or self.table.table_name,
                             credential=AzureSasCredential(sas), **CLIENT_OPTIONS)
        self.addCleanup(client.close)
        return client

    def sas_service(self, sas):
        client = TableServiceClient(self.endpoint, credential=AzureSasCredential(sas), **CLIENT_OPTIONS)
        self.addCleanup(client.close)
        return client

    def table_sas(self, permission, name=None, **kwargs):
        kwargs.setdefault("expiry", hours(1))
        return generate_table_sas(self.credential, name or self.table.table_name,
                                  permission=TableSasPermissions(_str=permission), **kwargs)

    def account_sas(self, resource_types, permission, **kwargs):
        return generate_account_sas(self.credential, ResourceTypes.from_string(resource_types),
                                    AccountSasPermissions.from_string(permission),
                                    kwargs.pop("expiry", hours(1)), **kwargs)

    def assert_forbidden(self, code, call, *args, **kwargs):
        with self.assertRaises(HttpResponseError) as ctx:
            result = call(*args, **kwargs)
            if hasattr(result, "by_page"):
                list(result)
        self.assertEqual(ctx.exception.status_code, 403, ctx.exception)
        self.assertEqual(error_code(ctx.exception), code)


class TableSasTest(SasTestBase):

    def test_read_only(self):
        client = self.sas_table(self.table_sas("r"))
        self.assertEqual(client.get_entity("b", "1")["V"], 1)
        self.assertEqual([e["RowKey"] for e in client.list_entities()], ["1"])
        self.assertEqual(len(list(client.query_entities("V eq @v", parameters={"v": 1}))), 1)
        entity = {"PartitionKey": "b", "RowKey": "2"}
        self.assert_forbidden("AuthorizationPermissionMismatch", client.create_entity, entity)
        self.assert_forbidden("AuthorizationPermissionMismatch", client.update_entity,
                              {"PartitionKey": "b", "RowKey": "1", "V": 2})
        self.assert_forbidden("AuthorizationPermissionMismatch", client.delete_entity, "b", "1")
        self.assertEqual(self.table.get_entity("b", "1")["V"], 1)

    def test_add_only(self):
        client = self.sas_table(self.table_sas("a"))
        client.create_entity({"PartitionKey": "b", "RowKey": "2"})
        self.assertEqual(len(list(self.table.list_entities())), 2)
        self.assert_forbidden("AuthorizationPermissionMismatch", client.get_entity, "b", "1")
        self.assert_forbidden("AuthorizationPermissionMismatch", client.list_entities)
        # Upserts need both add and update.
        self.assert_forbidden("AuthorizationPermissionMismatch", client.upsert_entity,
                              {"PartitionKey": "b", "RowKey": "3"})

    def test_update_and_delete(self):
        client = self.sas_table(self.table_sas("ud"))
        client.update_entity({"PartitionKey": "b", "RowKey": "1", "V": 5}, mode=UpdateMode.REPLACE)
        self.assertEqual(self.table.get_entity("b", "1")["V"], 5)
        client.delete_entity("b", "1")
        self.assertEqual(list(self.table.list_entities()), [])
        self.assert_forbidden("AuthorizationPermissionMismatch", client.create_entity,
                              {"PartitionKey": "b", "RowKey": "2"})

    def test_all_permissions(self):
        client = self.sas_table(self.table_sas("raud"))
        client.upsert_entity({"PartitionKey": "b", "RowKey": "1", "W": 2}, mode=UpdateMode.MERGE)
        client.upsert_entity({"PartitionKey": "b", "RowKey": "9", "W": 9}, mode=UpdateMode.REPLACE)
        self.assertEqual(client.get_entity("b", "1")["W"], 2)
        client.submit_transaction([("create", {"PartitionKey": "c", "RowKey": "1"}),
                                   ("upsert", {"PartitionKey": "c", "RowKey": "2"})])
        self.assertEqual(len(list(client.list_entities())), 4)

    def test_table_name_is_case_insensitive(self):
        client = self.sas_table(self.table_sas("r", name=self.table.table_name.upper()))
        self.assertEqual(client.get_entity("b", "1")["V"], 1)

    def test_other_table_is_refused(self):
        other = self.new_table("other")
        other.create_entity({"PartitionKey": "b", "RowKey": "1"})
        client = self.sas_table(self.table_sas("raud"), name=other.table_name)
        self.assert_forbidden("AuthorizationFailure", client.get_entity, "b", "1")
        self.assert_forbidden("AuthorizationFailure", client.create_entity, {"PartitionKey": "b", "RowKey": "2"})

    def test_table_operations_are_refused(self):
        service = self.sas_service(self.table_sas("raud"))
        self.assert_forbidden("AuthorizationFailure", service.list_tables)
        self.assert_forbidden("AuthorizationFailure", service.create_table, unique_name("nope"))

    def test_expired_and_not_yet_valid(self):
        expired = self.sas_table(self.table_sas("r", expiry=hours(-1)))
        self.assert_forbidden("AuthenticationFailed", expired.get_entity, "b", "1")
        future = self.sas_table(self.table_sas("r", start=hours(1), expiry=hours(2)))
        self.assert_forbidden("AuthenticationFailed", future.get_entity, "b", "1")

    def test_wrong_key(self):
        wrong = AzureNamedKeyCredential(ACCOUNT, "B" * 86 + "==")
        sas = generate_table_sas(wrong, self.table.table_name, permission=TableSasPermissions(read=True),
                                 expiry=hours(1))
        self.assert_forbidden("AuthenticationFailed", self.sas_table(sas).get_entity, "b", "1")

    def test_tampered_permission(self):
        sas = self.table_sas("r").replace("sp=r", "sp=raud")
        self.assertIn("sp=raud", sas)
        self.assert_forbidden("AuthenticationFailed", self.sas_table(sas).get_entity, "b", "1")

    def test_https_only_over_http(self):
        sas = self.table_sas("r", protocol="https")
        self.assert_forbidden("AuthorizationProtocolMismatch", self.sas_table(sas).get_entity, "b", "1")

    def test_partition_key_range(self):
        for pk in ("a", "c", "d"):
            self.table.create_entity({"PartitionKey": pk, "RowKey": "1"})
        client = self.sas_table(self.table_sas("raud", start_pk="b", end_pk="c"))
        self.assertEqual([e["PartitionKey"] for e in client.list_entities()], ["b", "c"])
        client.create_entity({"PartitionKey": "c", "RowKey": "2"})
        self.assert_forbidden("AuthorizationFailure", client.create_entity, {"PartitionKey": "d", "RowKey": "2"})
        # A read outside the range finds nothing, whether the entity exists or not.
        for row_key in ("1", "absent"):
            with self.assertRaises(ResourceNotFoundError) as ctx:
                client.get_entity("a", row_key)
            self.assertEqual(error_code(ctx.exception), "ResourceNotFound")
        self.assertEqual(len(list(self.table.list_entities())), 5)

    def test_row_key_bound_needs_partition_key_bound(self):
        # The SDK signs a RowKey bound alone; Azure refuses such a SAS rather than grant the
        # whole table.
        for bound in ({"start_rk": "0"}, {"end_rk": "9"}):
            client = self.sas_table(self.table_sas("r", **bound))
            self.assert_forbidden("AuthenticationFailed", client.get_entity, "b", "1")
            self.assert_forbidden("AuthenticationFailed", client.list_entities)
        self.table.create_entity({"PartitionKey": "b", "RowKey": "5"})
        client = self.sas_table(self.table_sas("r", start_pk="b", start_rk="2", end_pk="b"))
        self.assertEqual([e["RowKey"] for e in client.list_entities()], ["5"])

    def test_transaction_to_another_table_does_not_reveal_whether_it_exists(self):
        other = self.new_table("other")
        sas = self.table_sas("raud")
        for name in (other.table_name, unique_name("absent")):
            client = self.sas_table(sas, name=name)
            with self.assertRaises(HttpResponseError) as ctx:
                client.submit_transaction([("create", {"PartitionKey": "b", "RowKey": "9"})])
            self.assertEqual(ctx.exception.status_code, 403, name)
            self.assertEqual(error_code(ctx.exception), "AuthorizationFailure")

    def test_transaction_checks_each_operation(self):
        client = self.sas_table(self.table_sas("a"))
        client.submit_transaction([("create", {"PartitionKey": "b", "RowKey": "2"}),
                                   ("create", {"PartitionKey": "b", "RowKey": "3"})])
        with self.assertRaises(HttpResponseError) as ctx:
            client.submit_transaction([("create", {"PartitionKey": "b", "RowKey": "4"}),
                                       ("delete", {"PartitionKey": "b", "RowKey": "1"})])
        self.assertEqual(ctx.exception.status_code, 403)
        self.assertEqual(error_code(ctx.exception), "AuthorizationPermissionMismatch")
        self.assertEqual(sorted(e["RowKey"] for e in self.table.list_entities()), ["1", "2", "3"])

    def test_stored_access_policy(self):
        self.table.set_table_access_policy(
            {"readers": TableAccessPolicy(permission="r", start=hours(-1), expiry=hours(1))})
        policies = self.table.get_table_access_policy()
        self.assertEqual(policies["readers"].permission, "r")
        sas = generate_table_sas(self.credential, self.table.table_name, policy_id="readers")
        client = self.sas_table(sas)
        self.assertEqual(client.get_entity("b", "1")["V"], 1)
        self.assert_forbidden("AuthorizationPermissionMismatch", client.create_entity,
                              {"PartitionKey": "b", "RowKey": "2"})
        # Removing the policy revokes every SAS bound to it.
        self.table.set_table_access_policy({})

        def refused():
            try:
                client.get_entity("b", "1")
            except HttpResponseError as err:
                return err
            return None

        err = wait_for(refused, timeout=35, interval=0.25,
                       what="the SAS to be refused after its policy was removed")
        self.assertEqual(err.status_code, 403)
        self.assertEqual(error_code(err), "AuthenticationFailed")


class AccountSasTest(SasTestBase):

    def test_object_read_only(self):
        sas = self.account_sas("o", "r")
        client = self.sas_table(sas)
        self.assertEqual(client.get_entity("b", "1")["V"], 1)
        self.assertEqual(len(list(client.list_entities())), 1)
        self.assert_forbidden("AuthorizationPermissionMismatch", client.create_entity,
                              {"PartitionKey": "b", "RowKey": "2"})
        self.assert_forbidden("AuthorizationResourceTypeMismatch", self.sas_service(sas).list_tables)

    def test_full_access(self):
        sas = self.account_sas("sco", "rwdlacu")
        service = self.sas_service(sas)
        name = unique_name("acct")
        table = service.create_table(name)
        self.assertIn(name, {t.name for t in service.list_tables()})
        table.create_entity({"PartitionKey": "p", "RowKey": "r", "V": 1})
        table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "W": 2})
        self.assertEqual(table.get_entity("p", "r")["W"], 2)
        table.submit_transaction([("delete", {"PartitionKey": "p", "RowKey": "r"})])
        service.delete_table(name)
        self.assertNotIn(name, {t.name for t in self.service.list_tables()})

    def test_list_without_create(self):
        service = self.sas_service(self.account_sas("sco", "rl"))
        self.assertIn(self.table.table_name, {t.name for t in service.list_tables()})
        self.assert_forbidden("AuthorizationPermissionMismatch", service.create_table, unique_name("nc"))
        self.assert_forbidden("AuthorizationPermissionMismatch", service.delete_table, self.table.table_name)
        self.assertIn(self.table.table_name, {t.name for t in self.service.list_tables()})

    def test_service_resource_type_lists_tables(self):
        # The SDK documents List Tables under ResourceTypes(service=True).
        service = self.sas_service(self.account_sas("s", "l"))
        self.assertIn(self.table.table_name, {t.name for t in service.list_tables()})

    def test_add_and_update(self):
        client = self.sas_table(self.account_sas("o", "au"))
        client.upsert_entity({"PartitionKey": "b", "RowKey": "2"})
        client.update_entity({"PartitionKey": "b", "RowKey": "1", "V": 7})
        self.assertEqual(self.table.get_entity("b", "1")["V"], 7)
        self.assert_forbidden("AuthorizationPermissionMismatch", client.delete_entity, "b", "1")

    def test_expired(self):
        client = self.sas_table(self.account_sas("sco", "rwdlacu", expiry=hours(-1)))
        self.assert_forbidden("AuthenticationFailed", client.get_entity, "b", "1")


if __name__ == "__main__":
    unittest.main()
