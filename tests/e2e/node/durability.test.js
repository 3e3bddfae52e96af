'use strict';
// Durability and concurrency: a --location store survives a graceful restart
// and a kill -9 after acknowledged writes; export/import/--seed round-trip the
// data exactly; concurrent conditional writes serialize.

const { test, describe, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { AzureNamedKeyCredential, TableClient } = require('@azure/data-tables');

const { startServer, useServer, uniqueTableName, tempDir, binaryPath } = require('./server');
const { request } = require('./http');
const { assertError } = require('./util');

const shared = useServer();
const clientOptions = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
const tableClient = (srv, name) => new TableClient(srv.endpoint, name, new AzureNamedKeyCredential(srv.account, srv.key), clientOptions);

const dirs = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
function dir() {
  const d = tempDir();
  dirs.push(d);
  return d;
}

// Every entity of every table, as raw nometadata JSON plus ETags, keyed by table.
async function dump(srv) {
  const out = {};
  const tables = await request(srv, { path: '/Tables', headers: { Accept: 'application/json;odata=nometadata' } });
  assert.equal(tables.status, 200, tables.body);
  for (const { TableName } of tables.json.value) {
    const rows = [];
    let next = '';
    for (;;) {
      const res = await request(srv, { path: `/${TableName}()${next ? `?${next}` : ''}` });
      assert.equal(res.status, 200, res.body);
      rows.push(...res.json.value);
      const npk = res.headers['x-ms-continuation-nextpartitionkey'];
      if (!npk) break;
      next = `NextPartitionKey=${encodeURIComponent(npk)}&NextRowKey=${encodeURIComponent(res.headers['x-ms-continuation-nextrowkey'])}`;
    }
    out[TableName] = rows;
  }
  return out;
}

async function populate(srv) {
  const name = uniqueTableName('durable');
  const client = tableClient(srv, name);
  await client.createTable();
  await client.createEntity({
    partitionKey: "O'Brien", rowKey: 'ü😀',
    s: 'text', i: 7, l: { value: '-9223372036854775808', type: 'Int64' }, d: { value: '5', type: 'Double' },
    nan: { value: 'NaN', type: 'Double' }, b: true, t: { value: '2024-02-29T23:59:59.1234567Z', type: 'DateTime' },
    g: { value: crypto.randomUUID(), type: 'Guid' }, bin: new Uint8Array([0, 255, 1]), empty: '',
  });
  const actions = [];
  for (let i = 0; i < 100; i += 1) actions.push(['create', { partitionKey: 'batch', rowKey: String(i).padStart(3, '0'), i }]);
  await client.submitTransaction(actions);
  await client.updateEntity({ partitionKey: 'batch', rowKey: '000', merged: 'yes' }, 'Merge');
  await client.deleteEntity('batch', '099');
  const other = uniqueTableName('Second');
  await tableClient(srv, other).createTable();
  return { name, other };
}

// Starts a server on `location`, fills it with populate(), and returns what
// dump() reads before stopping it.
async function populateAt(location) {
  const srv = await startServer({ location });
  try {
    await populate(srv);
    return await dump(srv);
  } finally {
    await srv.stop();
  }
}

// Starts a server on `location` and returns what dump() reads.
async function dumpAt(location) {
  const srv = await startServer({ location });
  try {
    return await dump(srv);
  } finally {
    await srv.stop();
  }
}

describe('persistence with --location', () => {
  test('graceful restart (SIGTERM) keeps tables, entities, types and ETags', async () => {
    const location = dir();
    const a = await startServer({ location });
    let before;
    try {
      await populate(a);
      before = await dump(a);
    } finally {
      const exit = await a.stop('SIGTERM');
      assert.equal(exit.code, 0, `graceful stop should exit 0, got ${JSON.stringify(exit)}; stderr: ${a.stderr()}`);
    }
    assert.ok(fs.existsSync(path.join(location, 'cerulean.sqlite')), 'database file DIR/cerulean.sqlite');
    const b = await startServer({ location });
    try {
      assert.deepEqual(await dump(b), before);
    } finally {
      await b.stop();
    }
  });

  test('kill -9 right after acknowledged writes loses nothing', async () => {
    const location = dir();
    const a = await startServer({ location });
    let before;
    try {
      const { name } = await populate(a);
      const client = tableClient(a, name);
      for (let i = 0; i < 20; i += 1) await client.upsertEntity({ partitionKey: 'last', rowKey: String(i), i }, 'Replace');
      before = await dump(a);
    } finally {
      await a.stop('SIGKILL');
    }
    const b = await startServer({ location });
    try {
      assert.deepEqual(await dump(b), before);
      // The store is usable after recovery.
      const t = uniqueTableName('after');
      assert.equal((await request(b, { method: 'POST', path: '/Tables', body: { TableName: t } })).status, 201);
    } finally {
      await b.stop();
    }
  });

  test('--inMemoryPersistence keeps nothing across restarts', async () => {
    const a = await startServer();
    await populate(a);
    await a.stop();
    const b = await startServer();
    try {
      assert.deepEqual(await dump(b), {});
    } finally {
      await b.stop();
    }
  });
});

// A dump() as an import reproduces it: empty tables carry no entity lines,
// and ETags and Timestamps are the importing server's.
const comparable = (d) => Object.fromEntries(Object.entries(d).filter(([, rows]) => rows.length > 0)
  .map(([t, rows]) => [t, rows.map(({ 'odata.etag': e, Timestamp, ...rest }) => rest)]));

describe('export, import and --seed', () => {
  const run = (args) => {
    const r = spawnSync(binaryPath(), args, { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 0, `cerulean ${args.join(' ')} failed: ${r.stderr}`);
    return r;
  };

  test('export then import into another location reproduces the data exactly', async () => {
    const source = dir();
    const before = await populateAt(source);
    const file = path.join(dir(), 'fixtures.jsonl');
    run(['export', '--location', source, '--file', file]);
    const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
    assert.ok(lines.length >= 100, `expected one JSON line per entity, got ${lines.length}`);
    for (const line of lines) JSON.parse(line);
    const target = dir();
    run(['import', '--location', target, '--file', file]);
    assert.deepEqual(comparable(await dumpAt(target)), comparable(before));
  });

  test('export -> reset (wipe) -> import in the same location gives every entity back, types exact', async () => {
    const location = dir();
    const before = await populateAt(location);
    const file = path.join(dir(), 'fixtures.jsonl');
    run(['export', '--location', location, '--file', file]);
    run(['reset', '--location', location]);
    assert.deepEqual(await dumpAt(location), {}, 'reset leaves no tables');
    run(['import', '--location', location, '--file', file]);
    assert.deepEqual(comparable(await dumpAt(location)), comparable(before));
  });

  test('--seed DIR loads *.jsonl at start-up; reset empties the account', async () => {
    const source = dir();
    const a = await startServer({ location: source });
    let name;
    try {
      ({ name } = await populate(a));
    } finally {
      await a.stop();
    }
    const seedDir = dir();
    run(['export', '--location', source, '--table', name, '--file', path.join(seedDir, `${name}.jsonl`)]);
    const b = await startServer({ args: ['--seed', seedDir] });
    try {
      const res = await request(b, { path: `/${name}()?$filter=${encodeURIComponent("PartitionKey eq 'batch'")}` });
      assert.equal(res.status, 200, res.body);
      assert.equal(res.json.value.length, 99);
      const typed = await request(b, { path: `/${name}(PartitionKey='O''Brien',RowKey='${encodeURIComponent('ü😀')}')` });
      assert.equal(typed.status, 200, typed.body);
      assert.equal(typed.json['l@odata.type'], 'Edm.Int64');
      assert.equal(typed.json.t, '2024-02-29T23:59:59.1234567Z');
      assert.match(typed.body, /"d":5\.0[,}]/);
    } finally {
      await b.stop();
    }
    run(['reset', '--location', source]);
    const c = await startServer({ location: source });
    try {
      assert.deepEqual(await dump(c), {});
    } finally {
      await c.stop();
    }
  });
});

describe('concurrency', () => {
  test('concurrent updates with the same ETag: exactly one wins, the rest get 412', async () => {
    const name = uniqueTableName('race');
    const client = tableClient(shared, name);
    await client.createTable();
    const { etag } = await client.createEntity({ partitionKey: 'p', rowKey: 'r', n: 0 });
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) =>
      client.updateEntity({ partitionKey: 'p', rowKey: 'r', n: i + 1 }, 'Replace', { etag })));
    const ok = results.filter((r) => r.status === 'fulfilled');
    const failed = results.filter((r) => r.status === 'rejected');
    assert.equal(ok.length, 1, `exactly one conditional update may succeed, got ${ok.length}`);
    assert.ok(failed.every((r) => r.reason.statusCode === 412), failed.map((r) => r.reason.statusCode).join(','));
    const winner = results.findIndex((r) => r.status === 'fulfilled') + 1;
    assert.equal((await client.getEntity('p', 'r')).n, winner);
  });

  test('concurrent inserts of one key: one 201, the rest 409', async () => {
    const name = uniqueTableName('race');
    await tableClient(shared, name).createTable();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      request(shared, { method: 'POST', path: `/${name}`, body: { PartitionKey: 'p', RowKey: 'same', who: i } })));
    const statuses = results.map((r) => r.status).sort();
    assert.equal(statuses.filter((s) => s === 201).length, 1, statuses.join(','));
    assert.equal(statuses.filter((s) => s === 409).length, 19, statuses.join(','));
  });

  test('concurrent transactions on one partition are atomic', async () => {
    const name = uniqueTableName('txrace');
    const client = tableClient(shared, name);
    await client.createTable();
    // Each transaction inserts 50 rows; all of them share the row "shared",
    // so exactly one can commit and the others must leave no trace.
    const txs = Array.from({ length: 6 }, (_, t) => {
      const actions = [['create', { partitionKey: 'p', rowKey: 'shared', t }]];
      for (let i = 0; i < 49; i += 1) actions.push(['create', { partitionKey: 'p', rowKey: `t${t}-${i}`, t }]);
      return client.submitTransaction(actions);
    });
    const results = await Promise.allSettled(txs);
    const winners = results.map((r, t) => (r.status === 'fulfilled' ? t : -1)).filter((t) => t >= 0);
    assert.equal(winners.length, 1, `one transaction commits, got ${winners.length}`);
    const rows = [];
    for await (const e of client.listEntities()) rows.push(e);
    assert.equal(rows.length, 50);
    assert.ok(rows.every((e) => e.t === winners[0]));
  });

  test('many parallel clients: counts add up', async () => {
    const name = uniqueTableName('par');
    await tableClient(shared, name).createTable();
    const N = 200;
    await Promise.all(Array.from({ length: N }, (_, i) =>
      request(shared, { method: 'PUT', path: `/${name}(PartitionKey='p${i % 7}',RowKey='${i}')`, body: { i } })
        .then((r) => assert.equal(r.status, 204, r.body))));
    const res = await request(shared, { path: `/${name}()` });
    assert.equal(res.json.value.length, N);
  });

  test('a deleted table with concurrent writers ends up consistent', async () => {
    const name = uniqueTableName('deleting');
    await tableClient(shared, name).createTable();
    const writes = Array.from({ length: 30 }, (_, i) =>
      request(shared, { method: 'PUT', path: `/${name}(PartitionKey='p',RowKey='${i}')`, body: { i } }));
    const del = request(shared, { method: 'DELETE', path: `/Tables('${name}')` });
    const results = await Promise.all([...writes, del]);
    for (const r of results.slice(0, -1)) assert.ok(r.status === 204 || r.status === 404, `${r.status} ${r.body}`);
    assert.equal(results.at(-1).status, 204);
    assertError(await request(shared, { path: `/${name}()` }), 404, 'TableNotFound');
  });
});
