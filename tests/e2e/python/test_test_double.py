"""Injected faults met by azure.data.tables' own retry policy, and snapshots."""

import unittest

from azure.core.exceptions import HttpResponseError, ResourceExistsError, ServiceResponseError
from azure.data.tables import TableAccessPolicy, TableCorsRule, TableClient, UpdateMode

from cerulean_e2e import ServerTestCase, admin_request, error_code, unique_name

# The SDK's default retry policy (retry_total 10, exponential back-off), with bounded waits.
RETRYING = {"connection_timeout": 10, "read_timeout": 60}


class FaultTest(ServerTestCase):

    def set_faults(self, rules):
        status, body = admin_request(self.endpoint, "PUT", "/_faults/devstoreaccount1",
                                     {"rules": rules})
        self.assertEqual(status, 200, body)
        self.addCleanup(admin_request, self.endpoint, "DELETE", "/_faults/devstoreaccount1")

    def fired(self):
        status, body = admin_request(self.endpoint, "GET", "/_faults/devstoreaccount1")
        self.assertEqual(status, 200, body)
        return [rule["fired"] for rule in body["rules"]]

    def retrying_client(self, name):
        client = TableClient.from_connection_string(self.conn_str, name, **RETRYING)
        self.addCleanup(client.close)
        return client

    def test_default_retries_recover_from_503_server_busy(self):
        table = self.new_table("busy")
        self.set_faults([{"operation": "InsertEntity", "table": table.table_name, "status": 503,
                          "code": "ServerBusy", "count": 2}])
        self.retrying_client(table.table_name).create_entity({"PartitionKey": "p", "RowKey": "r"})
        self.assertEqual(self.fired(), [2])  # three attempts: two refused, the third applied
        self.assertEqual(table.get_entity("p", "r")["RowKey"], "r")

    def test_without_retries_the_error_surfaces_with_azure_code(self):
        table = self.new_table("off")
        self.set_faults([{"operation": "InsertEntity", "table": table.table_name, "status": 503,
                          "code": "ServerBusy", "count": 1},
                         {"operation": "QueryEntities", "table": table.table_name,
                          "code": "OperationTimedOut", "count": 1}])
        with self.assertRaises(HttpResponseError) as ctx:
            table.create_entity({"PartitionKey": "p", "RowKey": "r"})
        self.assertEqual(ctx.exception.status_code, 503)
        self.assertEqual(error_code(ctx.exception), "ServerBusy")
        with self.assertRaises(HttpResponseError) as ctx:
            list(table.list_entities())
        self.assertEqual(ctx.exception.status_code, 500)
        self.assertEqual(error_code(ctx.exception), "OperationTimedOut")
        self.assertEqual(self.fired(), [1, 1])

    def test_insert_dropped_after_apply_leaves_the_entity_and_a_retry_gets_409(self):
        table = self.new_table("dropped")
        self.set_faults([{"operation": "InsertEntity", "table": table.table_name,
                          "drop": "after", "count": 2}])
        client = self.retrying_client(table.table_name)
        # azure-core resends a POST whose answer was lost only when told to: by default the
        # error reaches the app, though the insert was committed.
        with self.assertRaises(ServiceResponseError):
            client.create_entity({"PartitionKey": "p", "RowKey": "r", "v": "first"})
        self.assertEqual(table.get_entity("p", "r")["v"], "first")
        # Retried by the SDK (POST allowed): the retry finds the entity the lost attempt made.
        with self.assertRaises(ResourceExistsError) as ctx:
            client.create_entity({"PartitionKey": "p", "RowKey": "s", "v": "second"},
                                 retry_on_methods=["POST"])
        self.assertEqual(error_code(ctx.exception), "EntityAlreadyExists")
        self.assertEqual(self.fired(), [2])
        self.assertEqual(table.get_entity("p", "s")["v"], "second")


class SnapshotTest(ServerTestCase):

    def state(self):
        """Every table with its ACL and entities (ETags and Timestamps included), and the
        service properties."""
        tables = {}
        for t in self.service.list_tables():
            client = self.service.get_table_client(t.name)
            entities = [(dict(e), e.metadata["etag"], e.metadata["timestamp"])
                        for e in client.list_entities()]
            acl = {k: (v.permission, v.start, v.expiry) if v else None
                   for k, v in client.get_table_access_policy().items()}
            tables[t.name] = (acl, entities)
        props = self.service.get_service_properties()
        return tables, [(c.allowed_origins, c.allowed_methods) for c in props["cors"]]

    def test_save_change_everything_restore(self):
        name = unique_name("snap")
        keep = self.service.create_table(name + "a")
        drop = self.service.create_table(name + "b")
        for i in range(20):
            keep.create_entity({"PartitionKey": "p%d" % (i % 2), "RowKey": str(i), "n": i})
        drop.create_entity({"PartitionKey": "x", "RowKey": "1"})
        keep.set_table_access_policy({"read": TableAccessPolicy(permission="r",
                                                                expiry="2035-01-01T00:00:00Z")})
        self.service.set_service_properties(cors=[TableCorsRule(["http://a.example"], ["GET"])])
        before = self.state()
        status, info = admin_request(self.endpoint, "PUT", "/_snapshots/devstoreaccount1/" + name)
        self.assertEqual(status, 201, info)
        self.addCleanup(admin_request, self.endpoint, "DELETE",
                        "/_snapshots/devstoreaccount1/" + name)

        self.service.delete_table(drop.table_name)
        keep.create_entity({"PartitionKey": "new", "RowKey": "1"})
        keep.update_entity({"PartitionKey": "p0", "RowKey": "0", "n": -1}, mode=UpdateMode.REPLACE)
        keep.delete_entity("p1", "1")
        self.service.create_table(name + "c")
        keep.set_table_access_policy({})
        self.service.set_service_properties(cors=[])
        self.assertNotEqual(self.state(), before)

        status, stats = admin_request(self.endpoint, "POST",
                                      "/_snapshots/devstoreaccount1/%s/restore" % name)
        self.assertEqual(status, 200, stats)
        self.assertEqual(self.state(), before)
        for t in (name + "a", name + "b"):
            self.service.delete_table(t)


if __name__ == "__main__":
    unittest.main()
