'use strict';
// @azure/data-tables (13.3.2, Shared Key Lite, PATCH merges, JS batch
// format) against the real binary.

const { test, describe, before } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { AzureNamedKeyCredential, TableClient, TableServiceClient, odata } = require('@azure/data-tables');

const { useServer, uniqueTableName } = require('./server');
const { rejectsWith, assertEtag, ticks, compareKeys, ordinal } = require('./util');

const server = useServer();

const clientOptions = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
const credential = () => new AzureNamedKeyCredential(server.account, server.key);
const serviceClient = () => new TableServiceClient(server.endpoint, credential(), clientOptions);
const tableClient = (name) => new TableClient(server.endpoint, name, credential(), clientOptions);

async function newTable(prefix) {
  const name = uniqueTableName(prefix);
  const client = tableClient(name);
  await client.createTable();
  return client;
}

async function listAll(client, options = {}) {
  const out = [];
  for await (const e of client.listEntities(options)) out.push(e);
  return out;
}

// The user properties of an SDK entity (no keys, etag, timestamp).
function userProps(e) {
  const { partitionKey, rowKey, etag, timestamp, 'odata.metadata': metadata, ...rest } = e;
  return rest;
}

// Property names of an SDK entity other than etag and odata.* members (the
// SDK passes odata.metadata of a point query through).
const propNames = (e) => Object.keys(e).filter((k) => k !== 'etag' && !k.startsWith('odata.'));

describe('tables', () => {
  test('createTable, listTables with a filter, deleteTable', async () => {
    const svc = serviceClient();
    const name = uniqueTableName('sdk');
    await svc.createTable(name);
    const found = [];
    for await (const t of svc.listTables({ queryOptions: { filter: odata`TableName eq ${name}` } })) found.push(t.name);
    assert.deepEqual(found, [name]);
    await svc.deleteTable(name);
    const after = [];
    for await (const t of svc.listTables({ queryOptions: { filter: odata`TableName eq ${name}` } })) after.push(t.name);
    assert.deepEqual(after, []);
  });

  test('createTable of an existing table: SDK sees 409 TableAlreadyExists (and swallows it)', async () => {
    const svc = serviceClient();
    const name = uniqueTableName('exists');
    await svc.createTable(name);
    let status;
    // createTable only swallows a 409 whose odata.error.code is TableAlreadyExists; anything else throws.
    await svc.createTable(name.toUpperCase(), { onResponse: (r) => { status = r.status; } });
    assert.equal(status, 409);
    const client = tableClient(name);
    let raw;
    await client.createTable({ onResponse: (r) => { raw = r; } });
    assert.equal(raw.status, 409);
    assert.equal(JSON.parse(raw.bodyAsText)['odata.error'].code, 'TableAlreadyExists');
  });

  test('deleteTable of an absent table: 404 ResourceNotFound (swallowed by the SDK)', async () => {
    const svc = serviceClient();
    let raw;
    await svc.deleteTable(uniqueTableName('absent'), { onResponse: (r) => { raw = r; } });
    assert.ok(raw, 'onResponse sees the swallowed error response');
    assert.equal(raw.status, 404);
    assert.equal(JSON.parse(raw.bodyAsText)['odata.error'].code, 'ResourceNotFound');
  });

  test('invalid table names are rejected with 400 and the right code', async () => {
    const svc = serviceClient();
    await rejectsWith(svc.createTable('1abc'), 400, 'InvalidResourceName');
    await rejectsWith(svc.createTable('ab'), 400, 'OutOfRangeInput');
    await rejectsWith(svc.createTable('tables'), 400, 'InvalidInput');
  });

  test('listTables pages with maxPageSize', async () => {
    const svc = serviceClient();
    const prefix = `lp${crypto.randomBytes(3).toString('hex')}`;
    const names = ['a', 'b', 'c', 'd', 'e'].map((s) => `${prefix}${s}`);
    for (const n of names) await svc.createTable(n);
    const filter = odata`TableName ge ${prefix} and TableName lt ${`${prefix}z`}`;
    const sizes = [];
    const seen = [];
    for await (const page of svc.listTables({ queryOptions: { filter } }).byPage({ maxPageSize: 2 })) {
      sizes.push(page.length);
      seen.push(...page.map((t) => t.name));
    }
    assert.deepEqual(sizes, [2, 2, 1]);
    assert.deepEqual(seen, names);
  });

  test('TableClient.fromConnectionString with an explicit TableEndpoint', async () => {
    const name = uniqueTableName('conn');
    const client = TableClient.fromConnectionString(server.connectionString, name, clientOptions);
    await client.createTable();
    await client.createEntity({ partitionKey: 'p', rowKey: 'r', v: 'x' });
    assert.equal((await client.getEntity('p', 'r')).v, 'x');
    const svc = TableServiceClient.fromConnectionString(server.connectionString, clientOptions);
    const names = [];
    for await (const t of svc.listTables({ queryOptions: { filter: odata`TableName eq ${name}` } })) names.push(t.name);
    assert.deepEqual(names, [name]);
  });

  test('table names are case-insensitive for entity operations', async () => {
    const client = await newTable('Case');
    await client.createEntity({ partitionKey: 'p', rowKey: 'r', v: 1 });
    const upper = tableClient(client.tableName.toUpperCase());
    const e = await upper.getEntity('p', 'r');
    assert.equal(e.v, 1);
  });

  test('entity operations on a missing table -> 404 TableNotFound', async () => {
    const client = tableClient(uniqueTableName('missing'));
    await rejectsWith(client.getEntity('p', 'r'), 404, 'TableNotFound');
    await rejectsWith(client.createEntity({ partitionKey: 'p', rowKey: 'r' }), 404, 'TableNotFound');
    await rejectsWith(listAll(client), 404, 'TableNotFound');
  });
});

describe('entities', () => {
  let client;
  before(async () => { client = await newTable('ent'); });

  test('createEntity then getEntity: same etag, timestamp, properties', async () => {
    const created = await client.createEntity({ partitionKey: 'p', rowKey: 'r1', name: 'Ann', age: 30 });
    assertEtag(created.etag);
    const got = await client.getEntity('p', 'r1');
    assert.equal(got.etag, created.etag);
    assert.equal(got.partitionKey, 'p');
    assert.equal(got.rowKey, 'r1');
    assert.equal(typeof got.timestamp, 'string');
    assert.deepEqual(userProps(got), { name: 'Ann', age: 30 });
  });

  test('createEntity of an existing key -> 409 EntityAlreadyExists', async () => {
    await client.createEntity({ partitionKey: 'p', rowKey: 'dup' });
    await rejectsWith(client.createEntity({ partitionKey: 'p', rowKey: 'dup' }), 409, 'EntityAlreadyExists');
  });

  test('getEntity of an absent entity -> 404 ResourceNotFound', async () => {
    await rejectsWith(client.getEntity('p', 'nope'), 404, 'ResourceNotFound');
  });

  test('updateEntity Replace removes properties not sent; Merge keeps them', async () => {
    await client.createEntity({ partitionKey: 'p', rowKey: 'upd', a: 1, b: 'two' });
    const r1 = await client.updateEntity({ partitionKey: 'p', rowKey: 'upd', c: true }, 'Replace');
    assertEtag(r1.etag);
    assert.deepEqual(userProps(await client.getEntity('p', 'upd')), { c: true });
    const r2 = await client.updateEntity({ partitionKey: 'p', rowKey: 'upd', d: 4 }, 'Merge');
    assertEtag(r2.etag);
    assert.notEqual(r2.etag, r1.etag);
    assert.deepEqual(userProps(await client.getEntity('p', 'upd')), { c: true, d: 4 });
  });

  test('updateEntity with a matching etag succeeds, with a stale one -> 412 UpdateConditionNotSatisfied', async () => {
    const created = await client.createEntity({ partitionKey: 'p', rowKey: 'etag', v: 1 });
    const ok = await client.updateEntity({ partitionKey: 'p', rowKey: 'etag', v: 2 }, 'Merge', { etag: created.etag });
    await rejectsWith(client.updateEntity({ partitionKey: 'p', rowKey: 'etag', v: 3 }, 'Merge', { etag: created.etag }), 412, 'UpdateConditionNotSatisfied');
    await rejectsWith(client.updateEntity({ partitionKey: 'p', rowKey: 'etag', v: 3 }, 'Replace', { etag: created.etag }), 412, 'UpdateConditionNotSatisfied');
    const got = await client.getEntity('p', 'etag');
    assert.equal(got.v, 2);
    assert.equal(got.etag, ok.etag);
  });

  test('updateEntity of an absent entity -> 404 ResourceNotFound', async () => {
    await rejectsWith(client.updateEntity({ partitionKey: 'p', rowKey: 'ghost', v: 1 }, 'Merge'), 404, 'ResourceNotFound');
    await rejectsWith(client.updateEntity({ partitionKey: 'p', rowKey: 'ghost', v: 1 }, 'Replace'), 404, 'ResourceNotFound');
  });

  test('upsertEntity Replace and Merge insert when absent and update when present', async () => {
    await client.upsertEntity({ partitionKey: 'up', rowKey: 'rep', a: 1, b: 2 }, 'Replace');
    assert.deepEqual(userProps(await client.getEntity('up', 'rep')), { a: 1, b: 2 });
    await client.upsertEntity({ partitionKey: 'up', rowKey: 'rep', c: 3 }, 'Replace');
    assert.deepEqual(userProps(await client.getEntity('up', 'rep')), { c: 3 });
    await client.upsertEntity({ partitionKey: 'up', rowKey: 'mer', a: 1 }, 'Merge');
    assert.deepEqual(userProps(await client.getEntity('up', 'mer')), { a: 1 });
    const res = await client.upsertEntity({ partitionKey: 'up', rowKey: 'mer', b: 'x' }, 'Merge');
    assertEtag(res.etag);
    assert.deepEqual(userProps(await client.getEntity('up', 'mer')), { a: 1, b: 'x' });
  });

  test('deleteEntity: stale etag -> 412; then deleted; absent -> 404 ResourceNotFound', async () => {
    const created = await client.createEntity({ partitionKey: 'p', rowKey: 'del' });
    await client.updateEntity({ partitionKey: 'p', rowKey: 'del', x: 1 });
    await rejectsWith(client.deleteEntity('p', 'del', { etag: created.etag }), 412, 'UpdateConditionNotSatisfied');
    await client.deleteEntity('p', 'del');
    await rejectsWith(client.getEntity('p', 'del'), 404, 'ResourceNotFound');
    await rejectsWith(client.deleteEntity('p', 'del'), 404, 'ResourceNotFound');
  });

  test("keys with quotes, percent, slashes-free punctuation and unicode", async () => {
    const keys = [["O'Brien", "a'b''c"], ['100%', 'a+b&c=d'], ['space key', 'ü€😀'], ['', '']];
    for (const [pk, rk] of keys) {
      await client.createEntity({ partitionKey: pk, rowKey: rk, tag: `${pk}|${rk}` });
      const got = await client.getEntity(pk, rk);
      assert.equal(got.tag, `${pk}|${rk}`);
      await client.updateEntity({ partitionKey: pk, rowKey: rk, more: 1 }, 'Merge');
      await client.deleteEntity(pk, rk);
      await rejectsWith(client.getEntity(pk, rk), 404, 'ResourceNotFound');
    }
  });

  test('invalid keys are refused: 400 OutOfRangeInput', async () => {
    await rejectsWith(client.createEntity({ partitionKey: 'a#b', rowKey: 'r' }), 400, 'OutOfRangeInput');
    await rejectsWith(client.createEntity({ partitionKey: 'p', rowKey: 'a?b' }), 400, 'OutOfRangeInput');
  });
});

describe('EDM types round-trip', () => {
  let client;
  const guid = crypto.randomUUID();
  const bytes = new Uint8Array([0, 1, 2, 127, 128, 254, 255]);
  before(async () => {
    client = await newTable('edm');
    await client.createEntity({
      partitionKey: 'edm',
      rowKey: '1',
      str: 'héllo "world" \\ 😀\n',
      strEmpty: '',
      strTyped: { value: '123', type: 'String' },
      i32: 2147483647,
      i32min: -2147483648,
      i32Typed: { value: '42', type: 'Int32' },
      i64: { value: '-9223372036854775808', type: 'Int64' },
      i64max: { value: '9223372036854775807', type: 'Int64' },
      i64big: BigInt('9007199254740993'),
      dbl: 3.141592653589793,
      dblTiny: -1.5e-300,
      dblWhole: { value: '5', type: 'Double' },
      dblZero: { value: '0', type: 'Double' },
      nan: { value: 'NaN', type: 'Double' },
      inf: { value: 'Infinity', type: 'Double' },
      ninf: { value: '-Infinity', type: 'Double' },
      boolT: true,
      boolF: false,
      dt7: { value: '2024-02-29T23:59:59.1234567Z', type: 'DateTime' },
      dtJs: new Date('2020-01-01T00:00:00.123Z'),
      dtWhole: { value: '1999-12-31T23:59:59Z', type: 'DateTime' },
      guid: { value: guid, type: 'Guid' },
      bin: bytes,
      binEmpty: new Uint8Array(0),
    });
  });

  test('with type conversion (SDK defaults)', async () => {
    const e = await client.getEntity('edm', '1');
    assert.equal(e.str, 'héllo "world" \\ 😀\n');
    assert.equal(e.strEmpty, '');
    assert.equal(e.strTyped, '123');
    assert.equal(e.i32, 2147483647);
    assert.equal(e.i32min, -2147483648);
    assert.equal(e.i32Typed, 42);
    assert.equal(e.i64, -9223372036854775808n);
    assert.equal(e.i64max, 9223372036854775807n);
    assert.equal(e.i64big, 9007199254740993n);
    assert.equal(e.dbl, 3.141592653589793);
    assert.equal(e.dblTiny, -1.5e-300);
    assert.equal(e.dblWhole, 5);
    assert.equal(e.dblZero, 0);
    assert.equal(e.nan, 'NaN');
    assert.equal(e.inf, 'Infinity');
    assert.equal(e.ninf, '-Infinity');
    assert.equal(e.boolT, true);
    assert.equal(e.boolF, false);
    assert.ok(e.dt7 instanceof Date);
    assert.equal(e.dt7.toISOString(), '2024-02-29T23:59:59.123Z');
    assert.ok(e.dtJs instanceof Date);
    assert.equal(e.dtJs.toISOString(), '2020-01-01T00:00:00.123Z');
    assert.deepEqual(e.guid, { value: guid, type: 'Guid' });
    assert.ok(e.bin instanceof Uint8Array);
    assert.deepEqual(Array.from(e.bin), Array.from(bytes));
    assert.equal(e.binEmpty.length, 0);
  });

  test('with disableTypeConversion: exact wire values and types', async () => {
    const e = await client.getEntity('edm', '1', { disableTypeConversion: true });
    assert.deepEqual(e.i64, { value: '-9223372036854775808', type: 'Int64' });
    assert.deepEqual(e.i64max, { value: '9223372036854775807', type: 'Int64' });
    assert.deepEqual(e.dt7, { value: '2024-02-29T23:59:59.1234567Z', type: 'DateTime' });
    assert.equal(e.dtJs.type, 'DateTime');
    assert.equal(ticks(e.dtJs.value), ticks('2020-01-01T00:00:00.123Z'));
    assert.deepEqual(e.dtWhole, { value: '1999-12-31T23:59:59Z', type: 'DateTime' });
    assert.deepEqual(e.nan, { value: 'NaN', type: 'Double' });
    assert.deepEqual(e.inf, { value: 'Infinity', type: 'Double' });
    assert.deepEqual(e.ninf, { value: '-Infinity', type: 'Double' });
    assert.deepEqual(e.bin, { value: Buffer.from(bytes).toString('base64'), type: 'Binary' });
    assert.deepEqual(e.binEmpty, { value: '', type: 'Binary' });
    assert.deepEqual(e.guid, { value: guid, type: 'Guid' });
    assert.deepEqual(e.boolT, { value: 'true', type: 'Boolean' });
    assert.deepEqual(e.i32, { value: '2147483647', type: 'Int32' });
    assert.deepEqual(e.str, { value: 'héllo "world" \\ 😀\n', type: 'String' });
  });

  test('whole Doubles travel as 5.0 (not 5) and stay Doubles in filters', async () => {
    let raw;
    await client.getEntity('edm', '1', { onResponse: (r) => { raw = r; } });
    assert.match(raw.bodyAsText, /"dblWhole":5\.0[,}]/);
    assert.match(raw.bodyAsText, /"dblZero":0\.0[,}]/);
    assert.match(raw.bodyAsText, /"i32":2147483647[,}]/);
    const byDouble = await listAll(client, { queryOptions: { filter: 'dblWhole eq 5.0' } });
    assert.equal(byDouble.length, 1);
    const byInt64 = await listAll(client, { queryOptions: { filter: 'dblWhole eq 5L' } });
    assert.equal(byInt64.length, 1, 'an Int64 literal compares numerically with a Double property (query.md §3.3)');
    const i32AsDouble = await listAll(client, { queryOptions: { filter: 'i32 eq 2147483647.0' } });
    assert.equal(i32AsDouble.length, 0, 'a Double literal never matches an Int32 property');
  });

  test('types survive listEntities and a Merge of another property', async () => {
    await client.updateEntity({ partitionKey: 'edm', rowKey: '1', added: 'x' }, 'Merge');
    const [e] = await listAll(client, { queryOptions: { filter: odata`PartitionKey eq ${'edm'}` }, disableTypeConversion: true });
    assert.deepEqual(e.i64, { value: '-9223372036854775808', type: 'Int64' });
    assert.deepEqual(e.dt7, { value: '2024-02-29T23:59:59.1234567Z', type: 'DateTime' });
    assert.deepEqual(e.nan, { value: 'NaN', type: 'Double' });
    assert.deepEqual(e.guid, { value: guid, type: 'Guid' });
    assert.equal(e.added.value, 'x');
  });

  test('a property can change type on Merge', async () => {
    await client.createEntity({ partitionKey: 'edm', rowKey: 'chg', amount: 1.5 });
    await client.updateEntity({ partitionKey: 'edm', rowKey: 'chg', amount: 'one and a half' }, 'Merge');
    assert.equal((await client.getEntity('edm', 'chg')).amount, 'one and a half');
  });
});

describe('queries', () => {
  let client;
  before(async () => {
    client = await newTable('query');
    const rows = [
      { partitionKey: 'a', rowKey: '1', name: "O'Brien", age: 30, score: 1.5, active: true, when: new Date('2024-01-01T00:00:00Z'), big: { value: '10', type: 'Int64' } },
      { partitionKey: 'a', rowKey: '2', name: 'Zed', age: 41, score: 2.5, active: false, when: new Date('2024-06-01T00:00:00Z'), big: { value: '20', type: 'Int64' } },
      { partitionKey: 'a', rowKey: '3', name: 'amy', age: '30' },
      { partitionKey: 'b', rowKey: '1', name: 'Bob', age: 25, active: true, id: { value: '11111111-2222-3333-4444-555555555555', type: 'Guid' }, blob: new Uint8Array([1, 2]) },
    ];
    for (const r of rows) await client.createEntity(r);
  });

  const keys = (list) => list.map((e) => `${e.partitionKey}/${e.rowKey}`);
  const q = async (filter, extra = {}) => keys(await listAll(client, { queryOptions: { filter, ...extra } }));

  test('odata template: strings with quotes, numbers, booleans, dates', async () => {
    assert.deepEqual(await q(odata`name eq ${"O'Brien"}`), ['a/1']);
    assert.deepEqual(await q(odata`PartitionKey eq ${'a'} and age ge ${30}`), ['a/1', 'a/2']);
    assert.deepEqual(await q(odata`active eq ${true}`), ['a/1', 'b/1']);
    assert.deepEqual(await q(odata`when gt ${new Date('2024-03-01T00:00:00Z')}`), ['a/2']);
    assert.deepEqual(await q(odata`score lt ${2.0}`), ['a/1']);
    assert.deepEqual(await q(odata`age eq ${'30'}`), ['a/3']);
  });

  test('Int64, Guid and Binary literals', async () => {
    assert.deepEqual(await q('big eq 20L'), ['a/2']);
    assert.deepEqual(await q('big ge 10'), ['a/1', 'a/2']);
    assert.deepEqual(await q("id eq guid'11111111-2222-3333-4444-555555555555'"), ['b/1']);
    assert.deepEqual(await q("blob eq X'0102'"), ['b/1']);
    assert.deepEqual(await q("blob eq binary'0102'"), ['b/1']);
  });

  test('missing properties match no comparison, not even ne', async () => {
    assert.deepEqual(await q("active ne true"), ['a/2']);
    assert.deepEqual(await q("not (active eq true)"), ['a/2', 'a/3']);
  });

  test('key ranges: prefix scan and partition range', async () => {
    assert.deepEqual(await q("PartitionKey eq 'a' and RowKey ge '2' and RowKey lt '3'"), ['a/2']);
    assert.deepEqual(await q("PartitionKey ge 'a' and PartitionKey lt 'b'"), ['a/1', 'a/2', 'a/3']);
    assert.deepEqual(await q("PartitionKey gt 'a'"), ['b/1']);
    assert.deepEqual(await q("(PartitionKey eq 'a' and RowKey eq '1') or (PartitionKey eq 'b' and RowKey eq '1')"), ['a/1', 'b/1']);
    assert.deepEqual(await q("PartitionKey eq 'a' and PartitionKey eq 'b'"), []);
  });

  test('select returns only the selected properties', async () => {
    const list = await listAll(client, { queryOptions: { filter: "PartitionKey eq 'a'", select: ['name', 'age'] } });
    assert.equal(list.length, 3);
    for (const e of list) {
      assertEtag(e.etag);
      assert.deepEqual(propNames(e).sort(), ['age', 'name']);
    }
    const one = await client.getEntity('b', '1', { queryOptions: { select: ['name'] } });
    assert.deepEqual(propNames(one), ['name']);
    assert.equal(one.name, 'Bob');
  });

  test('invalid filter -> 400 InvalidInput', async () => {
    await rejectsWith(listAll(client, { queryOptions: { filter: "name eq 'x" } }), 400, 'InvalidInput');
    await rejectsWith(listAll(client, { queryOptions: { filter: 'name eq null' } }), 400, 'InvalidInput');
  });

  test('keys come back in ordinal (UTF-16) order', async () => {
    const c = await newTable('order');
    const rks = ['a', 'B', 'b', 'bB', 'Z', '_', '~', 'é', '\uE000', '\uFFFD', '😀', '10', '9', ''];
    for (const rk of rks) await c.createEntity({ partitionKey: 'p', rowKey: rk });
    const got = (await listAll(c)).map((e) => e.rowKey);
    assert.deepEqual(got, [...rks].sort(ordinal));
    const range = (await listAll(c, { queryOptions: { filter: "RowKey gt 'b' and RowKey lt '\uE000'" } })).map((e) => e.rowKey);
    assert.deepEqual(range, rks.filter((k) => k > 'b' && k < '\uE000').sort(ordinal));
  });
});

describe('paging over more than 2,500 entities', () => {
  let client;
  let expected;
  const PARTITIONS = 26;
  const PER_PARTITION = 100;
  before(async () => {
    client = await newTable('paging');
    expected = [];
    for (let p = 0; p < PARTITIONS; p += 1) {
      const pk = `P${String(p).padStart(2, '0')}`;
      const actions = [];
      for (let r = 0; r < PER_PARTITION; r += 1) {
        // Row keys whose ordinal order differs from numeric and case-insensitive order.
        const rk = `${r % 2 ? 'a' : 'B'}${String(PER_PARTITION - r).padStart(3, '0')}`;
        const entity = { partitionKey: pk, rowKey: rk, n: p * PER_PARTITION + r, even: r % 2 === 0 };
        actions.push(['create', entity]);
        expected.push({ partitionKey: pk, rowKey: rk });
      }
      const res = await client.submitTransaction(actions);
      assert.equal(res.status, 202);
      assert.equal(res.subResponses.length, PER_PARTITION);
    }
    expected.sort(compareKeys);
  });

  test('default pages are full (1000) and the whole table comes back in key order', async () => {
    const sizes = [];
    const seen = [];
    for await (const page of client.listEntities().byPage()) {
      sizes.push(page.length);
      seen.push(...page.map((e) => ({ partitionKey: e.partitionKey, rowKey: e.rowKey })));
    }
    assert.deepEqual(sizes, [1000, 1000, 600]);
    assert.equal(seen.length, PARTITIONS * PER_PARTITION);
    assert.deepEqual(seen, expected);
  });

  test('byPage({maxPageSize: 333}) gives full pages across partitions', async () => {
    const sizes = [];
    const seen = [];
    for await (const page of client.listEntities().byPage({ maxPageSize: 333 })) {
      sizes.push(page.length);
      seen.push(...page.map((e) => `${e.partitionKey}/${e.rowKey}`));
    }
    const total = PARTITIONS * PER_PARTITION;
    const want = Array(Math.floor(total / 333)).fill(333);
    if (total % 333) want.push(total % 333);
    assert.deepEqual(sizes, want);
    assert.deepEqual(seen, expected.map((e) => `${e.partitionKey}/${e.rowKey}`));
  });

  test('filtered paging with a residual predicate keeps count and order', async () => {
    const seen = [];
    let pages = 0;
    for await (const page of client.listEntities({ queryOptions: { filter: "even eq true and PartitionKey ge 'P05' and PartitionKey lt 'P10'" } }).byPage({ maxPageSize: 7 })) {
      pages += 1;
      assert.ok(page.length <= 7);
      seen.push(...page);
    }
    assert.equal(seen.length, 5 * PER_PARTITION / 2);
    assert.ok(pages >= Math.ceil(seen.length / 7));
    for (let i = 1; i < seen.length; i += 1) assert.ok(compareKeys(seen[i - 1], seen[i]) < 0, 'results must be in key order');
    assert.ok(seen.every((e) => e.even === true && e.partitionKey >= 'P05' && e.partitionKey < 'P10'));
  });

  test('a continuation token resumes exactly after the previous page', async () => {
    const iter = client.listEntities().byPage({ maxPageSize: 250 });
    const first = (await iter.next()).value;
    assert.equal(first.length, 250);
    assert.ok(first.continuationToken, 'continuation token expected');
    const resumed = client.listEntities().byPage({ maxPageSize: 250, continuationToken: first.continuationToken });
    const second = (await resumed.next()).value;
    assert.deepEqual(second.map((e) => `${e.partitionKey}/${e.rowKey}`), expected.slice(250, 500).map((e) => `${e.partitionKey}/${e.rowKey}`));
  });

  test('select with paging', async () => {
    let count = 0;
    for await (const page of client.listEntities({ queryOptions: { select: ['n'] } }).byPage({ maxPageSize: 1000 })) {
      for (const e of page) {
        assert.deepEqual(propNames(e), ['n']);
        count += 1;
      }
    }
    assert.equal(count, PARTITIONS * PER_PARTITION);
  });
});

describe('transactions (submitTransaction)', () => {
  let client;
  before(async () => { client = await newTable('tx'); });

  async function snapshot(pk) {
    return (await listAll(client, { queryOptions: { filter: odata`PartitionKey eq ${pk}` }, disableTypeConversion: true }))
      .map((e) => ({ ...e }));
  }

  test('all action kinds in one transaction', async () => {
    const pk = 'all';
    await client.createEntity({ partitionKey: pk, rowKey: 'mergeMe', a: 1, b: 1 });
    await client.createEntity({ partitionKey: pk, rowKey: 'replaceMe', a: 1, b: 1 });
    await client.createEntity({ partitionKey: pk, rowKey: 'upsertMerge', a: 1 });
    await client.createEntity({ partitionKey: pk, rowKey: 'upsertReplace', a: 1 });
    await client.createEntity({ partitionKey: pk, rowKey: 'deleteMe' });
    const res = await client.submitTransaction([
      ['create', { partitionKey: pk, rowKey: 'created', a: 'new', i64: { value: '12345678901234', type: 'Int64' } }],
      ['update', { partitionKey: pk, rowKey: 'mergeMe', b: 2, c: 3 }, 'Merge'],
      ['update', { partitionKey: pk, rowKey: 'replaceMe', c: 3 }, 'Replace'],
      ['upsert', { partitionKey: pk, rowKey: 'upsertMerge', b: 2 }, 'Merge'],
      ['upsert', { partitionKey: pk, rowKey: 'upsertReplace', b: 2 }, 'Replace'],
      ['upsert', { partitionKey: pk, rowKey: 'upsertNew', z: 26 }, 'Merge'],
      ['delete', { partitionKey: pk, rowKey: 'deleteMe' }],
    ]);
    assert.equal(res.status, 202);
    assert.equal(res.subResponses.length, 7);
    assert.ok(res.subResponses.every((s) => s.status === 204), JSON.stringify(res.subResponses));
    // Only insert sub-responses carry a Location, hence a rowKey, in the SDK's parse.
    assert.equal(res.getResponseForEntity('created').status, 204);
    const rows = Object.fromEntries((await listAll(client, { queryOptions: { filter: odata`PartitionKey eq ${pk}` } }))
      .map((e) => [e.rowKey, e]));
    assert.deepEqual(Object.keys(rows).sort(), ['created', 'mergeMe', 'replaceMe', 'upsertMerge', 'upsertNew', 'upsertReplace']);
    assert.deepEqual(userProps(rows.created), { a: 'new', i64: 12345678901234n });
    assert.deepEqual(userProps(rows.mergeMe), { a: 1, b: 2, c: 3 });
    assert.deepEqual(userProps(rows.replaceMe), { c: 3 });
    assert.deepEqual(userProps(rows.upsertMerge), { a: 1, b: 2 });
    assert.deepEqual(userProps(rows.upsertReplace), { b: 2 });
    assert.deepEqual(userProps(rows.upsertNew), { z: 26 });
    const order = ['created', 'mergeMe', 'replaceMe', 'upsertMerge', 'upsertReplace', 'upsertNew'];
    order.forEach((rk, i) => {
      assertEtag(res.subResponses[i].etag);
      assert.equal(rows[rk].etag, res.subResponses[i].etag, `etag of ${rk} from sub-response ${i} must be the stored one`);
    });
    assert.equal(res.subResponses[6].etag, undefined, 'a delete sub-response has no ETag');
  });

  test('keys with quotes, " < > { } and spaces: inserts in a transaction succeed, Locations as Azure writes them', async () => {
    // The JS SDK takes a sub-response line holding {...} for an error body.
    const keys = [["A'aaa_bbbb2\"", "\"A'aaa_bbbb2"], ['<a>', '{b}'], ['{x y}', 'z%<>']];
    const res = await client.submitTransaction(keys.map(([pk, rk]) =>
      ['create', { partitionKey: 'special', rowKey: `${pk}|${rk}`, pk }]));
    assert.equal(res.status, 202);
    assert.ok(res.subResponses.every((s) => s.status === 204), JSON.stringify(res.subResponses));
    const rows = await listAll(client, { queryOptions: { filter: odata`PartitionKey eq ${'special'}` } });
    assert.deepEqual(rows.map((e) => e.rowKey).sort(), keys.map(([pk, rk]) => `${pk}|${rk}`).sort());
    // Azure's answer to the first pair (a recorded response): the quote
    // doubled, '"' as %22.
    const single = await newTable('txloc');
    const [pk, rk] = keys[0];
    const created = await single.submitTransaction([['create', { partitionKey: pk, rowKey: rk }]]);
    assert.equal(created.subResponses[0].rowKey, "%22A''aaa_bbbb2");
    const raw = [];
    await single.createEntity({ partitionKey: 'p', rowKey: 'x"<>{}' }, {
      onResponse: (r) => raw.push(r.headers.get('location'), r.headers.get('dataserviceid')),
    });
    assert.deepEqual(raw, Array(2).fill(`${server.endpoint}/${single.tableName}(PartitionKey='p',RowKey='x%22%3C%3E%7B%7D')`));
    assert.equal((await single.getEntity(pk, rk)).rowKey, rk);
  });

  test('update with If-Match etag inside a transaction: stale etag fails the whole transaction', async () => {
    const pk = 'cond';
    const created = await client.createEntity({ partitionKey: pk, rowKey: 'x', v: 1 });
    await client.updateEntity({ partitionKey: pk, rowKey: 'x', v: 2 }, 'Merge');
    const before = await snapshot(pk);
    const err = await rejectsWith(client.submitTransaction([
      ['create', { partitionKey: pk, rowKey: 'y' }],
      ['update', { partitionKey: pk, rowKey: 'x', v: 3 }, 'Merge', { etag: created.etag }],
    ]), 412, 'UpdateConditionNotSatisfied');
    assert.match(err.message, /^1:/);
    assert.deepEqual(await snapshot(pk), before);
  });

  test('a failing operation in the middle leaves the partition unchanged', async () => {
    const pk = 'fail';
    await client.createEntity({ partitionKey: pk, rowKey: 'existing', v: 'orig' });
    await client.createEntity({ partitionKey: pk, rowKey: 'toReplace', v: 'orig' });
    await client.createEntity({ partitionKey: pk, rowKey: 'toDelete', v: 'keep me' });
    const before = await snapshot(pk);
    const err = await rejectsWith(client.submitTransaction([
      ['create', { partitionKey: pk, rowKey: 'new1' }],
      ['update', { partitionKey: pk, rowKey: 'toReplace', v: 'changed' }, 'Replace'],
      ['delete', { partitionKey: pk, rowKey: 'toDelete' }],
      ['create', { partitionKey: pk, rowKey: 'existing' }],
      ['create', { partitionKey: pk, rowKey: 'new2' }],
    ]), 409, 'EntityAlreadyExists');
    assert.match(err.message, /^3:The specified entity already exists\./);
    assert.deepEqual(await snapshot(pk), before);
  });

  test('delete of an absent entity fails the transaction with 404 ResourceNotFound', async () => {
    const pk = 'absent';
    await client.createEntity({ partitionKey: pk, rowKey: 'a' });
    const before = await snapshot(pk);
    const err = await rejectsWith(client.submitTransaction([
      ['delete', { partitionKey: pk, rowKey: 'a' }],
      ['delete', { partitionKey: pk, rowKey: 'nope' }],
    ]), 404, 'ResourceNotFound');
    assert.match(err.message, /^1:/);
    assert.deepEqual(await snapshot(pk), before);
  });

  test('100 operations succeed; 101 are refused and nothing is written', async () => {
    const ok = [];
    for (let i = 0; i < 100; i += 1) ok.push(['create', { partitionKey: 'hundred', rowKey: String(i).padStart(3, '0'), i }]);
    const res = await client.submitTransaction(ok);
    assert.equal(res.subResponses.length, 100);
    assert.equal((await snapshot('hundred')).length, 100);
    const tooMany = [];
    for (let i = 0; i < 101; i += 1) tooMany.push(['create', { partitionKey: 'toomany', rowKey: String(i), i }]);
    await rejectsWith(client.submitTransaction(tooMany), 400, 'InvalidInput');
    assert.equal((await snapshot('toomany')).length, 0);
  });

  test('invalid entity inside a transaction -> its 400 code with the index', async () => {
    const err = await rejectsWith(client.submitTransaction([
      ['create', { partitionKey: 'inv', rowKey: 'ok' }],
      ['create', { partitionKey: 'inv', rowKey: 'bad', s: 'x'.repeat(32769) }],
    ]), 400, 'PropertyValueTooLarge');
    assert.match(err.message, /^1:/);
    assert.equal((await snapshot('inv')).length, 0);
  });

  test('transaction on a missing table -> 404 TableNotFound', async () => {
    const missing = tableClient(uniqueTableName('notx'));
    await rejectsWith(missing.submitTransaction([['create', { partitionKey: 'p', rowKey: 'r' }]]), 404, 'TableNotFound');
  });
});
