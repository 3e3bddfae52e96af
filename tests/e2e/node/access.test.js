'use strict';
// Access control without side channels (README "Security"), against the real
// binary with @azure/data-tables and raw HTTP: a SAS key range (a RowKey
// bound needs its PartitionKey bound; a read outside the range finds nothing,
// directly and in $batch; a query and its plan header see nothing outside
// it), $batch answers that do not reveal whether a table exists, the reserved
// endpoints' schemes, and what /_metrics shows to whom.

const { test, describe, before } = require('node:test');
const assert = require('node:assert/strict');
const { AzureNamedKeyCredential, AzureSASCredential, TableClient, generateTableSas } = require('@azure/data-tables');

const { useServer, startServer, uniqueTableName } = require('./server');
const { request } = require('./http');
const { assertError, rejectsWith } = require('./util');

const server = useServer();
const clientOptions = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
const credential = () => new AzureNamedKeyCredential(server.account, server.key);
const tableClient = (name, cred = credential()) => new TableClient(server.endpoint, name, cred, clientOptions);
const inOneHour = () => new Date(Date.now() + 3600 * 1000);
const everything = { query: true, add: true, update: true, delete: true };
const sasOf = (name, options = {}) =>
  generateTableSas(name, credential(), { permissions: everything, expiresOn: inOneHour(), ...options });

// A $batch response with what varies between runs (boundaries, request ids,
// times) replaced.
function normalized(text) {
  return text
    .replace(/(batchresponse|changesetresponse)_[0-9a-f-]{36}/g, '$1_<guid>')
    .replace(/RequestId:[0-9a-f-]{36}(\\n|\n)Time:[0-9T:.Z-]+/g, 'RequestId:<id>$1Time:<time>');
}

// POST /$batch under `sas` with a body of `parts` ({ method, url, body }, url
// after the account): one change set, or the single retrieve of one GET.
async function batch(sas, parts, { changeset = true } = {}) {
  let body = '--batch_b\r\n';
  if (changeset) body += 'Content-Type: multipart/mixed; boundary=changeset_c\r\n\r\n';
  parts.forEach((p, i) => {
    if (changeset) body += '--changeset_c\r\n';
    body += 'Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n';
    if (changeset) body += `Content-ID: ${i + 1}\r\n`;
    body += `\r\n${p.method} ${server.endpoint}/${p.url} HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\n`;
    if (p.body) body += 'Content-Type: application/json\r\n';
    body += `\r\n${p.body ? JSON.stringify(p.body) : ''}\r\n`;
  });
  if (changeset) body += '--changeset_c--\r\n';
  body += '--batch_b--\r\n';
  const res = await request(server, {
    method: 'POST', path: `/$batch?${sas}`, auth: 'none', body,
    headers: { 'Content-Type': 'multipart/mixed; boundary=batch_b' },
  });
  assert.equal(res.status, 202, res.body);
  return normalized(res.body);
}

describe('SAS key ranges', () => {
  let table;
  before(async () => {
    table = tableClient(uniqueTableName('range'));
    await table.createTable();
    for (const [pk, rk] of [['a', '1'], ['b', '1'], ['b', '2'], ['b', '3'], ['c', '1'], ['d', '1']]) {
      await table.createEntity({ partitionKey: pk, rowKey: rk, v: 1 });
    }
  });
  const sasClient = (options) => tableClient(table.tableName, new AzureSASCredential(sasOf(table.tableName, options)));
  const listKeys = async (client) => {
    const keys = [];
    for await (const e of client.listEntities()) keys.push(`${e.partitionKey}/${e.rowKey}`);
    return keys;
  };

  test('a RowKey bound without its PartitionKey bound -> 403 AuthenticationFailed', async () => {
    for (const options of [{ startRowKey: '2' }, { endRowKey: '2' }]) {
      const client = sasClient(options);
      await rejectsWith(client.getEntity('a', '1'), 403, 'AuthenticationFailed');
      await rejectsWith(client.listEntities().next(), 403, 'AuthenticationFailed');
    }
    // With its PartitionKey bound, a RowKey bound holds.
    assert.deepEqual(await listKeys(sasClient({ startPartitionKey: 'b', startRowKey: '2', endPartitionKey: 'b' })),
      ['b/2', 'b/3']);
  });

  test('a read outside the range -> 404 ResourceNotFound, existing or not; a write -> 403', async () => {
    const client = sasClient({ startPartitionKey: 'b', endPartitionKey: 'b' });
    assert.deepEqual(await listKeys(client), ['b/1', 'b/2', 'b/3']);
    await rejectsWith(client.getEntity('a', '1'), 404, 'ResourceNotFound');
    await rejectsWith(client.getEntity('a', 'absent'), 404, 'ResourceNotFound');
    await rejectsWith(client.getEntity('b', 'absent'), 404, 'ResourceNotFound');
    await rejectsWith(client.createEntity({ partitionKey: 'a', rowKey: 'new' }), 403, 'AuthorizationFailure');
    await rejectsWith(client.deleteEntity('a', '1'), 403, 'AuthorizationFailure');
    assert.equal((await table.getEntity('a', '1')).v, 1);
  });

  test('a single retrieve in $batch outside the range answers as one of a missing entity', async () => {
    const sas = sasOf(table.tableName, { startPartitionKey: 'b', endPartitionKey: 'b' });
    const retrieve = (pk, rk) => batch(sas,
      [{ method: 'GET', url: `${table.tableName}(PartitionKey='${pk}',RowKey='${rk}')` }], { changeset: false });
    const missing = await retrieve('b', 'absent');
    assert.match(missing, /HTTP\/1\.1 404 Not Found\r\n/);
    assert.match(missing, /"code":"ResourceNotFound"/);
    assert.equal(await retrieve('a', '1'), missing);
    assert.equal(await retrieve('a', 'absent'), missing);
    assert.match(await retrieve('b', '1'), /HTTP\/1\.1 200 OK\r\n/);
  });

  test('the plan header counts rows inside the range only; the last page names no key past it', async () => {
    const sas = sasOf(table.tableName, { startPartitionKey: 'b', endPartitionKey: 'b' });
    const query = (params) => request(server, {
      path: `/${table.tableName}()?${params}&${sas}`, auth: 'none', headers: { 'x-cerulean-query-plan': '1' },
    });
    // Every row of the table matches the filter; only b's are read.
    let res = await query('$filter=v%20eq%201');
    assert.equal(res.status, 200, res.body);
    let plan = JSON.parse(res.headers['x-cerulean-query-plan']);
    assert.deepEqual(plan.ranges, ["['b' .. 'b']"]);
    assert.equal(plan.examined, 3);
    assert.equal(plan.returned, 3);
    // Two pages of two: the second ends the range without a continuation.
    res = await query('$top=2');
    assert.deepEqual(res.json.value.map((e) => e.RowKey), ['1', '2']);
    const npk = res.headers['x-ms-continuation-nextpartitionkey'];
    const nrk = res.headers['x-ms-continuation-nextrowkey'];
    assert.ok(npk && nrk);
    res = await query(`$top=2&NextPartitionKey=${encodeURIComponent(npk)}&NextRowKey=${encodeURIComponent(nrk)}`);
    assert.deepEqual(res.json.value.map((e) => e.RowKey), ['3']);
    assert.equal(res.headers['x-ms-continuation-nextpartitionkey'], undefined);
    plan = JSON.parse(res.headers['x-cerulean-query-plan']);
    assert.equal(plan.examined, 1);
    assert.equal(plan.more, false);
  });
});

describe('$batch and table existence', () => {
  test('a change set for a table the SAS does not reach -> 403, whether that table exists or not', async () => {
    const mine = tableClient(uniqueTableName('mine'));
    await mine.createTable();
    const other = tableClient(uniqueTableName('other'));
    await other.createTable();
    const sas = sasOf(mine.tableName);
    for (const body of [{ PartitionKey: 'p', RowKey: 'r' }, { PartitionKey: 'p' }]) {
      const existing = await batch(sas, [{ method: 'POST', url: other.tableName, body }]);
      assert.match(existing, /HTTP\/1\.1 403 Forbidden\r\n/);
      assert.match(existing, /"code":"AuthorizationFailure"/);
      const absent = await batch(sas, [{ method: 'POST', url: uniqueTableName('absent'), body }]);
      assert.equal(absent, existing);
    }
    // Through the SDK: the same error for both.
    for (const name of [other.tableName, uniqueTableName('absent')]) {
      const client = tableClient(name, new AzureSASCredential(sas));
      await rejectsWith(client.submitTransaction([['create', { partitionKey: 'p', rowKey: 'r' }]]), 403, 'AuthorizationFailure');
    }
  });
});

describe('reserved endpoints', () => {
  test('Shared Key Lite is refused with 403 on /_faults, /_snapshots and /_reset; Shared Key works', async () => {
    const s = await startServer();
    try {
      const t = uniqueTableName('keep');
      assert.equal((await request(s, { method: 'POST', path: '/Tables', body: { TableName: t } })).status, 201);
      const rules = { rules: [{ operation: 'InsertEntity', status: 503, code: 'ServerBusy' }] };
      for (const [method, target, body] of [
        ['PUT', `/_faults/${s.account}`, rules], ['GET', `/_faults/${s.account}`], ['DELETE', `/_faults/${s.account}`],
        ['PUT', `/_snapshots/${s.account}/s1`], ['GET', `/_snapshots/${s.account}`], ['POST', `/_reset/${s.account}`],
      ]) {
        const res = await request(s, { method, rawTarget: target, body, auth: 'SharedKeyLite' });
        assertError(res, 403, 'AuthorizationFailure');
      }
      // Nothing happened: the table is there and inserts are not faulted.
      assert.equal((await request(s, { method: 'POST', path: `/${t}`, body: { PartitionKey: 'p', RowKey: 'r' } })).status, 201);
      assert.equal((await request(s, { rawTarget: `/_snapshots/${s.account}` })).json.snapshots.length, 0);
      const put = await request(s, { method: 'PUT', rawTarget: `/_faults/${s.account}`, body: rules });
      assert.equal(put.status, 200, put.body);
      // The Table API still takes Shared Key Lite.
      assert.equal((await request(s, { path: '/Tables', auth: 'SharedKeyLite' })).status, 200);
    } finally {
      await s.stop();
    }
  });
});

describe('/_metrics', () => {
  const perAccount = /^cerulean_(tables|entities)\{account="([^"]+)"\}/gm;
  const accountsIn = (text) => [...new Set([...text.matchAll(perAccount)].map((m) => m[2]))].sort();
  const other = { account: 'otheracct', key: Buffer.from('other key').toString('base64') };

  async function withServer(args, body) {
    const s = await startServer({ args, env: { AZURITE_ACCOUNTS: `${other.account}:${other.key}` } });
    try {
      for (const acct of [{ account: s.account, key: s.key }, other]) {
        const res = await request(s, {
          method: 'POST', rawTarget: `/${acct.account}/Tables`, body: { TableName: uniqueTableName('m') }, ...acct,
        });
        assert.equal(res.status, 201, res.body);
      }
      await body(s);
    } finally {
      await s.stop();
    }
  }

  test('unsigned: server-wide figures only; signed: the signer\'s own rows', async () => {
    await withServer([], async (s) => {
      const open = await request(s, { rawTarget: '/_metrics', auth: 'none' });
      assert.equal(open.status, 200, open.body);
      assert.match(open.body, /^cerulean_requests_total\{operation="CreateTable",status="201"\} 2$/m);
      assert.match(open.body, /^cerulean_storage_bytes \d+$/m);
      assert.doesNotMatch(open.body, /account=/);
      assert.doesNotMatch(open.body, new RegExp(`${s.account}|${other.account}`));
      const mine = await request(s, { rawTarget: '/_metrics' });
      assert.equal(mine.status, 200, mine.body);
      assert.deepEqual(accountsIn(mine.body), [s.account]);
      const theirs = await request(s, { rawTarget: '/_metrics', ...other });
      assert.deepEqual(accountsIn(theirs.body), [other.account]);
      // Credentials that are given are checked.
      assertError(await request(s, { rawTarget: '/_metrics', auth: 'SharedKeyLite' }), 403, 'AuthorizationFailure');
      assertError(await request(s, { rawTarget: '/_metrics', key: other.key }), 403, 'AuthenticationFailed');
    });
  });

  test('--publicMetrics: every account\'s rows to an unsigned scrape', async () => {
    await withServer(['--publicMetrics'], async (s) => {
      const open = await request(s, { rawTarget: '/_metrics', auth: 'none' });
      assert.equal(open.status, 200, open.body);
      assert.deepEqual(accountsIn(open.body), [s.account, other.account].sort());
    });
  });
});
