'use strict';
// Access control without side channels, against the real binary with
// @azure/data-tables and raw HTTP: a SAS key range (a RowKey bound needs its
// PartitionKey bound; a read outside the range finds nothing, directly and in
// $batch; a query and its plan header see nothing outside it), and $batch
// answers that do not reveal whether a table exists.

const { test, describe, before } = require('node:test');
const assert = require('node:assert/strict');
const { AzureNamedKeyCredential, AzureSASCredential, TableClient, generateTableSas } = require('@azure/data-tables');

const { useServer, uniqueTableName } = require('./server');
const { request } = require('./http');
const { rejectsWith } = require('./util');

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
