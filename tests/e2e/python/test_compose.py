"""docker/compose.postgres.yaml: the services, health checks and wiring it declares, and its
load balancer (docker/haproxy.cfg, run by the real haproxy) in front of two nodes over one
PostgreSQL database, one of them killed mid-run."""

import os
import shutil
import socket
import subprocess
import tempfile
import unittest
import urllib.error
import urllib.parse
import urllib.request

import yaml
from azure.data.tables import TableServiceClient

from cerulean_e2e import CLIENT_OPTIONS, REPO, CeruleanServer, connection_string, fresh_database, \
    unique_name, wait_for

DOCKER = os.path.join(REPO, "docker")
COMPOSE = os.path.join(DOCKER, "compose.postgres.yaml")
HAPROXY_CFG = os.path.join(DOCKER, "haproxy.cfg")
NODES = ("tables1", "tables2")


def load_compose():
    with open(COMPOSE, encoding="utf-8") as f:
        return yaml.safe_load(f)


def haproxy_config():
    with open(HAPROXY_CFG, encoding="utf-8") as f:
        return f.read()


class ComposeFileTest(unittest.TestCase):

    def setUp(self):
        self.services = load_compose()["services"]

    def test_services_and_the_one_published_port(self):
        self.assertEqual(set(self.services), {"db", "lb", *NODES})
        published = {name: svc["ports"] for name, svc in self.services.items() if "ports" in svc}
        self.assertEqual(published, {"lb": ["10002:10002"]})
        self.assertIn("\n    bind :10002\n", haproxy_config())

    def test_nodes_run_the_project_image_over_the_compose_database(self):
        db = self.services["db"]["environment"]
        for name in NODES:
            node = self.services[name]
            build = node["build"]
            self.assertTrue(os.path.isfile(os.path.join(DOCKER, build["context"], build["dockerfile"])))
            url = urllib.parse.urlsplit(node["environment"]["CERULEAN_DATABASE"])
            self.assertEqual(url.scheme, "postgresql")
            self.assertEqual((url.hostname, url.port, url.username, url.password, url.path),
                             ("db", 5432, db["POSTGRES_USER"], db["POSTGRES_PASSWORD"],
                              "/" + db["POSTGRES_DB"]))
            self.assertEqual(node["depends_on"], {"db": {"condition": "service_healthy"}})
            self.assertIn("10002", [str(p) for p in node["expose"]])

    def test_health_checks_are_wired(self):
        db = self.services["db"]
        self.assertEqual(db["healthcheck"]["test"],
                         ["CMD", "pg_isready", "-U", db["environment"]["POSTGRES_USER"],
                          "-d", db["environment"]["POSTGRES_DB"]])
        with open(os.path.join(DOCKER, "Dockerfile"), encoding="utf-8") as f:
            runtime_stage = f.read().rsplit("\nFROM ", 1)[1]
        self.assertIn("curl", runtime_stage)  # what the nodes' check runs
        for name in NODES:
            self.assertEqual(self.services[name]["healthcheck"]["test"],
                             ["CMD", "curl", "-fsS", "http://127.0.0.1:10002/_health"])
        self.assertEqual(self.services["lb"]["depends_on"],
                         {name: {"condition": "service_healthy"} for name in NODES})
        config = haproxy_config()
        self.assertIn("option httpchk GET /_health", config)
        for name in NODES:
            self.assertIn("\n    server %s %s:10002\n" % (name, name), config)
        mount = self.services["lb"]["volumes"][0].split(":")
        self.assertEqual(os.path.normpath(os.path.join(DOCKER, mount[0])), HAPROXY_CFG)
        self.assertEqual(mount[1], "/usr/local/etc/haproxy/haproxy.cfg")

    @unittest.skipIf(shutil.which("haproxy") is None, "haproxy not installed")
    def test_haproxy_accepts_the_config(self):
        check = subprocess.run(["haproxy", "-c", "-f", HAPROXY_CFG], capture_output=True,
                               text=True, timeout=30, check=False)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipIf(not os.environ.get("CERULEAN_E2E_DATABASE"),
                 "needs CERULEAN_E2E_DATABASE (a PostgreSQL URL)")
@unittest.skipIf(shutil.which("haproxy") is None, "haproxy not installed")
class ComposeBalancerTest(unittest.TestCase):
    """docker/haproxy.cfg as it is, but for the addresses: the nodes' and its own port."""

    def setUp(self):
        url, name = fresh_database()
        self.addCleanup(subprocess.run, ["dropdb", "--if-exists", "--force",
                                         "--maintenance-db=" + os.environ["CERULEAN_E2E_DATABASE"],
                                         name], check=False, stdout=subprocess.DEVNULL)
        self.nodes = [CeruleanServer(database=url) for _ in NODES]
        self.addCleanup(self.stop_nodes)
        port = free_port()
        config = haproxy_config()
        edits = [("\n    bind :10002\n", "\n    bind 127.0.0.1:%d\n" % port)]
        edits += [("\n    server %s %s:10002\n" % (n, n),
                   "\n    server %s 127.0.0.1:%d\n" % (n, node.port))
                  for n, node in zip(NODES, self.nodes)]
        for old, new in edits:
            self.assertEqual(config.count(old), 1, old)
            config = config.replace(old, new)
        cfg = tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False)
        self.addCleanup(os.unlink, cfg.name)
        cfg.write(config)
        cfg.close()
        self.haproxy = subprocess.Popen(["haproxy", "-db", "-f", cfg.name],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(self.stop_haproxy)
        self.endpoint = "http://127.0.0.1:%d/devstoreaccount1" % port

        def healthy():
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/_health" % port, timeout=5) as r:
                    return r.status == 200
            except (urllib.error.URLError, ConnectionError):
                return False

        wait_for(healthy, timeout=20, what="haproxy to answer /_health")

    def stop_haproxy(self):
        self.haproxy.terminate()
        self.haproxy.wait(timeout=10)

    def stop_nodes(self):
        for node in self.nodes:
            if node.process.poll() is None:
                node.stop()
            else:
                node.process.wait()

    def service(self, endpoint):
        client = TableServiceClient.from_connection_string(connection_string(endpoint),
                                                           **CLIENT_OPTIONS)
        self.addCleanup(client.close)
        return client

    def test_one_port_serves_both_nodes_and_outlives_one(self):
        name = unique_name("lb")
        table = self.service(self.endpoint).create_table(name)
        self.addCleanup(table.close)
        for i in range(20):
            table.create_entity({"PartitionKey": "p", "RowKey": "%02d" % i, "n": i})
        # Every node serves what went through the balancer (to either of them).
        for node in self.nodes:
            rows = list(self.service(node.endpoint).get_table_client(name).list_entities())
            self.assertEqual([e["n"] for e in rows], list(range(20)))

        self.nodes[0].process.kill()
        self.nodes[0].process.wait()
        # A connection the dead node refuses is sent to the live one: no request fails.
        for i in range(20, 40):
            table.create_entity({"PartitionKey": "p", "RowKey": "%02d" % i, "n": i})
        rows = list(self.service(self.nodes[1].endpoint).get_table_client(name).list_entities())
        self.assertEqual([e["n"] for e in rows], list(range(40)))


if __name__ == "__main__":
    unittest.main()
