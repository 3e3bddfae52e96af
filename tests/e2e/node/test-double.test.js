'use strict';
// The test-double features: injected faults (/_faults, --faults) met by
// @azure/data-tables' own retry policy, and snapshots (/_snapshots and
// `cerulean snapshot`) compared entity by entity, ETags and Timestamps
// included.

const { test, describe } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { AzureNamedKeyCredential, TableClient, TableServiceClient, odata } = require('@azure/data-tables');

const { useServer, startServer, uniqueTableName, tempDir, binaryPath } = require('./server');
const { request } = require('./http');
const { assertError, rejectsWith } = require('./util');

const server = useServer();
const credential = (s) => new AzureNamedKeyCredential(s.account, s.key);
// The SDK's default retry policy (exponential, three retries), only allowed
// to talk plain HTTP; and the same client with retries off.
const retrying = { allowInsecureConnection: true };
const noRetries = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
const tableClient = (name, options = retrying, s = server) =>
  new TableClient(s.endpoint, name, credential(s), options);
const serviceClient = (s = server) => new TableServiceClient(s.endpoint, credential(s), noRetries);

// Signed calls to the reserved endpoints, like /_reset.
const admin = (method, target, body, s = server) =>
  request(s, { method, rawTarget: target, body });
const setFaults = async (rules, s = server) => {
  const res = await admin('PUT', `/_faults/${s.account}`, { rules }, s);
  assert.equal(res.status, 200, res.body);
  return res.json;
};
const faults = async (s = server) => {
  const res = await admin('GET', `/_faults/${s.account}`, undefined, s);
  assert.equal(res.status, 200, res.body);
  return res.json.rules;
};
const clearFaults = async (s = server) => {
  const res = await admin('DELETE', `/_faults/${s.account}`, undefined, s);
  assert.equal(res.status, 204, res.body);
};

async function newTable(prefix) {
  const client = tableClient(uniqueTableName(prefix), noRetries);
  await client.createTable();
  return client;
}

describe('fault injection', () => {
  test('default retries recover from two 503 ServerBusy; the server saw three attempts', async () => {
    const t = await newTable('busy');
    await setFaults([{ operation: 'InsertEntity', table: t.tableName, status: 503, code: 'ServerBusy', count: 2 }]);
    try {
      await tableClient(t.tableName).createEntity({ partitionKey: 'p', rowKey: 'r', v: 1 });
      const [rule] = await faults();
      assert.equal(rule.fired, 2);
      assert.equal(rule.matched, 2);
      assert.equal((await t.getEntity('p', 'r')).v, 1);
    } finally {
      await clearFaults();
    }
  });

  test('default retries recover from 500 OperationTimedOut on a point read', async () => {
    const t = await newTable('timeout');
    await t.createEntity({ partitionKey: 'p', rowKey: 'r' });
    await setFaults([{ operation: 'GetEntity', table: t.tableName, partitionKey: 'p', code: 'OperationTimedOut', count: 1 }]);
    try {
      await tableClient(t.tableName).getEntity('p', 'r');
      assert.equal((await faults())[0].fired, 1);
    } finally {
      await clearFaults();
    }
  });

  test('with retries off the error surfaces with Azure\'s status, code and body', async () => {
    const t = await newTable('off');
    await setFaults([{ operation: 'InsertEntity', table: t.tableName, status: 503, code: 'ServerBusy', count: 1 },
      { operation: 'QueryEntities', table: t.tableName, code: 'InternalError', message: 'injected', count: 1 }]);
    try {
      await rejectsWith(t.createEntity({ partitionKey: 'p', rowKey: 'r' }), 503, 'ServerBusy');
      const raw = await request(server, { path: `/${t.tableName}()` });
      assertError(raw, 500, 'InternalError', { message: 'injected' });
      assert.deepEqual((await faults()).map((r) => r.fired), [1, 1]);
      // Spent rules stay listed; requests run normally again.
      await t.createEntity({ partitionKey: 'p', rowKey: 'r' });
    } finally {
      await clearFaults();
    }
  });

  test('a write dropped after it was applied: the SDK retries it and gets 409, the entity is there', async () => {
    const t = await newTable('dropafter');
    await setFaults([{ operation: 'InsertEntity', table: t.tableName, drop: 'after', count: 1 }]);
    try {
      const error = await rejectsWith(tableClient(t.tableName).createEntity({ partitionKey: 'p', rowKey: 'r', v: 'first' }),
        409, 'EntityAlreadyExists');
      assert.ok(error);
      assert.equal((await faults())[0].fired, 1);
      assert.equal((await t.getEntity('p', 'r')).v, 'first');
    } finally {
      await clearFaults();
    }
  });

  test('a connection dropped before the operation: nothing is applied; retries recover', async () => {
    const t = await newTable('dropbefore');
    await setFaults([{ operation: 'InsertEntity', table: t.tableName, drop: 'before', count: 1 }]);
    try {
      await assert.rejects(tableClient(t.tableName, noRetries).createEntity({ partitionKey: 'p', rowKey: 'r' }));
      await rejectsWith(t.getEntity('p', 'r'), 404, 'ResourceNotFound');
      await setFaults([{ operation: 'InsertEntity', table: t.tableName, drop: 'before', count: 1 }]);
      await tableClient(t.tableName).createEntity({ partitionKey: 'p', rowKey: 'r' });
      assert.equal((await faults())[0].fired, 1);
    } finally {
      await clearFaults();
    }
  });

  test('a delay holds one request without holding the others', async () => {
    const t = await newTable('slow');
    await t.createEntity({ partitionKey: 'p', rowKey: 'r' });
    await setFaults([{ operation: 'QueryEntities', table: t.tableName, delayMs: 1500, count: 1 }]);
    try {
      const started = Date.now();
      let slowDone = 0;
      const slow = request(server, { path: `/${t.tableName}()` }).then((r) => { slowDone = Date.now(); return r; });
      // Point reads on the same server answer meanwhile.
      for (let i = 0; i < 5; ++i) assert.equal((await t.getEntity('p', 'r')).rowKey, 'r');
      const quickDone = Date.now();
      const res = await slow;
      assert.equal(res.status, 200, res.body);
      assert.equal(res.json.value.length, 1);
      assert.ok(slowDone - started >= 1500, `answered after ${slowDone - started} ms`);
      assert.ok(quickDone < slowDone, 'the point reads waited for the delayed query');
    } finally {
      await clearFaults();
    }
  });

  test('$batch: a rule for the $batch operation fails the transaction; entity rules do not look inside', async () => {
    const t = await newTable('batch');
    await setFaults([{ operation: 'InsertEntity', table: t.tableName, code: 'ServerBusy' },
      { operation: '$batch', table: t.tableName, partitionKey: 'p', code: 'ServerBusy', count: 1 }]);
    try {
      await rejectsWith(t.submitTransaction([['create', { partitionKey: 'p', rowKey: '1' }]]), 503, 'ServerBusy');
      await t.submitTransaction([['create', { partitionKey: 'p', rowKey: '1' }], ['create', { partitionKey: 'p', rowKey: '2' }]]);
      const rules = await faults();
      assert.equal(rules[0].fired, 0);
      assert.equal(rules[1].operation, 'Batch');
      assert.equal(rules[1].fired, 1);
    } finally {
      await clearFaults();
    }
  });

  test('a probability with a seed makes the same requests fail on every run', async () => {
    const t = await newTable('prob');
    await t.createEntity({ partitionKey: 'p', rowKey: 'r' });
    const run = async () => {
      await setFaults([{ operation: 'GetEntity', table: t.tableName, code: 'ServerBusy', probability: 0.5, seed: 7 }]);
      let outcomes = '';
      for (let i = 0; i < 24; ++i) {
        const res = await request(server, { path: `/${t.tableName}(PartitionKey='p',RowKey='r')` });
        outcomes += res.status === 200 ? '.' : 'x';
      }
      const [rule] = await faults();
      assert.equal(rule.fired, [...outcomes].filter((c) => c === 'x').length);
      return outcomes;
    };
    try {
      const first = await run();
      assert.match(first, /x/);
      assert.match(first, /\./);
      assert.equal(await run(), first);
    } finally {
      await clearFaults();
    }
  });

  test('/_faults is signed with the account key and refuses bad rules with InvalidInput', async () => {
    const unsigned = await request(server, { method: 'PUT', rawTarget: `/_faults/${server.account}`, auth: 'none', body: { rules: [] } });
    assert.equal(unsigned.status, 403, unsigned.body);
    const bad = await admin('PUT', `/_faults/${server.account}`, { rules: [{ operation: 'InsertEntity', code: 'NoSuchError' }] });
    assertError(bad, 400, 'InvalidInput');
    assert.match(bad.json['odata.error'].message.value, /NoSuchError/);
    assert.equal((await admin('POST', `/_faults/${server.account}`, { rules: [] })).status, 405);
    assert.deepEqual(await faults(), []);
  });

  test('/_faults refuses numeric fields out of range instead of truncating them', async () => {
    for (const [rule, field] of [
      [{ status: 4294967799, code: 'ServerBusy' }, 'status'], // 503 modulo 2^32
      [{ status: 200, code: 'ServerBusy' }, 'status'],
      [{ delayMs: 1e12 }, 'delayMs'],
      [{ delayMs: 1, count: 2 ** 53 }, 'count'],
      [{ delayMs: 1, skip: -1 }, 'skip'],
      [{ delayMs: 1, probability: 1.5, seed: 1 }, 'probability'],
      [{ delayMs: 1, probability: 0.5, seed: 2.5 }, 'seed'],
    ]) {
      const bad = await admin('PUT', `/_faults/${server.account}`, { rules: [{ operation: 'InsertEntity', ...rule }] });
      assertError(bad, 400, 'InvalidInput');
      assert.match(bad.json['odata.error'].message.value, new RegExp(`'${field}'`));
    }
    assert.deepEqual(await faults(), []);
  });

  test('--faults FILE at start-up; faults are counted in /_metrics and marked in the access log', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'faults.json');
    fs.writeFileSync(file, JSON.stringify({ rules: [{ operation: 'CreateTable', status: 503, code: 'ServerBusy', count: 1 }] }));
    const s = await startServer({ args: ['--faults', file], silent: false });
    try {
      await rejectsWith(serviceClient(s).createTable('startup'), 503, 'ServerBusy');
      await serviceClient(s).createTable('startup');
      const metrics = await request(s, { rawTarget: '/_metrics', auth: 'none' });
      assert.match(metrics.body, /^cerulean_faults_injected_total\{operation="CreateTable",action="error"\} 1$/m);
      assert.match(s.stdout(), /CreateTable POST 503 \S+ fault=error/);
      assert.equal((await faults(s))[0].fired, 1);
    } finally {
      await s.stop();
    }
  });
});

// Everything a snapshot holds, as the SDK sees it.
async function accountState(s = server) {
  const svc = serviceClient(s);
  const state = { properties: await svc.getProperties(), tables: {} };
  delete state.properties.requestId;
  delete state.properties.version;
  delete state.properties.clientRequestId;
  for await (const t of svc.listTables()) {
    const client = tableClient(t.name, noRetries, s);
    const entities = [];
    for await (const e of client.listEntities()) entities.push(e);
    state.tables[t.name] = { acl: await client.getAccessPolicy(), entities };
  }
  return state;
}

// With CERULEAN_E2E_DATABASE each server gets a fresh PostgreSQL database
// (the on-disk test below keeps the SQLite store: it names a --location);
// multinode.test.js covers snapshots across nodes.
describe('snapshots', () => {
  test('save, change everything, restore: every table, entity, ETag, Timestamp, ACL and property is back', async () => {
    const s = await startServer();
    try {
      const svc = serviceClient(s);
      const orders = tableClient('orders', noRetries, s);
      const gone = tableClient('gone', noRetries, s);
      await orders.createTable();
      await gone.createTable();
      for (let i = 0; i < 30; ++i) await orders.createEntity({ partitionKey: `p${i % 3}`, rowKey: `${i}`, n: i, s: 'x'.repeat(i) });
      await gone.createEntity({ partitionKey: 'g', rowKey: '1' });
      await orders.setAccessPolicy([{ id: 'read', accessPolicy: { expiry: new Date('2035-01-01T00:00:00Z'), permission: 'r' } }]);
      await svc.setProperties({ cors: [{ allowedOrigins: 'http://a.example', allowedMethods: 'GET', allowedHeaders: '*', exposedHeaders: '*', maxAgeInSeconds: 5 }] });
      const before = await accountState(s);

      const saved = await admin('PUT', `/_snapshots/${s.account}/fixture`, undefined, s);
      assert.equal(saved.status, 201, saved.body);
      assert.equal(saved.json.tables, 2);
      assert.equal(saved.json.entities, 31);

      await gone.deleteTable();
      await orders.createEntity({ partitionKey: 'new', rowKey: '1' });
      await orders.updateEntity({ partitionKey: 'p0', rowKey: '0', n: -1 }, 'Replace');
      await orders.deleteEntity('p1', '1');
      await tableClient('added', noRetries, s).createTable();
      await orders.setAccessPolicy([]);
      await svc.setProperties({ cors: [] });
      assert.notDeepEqual(await accountState(s), before);

      const restored = await admin('POST', `/_snapshots/${s.account}/fixture/restore`, undefined, s);
      assert.equal(restored.status, 200, restored.body);
      assert.deepEqual(await accountState(s), before);

      // Nothing written since: the next restore copies nothing.
      const again = await admin('POST', `/_snapshots/${s.account}/fixture/restore`, undefined, s);
      assert.deepEqual({ kept: again.json.tablesKept, copied: again.json.tablesCopied }, { kept: 2, copied: 0 });
      // Writes after a restore get fresh ETags.
      const etag = before.tables.orders.entities[0].etag;
      await orders.upsertEntity({ partitionKey: 'p0', rowKey: '0', n: 5 }, 'Merge');
      assert.notEqual((await orders.getEntity('p0', '0')).etag, etag);
    } finally {
      await s.stop();
    }
  });

  test('list, delete, absent names, bad names, signing', async () => {
    const t = await newTable('snap');
    await t.createEntity({ partitionKey: 'p', rowKey: 'r' });
    const name = `list-${Date.now()}`;
    assert.equal((await admin('PUT', `/_snapshots/${server.account}/${name}`)).status, 201);
    const list = await admin('GET', `/_snapshots/${server.account}`);
    assert.equal(list.status, 200, list.body);
    const mine = list.json.snapshots.find((x) => x.name === name);
    assert.ok(mine, list.body);
    assert.ok(mine.entities >= 1);
    assert.equal((await admin('DELETE', `/_snapshots/${server.account}/${name}`)).status, 204);
    assertError(await admin('POST', `/_snapshots/${server.account}/${name}/restore`), 404, 'ResourceNotFound');
    assertError(await admin('DELETE', `/_snapshots/${server.account}/${name}`), 404, 'ResourceNotFound');
    assertError(await admin('PUT', `/_snapshots/${server.account}/bad%20name`), 400, 'InvalidInput');
    const unsigned = await request(server, { method: 'PUT', rawTarget: `/_snapshots/${server.account}/x`, auth: 'none' });
    assert.equal(unsigned.status, 403);
    assert.equal((await admin('GET', `/_snapshots/${server.account}/${name}`)).status, 405);
  });

  test('on disk: snapshots survive a restart, and `cerulean snapshot` works where no server runs', async () => {
    const location = tempDir();
    let s = await startServer({ location });
    let before;
    try {
      const t = tableClient('kept', noRetries, s);
      await t.createTable();
      for (let i = 0; i < 10; ++i) await t.createEntity({ partitionKey: 'p', rowKey: `${i}`, i });
      before = await accountState(s);
      assert.equal((await admin('PUT', `/_snapshots/${s.account}/disk`, undefined, s)).status, 201);
      await t.deleteEntity('p', '3');
    } finally {
      await s.stop();
    }
    const cli = (...args) => {
      const r = spawnSync(binaryPath(), ['snapshot', ...args, '--location', location], { encoding: 'utf8', timeout: 60000 });
      assert.equal(r.status, 0, `cerulean snapshot ${args.join(' ')}: ${r.stderr}`);
      return r;
    };
    assert.match(cli('list').stdout, /^disk\t\S+\t1 tables\t10 entities$/m);
    cli('save', 'offline');
    cli('restore', 'disk');
    s = await startServer({ location });
    try {
      assert.deepEqual(await accountState(s), before);
      const t = tableClient('kept', noRetries, s);
      await t.createEntity({ partitionKey: 'q', rowKey: '1' });
      assert.equal((await admin('POST', `/_snapshots/${s.account}/disk/restore`, undefined, s)).status, 200);
      assert.deepEqual(await accountState(s), before);
      const names = (await admin('GET', `/_snapshots/${s.account}`, undefined, s)).json.snapshots.map((x) => x.name);
      assert.deepEqual(names, ['disk', 'offline']);
    } finally {
      await s.stop();
    }
    cli('delete', 'offline');
    assert.doesNotMatch(cli('list').stdout, /offline/);
    const missing = spawnSync(binaryPath(), ['snapshot', 'restore', 'nope', '--location', location], { encoding: 'utf8' });
    assert.notEqual(missing.status, 0);
  });
});

// Restores do the work of what was written: a row, or a dropped table.
test('restore puts back only the rows written since the save, and copies only dropped tables', async () => {
  const s = await startServer();
  try {
    const names = ['big1', 'big2', 'touched'];
    for (const n of names) {
      const t = tableClient(n, noRetries, s);
      await t.createTable();
      for (let b = 0; b < 3; ++b) {
        await t.submitTransaction(Array.from({ length: 100 }, (_, i) => ['create', { partitionKey: `p${b}`, rowKey: `${i}` }]));
      }
    }
    assert.equal((await admin('PUT', `/_snapshots/${s.account}/f`, undefined, s)).status, 201);
    await tableClient('touched', noRetries, s).deleteEntity('p0', '0');
    const r = await admin('POST', `/_snapshots/${s.account}/f/restore`, undefined, s);
    assert.deepEqual(r.json, { name: 'f', tablesKept: 2, tablesPatched: 1, tablesCopied: 0, entitiesCopied: 1 });
    const count = async () => {
      let n = 0;
      for await (const e of tableClient('touched', noRetries, s).listEntities({ queryOptions: { filter: odata`PartitionKey eq 'p0'` } })) n += e ? 1 : 0;
      return n;
    };
    assert.equal(await count(), 100);
    await tableClient('touched', noRetries, s).deleteTable();
    const copied = await admin('POST', `/_snapshots/${s.account}/f/restore`, undefined, s);
    assert.deepEqual(copied.json, { name: 'f', tablesKept: 2, tablesPatched: 0, tablesCopied: 1, entitiesCopied: 300 });
    assert.equal(await count(), 100);
  } finally {
    await s.stop();
  }
});

// cerulean_memory_bytes and cerulean_memory_entries of /_metrics, by structure.
async function memory(s) {
  const res = await request(s, { rawTarget: '/_metrics' });
  assert.equal(res.status, 200, res.body);
  const out = {};
  for (const [, what, structure, n] of res.body.matchAll(/^cerulean_memory_(bytes|entries)\{structure="(\w+)"\} (\d+)$/gm)) {
    out[structure] = { ...out[structure], [what]: Number(n) };
  }
  return out;
}

test('memory: a dropped table leaves no keys logged for snapshots; fault rules are bounded and counted', async () => {
  // The key log is the SQLite store's (PostgreSQL compares rows instead).
  const location = tempDir();
  const s = await startServer({ location });
  try {
    const fixture = tableClient('fixture', noRetries, s);
    await fixture.createTable();
    await fixture.createEntity({ partitionKey: 'p', rowKey: 'r' });
    assert.equal((await admin('PUT', `/_snapshots/${s.account}/f`, undefined, s)).status, 201);
    const before = await memory(s);
    assert.equal(before.key_log.entries, 0);
    for (let t = 0; t < 3; t++) {
      const temp = tableClient(`temp${t}`, noRetries, s);
      await temp.createTable();
      for (let b = 0; b < 3; ++b) {
        await temp.submitTransaction(Array.from({ length: 100 }, (_, i) => ['create', { partitionKey: 'p', rowKey: `${b}-${i}` }]));
      }
      const filled = await memory(s);
      assert.equal(filled.key_log.entries, 300);
      assert.ok(filled.key_log.bytes > before.key_log.bytes + 300 * 8, JSON.stringify(filled));
      await temp.deleteTable();
      assert.deepEqual((await memory(s)).key_log, before.key_log);
    }
    assert.deepEqual((await memory(s)).write_counts, before.write_counts);
    const restored = await admin('POST', `/_snapshots/${s.account}/f/restore`, undefined, s);
    assert.equal(restored.json.tablesKept, 1, restored.body);

    // Fault rules: at most 1,000 a set, each counted.
    const rule = { operation: 'CreateTable', status: 503, code: 'ServerBusy' };
    assertError(await admin('PUT', `/_faults/${s.account}`, { rules: Array(1001).fill(rule) }, s), 400, 'InvalidInput');
    assertError(await admin('PUT', `/_faults/${s.account}`, { rules: [{ ...rule, status: 4294967799 }] }, s), 400, 'InvalidInput');
    assert.equal((await memory(s)).fault_rules.entries, 0);
    assert.equal((await admin('PUT', `/_faults/${s.account}`, { rules: Array(1000).fill(rule) }, s)).status, 200);
    const ruled = await memory(s);
    assert.equal(ruled.fault_rules.entries, 1000);
    assert.ok(ruled.fault_rules.bytes > 1000 * 64, JSON.stringify(ruled));
    assert.equal((await admin('DELETE', `/_faults/${s.account}`, undefined, s)).status, 204);
    assert.deepEqual((await memory(s)).fault_rules, { bytes: 0, entries: 0 });
    assert.deepEqual((await memory(s)).page_prefetch, { bytes: 0, entries: 0 });
  } finally {
    await s.stop();
    fs.rmSync(location, { recursive: true, force: true });
  }
});
