'use strict';
// Requests that real tools other than the SDKs send (Azure Storage Explorer's query builder,
// hand-written REST clients, browsers, the .NET clients' typed nulls), answered as Azure answers
// them: Boolean literals in any case, a lower-case weak ETag prefix, a trailing slash on
// /Tables/, Vary: Origin whenever CORS rules exist (with or without Origin), typed JSON nulls
// accepted and not stored, Storage Explorer's empty $select and $top=0.

const { test, describe, before } = require('node:test');
const assert = require('node:assert/strict');

const { useServer, uniqueTableName } = require('./server');
const { request } = require('./http');
const { assertError } = require('./util');

const server = useServer();
const call = (opts) => request(server, opts);
const NOMETA = 'application/json;odata=nometadata';

async function newTable(prefix) {
  const name = uniqueTableName(prefix);
  const res = await call({ method: 'POST', path: '/Tables', body: { TableName: name } });
  assert.equal(res.status, 201, res.body);
  return name;
}

const keyPath = (table, pk, rk) => `/${table}(PartitionKey='${pk}',RowKey='${rk}')`;

describe('tools other than the SDKs', () => {
  let table;
  before(async () => {
    table = await newTable('tools');
    for (const [rk, flag] of [['a', true], ['b', false]]) {
      const res = await call({ method: 'POST', path: `/${table}`, body: { PartitionKey: 'p', RowKey: rk, Flag: flag } });
      assert.equal(res.status, 201, res.body);
    }
  });

  test('Boolean literals True / TRUE / False in $filter are constants, not property names', async () => {
    for (const [filter, keys] of [
      ['Flag eq True', ['a']], ['Flag eq TRUE', ['a']], ['Flag eq False', ['b']],
      ['Flag ne FALSE', ['a']], ['TRUE and RowKey eq \'b\'', ['b']], ['not True', []],
    ]) {
      const res = await call({ path: `/${table}()?$filter=${encodeURIComponent(filter)}`, headers: { Accept: NOMETA } });
      assert.equal(res.status, 200, `${filter}: ${res.body}`);
      assert.deepEqual(res.json.value.map((e) => e.RowKey), keys, filter);
    }
  });

  test('Storage Explorer\'s entity query: $select= selects every property, $top=0 is an empty page', async () => {
    // What the tool sends for a query with "Show top results" set to 0.
    const res = await call({
      path: `/${table}?$select=&$filter=PartitionKey%20eq%20'p'&$top=0`, headers: { Accept: NOMETA },
    });
    assert.equal(res.status, 200, res.body);
    assert.deepEqual(res.json.value, []);
    assert.equal(res.headers['x-ms-continuation-nextpartitionkey'], undefined);
    assert.equal(res.headers['x-ms-continuation-nextrowkey'], undefined);
    // Its query for the first page: every property of the matching entities.
    const page = await call({
      path: `/${table}?$select=&$filter=PartitionKey%20eq%20'p'&$top=1000`, headers: { Accept: NOMETA },
    });
    assert.equal(page.status, 200, page.body);
    assert.deepEqual(page.json.value.map((e) => [e.RowKey, e.Flag, typeof e.Timestamp]),
      [['a', true, 'string'], ['b', false, 'string']]);
    // Query Tables keeps refusing $top=0.
    assertError(await call({ path: '/Tables?$top=0' }), 400, 'InvalidInput');
  });

  test('If-Match with a lower-case weak prefix is compared: 204 when it matches, 412 when not', async () => {
    const ins = await call({ method: 'POST', path: `/${table}`, body: { PartitionKey: 'e', RowKey: 'r', A: 1 } });
    assert.equal(ins.status, 201, ins.body);
    const lower = 'w' + ins.headers.etag.slice(1);
    const ok = await call({ method: 'MERGE', path: keyPath(table, 'e', 'r'), body: { B: 2 }, headers: { 'If-Match': lower } });
    assert.equal(ok.status, 204, ok.body);
    const stale = await call({ method: 'PUT', path: keyPath(table, 'e', 'r'), body: { C: 3 }, headers: { 'If-Match': lower } });
    assertError(stale, 412, 'UpdateConditionNotSatisfied');
    const other = await call({ method: 'DELETE', path: keyPath(table, 'e', 'r'), headers: { 'If-Match': 'w/"wrong"' } });
    assertError(other, 412, 'UpdateConditionNotSatisfied');
  });

  test('POST /{account}/Tables/ with a trailing slash creates the table; GET lists', async () => {
    const name = uniqueTableName('slash');
    const res = await call({ method: 'POST', path: '/Tables/', body: { TableName: name }, headers: { Prefer: 'return-no-content' } });
    assert.equal(res.status, 204, res.body);
    const list = await call({ path: `/Tables/?$filter=${encodeURIComponent(`TableName eq '${name}'`)}`, headers: { Accept: NOMETA } });
    assert.equal(list.status, 200, list.body);
    assert.deepEqual(list.json.value, [{ TableName: name }]);
    const twice = await call({ method: 'POST', path: '/Tables//', body: { TableName: name } });
    assertError(twice, 400, 'InvalidUri');
  });

  test('a JSON null with an explicit @odata.type is accepted and not stored; merge leaves the old value', async () => {
    const body = {
      PartitionKey: 'n', RowKey: 'r', Keep: 1,
      'When@odata.type': 'Edm.DateTime', When: null, 'Ratio@odata.type': 'Edm.Double', Ratio: null,
    };
    const ins = await call({ method: 'POST', path: `/${table}`, body, headers: { Prefer: 'return-no-content' } });
    assert.equal(ins.status, 204, ins.body);
    const got = await call({ path: keyPath(table, 'n', 'r'), headers: { Accept: NOMETA } });
    assert.equal(got.status, 200, got.body);
    const { Timestamp, ...rest } = got.json;
    assert.deepEqual(rest, { PartitionKey: 'n', RowKey: 'r', Keep: 1 });
    const merge = await call({ method: 'MERGE', path: keyPath(table, 'n', 'r'), body: { 'Keep@odata.type': 'Edm.Int32', Keep: null }, headers: { 'If-Match': '*' } });
    assert.equal(merge.status, 204, merge.body);
    const after = await call({ path: keyPath(table, 'n', 'r'), headers: { Accept: NOMETA } });
    assert.equal(after.json.Keep, 1);
    const bad = await call({ method: 'POST', path: `/${table}`, body: { PartitionKey: 'n', RowKey: 'bad', 'X@odata.type': 'Edm.Nope', X: null } });
    assertError(bad, 400, 'InvalidInput');
  });

  test('CORS on actual requests: Vary: Origin when rules exist, even when the origin matches none', async () => {
    const xml = (rules) => '<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors>' + rules + '</Cors></StorageServiceProperties>';
    const rule = (origins) => `<CorsRule><AllowedOrigins>${origins}</AllowedOrigins><AllowedMethods>GET</AllowedMethods>` +
      '<AllowedHeaders>*</AllowedHeaders><ExposedHeaders>*</ExposedHeaders><MaxAgeInSeconds>5</MaxAgeInSeconds></CorsRule>';
    const setRules = async (rules) => {
      const res = await call({ method: 'PUT', path: '/?restype=service&comp=properties', body: xml(rules), headers: { 'Content-Type': 'application/xml' } });
      assert.equal(res.status, 202, res.body);
    };
    try {
      await setRules(rule('https://app.example'));
      const match = await call({ path: '/Tables', headers: { Origin: 'https://app.example' } });
      assert.equal(match.headers['access-control-allow-origin'], 'https://app.example');
      assert.equal(match.headers.vary, 'Origin');
      const miss = await call({ path: '/Tables', headers: { Origin: 'https://other.example' } });
      assert.equal(miss.status, 200, miss.body);
      assert.equal(miss.headers['access-control-allow-origin'], undefined);
      assert.equal(miss.headers.vary, 'Origin');
      // Without Origin too: a cache must not serve this answer to a browser.
      const noOrigin = await call({ path: '/Tables' });
      assert.equal(noOrigin.status, 200, noOrigin.body);
      assert.equal(noOrigin.headers['access-control-allow-origin'], undefined);
      assert.equal(noOrigin.headers.vary, 'Origin');

      await setRules(rule('*'));
      const any = await call({ path: '/Tables', headers: { Origin: 'https://other.example' } });
      assert.equal(any.headers['access-control-allow-origin'], '*');
      assert.equal(any.headers.vary, undefined);

      await setRules('');
      const none = await call({ path: '/Tables', headers: { Origin: 'https://other.example' } });
      assert.equal(none.headers.vary, undefined);
      assert.equal((await call({ path: '/Tables' })).headers.vary, undefined);
    } finally {
      await setRules('');
    }
  });
});
