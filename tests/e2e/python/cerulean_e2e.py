"""Shared fixtures of the Python end-to-end suite: start the real binary, build clients.

Each test class gets its own server (started in setUpClass on port 0, stopped in
tearDownClass) and each test its own uniquely named tables, so tests never see each
other's data. Single-threaded: a CeruleanServer belongs to the test class that made it.

Environment:
  CERULEAN_BIN                    the server binary (default: <repo>/${BUILD_DIR:-build}/cerulean)
  CERULEAN_E2E_CONNECTION_STRING  run against this endpoint instead of starting a server
                                  (for example a real Azure storage account)
"""

import base64
import hashlib
import hmac
import http.client
import itertools
import json
import os
import queue
import re
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse
import uuid
from email.utils import formatdate

from azure.core.credentials import AzureNamedKeyCredential
from azure.data.tables import TableClient, TableServiceClient

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
READY = re.compile(r"Cerulean Table service is successfully listening at http://(\S+):(\d+)")

# No retries (a retried 500 would hide a server bug) and bounded waits (a hung
# server fails the test instead of the whole run).
CLIENT_OPTIONS = {"retry_total": 0, "connection_timeout": 10, "read_timeout": 60}


def server_binary():
    """Path of the server binary under test."""
    return os.environ.get("CERULEAN_BIN") or os.path.join(
        REPO, os.environ.get("BUILD_DIR", "build"), "cerulean")


class CeruleanServer:
    """One server process on a free loopback port, in memory, without access log."""

    def __init__(self, extra_args=(), start_timeout=30, database=None):
        self.binary = server_binary()
        if not os.access(self.binary, os.X_OK):
            raise RuntimeError("server binary not found: %s (set CERULEAN_BIN)" % self.binary)
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        # CERULEAN_E2E_DATABASE (a PostgreSQL URL): serve from a fresh database of that
        # cluster instead of memory (the PostgreSQL backend; dropped by stop()). `database`
        # (a URL): serve from that one, which stop() leaves (nodes sharing a database).
        self.database = None if database else fresh_database()
        url = database or (self.database[0] if self.database else None)
        store = ["--database", url] if url else ["--inMemoryPersistence"]
        args = [self.binary, "--tableHost", "127.0.0.1", "--tablePort", "0",
                *store, "--silent", *extra_args]
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=self._stderr)
        lines = queue.Queue()
        # Reads stdout for the whole life of the process so that it never blocks on a full pipe.
        threading.Thread(target=self._pump, args=(lines,), daemon=True).start()
        try:
            line = lines.get(timeout=start_timeout)
        except queue.Empty:
            self.process.kill()
            raise RuntimeError("server did not print its start-up line within %ds%s"
                               % (start_timeout, self._stderr_tail()))
        if line is None:
            self.process.wait()
            raise RuntimeError("server exited with %s before listening%s"
                               % (self.process.returncode, self._stderr_tail()))
        match = READY.search(line)
        self.host, self.port = match.group(1), int(match.group(2))
        self.endpoint = "http://%s:%d/%s" % (self.host, self.port, ACCOUNT)

    def _pump(self, lines):
        announced = False
        for raw in self.process.stdout:
            if not announced and READY.search(raw.decode("utf-8", "replace")):
                announced = True
                lines.put(raw.decode("utf-8", "replace"))
        if not announced:
            lines.put(None)

    def _stderr_tail(self, limit=4000):
        self._stderr.seek(0)
        text = self._stderr.read().decode("utf-8", "replace")
        return ("\n--- server stderr ---\n" + text[-limit:]) if text.strip() else ""

    def stop(self):
        """Stops the server; raises if it had died or does not exit cleanly on SIGTERM."""
        try:
            self._stop()
        finally:
            if self.database:
                subprocess.run(["dropdb", "--if-exists", "--force",
                                "--maintenance-db=" + os.environ["CERULEAN_E2E_DATABASE"],
                                self.database[1]], check=False, stdout=subprocess.DEVNULL)

    def _stop(self):
        died = self.process.poll()
        if died is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                code = self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError("server ignored SIGTERM for 15s" + self._stderr_tail())
            if code != 0:
                raise AssertionError("server exited with %s after SIGTERM%s"
                                     % (code, self._stderr_tail()))
        else:
            raise AssertionError("server died during the tests (exit %s)%s"
                                 % (died, self._stderr_tail()))


_databases = itertools.count(1)


def fresh_database():
    """(url, name) of a new database in the CERULEAN_E2E_DATABASE cluster, or None."""
    base = os.environ.get("CERULEAN_E2E_DATABASE")
    if not base:
        return None
    name = "cerulean_e2e_%d_%d" % (os.getpid(), next(_databases))
    subprocess.run(["createdb", "--maintenance-db=" + base, name], check=True)
    parts = urllib.parse.urlsplit(base)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name)), name


def wait_for(condition, timeout=10.0, interval=0.05, what="the condition"):
    """Polls condition() every `interval` seconds until it returns a truthy value; returns it.

    Raises AssertionError naming `what` when `timeout` seconds pass first. The timeout is
    generous: it bounds a hang, it is not a measured expectation.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %gs waiting for %s" % (timeout, what))
        time.sleep(interval)


def connection_string(endpoint):
    return ("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;TableEndpoint=%s;"
            % (ACCOUNT, KEY, endpoint))


def unique_name(prefix="t"):
    """A fresh table name: letters and digits, starts with a letter, < 63 characters."""
    return prefix + uuid.uuid4().hex[:16]


def error_code(err):
    """The error code of an azure-core error, read from the response itself.

    azure.data.tables sets err.error_code on most errors but not on all (create_entity re-raises
    the undecoded error), so the code comes from the body (odata.error.code, or <Code>/<code> in
    XML) and the x-ms-error-code header, which must agree; a mismatch is returned as a string
    that no test expects.
    """
    response = getattr(err, "response", None)
    if response is None:
        code = getattr(err, "error_code", None)
        return getattr(code, "value", code)
    header = response.headers.get("x-ms-error-code")
    body = None
    try:
        text = response.text()
    except Exception:  # pylint: disable=broad-except
        text = ""
    try:
        body = json.loads(text)["odata.error"]["code"]
    except (ValueError, KeyError, TypeError):
        match = re.search(r"<(?:\w+:)?[Cc]ode>([^<]*)</", text or "")
        body = match.group(1) if match else None
    if header and body and header != body:
        return "x-ms-error-code %r differs from body code %r" % (header, body)
    return body or header


def admin_request(endpoint, method, path, body=None, account=ACCOUNT, key=KEY):
    """Calls a reserved endpoint (/_faults, /_snapshots, /_reset) signed with Shared Key.

    `endpoint` is the table endpoint (http://host:port/account); `path` starts with "/_".
    Returns (status, parsed JSON body or None).
    """
    url = urllib.parse.urlsplit(endpoint)
    payload = json.dumps(body).encode() if body is not None else b""
    content_type = "application/json" if body is not None else ""
    date = formatdate(usegmt=True)
    string_to_sign = "\n".join([method, "", content_type, date, "/" + account + path])
    signature = base64.b64encode(hmac.new(base64.b64decode(key), string_to_sign.encode(),
                                          hashlib.sha256).digest()).decode()
    headers = {"x-ms-date": date, "x-ms-version": "2019-02-02",
               "Authorization": "SharedKey %s:%s" % (account, signature),
               "Content-Length": str(len(payload))}
    if content_type:
        headers["Content-Type"] = content_type
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    try:
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        text = response.read()
        return response.status, json.loads(text) if text else None
    finally:
        conn.close()


class ServerTestCase(unittest.TestCase):
    """Starts one server for the class; offers clients and self-cleaning tables."""

    server_args = ()

    @classmethod
    def setUpClass(cls):
        external = os.environ.get("CERULEAN_E2E_CONNECTION_STRING")
        cls.server = None
        if external:
            cls.conn_str = external
            match = re.search(r"TableEndpoint=([^;]+)", external)
            cls.endpoint = match.group(1).rstrip("/") if match else None
        else:
            cls.server = CeruleanServer(cls.server_args)
            cls.endpoint = cls.server.endpoint
            cls.conn_str = connection_string(cls.endpoint)
        cls.credential = AzureNamedKeyCredential(ACCOUNT, KEY)
        cls.service = TableServiceClient.from_connection_string(cls.conn_str, **CLIENT_OPTIONS)

    @classmethod
    def tearDownClass(cls):
        cls.service.close()
        if cls.server is not None:
            cls.server.stop()

    def table_client(self, name, **options):
        return TableClient.from_connection_string(self.conn_str, name, **CLIENT_OPTIONS, **options)

    def new_table(self, prefix="t"):
        """Creates a uniquely named table, deleted again when the test ends."""
        name = unique_name(prefix)
        client = self.service.create_table(name)
        self.addCleanup(self._drop, client)
        return client

    def _drop(self, client):
        try:
            client.delete_table()
        finally:
            client.close()
