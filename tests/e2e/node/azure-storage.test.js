'use strict';
// Legacy `azure-storage` (2.10.7) TableService against the real binary:
// Shared Key (not Lite), x-ms-version 2018-03-28, MERGE verb, its own batch
// writer and line-oriented batch response parser.

const { test, describe, before } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const azure = require('azure-storage');

const { useServer, uniqueTableName } = require('./server');
const { assertEtag, compareKeys } = require('./util');

const server = useServer();
const entGen = azure.TableUtilities.entityGenerator;
const { TableQuery, TableBatch } = azure;
const { PayloadFormat } = azure.TableUtilities;

let svc;
let svcFor;
// The TableService for the running server (created once it is listening).
function service() {
  if (!svc || svcFor !== server.connectionString) {
    // No retries: a wrong status must fail the test, not be retried.
    svc = azure.createTableService(server.connectionString).withFilter(new azure.LinearRetryPolicyFilter(0, 0));
    svcFor = server.connectionString;
  }
  return svc;
}

// Calls svc[method](...args, cb) and resolves to { result, response }, or
// rejects with the SDK's error (statusCode, code).
function call(method, ...args) {
  return new Promise((resolve, reject) => {
    service()[method](...args, (err, result, response) => {
      if (err) {
        err.response = response;
        reject(err);
      } else {
        resolve({ result, response });
      }
    });
  });
}

async function fails(promise, statusCode, code) {
  let error;
  try { await promise; } catch (e) { error = e; }
  assert.ok(error, `expected ${statusCode} ${code}, but the call succeeded`);
  assert.equal(error.statusCode, statusCode, `statusCode ${error.statusCode} code ${error.code}: ${error.message}`);
  if (code) assert.equal(error.code, code, `code ${error.code}: ${error.message}`);
  return error;
}

async function newTable(prefix) {
  const name = uniqueTableName(prefix);
  await call('createTable', name);
  return name;
}

const val = (p) => (p && typeof p === 'object' && '_' in p ? p._ : p);

describe('tables', () => {
  test('createTable, doesTableExist, createTableIfNotExists, deleteTable', async () => {
    const name = uniqueTableName('legacy');
    const { result } = await call('createTable', name);
    assert.equal(result.TableName ?? result.name ?? name, name);
    assert.equal((await call('doesTableExist', name)).result.exists, true);
    assert.equal((await call('createTableIfNotExists', name)).result.created, false);
    await call('deleteTable', name);
    assert.equal((await call('doesTableExist', name)).result.exists, false);
    assert.equal((await call('createTableIfNotExists', name)).result.created, true);
    assert.equal((await call('deleteTableIfExists', name)).result, true);
    assert.equal((await call('deleteTableIfExists', name)).result, false);
  });

  test('createTable of an existing table -> 409 TableAlreadyExists', async () => {
    const name = await newTable('dup');
    await fails(call('createTable', name), 409, 'TableAlreadyExists');
  });

  test('deleteTable of an absent table -> 404 ResourceNotFound', async () => {
    await fails(call('deleteTable', uniqueTableName('absent')), 404, 'ResourceNotFound');
  });

  test('entities of a deleted table are gone: 404 TableNotFound', async () => {
    const name = await newTable('gone');
    await call('insertEntity', name, { PartitionKey: entGen.String('p'), RowKey: entGen.String('r') });
    await call('deleteTable', name);
    await fails(call('queryEntities', name, new TableQuery(), null), 404, 'TableNotFound');
    await fails(call('retrieveEntity', name, 'p', 'r'), 404, 'TableNotFound');
  });

  test('listTablesSegmentedWithPrefix pages with maxResults and continuation', async () => {
    const prefix = `ls${crypto.randomBytes(3).toString('hex')}`;
    const names = ['x1', 'x2', 'x3', 'x4', 'x5'].map((s) => `${prefix}${s}`);
    for (const n of names) await call('createTable', n);
    const seen = [];
    let token = null;
    let pages = 0;
    do {
      const { result } = await call('listTablesSegmentedWithPrefix', prefix, token, { maxResults: 2 });
      pages += 1;
      seen.push(...result.entries);
      token = result.continuationToken;
      assert.ok(pages <= 5);
    } while (token);
    assert.deepEqual(seen, names);
    assert.equal(pages, 3);
  });
});

describe('entities', () => {
  let table;
  before(async () => { table = await newTable('ent'); });

  const guid = crypto.randomUUID();
  const when = new Date('2023-05-06T07:08:09.123Z');

  function typedEntity(rk) {
    return {
      PartitionKey: entGen.String('p'),
      RowKey: entGen.String(rk),
      str: entGen.String('héllo'),
      i32: entGen.Int32(42),
      i64: entGen.Int64('9223372036854775807'),
      dbl: entGen.Double(2.5),
      whole: entGen.Double(5),
      bool: entGen.Boolean(true),
      dt: entGen.DateTime(when),
      id: entGen.Guid(guid),
      bin: entGen.Binary(Buffer.from([1, 2, 3, 250])),
    };
  }

  test('insertEntity with entityGenerator types, retrieveEntity returns them typed', async () => {
    const { result } = await call('insertEntity', table, typedEntity('typed'));
    assertEtag(result['.metadata'].etag);
    const { result: e } = await call('retrieveEntity', table, 'p', 'typed');
    assert.equal(e['.metadata'].etag, result['.metadata'].etag);
    assert.equal(val(e.str), 'héllo');
    assert.equal(val(e.i32), 42);
    assert.deepEqual(e.i64, { $: 'Edm.Int64', _: '9223372036854775807' });
    assert.equal(val(e.dbl), 2.5);
    assert.equal(val(e.whole), 5);
    assert.equal(val(e.bool), true);
    assert.equal(e.dt.$, 'Edm.DateTime');
    assert.equal(val(e.dt).toISOString(), when.toISOString());
    assert.equal(e.id.$, 'Edm.Guid');
    assert.equal(String(val(e.id)).toLowerCase(), guid);
    assert.equal(e.bin.$, 'Edm.Binary');
    assert.deepEqual([...val(e.bin)], [1, 2, 3, 250]);
    assert.ok(val(e.Timestamp) instanceof Date);
  });

  test('whole Double written as 5.0 on the wire (legacy type inference)', async () => {
    await call('insertEntity', table, typedEntity('whole'));
    const { response } = await call('retrieveEntity', table, 'p', 'whole');
    const body = typeof response.body === 'string' ? response.body : JSON.stringify(response.body);
    // The parsed body loses ".0"; check the service's typing through a Double-only filter instead.
    assert.ok(body.includes('whole'));
    const q = new TableQuery().where('RowKey eq ?', 'whole').and('whole eq 5.0');
    const { result } = await call('queryEntities', table, q, null);
    assert.equal(result.entries.length, 1, 'Double literal 5.0 must match a Double property');
  });

  test('insertEntity with echoContent returns the stored entity', async () => {
    const { result } = await call('insertEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('echo'), n: entGen.Int32(1) }, { echoContent: true });
    assert.equal(val(result.n), 1);
    assertEtag(result['.metadata'].etag);
    assert.ok(result.Timestamp);
  });

  test('retrieveEntity at nometadata and fullmetadata', async () => {
    await call('insertEntity', table, typedEntity('formats'));
    const { result: none } = await call('retrieveEntity', table, 'p', 'formats', { payloadFormat: PayloadFormat.NO_METADATA });
    assert.equal(val(none.i64), '9223372036854775807');
    assert.equal(val(none.i32), 42);
    const { result: full } = await call('retrieveEntity', table, 'p', 'formats', { payloadFormat: PayloadFormat.FULL_METADATA });
    assert.deepEqual(full.i64, { $: 'Edm.Int64', _: '9223372036854775807' });
    assert.ok(full['.metadata'].id && full['.metadata'].id.includes(`PartitionKey='p'`), JSON.stringify(full['.metadata']));
    assert.equal(full['.metadata'].type, `${server.account}.${table}`);
  });

  test('insertEntity of an existing key -> 409 EntityAlreadyExists', async () => {
    await call('insertEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('dup') });
    await fails(call('insertEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('dup') }), 409, 'EntityAlreadyExists');
  });

  test('retrieveEntity of an absent entity -> 404 ResourceNotFound', async () => {
    await fails(call('retrieveEntity', table, 'p', 'absent'), 404, 'ResourceNotFound');
  });

  test('operations on a missing table -> 404 TableNotFound', async () => {
    await fails(call('insertEntity', uniqueTableName('gone'), { PartitionKey: entGen.String('p'), RowKey: entGen.String('r') }), 404, 'TableNotFound');
  });

  test('replaceEntity with the etag, then a stale etag -> 412', async () => {
    const { result } = await call('insertEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('rep'), a: entGen.Int32(1), b: entGen.Int32(2) });
    const etag = result['.metadata'].etag;
    const { result: r2 } = await call('replaceEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('rep'), c: entGen.String('c'), '.metadata': { etag } });
    assertEtag(r2['.metadata'].etag);
    const { result: e } = await call('retrieveEntity', table, 'p', 'rep');
    assert.equal(e.a, undefined);
    assert.equal(val(e.c), 'c');
    await fails(call('replaceEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('rep'), d: entGen.Int32(4), '.metadata': { etag } }), 412, 'UpdateConditionNotSatisfied');
  });

  test('mergeEntity (MERGE verb) keeps other properties; absent entity -> 404', async () => {
    await call('insertEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('mer'), a: entGen.Int32(1) });
    await call('mergeEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('mer'), b: entGen.Int64('7') });
    const { result: e } = await call('retrieveEntity', table, 'p', 'mer');
    assert.equal(val(e.a), 1);
    assert.deepEqual(e.b, { $: 'Edm.Int64', _: '7' });
    await fails(call('mergeEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('nomer'), b: entGen.Int32(1) }), 404, 'ResourceNotFound');
  });

  test('insertOrReplaceEntity and insertOrMergeEntity', async () => {
    const key = { PartitionKey: entGen.String('p'), RowKey: entGen.String('ior') };
    await call('insertOrReplaceEntity', table, { ...key, a: entGen.Int32(1), b: entGen.Int32(2) });
    await call('insertOrReplaceEntity', table, { ...key, c: entGen.Int32(3) });
    let e = (await call('retrieveEntity', table, 'p', 'ior')).result;
    assert.equal(e.a, undefined);
    assert.equal(val(e.c), 3);
    const key2 = { PartitionKey: entGen.String('p'), RowKey: entGen.String('iom') };
    await call('insertOrMergeEntity', table, { ...key2, a: entGen.Int32(1) });
    await call('insertOrMergeEntity', table, { ...key2, b: entGen.Boolean(false) });
    e = (await call('retrieveEntity', table, 'p', 'iom')).result;
    assert.equal(val(e.a), 1);
    assert.equal(val(e.b), false);
  });

  test('deleteEntity: stale etag -> 412, then delete, then 404', async () => {
    const { result } = await call('insertEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('del') });
    await call('mergeEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('del'), x: entGen.Int32(1) });
    await fails(call('deleteEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('del'), '.metadata': { etag: result['.metadata'].etag } }), 412, 'UpdateConditionNotSatisfied');
    await call('deleteEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('del') });
    await fails(call('retrieveEntity', table, 'p', 'del'), 404, 'ResourceNotFound');
    await fails(call('deleteEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('del') }), 404, 'ResourceNotFound');
  });

  test('keys with quotes and unicode', async () => {
    for (const [pk, rk] of [["O'Brien", "it's"], ['ü€', '😀 x']]) {
      await call('insertEntity', table, { PartitionKey: entGen.String(pk), RowKey: entGen.String(rk), v: entGen.String(`${pk}|${rk}`) });
      const { result } = await call('retrieveEntity', table, pk, rk);
      assert.equal(val(result.v), `${pk}|${rk}`);
      await call('mergeEntity', table, { PartitionKey: entGen.String(pk), RowKey: entGen.String(rk), w: entGen.Int32(1) });
      await call('deleteEntity', table, { PartitionKey: entGen.String(pk), RowKey: entGen.String(rk) });
    }
  });

  test('validation errors carry their codes', async () => {
    await fails(call('insertEntity', table, { PartitionKey: entGen.String('p'), RowKey: entGen.String('big'), s: entGen.String('x'.repeat(32769)) }), 400, 'PropertyValueTooLarge');
    await fails(call('insertEntity', table, { PartitionKey: entGen.String('p#'), RowKey: entGen.String('r') }), 400, 'OutOfRangeInput');
  });
});

describe('queries', () => {
  let table;
  const rows = [];
  before(async () => {
    table = await newTable('query');
    for (let p = 0; p < 3; p += 1) {
      const batch = new TableBatch();
      for (let r = 0; r < 50; r += 1) {
        const e = {
          PartitionKey: entGen.String(`part${p}`),
          RowKey: entGen.String(`row${String(r).padStart(3, '0')}`),
          n: entGen.Int32(r),
          big: entGen.Int64(String(r * 1000000000)),
          name: entGen.String(r % 2 ? 'odd' : 'even'),
          at: entGen.DateTime(new Date(Date.UTC(2024, 0, 1 + r))),
        };
        batch.insertEntity(e);
        rows.push({ PartitionKey: `part${p}`, RowKey: e.RowKey._ });
      }
      await call('executeBatch', table, batch);
    }
    rows.sort(compareKeys);
  });

  const keys = (entries) => entries.map((e) => `${val(e.PartitionKey)}/${val(e.RowKey)}`);

  async function queryAll(query, options = {}) {
    const out = [];
    let token = null;
    let pages = 0;
    do {
      const { result } = await call('queryEntities', table, query, token, options);
      out.push(...result.entries);
      token = result.continuationToken;
      pages += 1;
      assert.ok(pages < 1000);
    } while (token);
    return { entries: out, pages };
  }

  test('where/and with typed placeholders', async () => {
    const q = new TableQuery().where('PartitionKey eq ?', 'part1').and('n ge ?int32?', 45).and('name eq ?string?', 'odd');
    const { entries } = await queryAll(q);
    assert.deepEqual(keys(entries), ['part1/row045', 'part1/row047', 'part1/row049']);
  });

  test('Int64 and DateTime filters', async () => {
    const q = new TableQuery().where('PartitionKey eq ?', 'part2').and('big gt ?int64?', '47000000000');
    assert.deepEqual(keys((await queryAll(q)).entries), ['part2/row048', 'part2/row049']);
    const q2 = new TableQuery().where('PartitionKey eq ?', 'part0').and('at lt ?date?', new Date(Date.UTC(2024, 0, 3)));
    assert.deepEqual(keys((await queryAll(q2)).entries), ['part0/row000', 'part0/row001']);
    const q3 = new TableQuery().where(TableQuery.combineFilters(
      TableQuery.stringFilter('PartitionKey', azure.TableUtilities.QueryComparisons.EQUAL, 'part0'),
      azure.TableUtilities.TableOperators.AND,
      TableQuery.int64Filter('big', azure.TableUtilities.QueryComparisons.EQUAL, '3000000000')));
    assert.deepEqual(keys((await queryAll(q3)).entries), ['part0/row003']);
  });

  test('top() limits a page and continuation tokens walk the whole table in order', async () => {
    const q = new TableQuery().top(7);
    const first = await call('queryEntities', table, q, null);
    assert.equal(first.result.entries.length, 7);
    assert.ok(first.result.continuationToken, 'continuation expected');
    assert.ok(first.result.continuationToken.nextPartitionKey && first.result.continuationToken.nextRowKey);
    const { entries, pages } = await queryAll(q);
    assert.equal(entries.length, 150);
    assert.equal(pages, Math.ceil(150 / 7));
    assert.deepEqual(keys(entries), rows.map((r) => `${r.PartitionKey}/${r.RowKey}`));
  });

  test('select() projects properties', async () => {
    const q = new TableQuery().select('n', 'name').where('PartitionKey eq ? and RowKey eq ?', 'part0', 'row010');
    const { entries } = await queryAll(q);
    assert.equal(entries.length, 1);
    const props = Object.keys(entries[0]).filter((k) => k !== '.metadata').sort();
    assert.deepEqual(props, ['n', 'name']);
    assert.equal(val(entries[0].n), 10);
  });

  test('queries at nometadata with autoResolveProperties', async () => {
    const q = new TableQuery().where('PartitionKey eq ? and RowKey eq ?', 'part0', 'row002');
    const { entries } = await queryAll(q, { payloadFormat: PayloadFormat.NO_METADATA, autoResolveProperties: true });
    assert.equal(entries.length, 1);
    assert.equal(val(entries[0].n), 2);
    assert.equal(val(entries[0].name), 'even');
  });

  test('bad query -> 400 InvalidInput', async () => {
    const q = new TableQuery().where("n eq 'unterminated");
    await fails(call('queryEntities', table, q, null), 400, 'InvalidInput');
  });
});

describe('TableBatch', () => {
  let table;
  before(async () => { table = await newTable('batch'); });

  test('insert, merge, replace, insertOrReplace, insertOrMerge and delete in one batch', async () => {
    await call('insertEntity', table, { PartitionKey: entGen.String('b'), RowKey: entGen.String('m'), a: entGen.Int32(1) });
    await call('insertEntity', table, { PartitionKey: entGen.String('b'), RowKey: entGen.String('r'), a: entGen.Int32(1) });
    await call('insertEntity', table, { PartitionKey: entGen.String('b'), RowKey: entGen.String('d') });
    const batch = new TableBatch();
    batch.insertEntity({ PartitionKey: entGen.String('b'), RowKey: entGen.String('i'), v: entGen.String('new') }, { echoContent: true });
    batch.mergeEntity({ PartitionKey: entGen.String('b'), RowKey: entGen.String('m'), b: entGen.Int32(2) });
    batch.replaceEntity({ PartitionKey: entGen.String('b'), RowKey: entGen.String('r'), c: entGen.Int32(3) });
    batch.insertOrReplaceEntity({ PartitionKey: entGen.String('b'), RowKey: entGen.String('ior'), d: entGen.Int32(4) });
    batch.insertOrMergeEntity({ PartitionKey: entGen.String('b'), RowKey: entGen.String('iom'), e: entGen.Int32(5) });
    batch.deleteEntity({ PartitionKey: entGen.String('b'), RowKey: entGen.String('d') });
    const { result } = await call('executeBatch', table, batch);
    assert.equal(result.length, 6);
    assert.deepEqual(result.map((r) => r.response.statusCode), [201, 204, 204, 204, 204, 204]);
    assert.ok(result.every((r) => r.response.isSuccessful));
    assert.equal(val(result[0].entity.v), 'new');
    const { result: all } = await call('queryEntities', table, new TableQuery().where('PartitionKey eq ?', 'b'), null);
    const byKey = Object.fromEntries(all.entries.map((e) => [val(e.RowKey), e]));
    assert.deepEqual(Object.keys(byKey).sort(), ['i', 'iom', 'ior', 'm', 'r']);
    assert.equal(val(byKey.m.a), 1);
    assert.equal(val(byKey.m.b), 2);
    assert.equal(byKey.r.a, undefined);
    assert.equal(val(byKey.r.c), 3);
  });

  test('a failing batch reports the failing operation and applies nothing', async () => {
    await call('insertEntity', table, { PartitionKey: entGen.String('f'), RowKey: entGen.String('exists'), v: entGen.String('orig') });
    await call('insertEntity', table, { PartitionKey: entGen.String('f'), RowKey: entGen.String('m'), v: entGen.String('orig') });
    const batch = new TableBatch();
    batch.insertEntity({ PartitionKey: entGen.String('f'), RowKey: entGen.String('new1') });
    batch.mergeEntity({ PartitionKey: entGen.String('f'), RowKey: entGen.String('m'), v: entGen.String('changed') });
    batch.insertEntity({ PartitionKey: entGen.String('f'), RowKey: entGen.String('exists') });
    let outcome;
    try {
      outcome = await call('executeBatch', table, batch);
    } catch (e) {
      outcome = { error: e };
    }
    if (outcome.error) {
      assert.equal(outcome.error.statusCode, 409, outcome.error.message);
    } else {
      const failed = outcome.result.filter((r) => !r.response.isSuccessful);
      assert.equal(failed.length, 1, JSON.stringify(outcome.result.map((r) => r.response.statusCode)));
      assert.equal(failed[0].response.statusCode, 409);
    }
    const { result: all } = await call('queryEntities', table, new TableQuery().where('PartitionKey eq ?', 'f'), null);
    assert.deepEqual(all.entries.map((e) => [val(e.RowKey), val(e.v)]), [['exists', 'orig'], ['m', 'orig']]);
  });

  test('retrieveEntity batch (single GET)', async () => {
    await call('insertEntity', table, { PartitionKey: entGen.String('g'), RowKey: entGen.String('1'), v: entGen.Int64('99') });
    const batch = new TableBatch();
    batch.retrieveEntity('g', '1');
    const { result } = await call('executeBatch', table, batch);
    assert.equal(result.length, 1);
    assert.equal(result[0].response.statusCode, 200);
    assert.deepEqual(result[0].entity.v, { $: 'Edm.Int64', _: '99' });
  });
});
