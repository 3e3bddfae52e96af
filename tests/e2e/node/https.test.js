'use strict';
// HTTPS (--cert/--key PEM, --cert x.pfx --pwd): the port speaks TLS only,
// the start-up line and every URL the service returns use https://, and the
// SDKs work over it. The certificate is self-signed, made for each run, and
// trusted explicitly (a custom CA), never by turning verification off.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const https = require('node:https');
const net = require('node:net');
const {
  AzureNamedKeyCredential, AzureSASCredential, TableClient, TableServiceClient, generateTableSas,
} = require('@azure/data-tables');

const { uniqueTableName } = require('./server');
const { makeCertificate, runBinary, startServer, httpsRequest } = require('./tls-server');

const certs = makeCertificate();
const agent = new https.Agent({ ca: certs.ca, keepAlive: true });
const clientOptions = { agent, retryOptions: { maxRetries: 0 } };

describe('HTTPS with a PEM certificate and key', () => {
  let server;
  before(async () => { server = await startServer({ args: ['--cert', certs.cert, '--key', certs.key] }); });
  after(async () => { if (server) await server.stop(); });

  const credential = () => new AzureNamedKeyCredential(server.account, server.key);

  test('the start-up line announces https://', () => {
    assert.equal(server.scheme, 'https');
    assert.match(server.stdout(), /^Cerulean Table service is successfully listening at https:\/\/127\.0\.0\.1:\d+$/m);
  });

  test('@azure/data-tables: create table, insert, get, query, delete over TLS', async () => {
    const name = uniqueTableName('tls');
    const service = new TableServiceClient(server.endpoint, credential(), clientOptions);
    await service.createTable(name);
    const client = new TableClient(server.endpoint, name, credential(), clientOptions);
    await client.createEntity({ partitionKey: 'p', rowKey: 'r1', text: 'über TLS', n: 7 });
    const got = await client.getEntity('p', 'r1');
    assert.equal(got.text, 'über TLS');
    assert.equal(got.n, 7);
    const all = [];
    for await (const e of client.listEntities()) all.push(e.rowKey);
    assert.deepEqual(all, ['r1']);
    const tables = [];
    for await (const t of service.listTables({ queryOptions: { filter: `TableName eq '${name}'` } })) tables.push(t.name);
    assert.deepEqual(tables, [name]);
    await client.deleteEntity('p', 'r1');
    await service.deleteTable(name);
  });

  test('a transaction ($batch) over TLS', async () => {
    const name = uniqueTableName('tlsbatch');
    const client = new TableClient(server.endpoint, name, credential(), clientOptions);
    await client.createTable();
    const actions = [];
    for (let i = 0; i < 10; i += 1) actions.push(['create', { partitionKey: 'b', rowKey: `r${i}`, i }]);
    const result = await client.submitTransaction(actions);
    assert.equal(result.status, 202);
    let count = 0;
    for await (const e of client.listEntities({ queryOptions: { filter: "PartitionKey eq 'b'" } })) count += e.i >= 0 ? 1 : 0;
    assert.equal(count, 10);
  });

  test('URLs in responses use https:// (odata.metadata, odata.id, Location)', async () => {
    const name = uniqueTableName('tlsurl');
    const created = await httpsRequest(server, certs.ca, {
      method: 'POST', path: '/Tables', body: { TableName: name },
      headers: { Accept: 'application/json;odata=fullmetadata', Prefer: 'return-content' },
    });
    assert.equal(created.status, 201, created.body);
    assert.match(created.json['odata.metadata'], new RegExp(`^https://127\\.0\\.0\\.1:${server.port}/devstoreaccount1/\\$metadata#Tables`));
    assert.match(created.json['odata.id'], /^https:\/\//);
    assert.match(created.headers.location || '', /^https:\/\//);
  });

  test('a table SAS restricted to spr=https is accepted over HTTPS', async () => {
    const name = uniqueTableName('tlssas');
    await new TableServiceClient(server.endpoint, credential(), clientOptions).createTable(name);
    const sas = generateTableSas(name, credential(), {
      permissions: { add: true, query: true },
      expiresOn: new Date(Date.now() + 3600 * 1000),
      protocol: 'https',
    });
    assert.match(sas, /spr=https(&|$)/);
    const client = new TableClient(server.endpoint, name, new AzureSASCredential(sas), clientOptions);
    await client.createEntity({ partitionKey: 's', rowKey: '1' });
    assert.equal((await client.getEntity('s', '1')).rowKey, '1');
  });

  test('many concurrent requests on parallel TLS connections', async () => {
    const name = uniqueTableName('tlsconc');
    const client = new TableClient(server.endpoint, name, credential(), clientOptions);
    await client.createTable();
    const parallel = new https.Agent({ ca: certs.ca, keepAlive: true, maxSockets: 16 });
    const fast = new TableClient(server.endpoint, name, credential(), { ...clientOptions, agent: parallel });
    await Promise.all(Array.from({ length: 64 }, (_, i) => fast.createEntity({ partitionKey: 'c', rowKey: String(i).padStart(3, '0') })));
    const got = await Promise.all(Array.from({ length: 64 }, (_, i) => fast.getEntity('c', String(i).padStart(3, '0'))));
    assert.equal(got.length, 64);
    parallel.destroy();
  });

  test('the certificate verifies against its CA for 127.0.0.1, and a client that does not trust it fails', async () => {
    const ok = await httpsRequest(server, certs.ca, { path: '/Tables' });
    assert.equal(ok.status, 200, ok.body);
    await assert.rejects(httpsRequest(server, undefined, { path: '/Tables' }), /self[- ]signed|unable to verify|certificate/i);
  });

  test('plain HTTP on the TLS port gets no HTTP answer, and the server keeps serving', async () => {
    const answer = await new Promise((resolve) => {
      const sock = net.connect(server.port, server.host);
      let data = '';
      sock.setTimeout(10000, () => { sock.destroy(); resolve(data); });
      sock.on('connect', () => sock.write(`GET /${server.account}/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
      sock.on('data', (d) => { data += d.toString('latin1'); });
      sock.on('close', () => resolve(data));
      sock.on('error', () => resolve(data));
    });
    assert.doesNotMatch(answer, /^HTTP\/1\.1 /);
    const ok = await httpsRequest(server, certs.ca, { path: '/Tables' });
    assert.equal(ok.status, 200);
  });

  test('an over-4-MiB body over TLS gets 413 RequestBodyTooLarge, not a reset', async () => {
    const name = uniqueTableName('tlsbig');
    const created = await httpsRequest(server, certs.ca, { method: 'POST', path: '/Tables', body: { TableName: name } });
    assert.equal(created.status, 201, created.body);
    const res = await httpsRequest(server, certs.ca, {
      method: 'POST', path: `/${name}`, body: { PartitionKey: 'p', RowKey: 'big', S: 'x'.repeat(4 * 1024 * 1024 + 10) },
    });
    assert.equal(res.status, 413, res.body.slice(0, 300));
    assert.equal(res.headers['x-ms-error-code'], 'RequestBodyTooLarge');
  });

  test('Python azure.data.tables over HTTPS (connection_verify = the test CA)', (t) => {
    const probe = spawnSync('/usr/bin/python3', ['-c', 'import azure.data.tables'], { encoding: 'utf8' });
    if (probe.status !== 0) {
      t.skip(`python3 azure.data.tables unavailable: ${(probe.stderr || String(probe.error)).trim().split('\n').pop()}`);
      return;
    }
    const script = `
import sys
from azure.data.tables import TableServiceClient
conn, name, ca = sys.argv[1], sys.argv[2], sys.argv[3]
service = TableServiceClient.from_connection_string(conn, connection_verify=ca)
table = service.create_table(name)
table.create_entity({"PartitionKey": "py", "RowKey": "1", "Value": 42, "Text": "hello"})
e = table.get_entity("py", "1")
assert e["Value"] == 42 and e["Text"] == "hello", e
rows = list(table.query_entities("PartitionKey eq 'py'"))
assert len(rows) == 1, rows
service.delete_table(name)
print("python-ok")
`;
    const r = spawnSync('/usr/bin/python3', ['-c', script, server.connectionString, uniqueTableName('py'), certs.cert],
      { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 0, `python failed:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /python-ok/);
  });

  test('SIGTERM with an idle keep-alive TLS connection open exits 0', async () => {
    const own = await startServer({ args: ['--cert', certs.cert, '--key', certs.key] });
    const keepAlive = new https.Agent({ ca: certs.ca, keepAlive: true });
    const res = await httpsRequest(own, certs.ca, { path: '/Tables', agent: keepAlive });
    assert.equal(res.status, 200);
    const exit = await own.stop('SIGTERM');
    keepAlive.destroy();
    assert.deepEqual(exit, { code: 0, signal: null });
  });
});

describe('HTTPS with a .pfx certificate', () => {
  test('--cert x.pfx --pwd serves TLS', async () => {
    const server = await startServer({ args: ['--cert', certs.pfx, '--pwd', certs.pfxPassword] });
    try {
      assert.equal(server.scheme, 'https');
      const service = new TableServiceClient(server.endpoint, new AzureNamedKeyCredential(server.account, server.key), clientOptions);
      const name = uniqueTableName('pfx');
      await service.createTable(name);
      const client = new TableClient(server.endpoint, name, new AzureNamedKeyCredential(server.account, server.key), clientOptions);
      await client.createEntity({ partitionKey: 'p', rowKey: 'r' });
      assert.equal((await client.getEntity('p', 'r')).rowKey, 'r');
    } finally {
      await server.stop();
    }
  });
});

describe('HTTPS with an encrypted PEM key', () => {
  test('--cert --key key.enc.pem --pwd decrypts the key', async () => {
    const server = await startServer({ args: ['--cert', certs.cert, '--key', certs.encryptedKey, '--pwd', certs.pfxPassword] });
    try {
      const res = await httpsRequest(server, certs.ca, { path: '/Tables' });
      assert.equal(res.status, 200, res.body);
    } finally {
      await server.stop();
    }
  });
});

describe('HTTPS start-up refusals', () => {
  const cases = [
    ['a wrong .pfx password', () => ['--cert', certs.pfx, '--pwd', 'wrong'], /wrong password/],
    ['--cert without --key or --pwd', () => ['--cert', certs.cert], /--cert needs --key/],
    ['--key without --cert', () => ['--key', certs.key], /need --cert/],
    ['a missing certificate file', () => ['--cert', `${certs.dir}/nope.pem`, '--key', certs.key], /no such file/],
    ['a key that is not a key', () => ['--cert', certs.cert, '--key', certs.cert], /--key .*not a usable PEM private key/],
    ['a PEM file given as .pfx', () => ['--cert', certs.cert, '--pwd', 'x'], /not a PKCS #12/],
    ['an encrypted key without --pwd (no terminal prompt)', () => ['--cert', certs.cert, '--key', certs.encryptedKey], /not a usable PEM private key/],
    ['an encrypted key with a wrong --pwd', () => ['--cert', certs.cert, '--key', certs.encryptedKey, '--pwd', 'nope'], /not a usable PEM private key/],
  ];
  for (const [what, args, message] of cases) {
    test(`${what}: exit 1 with a message, nothing listening`, () => {
      const r = runBinary(args());
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, message);
      assert.doesNotMatch(r.stdout, /listening/);
    });
  }
});
