'use strict';
// Account- and table-level features beyond entities: stored access policies
// (ACL), table and account SAS, service properties and CORS, service stats on
// the secondary endpoint, extra accounts (AZURITE_ACCOUNTS), host-style URLs,
// and the reserved /_health, /_metrics and /_reset paths.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  AzureNamedKeyCredential, AzureSASCredential, TableClient, TableServiceClient,
  generateTableSas, generateAccountSas,
} = require('@azure/data-tables');

const { useServer, startServer, uniqueTableName } = require('./server');
const { request } = require('./http');
const { assertError, rejectsWith } = require('./util');

const server = useServer();
const clientOptions = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
const credential = () => new AzureNamedKeyCredential(server.account, server.key);
const serviceClient = () => new TableServiceClient(server.endpoint, credential(), clientOptions);
const tableClient = (name, cred = credential()) => new TableClient(server.endpoint, name, cred, clientOptions);
const sasTable = (name, sas) => tableClient(name, new AzureSASCredential(sas));
const call = (opts) => request(server, opts);

async function newTable(prefix) {
  const client = tableClient(uniqueTableName(prefix));
  await client.createTable();
  return client;
}

const inOneHour = () => new Date(Date.now() + 3600 * 1000);

describe('table ACL (stored access policies)', () => {
  test('a new table has no policies: <SignedIdentifiers />', async () => {
    const client = await newTable('acl');
    const res = await call({ path: `/${client.tableName}?comp=acl`, headers: { Accept: 'application/xml' } });
    assert.equal(res.status, 200, res.body);
    assert.match(res.headers['content-type'] || '', /^application\/xml/);
    assert.match(res.body, /<SignedIdentifiers\s*\/>|<SignedIdentifiers>\s*<\/SignedIdentifiers>/);
    assert.deepEqual(await client.getAccessPolicy(), []);
  });

  test('setAccessPolicy / getAccessPolicy round-trip', async () => {
    const client = await newTable('acl');
    const start = new Date('2024-01-01T00:00:00Z');
    const expiry = new Date('2035-01-01T00:00:00Z');
    await client.setAccessPolicy([
      { id: 'read-only', accessPolicy: { start, expiry, permission: 'r' } },
      { id: 'writer', accessPolicy: { expiry, permission: 'raud' } },
      { id: 'bare' },
    ]);
    const got = await client.getAccessPolicy();
    const byId = Object.fromEntries(got.map((s) => [s.id, s]));
    assert.deepEqual(Object.keys(byId).sort(), ['bare', 'read-only', 'writer']);
    assert.equal(byId['read-only'].accessPolicy.permission, 'r');
    assert.equal(byId['read-only'].accessPolicy.start.getTime(), start.getTime());
    assert.equal(byId['read-only'].accessPolicy.expiry.getTime(), expiry.getTime());
    assert.equal(byId.writer.accessPolicy.permission, 'raud');
    assert.equal(byId.writer.accessPolicy.start, undefined);
    const raw = await call({ path: `/${client.tableName}?comp=acl` });
    assert.match(raw.body, /<Expiry>2035-01-01T00:00:00\.0000000Z<\/Expiry>/, 'dates carry 7 fractional digits');
    await client.setAccessPolicy([]);
    assert.deepEqual(await client.getAccessPolicy(), []);
  });

  test('identifiers without a policy come back without one (the JS SDK reads {})', async () => {
    // The JS SDK's own test against Azure.
    const client = await newTable('acl');
    const date = new Date('2021-07-08T09:10:09Z');
    await client.setAccessPolicy([
      { id: 'null' },
      { id: 'empty', accessPolicy: {} },
      { id: 'partial', accessPolicy: { permission: 'r' } },
      { id: 'full', accessPolicy: { start: date, expiry: date, permission: 'r' } },
    ]);
    const acl = await client.getAccessPolicy();
    assert.equal(acl.length, 4);
    const byId = Object.fromEntries(acl.map((s) => [s.id, s.accessPolicy]));
    assert.deepEqual(byId.null, {});
    assert.deepEqual(byId.empty, {});
    assert.deepEqual(byId.partial, { permission: 'r' });
    assert.deepEqual(byId.full, { start: date, expiry: date, permission: 'r' });
    const raw = await call({ path: `/${client.tableName}?comp=acl` });
    assert.match(raw.body, /<SignedIdentifier><Id>null<\/Id><\/SignedIdentifier><SignedIdentifier><Id>empty<\/Id><\/SignedIdentifier>/);
  });

  test('more than 5 policies -> 400 InvalidXmlDocument; malformed XML -> 400', async () => {
    const client = await newTable('acl');
    const six = Array.from({ length: 6 }, (_, i) => ({ id: `p${i}`, accessPolicy: { permission: 'r', expiry: inOneHour() } }));
    await rejectsWith(client.setAccessPolicy(six), 400, 'InvalidXmlDocument');
    const res = await call({ method: 'PUT', path: `/${client.tableName}?comp=acl`, body: '<SignedIdentifiers><SignedIdentifier>', headers: { 'Content-Type': 'application/xml' } });
    assert.equal(res.status, 400, res.body);
    assert.equal(res.headers['x-ms-error-code'], 'InvalidXmlDocument');
  });

  test('ACL of a missing table -> 404', async () => {
    const res = await call({ path: `/${uniqueTableName('noacl')}?comp=acl` });
    assert.equal(res.status, 404, res.body);
    assert.ok(['TableNotFound', 'ResourceNotFound'].includes(res.headers['x-ms-error-code']));
  });

  test('unknown comp on a table -> 400 InvalidQueryParameterValue', async () => {
    const client = await newTable('comp');
    const res = await call({ path: `/${client.tableName}?comp=frob` });
    assert.equal(res.status, 400, res.body);
    assert.equal(res.headers['x-ms-error-code'], 'InvalidQueryParameterValue');
  });
});

describe('table SAS', () => {
  let table;
  before(async () => {
    table = await newTable('sas');
    for (const pk of ['a', 'b', 'c', 'd']) await table.createEntity({ partitionKey: pk, rowKey: '1', v: pk });
  });

  const sasFor = (options) => generateTableSas(table.tableName, credential(), options);

  test('read-only SAS: reads work, writes -> 403 AuthorizationPermissionMismatch', async () => {
    const client = sasTable(table.tableName, sasFor({ permissions: { query: true }, expiresOn: inOneHour() }));
    const e = await client.getEntity('a', '1');
    assert.equal(e.v, 'a');
    const all = [];
    for await (const x of client.listEntities()) all.push(x.partitionKey);
    assert.deepEqual(all, ['a', 'b', 'c', 'd']);
    await rejectsWith(client.createEntity({ partitionKey: 'z', rowKey: '1' }), 403, 'AuthorizationPermissionMismatch');
    await rejectsWith(client.deleteEntity('a', '1'), 403, 'AuthorizationPermissionMismatch');
  });

  test('add-only SAS can insert but not upsert (needs a and u)', async () => {
    const client = sasTable(table.tableName, sasFor({ permissions: { add: true }, expiresOn: inOneHour() }));
    await client.createEntity({ partitionKey: 'add', rowKey: crypto.randomUUID() });
    await rejectsWith(client.upsertEntity({ partitionKey: 'add', rowKey: 'x' }, 'Merge'), 403, 'AuthorizationPermissionMismatch');
    await rejectsWith(client.getEntity('a', '1'), 403, 'AuthorizationPermissionMismatch');
  });

  const fullSas = () => sasFor({ permissions: { query: true, add: true, update: true, delete: true }, expiresOn: inOneHour() });

  test('full SAS allows every entity operation on its table', async () => {
    const client = sasTable(table.tableName, fullSas());
    await client.createEntity({ partitionKey: 'full', rowKey: '0' });
    await client.upsertEntity({ partitionKey: 'full', rowKey: '1', x: 1 }, 'Merge');
    await client.updateEntity({ partitionKey: 'full', rowKey: '1', y: 2 }, 'Replace');
    assert.deepEqual((await client.getEntity('full', '1')).y, 2);
    await client.deleteEntity('full', '0');
  });

  test('table SAS on the outer $batch URL authorizes the inner operations (auth.md §3.6)', async () => {
    const client = sasTable(table.tableName, fullSas());
    await client.submitTransaction([['create', { partitionKey: 'fulltx', rowKey: '2' }], ['upsert', { partitionKey: 'fulltx', rowKey: '1', y: 2 }, 'Replace']]);
    assert.equal((await client.getEntity('fulltx', '1')).y, 2);
    assert.equal((await client.getEntity('fulltx', '2')).partitionKey, 'fulltx');
  });

  test('SAS for another table -> 403 AuthorizationFailure', async () => {
    const other = await newTable('other');
    const client = sasTable(other.tableName, sasFor({ permissions: { query: true }, expiresOn: inOneHour() }));
    await rejectsWith(client.getEntity('a', '1'), 403, 'AuthorizationFailure');
  });

  test('table SAS cannot list or create tables -> 403', async () => {
    const sas = sasFor({ permissions: { query: true, add: true, update: true, delete: true }, expiresOn: inOneHour() });
    const svc = new TableServiceClient(server.endpoint, new AzureSASCredential(sas), clientOptions);
    await rejectsWith(svc.createTable(uniqueTableName('nope')), 403);
  });

  test('expired SAS -> 403 AuthenticationFailed', async () => {
    const client = sasTable(table.tableName, sasFor({ permissions: { query: true }, startsOn: new Date(Date.now() - 7200 * 1000), expiresOn: new Date(Date.now() - 3600 * 1000) }));
    await rejectsWith(client.getEntity('a', '1'), 403, 'AuthenticationFailed');
  });

  test('tampered SAS signature -> 403 AuthenticationFailed', async () => {
    const sas = sasFor({ permissions: { query: true }, expiresOn: inOneHour() }).replace(/sig=[^&]+/, `sig=${encodeURIComponent(crypto.randomBytes(32).toString('base64'))}`);
    await rejectsWith(sasTable(table.tableName, sas).getEntity('a', '1'), 403, 'AuthenticationFailed');
    // Widening the permissions invalidates the signature too.
    const widened = sasFor({ permissions: { query: true }, expiresOn: inOneHour() }).replace('sp=r', 'sp=raud');
    await rejectsWith(sasTable(table.tableName, widened).createEntity({ partitionKey: 'w', rowKey: '1' }), 403, 'AuthenticationFailed');
  });

  test('https-only SAS over http -> 403 AuthorizationProtocolMismatch', async () => {
    const client = sasTable(table.tableName, sasFor({ permissions: { query: true }, expiresOn: inOneHour(), protocol: 'https' }));
    await rejectsWith(client.getEntity('a', '1'), 403, 'AuthorizationProtocolMismatch');
  });

  test('key-range SAS: queries are restricted to the range, reads outside -> 404, writes outside -> 403', async () => {
    const client = sasTable(table.tableName, sasFor({
      permissions: { query: true, add: true }, expiresOn: inOneHour(), startPartitionKey: 'b', endPartitionKey: 'c',
    }));
    const seen = [];
    for await (const e of client.listEntities()) seen.push(e.partitionKey);
    assert.deepEqual(seen.filter((pk) => pk.length === 1), ['b', 'c']);
    assert.equal((await client.getEntity('b', '1')).v, 'b');
    await rejectsWith(client.getEntity('a', '1'), 404, 'ResourceNotFound');
    await client.createEntity({ partitionKey: 'bb', rowKey: crypto.randomUUID() });
    await rejectsWith(client.createEntity({ partitionKey: 'd', rowKey: 'new' }), 403, 'AuthorizationFailure');
  });

  test('SAS bound to a stored policy works until the policy is removed', async () => {
    await table.setAccessPolicy([{ id: 'pol', accessPolicy: { permission: 'r', expiry: inOneHour() } }]);
    const client = sasTable(table.tableName, sasFor({ identifier: 'pol' }));
    assert.equal((await client.getEntity('a', '1')).v, 'a');
    await rejectsWith(client.createEntity({ partitionKey: 'pol', rowKey: '1' }), 403, 'AuthorizationPermissionMismatch');
    await table.setAccessPolicy([]);
    await rejectsWith(client.getEntity('a', '1'), 403, 'AuthenticationFailed');
  });
});

describe('account SAS', () => {
  const accountSas = (options) => generateAccountSas(credential(), { expiresOn: inOneHour(), ...options });

  test('full account SAS: create, list, use and delete tables', async () => {
    const sas = accountSas({ permissions: { query: true, write: true, delete: true, list: true, add: true, create: true, update: true }, resourceTypes: 'sco' });
    const svc = new TableServiceClient(server.endpoint, new AzureSASCredential(sas), clientOptions);
    const name = uniqueTableName('acct');
    await svc.createTable(name);
    const names = [];
    for await (const t of svc.listTables()) names.push(t.name);
    assert.ok(names.includes(name));
    const client = sasTable(name, sas);
    await client.createEntity({ partitionKey: 'p', rowKey: 'r', v: 1 });
    assert.equal((await client.getEntity('p', 'r')).v, 1);
    await svc.deleteTable(name);
  });

  test('resource type missing -> 403 AuthorizationResourceTypeMismatch', async () => {
    const sas = accountSas({ permissions: { query: true, write: true, create: true, list: true }, resourceTypes: 'o' });
    const svc = new TableServiceClient(server.endpoint, new AzureSASCredential(sas), clientOptions);
    await rejectsWith(svc.createTable(uniqueTableName('nope')), 403, 'AuthorizationResourceTypeMismatch');
  });

  test('service missing t -> 403 AuthorizationServiceMismatch', async () => {
    const sas = accountSas({ permissions: { query: true, list: true }, resourceTypes: 'sco', services: { blob: true } });
    const svc = new TableServiceClient(server.endpoint, new AzureSASCredential(sas), clientOptions);
    const it = svc.listTables();
    await rejectsWith(it.next(), 403, 'AuthorizationServiceMismatch');
  });

  test('permission missing -> 403 AuthorizationPermissionMismatch', async () => {
    const client = await newTable('acctperm');
    const sas = accountSas({ permissions: { query: true, list: true }, resourceTypes: 'sco' });
    await rejectsWith(sasTable(client.tableName, sas).createEntity({ partitionKey: 'p', rowKey: 'r' }), 403, 'AuthorizationPermissionMismatch');
  });
});

describe('service properties and CORS', () => {
  test('getProperties returns a complete document; setProperties replaces sections', async () => {
    const svc = serviceClient();
    const props = await svc.getProperties();
    assert.ok(props.logging && props.hourMetrics && props.minuteMetrics, JSON.stringify(props));
    await svc.setProperties({
      cors: [{
        allowedOrigins: 'http://localhost:3000,https://example.org',
        allowedMethods: 'GET,PUT,POST,MERGE,DELETE,OPTIONS',
        allowedHeaders: 'x-ms-*,content-type,accept',
        exposedHeaders: 'x-ms-*',
        maxAgeInSeconds: 3600,
      }],
    });
    const after = await svc.getProperties();
    assert.equal(after.cors.length, 1);
    assert.equal(after.cors[0].allowedOrigins, 'http://localhost:3000,https://example.org');
    assert.equal(after.cors[0].maxAgeInSeconds, 3600);
    assert.deepEqual(after.logging, props.logging, 'sections not sent keep their value');
  });

  test('CORS preflight: match -> 200 with Access-Control-* headers; no match -> 403; missing headers -> 400', async () => {
    await serviceClient().setProperties({
      cors: [{ allowedOrigins: 'http://localhost:3000', allowedMethods: 'GET,POST', allowedHeaders: 'x-ms-*,accept', exposedHeaders: 'x-ms-*', maxAgeInSeconds: 60 }],
    });
    const ok = await call({
      method: 'OPTIONS', path: '/Tables', auth: 'none',
      headers: { Origin: 'http://localhost:3000', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'x-ms-date,accept' },
    });
    assert.equal(ok.status, 200, ok.body);
    assert.equal(ok.headers['access-control-allow-origin'], 'http://localhost:3000');
    assert.match(ok.headers['access-control-allow-methods'] || '', /GET/);
    assert.equal(ok.headers['access-control-max-age'], '60');
    assert.equal(ok.headers['access-control-allow-credentials'], 'true');
    const bad = await call({
      method: 'OPTIONS', path: '/Tables', auth: 'none',
      headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'GET' },
    });
    assert.equal(bad.status, 403, bad.body);
    assert.equal(bad.headers['x-ms-error-code'], 'CorsPreflightFailure');
    const missing = await call({ method: 'OPTIONS', path: '/Tables', auth: 'none', headers: { Origin: 'http://localhost:3000' } });
    assert.equal(missing.status, 400, missing.body);
    assert.equal(missing.headers['x-ms-error-code'], 'InvalidHeaderValue');
    const actual = await call({ path: '/Tables', headers: { Origin: 'http://localhost:3000' } });
    assert.equal(actual.status, 200, actual.body);
    assert.equal(actual.headers['access-control-allow-origin'], 'http://localhost:3000');
    assert.ok(actual.headers['access-control-expose-headers'], 'exposed headers on actual requests');
    const other = await call({ path: '/Tables', headers: { Origin: 'http://evil.example' } });
    assert.equal(other.status, 200);
    assert.equal(other.headers['access-control-allow-origin'], undefined);
  });

  test('malformed service properties -> 400', async () => {
    const res = await call({ method: 'PUT', path: '/?restype=service&comp=properties', body: '<StorageServiceProperties><Cors>', headers: { 'Content-Type': 'application/xml' } });
    assert.equal(res.status, 400, res.body);
    assert.ok(['InvalidXmlDocument', 'InvalidXmlNodeValue'].includes(res.headers['x-ms-error-code']));
  });
});

describe('service stats and the secondary endpoint', () => {
  test('stats on the secondary -> 200 live; on the primary -> 400 InvalidQueryParameterValue', async () => {
    const sec = await call({
      rawTarget: `/${server.account}-secondary/?restype=service&comp=stats`,
      headers: { Accept: 'application/xml' },
    });
    assert.equal(sec.status, 200, sec.body);
    assert.match(sec.body, /<GeoReplication>\s*<Status>live<\/Status>\s*<LastSyncTime>[^<]+GMT<\/LastSyncTime>/);
    const prim = await call({ path: '/?restype=service&comp=stats' });
    assert.equal(prim.status, 400, prim.body);
    assert.equal(prim.headers['x-ms-error-code'], 'InvalidQueryParameterValue');
  });

  test('reads work on the secondary, writes -> 403 InsufficientAccountPermissions', async () => {
    const client = await newTable('sec');
    await client.createEntity({ partitionKey: 'p', rowKey: 'r', v: 'x' });
    const read = await call({ rawTarget: `/${server.account}-secondary/${client.tableName}(PartitionKey='p',RowKey='r')` });
    assert.equal(read.status, 200, read.body);
    assert.equal(read.json.v, 'x');
    const write = await call({ method: 'POST', rawTarget: `/${server.account}-secondary/${client.tableName}`, body: { PartitionKey: 'p', RowKey: 'w' } });
    assertError(write, 403, 'InsufficientAccountPermissions');
  });
});

describe('addressing and accounts', () => {
  test('host-style URL: account from the Host header', async () => {
    const name = uniqueTableName('host');
    const res = await call({
      method: 'POST', rawTarget: '/Tables', body: { TableName: name },
      headers: { Host: `${server.account}.table.localhost:${server.port}` },
    });
    assert.equal(res.status, 201, res.body);
    const list = await call({ path: `/Tables?$filter=${encodeURIComponent(`TableName eq '${name}'`)}` });
    assert.deepEqual(list.json.value, [{ TableName: name }]);
  });

  test('unknown account -> 403 AuthenticationFailed', async () => {
    const res = await call({ rawTarget: '/nosuchaccount/Tables', account: 'nosuchaccount' });
    assertError(res, 403, 'AuthenticationFailed');
  });

  test('Authorization naming another account than the URL -> 403', async () => {
    const res = await call({ path: '/Tables', auth: ({ date }) => {
      const h = require('./http');
      return `SharedKey other:${h.hmac(server.key, h.sharedKeyStringToSign({ method: 'GET', date, resource: `/other/${server.account}/Tables` }))}`;
    } });
    assertError(res, 403, 'AuthenticationFailed');
  });

  describe('AZURITE_ACCOUNTS', () => {
    let second;
    const key2 = crypto.randomBytes(64).toString('base64');
    const key2b = crypto.randomBytes(64).toString('base64');
    before(async () => {
      second = await startServer({ env: { AZURITE_ACCOUNTS: `acctwo:${key2}:${key2b}` } });
    });
    after(async () => { if (second) await second.stop(); });

    test('an extra account works with either key and is isolated', async () => {
      const acct = { ...second, account: 'acctwo', key: key2, endpoint: `${second.url}/acctwo` };
      const name = uniqueTableName('two');
      const res = await request(acct, { method: 'POST', path: '/Tables', body: { TableName: name } });
      assert.equal(res.status, 201, res.body);
      const withSecondKey = await request({ ...acct, key: key2b }, { path: '/Tables' });
      assert.equal(withSecondKey.status, 200, withSecondKey.body);
      assert.deepEqual(withSecondKey.json.value.map((t) => t.TableName), [name]);
      const wrong = await request({ ...acct, key: second.key }, { path: '/Tables' });
      assertError(wrong, 403, 'AuthenticationFailed');
      const dev = await request(second, { path: '/Tables' });
      assert.equal(dev.status, 200, dev.body);
      assert.ok(!dev.json.value.some((t) => t.TableName === name), 'accounts must not share tables');
    });
  });
});

describe('reserved paths', () => {
  test('GET /_health -> 200', async () => {
    const res = await call({ rawTarget: '/_health', auth: 'none' });
    assert.equal(res.status, 200);
  });

  test('GET /_metrics -> Prometheus text', async () => {
    await call({ path: '/Tables' });
    const res = await call({ rawTarget: '/_metrics', auth: 'none' });
    assert.equal(res.status, 200, res.body);
    assert.match(res.headers['content-type'] || '', /^text\/plain/);
    assert.match(res.body, /^# (HELP|TYPE) /m);
  });

  test('GET /_metrics signed by the account -> requests by operation/status, its tables and entities, storage bytes', async () => {
    // A server of its own, on disk, so that the counts are exactly ours.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-metrics-'));
    const r = await startServer({ location: dir });
    try {
      const names = [uniqueTableName('m1'), uniqueTableName('m2')];
      for (const n of names) assert.equal((await request(r, { method: 'POST', path: '/Tables', body: { TableName: n } })).status, 201);
      for (let i = 0; i < 3; i++) {
        const ins = await request(r, { method: 'POST', path: `/${names[0]}`, body: { PartitionKey: 'p', RowKey: `r${i}` } });
        assert.equal(ins.status, 201, ins.body);
      }
      const res = await request(r, { rawTarget: '/_metrics' });
      assert.equal(res.status, 200, res.body);
      assert.match(res.body, /^cerulean_requests_total\{operation="InsertEntity",status="201"\} 3$/m);
      assert.match(res.body, /^cerulean_request_duration_seconds_count \d+$/m);
      assert.match(res.body, new RegExp(`^cerulean_tables\\{account="${r.account}"\\} 2$`, 'm'));
      assert.match(res.body, new RegExp(`^cerulean_entities\\{account="${r.account}"\\} 3$`, 'm'));
      const bytes = /^cerulean_storage_bytes (\d+)$/m.exec(res.body);
      assert.ok(bytes && Number(bytes[1]) > 0, res.body);
    } finally {
      await r.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('POST /_reset/{account}: unsigned -> 403; signed -> every table deleted', async () => {
    const r = await startServer();
    try {
      const names = [uniqueTableName('r1'), uniqueTableName('r2')];
      for (const n of names) assert.equal((await request(r, { method: 'POST', path: '/Tables', body: { TableName: n } })).status, 201);
      const unsigned = await request(r, { method: 'POST', rawTarget: `/_reset/${r.account}`, auth: 'none' });
      assert.equal(unsigned.status, 403, unsigned.body);
      assert.equal((await request(r, { path: '/Tables' })).json.value.length, 2);
      const reset = await request(r, { method: 'POST', rawTarget: `/_reset/${r.account}` });
      assert.ok(reset.status >= 200 && reset.status < 300, `${reset.status} ${reset.body}`);
      assert.deepEqual((await request(r, { path: '/Tables' })).json.value, []);
    } finally {
      await r.stop();
    }
  });
});
