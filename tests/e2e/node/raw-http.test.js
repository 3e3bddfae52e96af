'use strict';
// Raw HTTP against the real binary: hand-signed Shared Key / Shared Key Lite
// requests checking status codes, headers, error bodies, payload metadata
// levels, validation limits and a hand-built $batch, against spec/*.md.

const { test, describe, before } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { useServer, uniqueTableName } = require('./server');
const { request, rawExchange, sign } = require('./http');
const { assertError, assertEtag, etagOf, ticks, ETAG_RE, TIMESTAMP_RE } = require('./util');

const server = useServer();

const MINIMAL = 'application/json;odata=minimalmetadata';
const NOMETA = 'application/json;odata=nometadata';
const FULL = 'application/json;odata=fullmetadata';

const call = (opts) => request(server, opts);

async function createTable(name, headers = {}) {
  const res = await call({ method: 'POST', path: '/Tables', body: { TableName: name }, headers });
  return res;
}

async function newTable(prefix) {
  const name = uniqueTableName(prefix);
  const res = await createTable(name);
  assert.equal(res.status, 201, res.body);
  return name;
}

function keyPath(table, pk, rk) {
  const q = (s) => encodeURIComponent(s.replace(/'/g, "''")).replace(/'/g, '%27');
  return `/${table}(PartitionKey='${q(pk)}',RowKey='${q(rk)}')`;
}

async function insert(table, entity, headers = {}) {
  return call({ method: 'POST', path: `/${table}`, body: entity, headers });
}

async function getEntity(table, pk, rk, { accept = MINIMAL, query = '' } = {}) {
  return call({ path: keyPath(table, pk, rk) + query, headers: { Accept: accept } });
}

const GUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

describe('service basics', () => {
  test('GET /_health answers 200 without credentials', async () => {
    const res = await call({ rawTarget: '/_health', auth: 'none' });
    assert.equal(res.status, 200, res.body);
  });

  test('common response headers: x-ms-request-id, x-ms-version echo, Date, client request id echo', async () => {
    const clientId = `cid-${crypto.randomUUID()}`;
    const res = await call({ path: '/Tables', headers: { 'x-ms-client-request-id': clientId } });
    assert.equal(res.status, 200, res.body);
    assert.match(res.headers['x-ms-request-id'] || '', /^[0-9a-f-]{36}$/i, 'x-ms-request-id should be GUID-shaped');
    assert.equal(res.headers['x-ms-version'], '2019-02-02');
    assert.equal(res.headers['x-ms-client-request-id'], clientId);
    const date = res.headers.date;
    assert.match(date || '', /^[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT$/);
    assert.ok(Math.abs(Date.parse(date) - Date.now()) < 5 * 60 * 1000, 'Date header far from now');
    assert.equal(res.headers['cache-control'], 'no-cache');
    const second = await call({ path: '/Tables' });
    assert.notEqual(second.headers['x-ms-request-id'], res.headers['x-ms-request-id'], 'request ids must be unique');
    assert.equal(second.headers['x-ms-client-request-id'], undefined, 'no client request id echo when none was sent');
  });

  test('x-ms-version is echoed for another published version', async () => {
    const res = await call({ path: '/Tables', headers: { 'x-ms-version': '2018-03-28' } });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.headers['x-ms-version'], '2018-03-28');
  });

  test('malformed x-ms-version -> 400 InvalidHeaderValue', async () => {
    const res = await call({ path: '/Tables', headers: { 'x-ms-version': 'not-a-version' } });
    assertError(res, 400, 'InvalidHeaderValue');
  });

  test('client request id is echoed on errors too', async () => {
    const res = await call({
      path: `/${uniqueTableName('missing')}()`,
      headers: { 'x-ms-client-request-id': 'echo-me-on-error' },
    });
    assertError(res, 404, 'TableNotFound');
    assert.equal(res.headers['x-ms-client-request-id'], 'echo-me-on-error');
  });
});

describe('authentication', () => {
  test('Shared Key Lite is accepted', async () => {
    const res = await call({ path: '/Tables', auth: 'SharedKeyLite' });
    assert.equal(res.status, 200, res.body);
  });

  test('Shared Key signature over a POST with Content-Type is accepted', async () => {
    const name = uniqueTableName('sk');
    const res = await call({
      method: 'POST', path: '/Tables', body: { TableName: name },
      headers: { 'Content-Type': 'application/json;odata=nometadata' },
    });
    assert.equal(res.status, 201, res.body);
  });

  test('bad signature -> 403 AuthenticationFailed', async () => {
    const res = await call({ path: '/Tables', auth: () => 'SharedKey devstoreaccount1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' });
    assertError(res, 403, 'AuthenticationFailed');
  });

  test('signature made with another key -> 403 AuthenticationFailed', async () => {
    const res = await call({ path: '/Tables', key: crypto.randomBytes(64).toString('base64') });
    assertError(res, 403, 'AuthenticationFailed');
  });

  test('Shared Key Lite with a bad signature -> 403 AuthenticationFailed', async () => {
    const res = await call({ path: '/Tables', auth: 'SharedKeyLite', key: crypto.randomBytes(64).toString('base64') });
    assertError(res, 403, 'AuthenticationFailed');
  });

  test('signature over the wrong verb -> 403 AuthenticationFailed', async () => {
    const res = await call({
      method: 'DELETE', path: `/Tables('${uniqueTableName('x')}')`,
      auth: ({ date, resource }) => sign(server, { method: 'GET', target: resource.slice(server.account.length + 1), date }),
    });
    assertError(res, 403, 'AuthenticationFailed');
  });

  test('no Authorization header -> 403 AuthenticationFailed', async () => {
    const res = await call({ path: '/Tables', auth: 'none' });
    assertError(res, 403, 'AuthenticationFailed');
  });

  test('signed path differs from request path -> 403', async () => {
    const res = await call({ path: '/Tables', signPath: `/${server.account}/Tablez` });
    assertError(res, 403, 'AuthenticationFailed');
  });

  test('missing date headers -> 403 AuthenticationFailed', async () => {
    const res = await call({ path: '/Tables', headers: { 'x-ms-date': null } });
    assertError(res, 403, 'AuthenticationFailed');
  });

  test('Date header is used when x-ms-date is absent', async () => {
    const res = await call({ path: '/Tables', headers: { 'x-ms-date': null, Date: new Date().toUTCString() } });
    assert.equal(res.status, 200, res.body);
  });

  test('date more than 15 minutes old -> 403 AuthenticationFailed', async () => {
    const old = new Date(Date.now() - 60 * 60 * 1000).toUTCString();
    const res = await call({ path: '/Tables', date: old });
    assertError(res, 403, 'AuthenticationFailed');
  });

  test('account SAS signed by hand: the string-to-sign has a ses line from 2020-12-06', async () => {
    // Account SAS string-to-sign: account, sp, ss, srt, st, se, sip, spr, sv,
    // each followed by a newline, and from sv 2020-12-06 the encryption
    // scope (ses, empty here) too.
    const se = new Date(Date.now() + 3600 * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    const sasFor = (sv, withSes) => {
      const fields = [server.account, 'rl', 't', 'sco', '', se, '', 'https,http', sv];
      if (withSes) fields.push('');
      const sig = hmacSas(fields.map((f) => `${f}\n`).join(''));
      return `sv=${sv}&ss=t&srt=sco&sp=rl&se=${encodeURIComponent(se)}&spr=https,http&sig=${encodeURIComponent(sig)}`;
    };
    const hmacSas = (sts) => crypto.createHmac('sha256', Buffer.from(server.key, 'base64')).update(sts, 'utf8').digest('base64');
    const get = (sas) => call({ path: `/Tables?${sas}`, auth: 'none' });
    assert.equal((await get(sasFor('2019-02-02', false))).status, 200);
    assert.equal((await get(sasFor('2021-12-02', true))).status, 200);
    assertError(await get(sasFor('2021-12-02', false)), 403, 'AuthenticationFailed');
    assertError(await get(sasFor('2019-02-02', true)), 403, 'AuthenticationFailed');
  });

  test('the signature covers ?comp= but not other query parameters', async () => {
    const table = await newTable('comp');
    const ok = await call({ path: `/${table}()?$top=1&timeout=30` });
    assert.equal(ok.status, 200, ok.body);
    // Signing "...?comp=acl" for a request without comp must fail.
    const bad = await call({ path: `/${table}()`, signPath: `/${server.account}/${table}()?comp=acl` });
    assertError(bad, 403, 'AuthenticationFailed');
  });
});

describe('tables', () => {
  test('Create Table: 201, Location, minimal-metadata body, no Preference-Applied', async () => {
    const name = uniqueTableName('create');
    const res = await createTable(name);
    assert.equal(res.status, 201, res.body);
    assert.equal(res.headers['content-type'], 'application/json;odata=minimalmetadata;streaming=true;charset=utf-8');
    assert.equal(res.headers.location, `${server.endpoint}/Tables('${name}')`);
    assert.equal(res.headers['preference-applied'], undefined);
    assert.deepEqual(res.json, { 'odata.metadata': `${server.endpoint}/$metadata#Tables/@Element`, TableName: name });
  });

  test('Create Table with Prefer: return-no-content -> 204 with Preference-Applied, DataServiceId', async () => {
    const name = uniqueTableName('nocontent');
    const res = await createTable(name, { Prefer: 'return-no-content' });
    assert.equal(res.status, 204, res.body);
    assert.equal(res.body, '');
    assert.equal(res.headers['preference-applied'], 'return-no-content');
    assert.equal(res.headers.location, `${server.endpoint}/Tables('${name}')`);
    assert.equal(res.headers.dataserviceid, `${server.endpoint}/Tables('${name}')`);
  });

  test('Create Table with Prefer: return-content -> 201 with Preference-Applied', async () => {
    const name = uniqueTableName('content');
    const res = await createTable(name, { Prefer: 'return-content' });
    assert.equal(res.status, 201, res.body);
    assert.equal(res.headers['preference-applied'], 'return-content');
    assert.equal(res.json.TableName, name);
  });

  test('Create Table at nometadata and fullmetadata', async () => {
    const a = uniqueTableName('nm');
    const resA = await createTable(a, { Accept: NOMETA });
    assert.equal(resA.status, 201, resA.body);
    assert.equal(resA.headers['content-type'], 'application/json;odata=nometadata;streaming=true;charset=utf-8');
    assert.deepEqual(resA.json, { TableName: a });
    const b = uniqueTableName('fm');
    const resB = await createTable(b, { Accept: FULL });
    assert.equal(resB.status, 201, resB.body);
    assert.deepEqual(resB.json, {
      'odata.metadata': `${server.endpoint}/$metadata#Tables/@Element`,
      'odata.type': `${server.account}.Tables`,
      'odata.id': `${server.endpoint}/Tables('${b}')`,
      'odata.editLink': `Tables('${b}')`,
      TableName: b,
    });
  });

  test('existing table (any letter case) -> 409 TableAlreadyExists', async () => {
    const name = await newTable('dup');
    const res = await createTable(name.toUpperCase());
    assertError(res, 409, 'TableAlreadyExists', { message: 'The table specified already exists.' });
  });

  test('Prefer is echoed as Preference-Applied on Create Table errors', async () => {
    const name = await newTable('dupprefer');
    const res = await createTable(name, { Prefer: 'return-no-content' });
    assertError(res, 409, 'TableAlreadyExists');
    assert.equal(res.headers['preference-applied'], 'return-no-content');
  });

  for (const [label, name, status, code] of [
    ['starts with a digit', '1abc', 400, 'InvalidResourceName'],
    ['contains a dash', 'ab-cd', 400, 'InvalidResourceName'],
    ['contains an underscore', 'ab_cd', 400, 'InvalidResourceName'],
    ['too short', 'ab', 400, 'OutOfRangeInput'],
    ['too long (64)', `a${'b'.repeat(63)}`, 400, 'OutOfRangeInput'],
    ['reserved "tables"', 'tables', 400, 'InvalidInput'],
    ['reserved "TABLES"', 'TABLES', 400, 'InvalidInput'],
  ]) {
    test(`bad table name (${label}) -> ${status} ${code}`, async () => {
      const res = await createTable(name);
      assertError(res, status, code);
    });
  }

  test('63-character and 3-character names are accepted', async () => {
    const long = uniqueTableName('L') + 'x'.repeat(63);
    const res = await createTable(long.slice(0, 63));
    assert.equal(res.status, 201, res.body);
    const short = `a${crypto.randomBytes(4).toString('hex')}`.slice(0, 3);
    const res2 = await createTable(short);
    assert.ok(res2.status === 201 || res2.status === 409, res2.body);
  });

  test('Create Table with a body that is not JSON -> 400 InvalidInput', async () => {
    const res = await call({ method: 'POST', path: '/Tables', body: '{"TableName": "abc"' });
    assertError(res, 400, 'InvalidInput');
  });

  test('Query Tables at three metadata levels, original case kept', async () => {
    const name = `Mixed${uniqueTableName('Case')}`;
    assert.equal((await createTable(name)).status, 201);
    const filter = encodeURIComponent(`TableName eq '${name}'`);
    const min = await call({ path: `/Tables?$filter=${filter}` });
    assert.equal(min.status, 200, min.body);
    assert.equal(min.headers['content-type'], 'application/json;odata=minimalmetadata;streaming=true;charset=utf-8');
    assert.deepEqual(min.json, { 'odata.metadata': `${server.endpoint}/$metadata#Tables`, value: [{ TableName: name }] });
    const none = await call({ path: `/Tables()?$filter=${filter}`, headers: { Accept: NOMETA } });
    assert.deepEqual(none.json, { value: [{ TableName: name }] });
    const full = await call({ path: `/Tables?$filter=${filter}`, headers: { Accept: FULL } });
    assert.deepEqual(full.json.value, [{
      'odata.type': `${server.account}.Tables`,
      'odata.id': `${server.endpoint}/Tables('${name}')`,
      'odata.editLink': `Tables('${name}')`,
      TableName: name,
    }]);
  });

  test('Query Tables pages with $top and NextTableName, in name order', async () => {
    const prefix = `pg${crypto.randomBytes(4).toString('hex')}`;
    const names = ['c', 'A', 'b', 'D', 'e'].map((s) => `${prefix}${s}x`);
    for (const n of names) assert.equal((await createTable(n)).status, 201);
    const filter = encodeURIComponent(`TableName ge '${prefix}' and TableName lt '${prefix}~'`);
    const seen = [];
    let token;
    let pages = 0;
    do {
      const res = await call({ path: `/Tables?$filter=${filter}&$top=2${token ? `&NextTableName=${encodeURIComponent(token)}` : ''}` });
      assert.equal(res.status, 200, res.body);
      pages += 1;
      seen.push(...res.json.value.map((t) => t.TableName));
      token = res.headers['x-ms-continuation-nexttablename'];
      if (pages < 3) assert.ok(token, 'expected a continuation token while tables remain');
      assert.ok(pages <= 5, 'too many pages');
    } while (token);
    assert.equal(pages, 3, 'five tables at $top=2 give exactly three pages');
    assert.deepEqual(seen, [...names].sort());
  });

  test('Query Tables with a bad filter or $top -> 400 InvalidInput', async () => {
    assertError(await call({ path: `/Tables?$filter=${encodeURIComponent("TableName eq 'x")}` }), 400, 'InvalidInput');
    assertError(await call({ path: '/Tables?$top=-1' }), 400, 'InvalidInput');
    assertError(await call({ path: '/Tables?$top=abc' }), 400, 'InvalidInput');
  });

  test("GET /Tables('name') -> 200, then 404 ResourceNotFound once deleted", async () => {
    const name = await newTable('single');
    const res = await call({ path: `/Tables('${name}')` });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.json.TableName, name);
    assert.equal(res.json['odata.metadata'], `${server.endpoint}/$metadata#Tables/@Element`);
    const del = await call({ method: 'DELETE', path: `/Tables('${name}')` });
    assert.equal(del.status, 204, del.body);
    assert.equal(del.body, '');
    assertError(await call({ path: `/Tables('${name}')` }), 404, 'ResourceNotFound');
  });

  test('Delete Table: case-insensitive, %27 quotes, entities gone, absent -> 404 ResourceNotFound', async () => {
    const name = await newTable('del');
    assert.equal((await insert(name, { PartitionKey: 'p', RowKey: 'r' })).status, 201);
    const del = await call({ method: 'DELETE', path: `/Tables(%27${name.toUpperCase()}%27)` });
    assert.equal(del.status, 204, del.body);
    assertError(await call({ method: 'DELETE', path: `/Tables('${name}')` }), 404, 'ResourceNotFound',
      { message: 'The specified resource does not exist.' });
    assertError(await getEntity(name, 'p', 'r'), 404, 'TableNotFound');
    // Immediate re-creation works and starts empty.
    assert.equal((await createTable(name)).status, 201);
    const q = await call({ path: `/${name}()` });
    assert.deepEqual(q.json.value, []);
  });

  test('unsupported verb on /Tables -> 405', async () => {
    const res = await call({ method: 'PUT', path: '/Tables', body: { TableName: 'abc' } });
    assertError(res, 405, ['MethodNotAllowed', 'UnsupportedHttpVerb']);
  });
});

describe('entities', () => {
  let table;
  before(async () => { table = await newTable('ent'); });

  test('Insert: 201, ETag matches Timestamp, Location, minimal-metadata body', async () => {
    const res = await insert(table, { PartitionKey: 'p1', RowKey: 'r1', Amount: 12.5, Status: 'open' });
    assert.equal(res.status, 201, res.body);
    assert.equal(res.headers['content-type'], 'application/json;odata=minimalmetadata;streaming=true;charset=utf-8');
    assertEtag(res.headers.etag);
    assert.equal(res.headers.location, `${server.endpoint}/${table}(PartitionKey='p1',RowKey='r1')`);
    assert.equal(res.headers['preference-applied'], undefined);
    const body = res.json;
    assert.equal(body['odata.metadata'], `${server.endpoint}/$metadata#${table}/@Element`);
    assert.equal(body['odata.etag'], res.headers.etag);
    assert.match(body.Timestamp, TIMESTAMP_RE);
    assert.equal(etagOf(body.Timestamp), res.headers.etag);
    assert.ok(Math.abs(Number(ticks(body.Timestamp) / 10000n) - Date.now()) < 5 * 60 * 1000, 'Timestamp far from now');
    assert.equal(body.PartitionKey, 'p1');
    assert.equal(body.RowKey, 'r1');
    assert.equal(body.Amount, 12.5);
    assert.equal(body.Status, 'open');
  });

  test('Insert with Prefer: return-no-content -> 204, ETag, Location, DataServiceId, Preference-Applied', async () => {
    const res = await insert(table, { PartitionKey: 'p1', RowKey: 'nc' }, { Prefer: 'return-no-content' });
    assert.equal(res.status, 204, res.body);
    assert.equal(res.body, '');
    assertEtag(res.headers.etag);
    const url = `${server.endpoint}/${table}(PartitionKey='p1',RowKey='nc')`;
    assert.equal(res.headers.location, url);
    assert.equal(res.headers.dataserviceid, url);
    assert.equal(res.headers['preference-applied'], 'return-no-content');
  });

  test('Insert with Prefer: return-content -> 201 with Preference-Applied', async () => {
    const res = await insert(table, { PartitionKey: 'p1', RowKey: 'rc' }, { Prefer: 'return-content' });
    assert.equal(res.status, 201, res.body);
    assert.equal(res.headers['preference-applied'], 'return-content');
  });

  test('Insert of an existing key -> 409 EntityAlreadyExists', async () => {
    assert.equal((await insert(table, { PartitionKey: 'dup', RowKey: 'r' })).status, 201);
    const res = await insert(table, { PartitionKey: 'dup', RowKey: 'r', X: 1 });
    assertError(res, 409, 'EntityAlreadyExists', { message: 'The specified entity already exists.' });
  });

  test('Insert into a missing table -> 404 TableNotFound', async () => {
    const res = await insert(uniqueTableName('nope'), { PartitionKey: 'a', RowKey: 'b' });
    assertError(res, 404, 'TableNotFound', { message: 'The table specified does not exist.' });
  });

  test('Query on a missing table -> 404 TableNotFound', async () => {
    assertError(await call({ path: `/${uniqueTableName('nope')}()` }), 404, 'TableNotFound');
  });

  test("point query T(PartitionKey='a',RowKey='b'): literal and %27 quotes, ETag header", async () => {
    const ins = await insert(table, { PartitionKey: 'a', RowKey: 'b', V: 'x' });
    assert.equal(ins.status, 201, ins.body);
    for (const p of [`/${table}(PartitionKey='a',RowKey='b')`, `/${table}(PartitionKey=%27a%27,RowKey=%27b%27)`]) {
      const res = await call({ path: p });
      assert.equal(res.status, 200, `${p}: ${res.body}`);
      assert.equal(res.headers.etag, ins.headers.etag);
      assert.equal(res.json['odata.metadata'], `${server.endpoint}/$metadata#${table}/@Element`);
      assert.equal(res.json['odata.etag'], ins.headers.etag);
      assert.equal(res.json.V, 'x');
      assert.equal(res.json.Timestamp, ins.json.Timestamp);
    }
  });

  test("keys with quotes, spaces, unicode and empty keys round-trip through the URL", async () => {
    const keys = [["O'Brien", "it's"], ['a b&c+d%', 'ü€😀'], ['', '']];
    for (const [pk, rk] of keys) {
      const ins = await insert(table, { PartitionKey: pk, RowKey: rk, K: `${pk}|${rk}` });
      assert.equal(ins.status, 201, ins.body);
      const res = await getEntity(table, pk, rk);
      assert.equal(res.status, 200, `${pk}/${rk}: ${res.body}`);
      assert.equal(res.json.PartitionKey, pk);
      assert.equal(res.json.RowKey, rk);
      assert.equal(res.json.K, `${pk}|${rk}`);
    }
    // Quote doubled inside the key, written literally.
    const res = await call({ path: `/${table}(PartitionKey='O''Brien',RowKey='it''s')` });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.json.PartitionKey, "O'Brien");
  });

  test('point query for an absent entity -> 404 ResourceNotFound', async () => {
    assertError(await getEntity(table, 'nope', 'nope'), 404, 'ResourceNotFound',
      { message: 'The specified resource does not exist.' });
  });

  test('point query with $select returns only the selected properties (+ null for absent)', async () => {
    assert.equal((await insert(table, { PartitionKey: 'sel', RowKey: '1', A: 1, B: 'two', C: true })).status, 201);
    const res = await getEntity(table, 'sel', '1', { query: '?$select=A,Missing' });
    assert.equal(res.status, 200, res.body);
    const { 'odata.metadata': _meta, 'odata.etag': etag, ...rest } = res.json;
    assertEtag(etag);
    assert.deepEqual(rest, { A: 1, Missing: null });
  });

  test('URL key with forbidden characters -> 400 (InvalidInput for / and \\, OutOfRangeInput for #)', async () => {
    assertError(await call({ path: `/${table}(PartitionKey='a%2Fb',RowKey='r')` }), 400, 'InvalidInput');
    assertError(await call({ path: `/${table}(PartitionKey='a%5Cb',RowKey='r')` }), 400, 'InvalidInput');
    assertError(await call({ path: `/${table}(PartitionKey='a%23b',RowKey='r')` }), 400, 'OutOfRangeInput');
  });

  test('key path in other spellings -> 400 InvalidInput', async () => {
    assertError(await call({ path: `/${table}(RowKey='r',PartitionKey='p')` }), 400, ['InvalidInput', 'InvalidUri']);
    assertError(await call({ path: `/${table}('p')` }), 400, ['InvalidInput', 'InvalidUri']);
  });

  test('ETags change on every write; Timestamp in a request body is ignored', async () => {
    const a = await insert(table, { PartitionKey: 'etag', RowKey: '1', Timestamp: '2001-01-01T00:00:00Z', N: 1 });
    assert.equal(a.status, 201, a.body);
    assert.notEqual(a.json.Timestamp, '2001-01-01T00:00:00Z');
    let etag = a.headers.etag;
    for (let i = 0; i < 5; i += 1) {
      const res = await call({ method: 'PUT', path: keyPath(table, 'etag', '1'), body: { N: i }, headers: { 'If-Match': etag } });
      assert.equal(res.status, 204, res.body);
      assertEtag(res.headers.etag);
      assert.notEqual(res.headers.etag, etag, 'consecutive writes must produce different ETags');
      assert.ok(ticks(ETAG_RE.exec(res.headers.etag)[1].replace(/%3A/g, ':')) > ticks(ETAG_RE.exec(etag)[1].replace(/%3A/g, ':')),
        'Timestamps must increase');
      etag = res.headers.etag;
    }
    const got = await getEntity(table, 'etag', '1');
    assert.equal(got.headers.etag, etag);
    assert.equal(got.json.N, 4);
  });
});

describe('update, merge, delete and If-Match', () => {
  let table;
  before(async () => { table = await newTable('upd'); });

  async function seed(rk, props = { A: 'a', B: 1 }) {
    const res = await insert(table, { PartitionKey: 'p', RowKey: rk, ...props });
    assert.equal(res.status, 201, res.body);
    return res.headers.etag;
  }

  async function props(rk) {
    const res = await getEntity(table, 'p', rk, { accept: NOMETA });
    assert.equal(res.status, 200, res.body);
    const { PartitionKey, RowKey, Timestamp, ...rest } = res.json;
    return rest;
  }

  test('PUT with matching If-Match replaces (204, new ETag, no body)', async () => {
    const etag = await seed('put');
    const res = await call({ method: 'PUT', path: keyPath(table, 'p', 'put'), body: { C: 'c' }, headers: { 'If-Match': etag } });
    assert.equal(res.status, 204, res.body);
    assert.equal(res.body, '');
    assertEtag(res.headers.etag);
    assert.equal(res.headers['preference-applied'], undefined);
    assert.deepEqual(await props('put'), { C: 'c' });
  });

  test('PUT with a stale ETag -> 412 UpdateConditionNotSatisfied, entity unchanged', async () => {
    await seed('stale');
    const res = await call({
      method: 'PUT', path: keyPath(table, 'p', 'stale'), body: { C: 'c' },
      headers: { 'If-Match': `W/"datetime'2000-01-01T00%3A00%3A00Z'"` },
    });
    assertError(res, 412, 'UpdateConditionNotSatisfied', { message: 'The update condition specified in the request was not satisfied.' });
    assert.deepEqual(await props('stale'), { A: 'a', B: 1 });
    const weird = await call({ method: 'PUT', path: keyPath(table, 'p', 'stale'), body: {}, headers: { 'If-Match': 'W/"wrong"' } });
    assertError(weird, 412, 'UpdateConditionNotSatisfied');
  });

  test('PUT/MERGE/DELETE with If-Match on an absent entity -> 404 ResourceNotFound', async () => {
    for (const method of ['PUT', 'MERGE', 'PATCH', 'DELETE']) {
      const res = await call({ method, path: keyPath(table, 'p', 'absent'), body: method === 'DELETE' ? undefined : { X: 1 }, headers: { 'If-Match': '*' } });
      assertError(res, 404, 'ResourceNotFound');
    }
  });

  test('malformed If-Match -> 400 InvalidInput', async () => {
    await seed('malformed');
    const res = await call({ method: 'PUT', path: keyPath(table, 'p', 'malformed'), body: { X: 1 }, headers: { 'If-Match': 'abc' } });
    assertError(res, 400, 'InvalidInput');
    assert.deepEqual(await props('malformed'), { A: 'a', B: 1 });
  });

  test('PUT without If-Match upserts (insert, then replace)', async () => {
    const ins = await call({ method: 'PUT', path: keyPath(table, 'p', 'upsert'), body: { A: 'x' } });
    assert.equal(ins.status, 204, ins.body);
    assertEtag(ins.headers.etag);
    assert.deepEqual(await props('upsert'), { A: 'x' });
    const rep = await call({ method: 'PUT', path: keyPath(table, 'p', 'upsert'), body: { B: 2 } });
    assert.equal(rep.status, 204, rep.body);
    assert.deepEqual(await props('upsert'), { B: 2 });
  });

  test('MERGE verb with If-Match: * merges; null values are ignored; types may change', async () => {
    await seed('merge', { A: 'a', B: 1, C: 'keep' });
    const res = await call({ method: 'MERGE', path: keyPath(table, 'p', 'merge'), body: { B: 'now a string', D: true, C: null }, headers: { 'If-Match': '*' } });
    assert.equal(res.status, 204, res.body);
    assertEtag(res.headers.etag);
    assert.deepEqual(await props('merge'), { A: 'a', B: 'now a string', C: 'keep', D: true });
  });

  test('POST with X-HTTP-Method: MERGE merges (signature over POST)', async () => {
    const etag = await seed('tunnel');
    const res = await call({ method: 'POST', path: keyPath(table, 'p', 'tunnel'), body: { Z: 26 }, headers: { 'X-HTTP-Method': 'MERGE', 'If-Match': etag } });
    assert.equal(res.status, 204, res.body);
    assertEtag(res.headers.etag);
    assert.notEqual(res.headers.etag, etag);
    assert.deepEqual(await props('tunnel'), { A: 'a', B: 1, Z: 26 });
  });

  test('POST with X-HTTP-Method: DELETE deletes', async () => {
    await seed('tunneldel');
    const res = await call({ method: 'POST', path: keyPath(table, 'p', 'tunneldel'), headers: { 'X-HTTP-Method': 'DELETE', 'If-Match': '*' } });
    assert.equal(res.status, 204, res.body);
    assertError(await getEntity(table, 'p', 'tunneldel'), 404, 'ResourceNotFound');
  });

  test('PATCH without If-Match is Insert Or Merge', async () => {
    const a = await call({ method: 'PATCH', path: keyPath(table, 'p', 'patch'), body: { A: 1 } });
    assert.equal(a.status, 204, a.body);
    const b = await call({ method: 'PATCH', path: keyPath(table, 'p', 'patch'), body: { B: 2 } });
    assert.equal(b.status, 204, b.body);
    assert.deepEqual(await props('patch'), { A: 1, B: 2 });
  });

  test('MERGE with a stale ETag -> 412', async () => {
    await seed('mergestale');
    const res = await call({ method: 'MERGE', path: keyPath(table, 'p', 'mergestale'), body: { B: 5 }, headers: { 'If-Match': `W/"datetime'2000-01-01T00%3A00%3A00Z'"` } });
    assertError(res, 412, 'UpdateConditionNotSatisfied');
  });

  test('X-HTTP-Method on a non-POST -> 400 XMethodNotUsingPost; unknown value -> 400 XMethodIncorrectValue', async () => {
    await seed('xmethod');
    const a = await call({ method: 'PUT', path: keyPath(table, 'p', 'xmethod'), body: { A: 1 }, headers: { 'X-HTTP-Method': 'MERGE' } });
    assertError(a, 400, 'XMethodNotUsingPost');
    const b = await call({ method: 'POST', path: keyPath(table, 'p', 'xmethod'), body: { A: 1 }, headers: { 'X-HTTP-Method': 'FROB' } });
    assertError(b, 400, 'XMethodIncorrectValue');
    assert.deepEqual(await props('xmethod'), { A: 'a', B: 1 });
  });

  test('DELETE: without If-Match -> 400 InvalidInput (nothing deleted); with * -> 204; again -> 404', async () => {
    const etag = await seed('del');
    assertError(await call({ method: 'DELETE', path: keyPath(table, 'p', 'del') }), 400, 'InvalidInput');
    assert.deepEqual(await props('del'), { A: 'a', B: 1 });
    assertError(await call({ method: 'DELETE', path: keyPath(table, 'p', 'del'), headers: { 'If-Match': `W/"datetime'2000-01-01T00%3A00%3A00Z'"` } }), 412, 'UpdateConditionNotSatisfied');
    const ok = await call({ method: 'DELETE', path: keyPath(table, 'p', 'del'), headers: { 'If-Match': etag } });
    assert.equal(ok.status, 204, ok.body);
    assert.equal(ok.body, '');
    assertError(await call({ method: 'DELETE', path: keyPath(table, 'p', 'del'), headers: { 'If-Match': '*' } }), 404, 'ResourceNotFound');
  });

  test('update on a missing table -> 404 TableNotFound', async () => {
    const res = await call({ method: 'PUT', path: keyPath(uniqueTableName('gone'), 'p', 'r'), body: { A: 1 } });
    assertError(res, 404, 'TableNotFound');
  });

  test('body keys that differ from the URL keys: the URL keys win', async () => {
    const res = await call({ method: 'PUT', path: keyPath(table, 'p', 'urlwins'), body: { PartitionKey: 'other', RowKey: 'other', A: 1 } });
    assert.equal(res.status, 204, res.body);
    assert.deepEqual(await props('urlwins'), { A: 1 });
    assertError(await getEntity(table, 'other', 'other'), 404, 'ResourceNotFound');
  });
});

describe('payload: metadata levels and EDM types', () => {
  let table;
  const entity = {
    PartitionKey: 'types',
    RowKey: '1',
    Str: 'hello',
    Bool: true,
    I32: -2147483648,
    'I64@odata.type': 'Edm.Int64',
    I64: '9223372036854775807',
    Dbl: 12.5,
    'Whole@odata.type': 'Edm.Double',
    Whole: '5',
    'NaNv@odata.type': 'Edm.Double',
    NaNv: 'NaN',
    'Inf@odata.type': 'Edm.Double',
    Inf: 'Infinity',
    'NInf@odata.type': 'Edm.Double',
    NInf: '-Infinity',
    'Due@odata.type': 'Edm.DateTime',
    Due: '2024-12-01T10:20:30.1234567Z',
    'Ref@odata.type': 'Edm.Guid',
    Ref: 'C9DA6455-213D-42C9-9A79-3E9149A57833',
    'Blob@odata.type': 'Edm.Binary',
    Blob: 'AQID',
  };

  before(async () => {
    table = await newTable('payload');
    const res = await insert(table, entity);
    assert.equal(res.status, 201, res.body);
  });

  test('minimalmetadata: annotations exactly for Int64, Binary, DateTime, Guid and special Doubles', async () => {
    const res = await getEntity(table, 'types', '1');
    assert.equal(res.status, 200, res.body);
    assert.equal(res.headers['content-type'], 'application/json;odata=minimalmetadata;streaming=true;charset=utf-8');
    const b = res.json;
    const annotations = Object.keys(b).filter((k) => k.endsWith('@odata.type')).sort();
    assert.deepEqual(annotations, ['Blob@odata.type', 'Due@odata.type', 'I64@odata.type', 'Inf@odata.type', 'NInf@odata.type', 'NaNv@odata.type', 'Ref@odata.type']);
    assert.equal(b['I64@odata.type'], 'Edm.Int64');
    assert.equal(b.I64, '9223372036854775807');
    assert.equal(b['Blob@odata.type'], 'Edm.Binary');
    assert.equal(b.Blob, 'AQID');
    assert.equal(b['Due@odata.type'], 'Edm.DateTime');
    assert.equal(b.Due, '2024-12-01T10:20:30.1234567Z');
    assert.equal(b['Ref@odata.type'], 'Edm.Guid');
    assert.equal(b.Ref, 'c9da6455-213d-42c9-9a79-3e9149a57833', 'Guid output is lower-case');
    assert.equal(b['NaNv@odata.type'], 'Edm.Double');
    assert.equal(b.NaNv, 'NaN');
    assert.equal(b.Inf, 'Infinity');
    assert.equal(b.NInf, '-Infinity');
    assert.equal(b.Str, 'hello');
    assert.equal(b.Bool, true);
    assert.equal(b.I32, -2147483648);
    assert.equal(b.Dbl, 12.5);
    assert.equal(b.Whole, 5);
    assert.match(res.body, /"Whole":5\.0[,}]/, 'a whole Double must be written with .0');
    assert.ok(!('odata.type' in b) && !('odata.id' in b) && !('odata.editLink' in b));
    assertEtag(b['odata.etag']);
    assert.equal(b['odata.metadata'], `${server.endpoint}/$metadata#${table}/@Element`);
  });

  test('annotation precedes its value in the output', async () => {
    const res = await getEntity(table, 'types', '1');
    for (const name of ['I64', 'Blob', 'Due', 'Ref', 'NaNv']) {
      const a = res.body.indexOf(`"${name}@odata.type"`);
      const v = res.body.indexOf(`"${name}":`);
      assert.ok(a >= 0 && v > a, `${name}@odata.type should come before ${name}`);
    }
  });

  test('nometadata: no odata.* members, no annotations', async () => {
    const res = await getEntity(table, 'types', '1', { accept: NOMETA });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.headers['content-type'], 'application/json;odata=nometadata;streaming=true;charset=utf-8');
    const keys = Object.keys(res.json);
    assert.deepEqual(keys.filter((k) => k.startsWith('odata.') || k.includes('@odata.')), []);
    assert.equal(res.json.I64, '9223372036854775807');
    assert.equal(res.json.NaNv, 'NaN');
    assert.ok(res.headers.etag, 'ETag header still sent');
  });

  test('fullmetadata: odata.type/id/editLink, Timestamp annotated, same property annotations', async () => {
    const res = await getEntity(table, 'types', '1', { accept: FULL });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.headers['content-type'], 'application/json;odata=fullmetadata;streaming=true;charset=utf-8');
    const b = res.json;
    assert.equal(b['odata.type'], `${server.account}.${table}`);
    assert.equal(b['odata.id'], `${server.endpoint}/${table}(PartitionKey='types',RowKey='1')`);
    assert.equal(b['odata.editLink'], `${table}(PartitionKey='types',RowKey='1')`);
    assert.equal(b['Timestamp@odata.type'], 'Edm.DateTime');
    assertEtag(b['odata.etag']);
    const annotations = Object.keys(b).filter((k) => k.endsWith('@odata.type')).sort();
    assert.deepEqual(annotations, ['Blob@odata.type', 'Due@odata.type', 'I64@odata.type', 'Inf@odata.type', 'NInf@odata.type', 'NaNv@odata.type', 'Ref@odata.type', 'Timestamp@odata.type']);
  });

  test('$format overrides Accept; application/json alone means minimal metadata', async () => {
    const a = await getEntity(table, 'types', '1', { accept: MINIMAL, query: `?$format=${encodeURIComponent(NOMETA)}` });
    assert.equal(a.status, 200, a.body);
    assert.equal(a.json['odata.etag'], undefined);
    const b = await getEntity(table, 'types', '1', { accept: 'application/json' });
    assert.equal(b.status, 200, b.body);
    assertEtag(b.json['odata.etag']);
    assert.equal(b.json['I64@odata.type'], 'Edm.Int64');
    const c = await getEntity(table, 'types', '1', { accept: 'application/json; odata=fullmetadata' });
    assert.equal(c.json['odata.type'], `${server.account}.${table}`);
  });

  test('no Accept at version 2019-02-02 -> 415 AtomFormatNotSupported', async () => {
    const res = await call({ path: keyPath(table, 'types', '1'), headers: { Accept: null } });
    assert.equal(res.status, 415, res.body);
    assert.equal(res.headers['x-ms-error-code'], 'AtomFormatNotSupported');
  });

  test('Accept odata=verbose -> 415 JsonVerboseFormatNotSupported', async () => {
    const res = await call({ path: keyPath(table, 'types', '1'), headers: { Accept: 'application/json;odata=verbose' } });
    assert.equal(res.status, 415, res.body);
    assert.equal(res.headers['x-ms-error-code'], 'JsonVerboseFormatNotSupported');
  });

  test('query results carry the same annotations; nometadata list has no odata.metadata', async () => {
    const min = await call({ path: `/${table}()` });
    assert.equal(min.status, 200, min.body);
    assert.equal(min.json['odata.metadata'], `${server.endpoint}/$metadata#${table}`);
    assert.equal(min.json.value.length, 1);
    assert.equal(min.json.value[0]['I64@odata.type'], 'Edm.Int64');
    assertEtag(min.json.value[0]['odata.etag']);
    const none = await call({ path: `/${table}()`, headers: { Accept: NOMETA } });
    assert.deepEqual(Object.keys(none.json), ['value']);
  });

  test('untyped input: integer -> Int32, out-of-Int32 integer and fractions -> Double', async () => {
    const res = await insert(table, { PartitionKey: 'untyped', RowKey: '1', Small: 7, Big: 2147483648, Frac: 0.1, Exp: 1e300 });
    assert.equal(res.status, 201, res.body);
    const got = await getEntity(table, 'untyped', '1');
    assert.match(got.body, /"Small":7[,}]/);
    assert.match(got.body, /"Big":(2147483648\.0|2\.147483648E\+?0*9)[,}]/i, 'out-of-range integer is stored as Double');
    assert.match(got.body, /"Frac":0\.1[,}]/);
    assert.equal(got.json.Exp, 1e300);
    // Filters confirm the stored types: Int64 literal never matches Int32; a Double literal only Doubles.
    const q = async (f) => (await call({ path: `/${table}()?$filter=${encodeURIComponent(`PartitionKey eq 'untyped' and ${f}`)}` })).json.value.length;
    assert.equal(await q('Small eq 7'), 1);
    assert.equal(await q('Small eq 7L'), 0);
    assert.equal(await q('Big eq 2147483648.0'), 1);
  });

  test('explicit annotations on input: Int32 as string, Int64 as number, Double as string', async () => {
    const res = await insert(table, {
      PartitionKey: 'ann', RowKey: '1',
      'A@odata.type': 'Edm.Int32', A: '42',
      'B@odata.type': 'Edm.Int64', B: 5,
      'C@odata.type': 'Edm.Double', C: '1E+20',
      'D@odata.type': 'Edm.String', D: 'str',
      'E@odata.type': 'Edm.Boolean', E: false,
      'F@odata.type': 'Edm.Double', F: 'nan',
      'G@odata.type': 'Edm.Binary', G: '',
      'H@odata.type': 'Edm.DateTime', H: '2024-01-02T03:04:05+02:00',
      'I@odata.type': 'Edm.DateTime', I: '2024-01-02T03:04:05.5000000Z',
      S: '',
      N: null,
    });
    assert.equal(res.status, 201, res.body);
    const b = (await getEntity(table, 'ann', '1')).json;
    assert.equal(b.A, 42);
    assert.equal(b['A@odata.type'], undefined);
    assert.equal(b.B, '5');
    assert.equal(b['B@odata.type'], 'Edm.Int64');
    assert.equal(b.C, 1e20);
    assert.equal(b.D, 'str');
    assert.equal(b.E, false);
    assert.equal(b.F, 'NaN');
    assert.equal(b.G, '');
    assert.equal(b['G@odata.type'], 'Edm.Binary');
    assert.equal(b.H, '2024-01-02T01:04:05Z', 'offsets are converted to UTC');
    assert.equal(b.I, '2024-01-02T03:04:05.5Z', 'trailing fraction zeros are dropped');
    assert.equal(b.S, '');
    assert.ok(!('N' in b), 'null properties are not stored');
  });
});

describe('validation limits (spec/errors-limits.md §4)', () => {
  let table;
  before(async () => { table = await newTable('limits'); });
  let n = 0;
  const rk = () => `r${n++}`;

  const expect400 = async (entity, code, opts) => assertError(await insert(table, entity), 400, code, opts);

  for (const [label, ch] of [['/', '/'], ['\\', '\\'], ['#', '#'], ['?', '?'], ['U+0001', '\u0001'], ['U+007F', '\u007f'], ['U+0085', '\u0085']]) {
    test(`key containing ${label} in a body -> 400 OutOfRangeInput`, async () => {
      await expect400({ PartitionKey: `a${ch}b`, RowKey: rk() }, 'OutOfRangeInput');
      await expect400({ PartitionKey: 'p', RowKey: `a${ch}b` }, 'OutOfRangeInput');
    });
  }

  test("OutOfRangeInput message names the key: The 'PartitionKey' parameter of value '#' is out of range.", async () => {
    await expect400({ PartitionKey: '#', RowKey: 'r' }, 'OutOfRangeInput', { message: "The 'PartitionKey' parameter of value '#' is out of range." });
  });

  test('missing or null PartitionKey/RowKey -> 400 PropertiesNeedValue', async () => {
    await expect400({ RowKey: 'r' }, 'PropertiesNeedValue');
    await expect400({ PartitionKey: 'p' }, 'PropertiesNeedValue');
    await expect400({ PartitionKey: null, RowKey: 'r' }, 'PropertiesNeedValue');
  });

  test('non-string PartitionKey -> 400 InvalidInput', async () => {
    await expect400({ PartitionKey: 5, RowKey: 'r' }, 'InvalidInput');
    await expect400({ PartitionKey: 'p', RowKey: true }, 'InvalidInput');
  });

  test('keys of 1,024 characters are accepted, 1,025 -> 400 PropertyValueTooLarge', async () => {
    const ok = await insert(table, { PartitionKey: 'k'.repeat(1024), RowKey: 'r'.repeat(1024) });
    assert.equal(ok.status, 201, ok.body.slice(0, 300));
    await expect400({ PartitionKey: 'k'.repeat(1025), RowKey: 'r' }, 'PropertyValueTooLarge');
    await expect400({ PartitionKey: 'p', RowKey: 'r'.repeat(1025) }, 'PropertyValueTooLarge');
  });

  test('252 custom properties are accepted, 253 -> 400 TooManyProperties', async () => {
    const make = (count) => {
      const e = { PartitionKey: 'props', RowKey: rk() };
      for (let i = 0; i < count; i += 1) e[`P${i}`] = i;
      return e;
    };
    const ok = await insert(table, make(252));
    assert.equal(ok.status, 201, ok.body.slice(0, 300));
    await expect400(make(253), 'TooManyProperties');
  });

  test('merge that would exceed 252 properties -> 400 TooManyProperties', async () => {
    const e = { PartitionKey: 'props', RowKey: rk() };
    for (let i = 0; i < 252; i += 1) e[`P${i}`] = i;
    assert.equal((await insert(table, e)).status, 201);
    const res = await call({ method: 'MERGE', path: `/${table}(PartitionKey='props',RowKey='${e.RowKey}')`, body: { Extra: 1 }, headers: { 'If-Match': '*' } });
    assertError(res, 400, 'TooManyProperties');
  });

  test('property names: 255 characters accepted, 256 -> PropertyNameTooLong, non-identifiers -> PropertyNameInvalid', async () => {
    const ok = await insert(table, { PartitionKey: 'names', RowKey: rk(), [`N${'x'.repeat(254)}`]: 1, _under: 2, ünï: 3 });
    assert.equal(ok.status, 201, ok.body.slice(0, 300));
    await expect400({ PartitionKey: 'names', RowKey: rk(), [`N${'x'.repeat(255)}`]: 1 }, 'PropertyNameTooLong');
    await expect400({ PartitionKey: 'names', RowKey: rk(), 'a-b': 1 }, 'PropertyNameInvalid');
    await expect400({ PartitionKey: 'names', RowKey: rk(), '1abc': 1 }, 'PropertyNameInvalid');
    await expect400({ PartitionKey: 'names', RowKey: rk(), 'a b': 1 }, 'PropertyNameInvalid');
    await expect400({ PartitionKey: 'names', RowKey: rk(), '': 1 }, 'PropertyNameInvalid');
  });

  test('strings: 32,768 UTF-16 units accepted, 32,769 -> 400 PropertyValueTooLarge (non-BMP counts 2)', async () => {
    const ok = await insert(table, { PartitionKey: 'str', RowKey: rk(), S: 'x'.repeat(32768) });
    assert.equal(ok.status, 201, ok.body.slice(0, 300));
    await expect400({ PartitionKey: 'str', RowKey: rk(), S: 'x'.repeat(32769) }, 'PropertyValueTooLarge');
    const okEmoji = await insert(table, { PartitionKey: 'str', RowKey: rk(), S: '😀'.repeat(16384) });
    assert.equal(okEmoji.status, 201, okEmoji.body.slice(0, 300));
    await expect400({ PartitionKey: 'str', RowKey: rk(), S: `${'😀'.repeat(16384)}x` }, 'PropertyValueTooLarge');
  });

  test('a 32,768-character string round-trips intact', async () => {
    const s = 'ab€😀'.repeat(6553) + 'xy';
    const key = rk();
    assert.equal((await insert(table, { PartitionKey: 'str', RowKey: key, S: s })).status, 201);
    const got = await getEntity(table, 'str', key);
    assert.equal(got.json.S, s);
  });

  test('binary: 65,536 bytes accepted, 65,537 -> 400 PropertyValueTooLarge', async () => {
    const ok = await insert(table, { PartitionKey: 'bin', RowKey: rk(), 'B@odata.type': 'Edm.Binary', B: Buffer.alloc(65536, 7).toString('base64') });
    assert.equal(ok.status, 201, ok.body.slice(0, 300));
    await expect400({ PartitionKey: 'bin', RowKey: rk(), 'B@odata.type': 'Edm.Binary', B: Buffer.alloc(65537, 7).toString('base64') }, 'PropertyValueTooLarge');
  });

  test('entity size: fifteen 64 KiB binaries accepted, sixteen -> 400 EntityTooLarge', async () => {
    const make = (count) => {
      const e = { PartitionKey: 'big', RowKey: rk() };
      const v = Buffer.alloc(65536, 1).toString('base64');
      for (let i = 0; i < count; i += 1) {
        e[`B${i}@odata.type`] = 'Edm.Binary';
        e[`B${i}`] = v;
      }
      return e;
    };
    const ok = await insert(table, make(15));
    assert.equal(ok.status, 201, ok.body.slice(0, 300));
    await expect400(make(16), 'EntityTooLarge');
  });

  test('request body over 4 MiB -> 413 RequestBodyTooLarge (seen by a client that sends the whole body)', async () => {
    // Like every SDK, http.request writes the whole body. The server may
    // answer from Content-Length before reading it, but must not reset the
    // connection under the client (drain the body or linger), or the client
    // sees EPIPE/ECONNRESET instead of the 413 (the Python SDK relies on it).
    let res;
    try {
      res = await insert(table, { PartitionKey: 'huge', RowKey: rk(), S: 'x'.repeat(4 * 1024 * 1024 + 10) });
    } catch (e) {
      assert.fail(`connection failed with ${e.code} instead of a 413 response`);
    }
    assertError(res, 413, 'RequestBodyTooLarge');
    const got = await call({ path: `/${table}()?$filter=${encodeURIComponent("PartitionKey eq 'huge'")}` });
    assert.deepEqual(got.json.value, []);
  });

  test('malformed JSON -> 400 InvalidInput', async () => {
    for (const body of ['{"PartitionKey":"p","RowKey":', 'not json', '[1,2]', '']) {
      const res = await call({ method: 'POST', path: `/${table}`, body: body === '' ? Buffer.alloc(0) : body });
      assertError(res, 400, ['InvalidInput', 'PropertiesNeedValue']);
    }
    assertError(await call({ method: 'POST', path: `/${table}`, body: '{"PartitionKey":"p","RowKey":' }), 400, 'InvalidInput');
  });

  test('object or array property values -> 400 InvalidInput', async () => {
    await expect400({ PartitionKey: 'p', RowKey: rk(), O: { a: 1 } }, 'InvalidInput');
    await expect400({ PartitionKey: 'p', RowKey: rk(), A: [1, 2] }, 'InvalidInput');
  });

  test('values that do not fit their annotation -> 400', async () => {
    const bad = [
      ['Edm.Int32', 'abc'], ['Edm.Int32', 2147483648], ['Edm.Int64', '+5'], ['Edm.Int64', '1.5'],
      ['Edm.Int64', '9223372036854775808'], ['Edm.Guid', 'xyz'], ['Edm.Guid', '{c9da6455-213d-42c9-9a79-3e9149a57833}'],
      ['Edm.Binary', 'not base64!'], ['Edm.DateTime', 'yesterday'], ['Edm.Boolean', 'maybe'], ['Edm.Double', 'abc'],
    ];
    for (const [type, value] of bad) {
      const res = await insert(table, { PartitionKey: 'p', RowKey: rk(), 'X@odata.type': type, X: value });
      assertError(res, 400, ['InvalidInput', 'InvalidValueType'], {});
    }
  });

  test('unknown EDM type names -> 400 InvalidInput', async () => {
    for (const type of ['Edm.Single', 'Edm.Decimal', 'Edm.Byte', 'Edm.Foo']) {
      await expect400({ PartitionKey: 'p', RowKey: rk(), 'X@odata.type': type, X: '1' }, 'InvalidInput');
    }
  });

  test('annotation for an absent member -> 400 InvalidInput', async () => {
    await expect400({ PartitionKey: 'p', RowKey: rk(), 'Ghost@odata.type': 'Edm.Int64' }, 'InvalidInput');
  });

  test('duplicate property -> 400 DuplicatePropertiesSpecified', async () => {
    const res = await call({ method: 'POST', path: `/${table}`, body: `{"PartitionKey":"p","RowKey":"${rk()}","A":1,"A":2}` });
    assertError(res, 400, 'DuplicatePropertiesSpecified');
  });

  test('DateTime before 1601 -> 400 OutOfRangeInput', async () => {
    await expect400({ PartitionKey: 'p', RowKey: rk(), 'Due@odata.type': 'Edm.DateTime', Due: '0001-01-01T00:00:00Z' }, 'OutOfRangeInput',
      { message: "The 'Due' parameter of value '01/01/0001 00:00:00' is out of range." });
  });

  test('DateTime bounds 1601-01-01 and 9999-12-31T23:59:59.9999999Z are accepted', async () => {
    const key = rk();
    const res = await insert(table, {
      PartitionKey: 'p', RowKey: key,
      'Lo@odata.type': 'Edm.DateTime', Lo: '1601-01-01T00:00:00Z',
      'Hi@odata.type': 'Edm.DateTime', Hi: '9999-12-31T23:59:59.9999999Z',
    });
    assert.equal(res.status, 201, res.body);
    const got = await getEntity(table, 'p', key);
    assert.equal(got.json.Lo, '1601-01-01T00:00:00Z');
    assert.equal(got.json.Hi, '9999-12-31T23:59:59.9999999Z');
  });

  test('nothing invalid was stored', async () => {
    const res = await call({ path: `/${table}()?$filter=${encodeURIComponent("PartitionKey eq 'p'")}&$select=RowKey`, headers: { Accept: NOMETA } });
    const keys = res.json.value.map((e) => e.RowKey);
    assert.equal(keys.length, 1, `only the DateTime bounds entity should exist in partition p, got ${keys}`);
  });
});

describe('queries', () => {
  let table;
  before(async () => {
    table = await newTable('query');
    const rows = [
      { PartitionKey: 'a', RowKey: '1', Age: 30, Name: 'Ann' },
      { PartitionKey: 'a', RowKey: '2', Age: '30' },
      { PartitionKey: 'b', RowKey: '1', 'Age@odata.type': 'Edm.Int64', Age: '30', Name: 'bob' },
    ];
    for (const r of rows) assert.equal((await insert(table, r)).status, 201);
  });

  const keysOf = (res) => res.json.value.map((e) => `${e.PartitionKey}/${e.RowKey}`);
  const filter = async (f, extra = '') => {
    const res = await call({ path: `/${table}()?$filter=${encodeURIComponent(f)}${extra}` });
    assert.equal(res.status, 200, `${f}: ${res.body}`);
    return keysOf(res);
  };

  test('query.md §8 worked examples', async () => {
    assert.deepEqual(await filter('Age eq 30'), ['a/1', 'b/1']);
    assert.deepEqual(await filter('Age eq 30L'), ['b/1']);
    assert.deepEqual(await filter("Age eq '30'"), ['a/2']);
    assert.deepEqual(await filter("Name ne 'Ann'"), ['b/1']);
    assert.deepEqual(await filter("not (Name eq 'Ann')"), ['a/2', 'b/1']);
    assert.deepEqual(await filter("Name ge 'B'"), ['b/1']);
    assert.deepEqual(await filter("PartitionKey eq 'a' and (Age gt 10 or Name eq 'x')"), ['a/1']);
    assert.deepEqual(await filter("'a' eq PartitionKey"), ['a/1', 'a/2']);
  });

  test('$filter= empty means no filter; + in the query string is a space', async () => {
    const res = await call({ path: `/${table}()?$filter=` });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.json.value.length, 3);
    const plus = await call({ path: `/${table}()?$filter=PartitionKey+eq+'b'` });
    assert.equal(plus.status, 200, plus.body);
    assert.deepEqual(keysOf(plus), ['b/1']);
  });

  test('bad filters -> 400 InvalidInput', async () => {
    for (const f of ["Age eq null", "startswith(RowKey,'a')", "(Age eq 1", "Age eq 'x", "Age add 1 gt 5", "Age eq 2147483648"]) {
      assertError(await call({ path: `/${table}()?$filter=${encodeURIComponent(f)}` }), 400, 'InvalidInput');
    }
  });

  test('$top outside 0..1000 and unsupported options -> 400 InvalidInput', async () => {
    for (const q of ['$top=1001', '$top=-5', '$top=x']) {
      assertError(await call({ path: `/${table}()?${q}` }), 400, 'InvalidInput');
    }
    for (const q of ['$orderby=RowKey', '$skip=1', '$expand=X', '$count=true']) {
      const res = await call({ path: `/${table}()?${q}` });
      if (res.status === 501) assertError(res, 501, 'NotImplemented');
      else assertError(res, 400, 'InvalidInput');
    }
  });

  test('$select with absent properties gives null; $select=* gives everything', async () => {
    const res = await call({ path: `/${table}()?$select=Name,RowKey` });
    assert.equal(res.status, 200, res.body);
    const rows = res.json.value.map(({ 'odata.etag': etag, ...rest }) => { assertEtag(etag); return rest; });
    assert.deepEqual(rows, [{ Name: 'Ann', RowKey: '1' }, { Name: null, RowKey: '2' }, { Name: 'bob', RowKey: '1' }]);
    const all = await call({ path: `/${table}()?$select=*`, headers: { Accept: NOMETA } });
    assert.equal(all.json.value[0].Age, 30);
    assert.ok(all.json.value[0].Timestamp);
  });

  test('$top pages with both continuation headers; tokens resume after the last entity', async () => {
    const seen = [];
    let next = '';
    let pages = 0;
    for (;;) {
      const res = await call({ path: `/${table}()?$top=1${next}` });
      assert.equal(res.status, 200, res.body);
      pages += 1;
      seen.push(...keysOf(res));
      const npk = res.headers['x-ms-continuation-nextpartitionkey'];
      const nrk = res.headers['x-ms-continuation-nextrowkey'];
      if (!npk) {
        assert.equal(nrk, undefined);
        break;
      }
      assert.ok(nrk, 'NextRowKey must accompany NextPartitionKey');
      next = `&NextPartitionKey=${encodeURIComponent(npk)}&NextRowKey=${encodeURIComponent(nrk)}`;
      assert.ok(pages < 10);
    }
    assert.deepEqual(seen, ['a/1', 'a/2', 'b/1']);
    assert.ok(pages >= 3);
  });

  test('empty continuation parameter -> 400 InvalidInput', async () => {
    assertError(await call({ path: `/${table}()?NextPartitionKey=&NextRowKey=` }), 400, 'InvalidInput');
  });

  test('point query and a filter query on the same keys', async () => {
    const res = await call({ path: `/${table}()?$filter=${encodeURIComponent("PartitionKey eq 'a' and RowKey eq 'zzz'")}` });
    assert.equal(res.status, 200, res.body);
    assert.deepEqual(res.json.value, []);
  });
});

describe('$batch (hand-built multipart)', () => {
  let table;
  before(async () => { table = await newTable('batch'); });

  function buildBatch(ops, { batch = `batch_${crypto.randomUUID()}`, changeset = `changeset_${crypto.randomUUID()}`, eol = '\r\n' } = {}) {
    const lines = [];
    lines.push(`--${batch}`, `Content-Type: multipart/mixed; boundary=${changeset}`, '');
    ops.forEach((op, i) => {
      lines.push(`--${changeset}`, 'Content-Type: application/http', 'Content-Transfer-Encoding: binary', `Content-ID: ${i + 1}`, '');
      lines.push(`${op.method} ${server.endpoint}${op.path} HTTP/1.1`);
      lines.push('Accept: application/json;odata=minimalmetadata');
      lines.push('DataServiceVersion: 3.0');
      for (const [k, v] of Object.entries(op.headers || {})) lines.push(`${k}: ${v}`);
      if (op.body !== undefined) {
        lines.push('Content-Type: application/json', '', JSON.stringify(op.body));
      } else {
        lines.push('', '');
      }
    });
    lines.push(`--${changeset}--`, `--${batch}--`, '');
    return { body: lines.join(eol), batch };
  }

  async function send(ops, opts) {
    const { body, batch } = buildBatch(ops, opts);
    return call({ method: 'POST', path: '/$batch', body, headers: { 'Content-Type': `multipart/mixed; boundary=${batch}` } });
  }

  function parseBatchResponse(res) {
    const ct = res.headers['content-type'] || '';
    const m = /boundary=(batchresponse_[^;\s]+)/.exec(ct);
    assert.ok(m, `batch response Content-Type must name a batchresponse_ boundary: ${ct}`);
    assert.ok(res.body.startsWith(`--${m[1]}`), 'body must start with the batch boundary');
    const cs = /boundary=(changesetresponse_[^;\s\r\n]+)/.exec(res.body);
    assert.ok(cs, 'changesetresponse_ boundary missing');
    const parts = res.body.split(`--${cs[1]}`).slice(1, -1);
    return parts.map((p) => {
      const status = /HTTP\/1\.1 (\d{3}) ([^\r\n]*)\r\n/.exec(p);
      assert.ok(status, `no status line in ${p}`);
      const headers = {};
      const afterStatus = p.slice(status.index + status[0].length);
      const headEnd = afterStatus.indexOf('\r\n\r\n');
      for (const line of afterStatus.slice(0, headEnd).split('\r\n')) {
        const i = line.indexOf(':');
        if (i > 0) headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      const body = afterStatus.slice(headEnd + 4).trim();
      return { status: Number(status[1]), reason: status[2], headers, body, raw: p };
    });
  }

  test('insert + merge + replace + delete in one change set -> 202 with one sub-response each', async () => {
    assert.equal((await insert(table, { PartitionKey: 'b1', RowKey: 'm', A: 1 })).status, 201);
    assert.equal((await insert(table, { PartitionKey: 'b1', RowKey: 'd' })).status, 201);
    const res = await send([
      { method: 'POST', path: `/${table}`, body: { PartitionKey: 'b1', RowKey: 'i', V: 'new' }, headers: { Prefer: 'return-no-content' } },
      { method: 'MERGE', path: `/${table}(PartitionKey='b1',RowKey='m')`, body: { B: 2 }, headers: { 'If-Match': '*' } },
      { method: 'PUT', path: `/${table}(PartitionKey='b1',RowKey='u')`, body: { C: 3 } },
      { method: 'DELETE', path: `/${table}(PartitionKey='b1',RowKey='d')`, headers: { 'If-Match': '*' } },
    ]);
    assert.equal(res.status, 202, res.body);
    const subs = parseBatchResponse(res);
    assert.deepEqual(subs.map((s) => s.status), [204, 204, 204, 204]);
    assert.deepEqual(subs.map((s) => s.headers['content-id']), ['1', '2', '3', '4']);
    assert.match(subs[0].raw, /HTTP\/1\.1 204 No Content\r\nContent-ID: 1\r\n/, 'Content-ID is the first header after the status line');
    assert.equal(subs[0].headers['preference-applied'], 'return-no-content');
    assert.equal(subs[0].headers.location, `${server.endpoint}/${table}(PartitionKey='b1',RowKey='i')`);
    assertEtag(subs[0].headers.etag);
    assert.match(subs[0].raw, /\r\nETag: W\/"datetime'/, 'header spelled exactly "ETag: "');
    assertEtag(subs[1].headers.etag);
    assertEtag(subs[2].headers.etag);
    assert.equal(subs[3].headers.etag, undefined);
    const list = await call({ path: `/${table}()?$filter=${encodeURIComponent("PartitionKey eq 'b1'")}`, headers: { Accept: NOMETA } });
    const rows = Object.fromEntries(list.json.value.map(({ PartitionKey, Timestamp, RowKey, ...rest }) => [RowKey, rest]));
    assert.deepEqual(rows, { i: { V: 'new' }, m: { A: 1, B: 2 }, u: { C: 3 } });
    const got = await getEntity(table, 'b1', 'i');
    assert.equal(got.headers.etag, subs[0].headers.etag, 'sub-response ETag is the stored ETag');
  });

  test('insert without Prefer returns 201 with the entity JSON', async () => {
    const res = await send([{ method: 'POST', path: `/${table}`, body: { PartitionKey: 'b2', RowKey: 'x', V: 1 } }]);
    assert.equal(res.status, 202, res.body);
    const [sub] = parseBatchResponse(res);
    assert.equal(sub.status, 201);
    const body = JSON.parse(sub.body);
    assert.equal(body.RowKey, 'x');
    assert.equal(body.V, 1);
    assertEtag(body['odata.etag']);
  });

  test('a failing operation: single sub-response with the index prefix, nothing applied', async () => {
    assert.equal((await insert(table, { PartitionKey: 'b3', RowKey: 'exists', V: 'orig' })).status, 201);
    assert.equal((await insert(table, { PartitionKey: 'b3', RowKey: 'm', V: 'orig' })).status, 201);
    const res = await send([
      { method: 'POST', path: `/${table}`, body: { PartitionKey: 'b3', RowKey: 'new1' }, headers: { Prefer: 'return-no-content' } },
      { method: 'MERGE', path: `/${table}(PartitionKey='b3',RowKey='m')`, body: { V: 'changed' }, headers: { 'If-Match': '*' } },
      { method: 'POST', path: `/${table}`, body: { PartitionKey: 'b3', RowKey: 'exists' }, headers: { Prefer: 'return-no-content' } },
      { method: 'POST', path: `/${table}`, body: { PartitionKey: 'b3', RowKey: 'new2' }, headers: { Prefer: 'return-no-content' } },
    ]);
    assert.equal(res.status, 202, res.body);
    const subs = parseBatchResponse(res);
    assert.equal(subs.length, 1, 'exactly one sub-response on failure');
    assert.equal(subs[0].status, 409);
    assert.equal(subs[0].reason, 'Conflict');
    assert.equal(subs[0].headers['content-id'], '3');
    assert.ok(!subs[0].body.includes('\n'), 'error JSON on one line');
    const err = JSON.parse(subs[0].body)['odata.error'];
    assert.equal(err.code, 'EntityAlreadyExists');
    assert.ok(err.message.value.startsWith('2:The specified entity already exists.'), err.message.value);
    const list = await call({ path: `/${table}()?$filter=${encodeURIComponent("PartitionKey eq 'b3'")}`, headers: { Accept: NOMETA } });
    assert.deepEqual(list.json.value.map((e) => [e.RowKey, e.V]), [['exists', 'orig'], ['m', 'orig']]);
  });

  test('operations on different partitions -> CommandsInBatchActOnDifferentPartitions', async () => {
    const res = await send([
      { method: 'PUT', path: `/${table}(PartitionKey='b4',RowKey='1')`, body: {} },
      { method: 'PUT', path: `/${table}(PartitionKey='b4',RowKey='2')`, body: {} },
      { method: 'PUT', path: `/${table}(PartitionKey='other',RowKey='3')`, body: {} },
    ]);
    assert.equal(res.status, 202, res.body);
    const subs = parseBatchResponse(res);
    assert.equal(subs.length, 1);
    assert.equal(subs[0].status, 400);
    const err = JSON.parse(subs[0].body)['odata.error'];
    assert.equal(err.code, 'CommandsInBatchActOnDifferentPartitions');
    assert.ok(err.message.value.startsWith('2:'), err.message.value);
    assertError(await getEntity(table, 'b4', '1'), 404, 'ResourceNotFound');
  });

  test('the same entity twice -> InvalidDuplicateRow at the later index', async () => {
    const res = await send([
      { method: 'PUT', path: `/${table}(PartitionKey='b5',RowKey='1')`, body: {} },
      { method: 'PUT', path: `/${table}(PartitionKey='b5',RowKey='2')`, body: {} },
      { method: 'MERGE', path: `/${table}(PartitionKey='b5',RowKey='1')`, body: {} },
    ]);
    assert.equal(res.status, 202, res.body);
    const [sub] = parseBatchResponse(res);
    const err = JSON.parse(sub.body)['odata.error'];
    assert.equal(sub.status, 400);
    assert.equal(err.code, 'InvalidDuplicateRow');
    assert.ok(err.message.value.startsWith('2:'), err.message.value);
  });

  test('more than 100 operations -> 400 InvalidInput sub-response', async () => {
    const ops = [];
    for (let i = 0; i < 101; i += 1) ops.push({ method: 'PUT', path: `/${table}(PartitionKey='b6',RowKey='${i}')`, body: {} });
    const res = await send(ops);
    assert.equal(res.status, 202, res.body.slice(0, 500));
    const subs = parseBatchResponse(res);
    assert.equal(subs.length, 1);
    assert.equal(subs[0].status, 400);
    assert.equal(JSON.parse(subs[0].body)['odata.error'].code, 'InvalidInput');
    const list = await call({ path: `/${table}()?$filter=${encodeURIComponent("PartitionKey eq 'b6'")}` });
    assert.deepEqual(list.json.value, []);
  });

  test('batch on a missing table -> 404 TableNotFound with 0: prefix', async () => {
    const missing = uniqueTableName('nobatch');
    const { body, batch } = buildBatch([{ method: 'PUT', path: `/${missing}(PartitionKey='a',RowKey='b')`, body: {} }]);
    const res = await call({ method: 'POST', path: '/$batch', body, headers: { 'Content-Type': `multipart/mixed; boundary=${batch}` } });
    assert.equal(res.status, 202, res.body);
    const [sub] = parseBatchResponse(res);
    assert.equal(sub.status, 404);
    const err = JSON.parse(sub.body)['odata.error'];
    assert.equal(err.code, 'TableNotFound');
    assert.ok(err.message.value.startsWith('0:'), err.message.value);
  });

  test('JS-style variations: lower-case headers, preamble CRLF, CRLF before body, PATCH, %24batch', async () => {
    const batch = `batch_${crypto.randomUUID()}`;
    const cs = `changeset_${crypto.randomUUID()}`;
    const body = [
      `--${batch}`, `content-type: multipart/mixed; boundary=${cs}`, '', '',
      `--${cs}`, 'content-type: application/http', 'content-transfer-encoding: binary', '',
      `PATCH ${server.endpoint}/${table}(PartitionKey='b7',RowKey='1') HTTP/1.1`,
      'content-type: application/json', 'accept: application/json', 'dataserviceversion: 3.0', '', '',
      '{"X":1}',
      `--${cs}`, 'content-type: application/http', 'content-transfer-encoding: binary', '',
      `POST ${server.endpoint}/${table} HTTP/1.1`,
      'content-type: application/json', 'accept: application/json', 'prefer: return-no-content', 'dataserviceversion: 3.0', '', '',
      '{"PartitionKey":"b7","RowKey":"2","Y":2}',
      `--${cs}--`, `--${batch}`, '',
    ].join('\r\n');
    const res = await call({ method: 'POST', path: '/%24batch', body, headers: { 'Content-Type': `multipart/mixed; boundary=${batch}` } });
    assert.equal(res.status, 202, res.body);
    const subs = parseBatchResponse(res);
    assert.deepEqual(subs.map((s) => s.status), [204, 204]);
    assert.match(subs[1].headers.location, /RowKey='2'/);
    assert.equal((await getEntity(table, 'b7', '1')).json.X, 1);
    assert.equal((await getEntity(table, 'b7', '2')).json.Y, 2);
  });

  test('read-only batch with a single GET', async () => {
    assert.equal((await insert(table, { PartitionKey: 'b8', RowKey: 'g', V: 'got' })).status, 201);
    const batch = `batch_${crypto.randomUUID()}`;
    const body = [
      `--${batch}`, 'Content-Type: application/http', 'Content-Transfer-Encoding: binary', '',
      `GET ${server.endpoint}/${table}(PartitionKey='b8',RowKey='g') HTTP/1.1`,
      'Accept: application/json;odata=minimalmetadata', 'DataServiceVersion: 3.0', '', '',
      `--${batch}--`, '',
    ].join('\r\n');
    const res = await call({ method: 'POST', path: '/$batch', body, headers: { 'Content-Type': `multipart/mixed; boundary=${batch}` } });
    assert.equal(res.status, 202, res.body);
    const m = /HTTP\/1\.1 200 OK\r\n/.exec(res.body);
    assert.ok(m, res.body);
    assert.match(res.body, /"V":"got"/);
  });

  test('batch body that is not multipart -> 400', async () => {
    const res = await call({ method: 'POST', path: '/$batch', body: 'garbage', headers: { 'Content-Type': 'multipart/mixed; boundary=batch_x' } });
    assert.equal(res.status, 400, res.body);
    assert.ok(res.headers['x-ms-error-code']);
  });
});

describe('HTTP framing', () => {
  test('duplicate X-HTTP-Method headers -> 400 XMethodIncorrectCount', async () => {
    const table = await newTable('xcount');
    assert.equal((await insert(table, { PartitionKey: 'p', RowKey: 'r' })).status, 201);
    const date = new Date().toUTCString();
    const target = `/${server.account}/${table}(PartitionKey='p',RowKey='r')`;
    const body = '{"A":1}';
    const auth = sign(server, { method: 'POST', target, contentType: 'application/json', date });
    const raw = [
      `POST ${target} HTTP/1.1`, `Host: ${server.host}:${server.port}`, `x-ms-date: ${date}`, 'x-ms-version: 2019-02-02',
      'Accept: application/json', 'Content-Type: application/json', `Authorization: ${auth}`,
      'X-HTTP-Method: MERGE', 'X-HTTP-Method: MERGE', 'If-Match: *', `Content-Length: ${body.length}`, 'Connection: close', '', body,
    ].join('\r\n');
    const text = await rawExchange(server, raw);
    assert.match(text, /^HTTP\/1\.1 400 /, text.slice(0, 300));
    assert.match(text, /x-ms-error-code: XMethodIncorrectCount/i);
  });

  test('keep-alive: several requests on one connection', async () => {
    const date = new Date().toUTCString();
    const target = `/${server.account}/Tables`;
    const one = [`GET ${target} HTTP/1.1`, `Host: ${server.host}:${server.port}`, `x-ms-date: ${date}`, 'x-ms-version: 2019-02-02',
      'Accept: application/json', `Authorization: ${sign(server, { method: 'GET', target, date })}`, '', ''].join('\r\n');
    const text = await rawExchange(server, one + one + one.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'), { timeoutMs: 5000, untilClose: true });
    assert.equal((text.match(/HTTP\/1\.1 200 OK/g) || []).length, 3, text.slice(0, 500));
  });
});

describe('protocol details', () => {
  let table;
  before(async () => {
    table = await newTable('proto');
    assert.equal((await insert(table, { PartitionKey: 'p', RowKey: 'r', V: 1 })).status, 201);
  });

  test('Prefer is ignored by upserts: 204, no Preference-Applied', async () => {
    const res = await call({ method: 'PUT', path: keyPath(table, 'p', 'pref'), body: { A: 1 }, headers: { Prefer: 'return-content' } });
    assert.equal(res.status, 204, res.body);
    assert.equal(res.headers['preference-applied'], undefined);
  });

  test('If-None-Match on PUT -> 400 InvalidInput; empty If-Match -> 400 InvalidInput', async () => {
    assertError(await call({ method: 'PUT', path: keyPath(table, 'p', 'r'), body: { A: 1 }, headers: { 'If-None-Match': '*' } }), 400, 'InvalidInput');
    assertError(await call({ method: 'PUT', path: keyPath(table, 'p', 'r'), body: { A: 1 }, headers: { 'If-Match': '' } }), 400, 'InvalidInput');
    assert.equal((await getEntity(table, 'p', 'r')).json.V, 1);
  });

  test('URL key longer than 1 KiB -> 400 OutOfRangeInput', async () => {
    assertError(await getEntity(table, 'p', 'x'.repeat(1025)), 400, 'OutOfRangeInput');
  });

  test('Accept: */* -> minimal-metadata JSON', async () => {
    const res = await getEntity(table, 'p', 'r', { accept: '*/*' });
    assert.equal(res.status, 200, res.body);
    assert.match(res.headers['content-type'], /^application\/json;odata=minimalmetadata/);
  });

  test('Accept listing several types uses the first recognized one', async () => {
    const res = await getEntity(table, 'p', 'r', { accept: 'text/html, application/json;odata=nometadata, */*' });
    assert.equal(res.status, 200, res.body);
    assert.match(res.headers['content-type'], /^application\/json;odata=nometadata/);
  });

  test('JSON with a version before 2013-08-15 -> 415 JsonFormatNotSupported', async () => {
    const res = await call({ path: keyPath(table, 'p', 'r'), headers: { 'x-ms-version': '2012-02-12', Accept: MINIMAL } });
    assert.equal(res.status, 415, res.body);
    assert.equal(res.headers['x-ms-error-code'], 'JsonFormatNotSupported');
  });

  test('error body follows the requested metadata level', async () => {
    const res = await getEntity(table, 'p', 'missing', { accept: NOMETA });
    assertError(res, 404, 'ResourceNotFound');
    assert.match(res.headers['content-type'], /^application\/json;odata=nometadata/);
  });

  test('insert without Content-Type -> 400 (or 415)', async () => {
    const res = await call({ method: 'POST', path: `/${table}`, body: { PartitionKey: 'p', RowKey: 'noct' }, headers: { 'Content-Type': null } });
    assert.ok(res.status === 400 || res.status === 415, `${res.status} ${res.body}`);
    assert.ok(res.headers['x-ms-error-code']);
    assertError(await getEntity(table, 'p', 'noct'), 404, 'ResourceNotFound');
  });

  test('Content-Type variants are accepted: charset, odata=fullmetadata, spaces', async () => {
    for (const [i, ct] of ['application/json; charset=utf-8', 'application/json;odata=fullmetadata', 'application/json; odata=nometadata; charset=utf-8'].entries()) {
      const res = await call({ method: 'POST', path: `/${table}`, body: { PartitionKey: 'ct', RowKey: String(i) }, headers: { 'Content-Type': ct } });
      assert.equal(res.status, 201, `${ct}: ${res.body}`);
    }
  });

  test('chunked request body and Expect: 100-continue', async () => {
    const http = require('node:http');
    const date = new Date().toUTCString();
    const target = `/${server.account}/${table}`;
    const res = await new Promise((resolve, reject) => {
      const req = http.request({
        host: server.host, port: server.port, method: 'POST', path: target,
        headers: {
          'x-ms-date': date, 'x-ms-version': '2019-02-02', Accept: MINIMAL, 'Content-Type': 'application/json',
          'Transfer-Encoding': 'chunked', Expect: '100-continue', Prefer: 'return-no-content',
          Authorization: sign(server, { method: 'POST', target, contentType: 'application/json', date }),
        },
      }, (r) => { r.resume(); r.on('end', () => resolve(r)); });
      req.on('error', reject);
      req.on('continue', () => {
        req.write('{"PartitionKey":"chunk",');
        req.write('"RowKey":"1","V":"chunked"}');
        req.end();
      });
      // A client's Expect timeout: with no 100 Continue within 1.5 s it sends the body anyway.
      setTimeout(() => { if (!req.writableEnded) { req.write('{"PartitionKey":"chunk","RowKey":"1","V":"chunked"}'); req.end(); } }, 1500);
    });
    assert.equal(res.statusCode, 204);
    assert.equal((await getEntity(table, 'chunk', '1')).json.V, 'chunked');
  });

  test('extreme Doubles round-trip exactly; -0.0 keeps its sign', async () => {
    const values = { Min: 5e-324, Max: 1.7976931348623157e308, Third: 1 / 3, Sum: 0.1 + 0.2, Neg: -2.5e-10, Big: 1e21 };
    const ins = await insert(table, { PartitionKey: 'dbl', RowKey: '1', ...values, 'Nz@odata.type': 'Edm.Double', Nz: '-0.0' });
    assert.equal(ins.status, 201, ins.body);
    const got = await getEntity(table, 'dbl', '1');
    for (const [k, v] of Object.entries(values)) assert.equal(got.json[k], v, k);
    assert.ok(Object.is(got.json.Nz, -0), `-0.0 expected, body: ${got.body}`);
    for (const k of Object.keys(values)) assert.equal(got.json[`${k}@odata.type`], undefined, `${k} needs no annotation`);
  });

  test('DateTime inputs: no zone is UTC, 6 digits kept, more than 7 digits -> 400', async () => {
    const ins = await insert(table, {
      PartitionKey: 'dt', RowKey: '1',
      'A@odata.type': 'Edm.DateTime', A: '2024-05-06T07:08:09',
      'B@odata.type': 'Edm.DateTime', B: '2024-05-06T07:08:09.123456Z',
      'C@odata.type': 'Edm.DateTime', C: '2024-05-06T07:08:09.000Z',
    });
    assert.equal(ins.status, 201, ins.body);
    const got = (await getEntity(table, 'dt', '1')).json;
    assert.equal(got.A, '2024-05-06T07:08:09Z');
    assert.equal(got.B, '2024-05-06T07:08:09.123456Z');
    assert.equal(got.C, '2024-05-06T07:08:09Z');
    assertError(await insert(table, { PartitionKey: 'dt', RowKey: '2', 'A@odata.type': 'Edm.DateTime', A: '2024-05-06T07:08:09.12345678Z' }), 400, ['InvalidInput', 'InvalidValueType']);
  });

  test('Binary: missing padding accepted, URL-safe alphabet rejected', async () => {
    const ok = await insert(table, { PartitionKey: 'bin', RowKey: '1', 'B@odata.type': 'Edm.Binary', B: 'AQI' });
    assert.equal(ok.status, 201, ok.body);
    assert.equal((await getEntity(table, 'bin', '1')).json.B, 'AQI=');
    assertError(await insert(table, { PartitionKey: 'bin', RowKey: '2', 'B@odata.type': 'Edm.Binary', B: '-_8=' }), 400, ['InvalidInput', 'InvalidValueType']);
  });

  test('members named odata.* are ignored; Edm.String annotation on keys is allowed', async () => {
    const res = await insert(table, { 'odata.type': 'x.y', 'odata.foo': 'bar', 'PartitionKey@odata.type': 'Edm.String', PartitionKey: 'od', RowKey: '1', V: 1 });
    assert.equal(res.status, 201, res.body);
    const got = (await getEntity(table, 'od', '1', { accept: NOMETA })).json;
    assert.deepEqual(Object.keys(got).sort(), ['PartitionKey', 'RowKey', 'Timestamp', 'V']);
  });

  test('unsupported verbs and unknown paths', async () => {
    assertError(await call({ method: 'DELETE', path: `/${table}()` }), 405, ['MethodNotAllowed', 'UnsupportedHttpVerb']);
    assertError(await call({ method: 'POST', path: `/Tables('${table}')`, body: {} }), 405, ['MethodNotAllowed', 'UnsupportedHttpVerb']);
    const extra = await call({ path: `/${table}/extra` });
    assert.equal(extra.status, 400, extra.body);
    assert.ok(['InvalidUri', 'InvalidInput'].includes(extra.headers['x-ms-error-code']));
  });
});

describe('$batch format variations', () => {
  let table;
  before(async () => { table = await newTable('batchvar'); });

  async function post(body, boundaryHeader) {
    return call({ method: 'POST', path: '/$batch', body, headers: { 'Content-Type': `multipart/mixed; boundary=${boundaryHeader}` } });
  }

  test('bare LF line endings, quoted boundary, Content-ID among the inner headers, $format on the inner URL', async () => {
    const b = `batch_${crypto.randomUUID()}`;
    const cs = `changeset_${crypto.randomUUID()}`;
    const body = [
      `--${b}`, `Content-Type: multipart/mixed; boundary="${cs}"`, '',
      `--${cs}`, 'Content-Type: application/http', 'Content-Transfer-Encoding: binary', '',
      `PUT ${server.endpoint}/${table}(PartitionKey='v',RowKey='1')?$format=application%2Fjson%3Bodata%3Dminimalmetadata HTTP/1.1`,
      'Content-ID: 7', 'Content-Type: application/json', 'Accept: application/json;odata=minimalmetadata', '',
      '{"A":1}',
      `--${cs}`, 'Content-Type: application/http', 'Content-Transfer-Encoding: binary', '',
      `POST ${server.endpoint}/${table} HTTP/1.1`,
      'Content-ID: 8', 'Content-Type: application/json', 'Accept: application/json;odata=minimalmetadata', 'Prefer: return-no-content', '',
      '{"PartitionKey":"v","RowKey":"2"}',
      `--${cs}--`, `--${b}--`, '',
    ].join('\n');
    const res = await post(body, `"${b}"`);
    assert.equal(res.status, 202, res.body);
    const statuses = [...res.body.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
    assert.deepEqual(statuses, [204, 204]);
    assert.match(res.body, /HTTP\/1\.1 204 No Content\r\nContent-ID: 7\r\n/);
    assert.match(res.body, /HTTP\/1\.1 204 No Content\r\nContent-ID: 8\r\n/);
    assert.ok(!/\n(?<!\r)\n/.test(res.body.replace(/\r\n/g, '')), 'response uses CRLF');
    assert.equal((await getEntity(table, 'v', '1')).json.A, 1);
  });

  test('inner request for a key with quotes and percent-encoding', async () => {
    const b = `batch_${crypto.randomUUID()}`;
    const cs = `changeset_${crypto.randomUUID()}`;
    const body = [
      `--${b}`, `Content-Type: multipart/mixed; boundary=${cs}`, '',
      `--${cs}`, 'Content-Type: application/http', 'Content-Transfer-Encoding: binary', '',
      `PUT ${server.endpoint}/${table}(PartitionKey=%27O%27%27Brien%27,RowKey=%27a%20b%27) HTTP/1.1`,
      'Content-Type: application/json', 'Accept: application/json;odata=minimalmetadata', '',
      '{"A":1}',
      `--${cs}`, 'Content-Type: application/http', 'Content-Transfer-Encoding: binary', '',
      `MERGE ${server.endpoint}/${table}(PartitionKey='O''Brien',RowKey='c') HTTP/1.1`,
      'Content-Type: application/json', 'Accept: application/json;odata=minimalmetadata', '',
      '{"B":2}',
      `--${cs}--`, `--${b}--`, '',
    ].join('\r\n');
    const res = await post(body, b);
    assert.equal(res.status, 202, res.body);
    assert.deepEqual([...res.body.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]), ['204', '204']);
    assert.equal((await getEntity(table, "O'Brien", 'a b')).json.A, 1);
    assert.equal((await getEntity(table, "O'Brien", 'c')).json.B, 2);
  });

  test('insert with Location keys quote-doubled in the sub-response', async () => {
    const b = `batch_${crypto.randomUUID()}`;
    const cs = `changeset_${crypto.randomUUID()}`;
    const body = [
      `--${b}`, `Content-Type: multipart/mixed; boundary=${cs}`, '',
      `--${cs}`, 'Content-Type: application/http', 'Content-Transfer-Encoding: binary', '',
      `POST ${server.endpoint}/${table} HTTP/1.1`,
      'Content-Type: application/json', 'Accept: application/json;odata=minimalmetadata', 'Prefer: return-no-content', '',
      `{"PartitionKey":"loc","RowKey":"it's"}`,
      `--${cs}--`, `--${b}--`, '',
    ].join('\r\n');
    const res = await post(body, b);
    assert.equal(res.status, 202, res.body);
    assert.match(res.body, new RegExp(`\\r\\nLocation: ${server.endpoint.replace(/[.]/g, '\\.')}/${table}\\(PartitionKey='loc',RowKey='it''s'\\)\\r\\n`));
  });

  test('failing inner request without Accept gets an XML error sub-response', async () => {
    const b = `batch_${crypto.randomUUID()}`;
    const cs = `changeset_${crypto.randomUUID()}`;
    const body = [
      `--${b}`, `Content-Type: multipart/mixed; boundary=${cs}`, '',
      `--${cs}`, 'Content-Type: application/http', 'Content-Transfer-Encoding: binary', '',
      `DELETE ${server.endpoint}/${table}(PartitionKey='none',RowKey='none') HTTP/1.1`,
      'If-Match: *', '', '',
      `--${cs}--`, `--${b}--`, '',
    ].join('\r\n');
    const res = await post(body, b);
    assert.equal(res.status, 202, res.body);
    assert.match(res.body, /HTTP\/1\.1 404 Not Found\r\n/);
    assert.match(res.body, /Content-Type: application\/xml/);
    assert.match(res.body, /<code>ResourceNotFound<\/code>/);
  });

  test('batch without a boundary parameter -> 400 ordinary error', async () => {
    const res = await call({ method: 'POST', path: '/$batch', body: 'x', headers: { 'Content-Type': 'multipart/mixed' } });
    assertError(res, 400, 'InvalidInput');
  });
});

describe('robustness: hostile input gets a 4xx and the server keeps serving', () => {
  let table;
  before(async () => { table = await newTable('hostile'); });

  async function alive() {
    const res = await call({ rawTarget: '/_health', auth: 'none' });
    assert.equal(res.status, 200, 'server must still answer /_health');
  }

  test('10,000 nested parentheses in $filter', async () => {
    const f = `${'('.repeat(10000)}PartitionKey eq 'a'${')'.repeat(10000)}`;
    const res = await call({ path: `/${table}()?$filter=${encodeURIComponent(f)}` });
    assert.ok(res.status >= 400 && res.status < 500, `status ${res.status}`);
    await alive();
  });

  test('10,000 chained not operators in $filter', async () => {
    const f = `${'not '.repeat(10000)}(PartitionKey eq 'a')`;
    const res = await call({ path: `/${table}()?$filter=${encodeURIComponent(f)}` });
    assert.ok(res.status === 200 || (res.status >= 400 && res.status < 500), `status ${res.status}`);
    await alive();
  });

  test('a long or-chain of 200 key comparisons is accepted (no 15-comparison limit)', async () => {
    for (let i = 0; i < 5; i += 1) assert.equal((await insert(table, { PartitionKey: 'or', RowKey: String(i) })).status, 201);
    const terms = Array.from({ length: 200 }, (_, i) => `(PartitionKey eq 'or' and RowKey eq '${i}')`);
    const res = await call({ path: `/${table}()?$filter=${encodeURIComponent(terms.join(' or '))}` });
    assert.equal(res.status, 200, res.body.slice(0, 300));
    assert.equal(res.json.value.length, 5);
  });

  test('deeply nested JSON arrays in a body', async () => {
    const body = `{"PartitionKey":"p","RowKey":"deep","A":${'['.repeat(200000)}${']'.repeat(200000)}}`;
    const res = await call({ method: 'POST', path: `/${table}`, body });
    assertError(res, 400, 'InvalidInput');
    await alive();
  });

  test('invalid UTF-8 in a body -> 400', async () => {
    const body = Buffer.concat([Buffer.from('{"PartitionKey":"p","RowKey":"utf","S":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]);
    const res = await call({ method: 'POST', path: `/${table}`, body });
    assertError(res, 400, 'InvalidInput');
  });

  test('JSON surrogate-pair escapes decode to one character; a lone surrogate is refused', async () => {
    const ok = await call({ method: 'POST', path: `/${table}`, body: '{"PartitionKey":"p","RowKey":"sur","S":"\\ud83d\\ude00"}' });
    assert.equal(ok.status, 201, ok.body);
    assert.equal((await getEntity(table, 'p', 'sur')).json.S, '\u{1F600}');
    const lone = await call({ method: 'POST', path: `/${table}`, body: '{"PartitionKey":"p","RowKey":"lone","S":"\\ud800"}' });
    assert.equal(lone.status, 400, lone.body);
    await alive();
  });

  test('a 200 KiB request line -> 4xx response (414/431/400), not a connection reset', async () => {
    const f = `PartitionKey eq '${'x'.repeat(200 * 1024)}'`;
    let status;
    try {
      status = (await call({ path: `/${table}()?$filter=${encodeURIComponent(f)}` })).status;
    } catch (e) {
      status = e.code;
    }
    assert.ok(typeof status === 'number' && status >= 400 && status < 500, `status ${status}`);
    await alive();
  });

  test('garbage instead of HTTP -> 400 or close, then normal service', async () => {
    const text = await rawExchange(server, 'THIS IS NOT HTTP\r\n\r\n', { timeoutMs: 3000, untilClose: true });
    assert.ok(text === '' || /^HTTP\/1\.[01] 4\d\d/.test(text), text.slice(0, 200));
    await alive();
  });

  test('a batch whose changeset never closes -> 400 (not a hang or crash)', async () => {
    const b = `batch_${crypto.randomUUID()}`;
    const cs = `changeset_${crypto.randomUUID()}`;
    const body = [`--${b}`, `Content-Type: multipart/mixed; boundary=${cs}`, '', `--${cs}`, 'Content-Type: application/http', '',
      `PUT ${server.endpoint}/${table}(PartitionKey='x',RowKey='y') HTTP/1.1`, 'Content-Type: application/json', '', '{"A":1}'].join('\r\n');
    const res = await call({ method: 'POST', path: '/$batch', body, headers: { 'Content-Type': `multipart/mixed; boundary=${b}` } });
    assert.ok(res.status === 400 || res.status === 202, `status ${res.status}`);
    if (res.status === 202) assert.match(res.body, /HTTP\/1\.1 400/);
    assertError(await getEntity(table, 'x', 'y'), 404, 'ResourceNotFound');
    await alive();
  });
});

describe('AtomPub (x-ms-version before 2015-12-11, payload.md §6)', () => {
  let table;
  const ATOM = 'application/atom+xml';
  before(async () => {
    table = await newTable('atom');
    const res = await insert(table, {
      PartitionKey: 'p', RowKey: 'r', S: 'a&b<c>', I: 3, 'L@odata.type': 'Edm.Int64', L: '5', D: 2.5, B: true,
      'T@odata.type': 'Edm.DateTime', T: '2024-12-01T00:00:00Z',
    });
    assert.equal(res.status, 201, res.body);
  });

  // The m:properties of an Atom entry as {name: {type, value, isNull}}.
  function properties(xml) {
    const m = /<m:properties>([\s\S]*?)<\/m:properties>/.exec(xml);
    assert.ok(m, `no m:properties in ${xml.slice(0, 300)}`);
    const out = {};
    for (const p of m[1].matchAll(/<d:(\w+)((?:\s+m:\w+="[^"]*")*)\s*(?:\/>|>([\s\S]*?)<\/d:\1>)/g)) {
      const type = /m:type="([^"]+)"/.exec(p[2]);
      out[p[1]] = { type: type ? type[1] : 'Edm.String', value: p[3], isNull: /m:null="true"/.test(p[2]) };
    }
    return out;
  }

  test('Get Entity with Accept: application/atom+xml at 2013-08-15 -> Atom entry with typed properties', async () => {
    const res = await call({ path: keyPath(table, 'p', 'r'), headers: { 'x-ms-version': '2013-08-15', Accept: ATOM } });
    assert.equal(res.status, 200, res.body.slice(0, 300));
    assert.match(res.headers['content-type'] || '', /^application\/atom\+xml/);
    assert.match(res.body, /<entry[^>]*xml:base="[^"]+\/"/);
    assert.match(res.body, /m:etag="W\/&quot;datetime'/);
    const p = properties(res.body);
    assert.equal(p.S.value, 'a&amp;b&lt;c&gt;');
    assert.deepEqual([p.I.type, p.I.value], ['Edm.Int32', '3']);
    assert.deepEqual([p.L.type, p.L.value], ['Edm.Int64', '5']);
    assert.deepEqual([p.B.type, p.B.value], ['Edm.Boolean', 'true']);
    assert.deepEqual([p.T.type, p.T.value], ['Edm.DateTime', '2024-12-01T00:00:00Z']);
    assert.equal(p.Timestamp.type, 'Edm.DateTime');
  });

  test('no Accept at 2011-08-18 -> Atom feed (the documented default)', async () => {
    const res = await call({ path: `/${table}()`, headers: { 'x-ms-version': '2011-08-18', Accept: null } });
    assert.equal(res.status, 200, res.body.slice(0, 300));
    assert.match(res.headers['content-type'] || '', /^application\/atom\+xml/);
    assert.match(res.body, /<feed[\s\S]*<entry[\s\S]*<\/feed>/);
  });

  test('Insert with an Atom body at 2011-08-18 -> 201 Atom entry, stored with its types', async () => {
    const atom = '<?xml version="1.0" encoding="utf-8" standalone="yes"?>' +
      '<entry xmlns="http://www.w3.org/2005/Atom" xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" ' +
      'xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><title /><updated>2013-09-18T23:46:19.3857256Z</updated>' +
      '<author><name /></author><id /><content type="application/xml"><m:properties>' +
      '<d:PartitionKey>ap</d:PartitionKey><d:RowKey>ar</d:RowKey><d:Qty m:type="Edm.Int32">3</d:Qty>' +
      '<d:Big m:type="Edm.Int64">9223372036854775807</d:Big><d:Gone m:type="Edm.Binary" m:null="true" /></m:properties></content></entry>';
    const res = await call({ method: 'POST', path: `/${table}`, body: atom, headers: { 'x-ms-version': '2011-08-18', 'Content-Type': 'application/atom+xml', Accept: ATOM } });
    assert.equal(res.status, 201, res.body.slice(0, 300));
    const got = await getEntity(table, 'ap', 'ar');
    assert.equal(got.status, 200, got.body);
    assert.equal(got.json.Qty, 3);
    assert.equal(got.json.Big, '9223372036854775807');
    assert.equal(got.json['Big@odata.type'], 'Edm.Int64');
    assert.ok(!('Gone' in got.json));
  });

  test('$select of an absent property in Atom -> m:null="true"', async () => {
    const res = await call({ path: `${keyPath(table, 'p', 'r')}?$select=S,Missing`, headers: { 'x-ms-version': '2013-08-15', Accept: ATOM } });
    assert.equal(res.status, 200, res.body.slice(0, 300));
    const p = properties(res.body);
    assert.ok(p.Missing && p.Missing.isNull, res.body);
  });

  test('Atom error bodies for Atom requests are XML', async () => {
    const res = await call({ path: keyPath(table, 'p', 'absent'), headers: { 'x-ms-version': '2013-08-15', Accept: ATOM } });
    assert.equal(res.status, 404);
    assert.match(res.headers['content-type'] || '', /^application\/xml/);
    assert.match(res.body, /<code>ResourceNotFound<\/code>/);
    assert.equal(res.headers['x-ms-error-code'], 'ResourceNotFound');
  });

  // An Atom entry whose m:properties are `props` (payload.md §6.2), written
  // with other prefixes than the service's: clients may, servers read by URI.
  function atomEntry(props) {
    return '<?xml version="1.0" encoding="utf-8"?><a:entry xmlns:a="http://www.w3.org/2005/Atom" ' +
      'xmlns:ds="http://schemas.microsoft.com/ado/2007/08/dataservices" ' +
      'xmlns:md="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><a:title /><a:id />' +
      `<a:content type="application/xml"><md:properties>${props}</md:properties></a:content></a:entry>`;
  }
  const OLD = { 'x-ms-version': '2013-08-15', Accept: ATOM };

  test('Create Table with an Atom body -> 201 Atom entry; Query Tables answers an Atom feed', async () => {
    const name = uniqueTableName('atomtbl');
    const res = await call({ method: 'POST', path: '/Tables', body: atomEntry(`<ds:TableName>${name}</ds:TableName>`), headers: { ...OLD, 'Content-Type': 'application/atom+xml;charset="utf-8"' } });
    assert.equal(res.status, 201, res.body.slice(0, 300));
    assert.match(res.headers['content-type'] || '', /^application\/atom\+xml/);
    assert.equal(res.headers.location, `${server.endpoint}/Tables('${name}')`);
    assert.match(res.body, new RegExp(`<d:TableName>${name}</d:TableName>`));
    assert.match(res.body, new RegExp(`<category term="${server.account}\\.Tables"`));
    const list = await call({ path: `/Tables?$filter=${encodeURIComponent(`TableName eq '${name}'`)}`, headers: OLD });
    assert.equal(list.status, 200, list.body.slice(0, 300));
    assert.match(list.body, /<feed[^>]*xml:base="[^"]+\/"/);
    assert.match(list.body, /<title type="text">Tables<\/title>/);
    assert.equal((list.body.match(/<entry>/g) || []).length, 1, list.body);
  });

  test('Query Entities in Atom pages with the JSON continuation headers', async () => {
    for (const rk of ['1', '2']) assert.equal((await insert(table, { PartitionKey: 'page', RowKey: rk })).status, 201);
    const res = await call({ path: `/${table}()?$filter=${encodeURIComponent("PartitionKey eq 'page'")}&$top=1`, headers: OLD });
    assert.equal(res.status, 200, res.body.slice(0, 300));
    assert.equal((res.body.match(/<entry /g) || []).length, 1, res.body);
    assert.ok(res.headers['x-ms-continuation-nextpartitionkey'], 'continuation expected');
    assert.ok(res.headers['x-ms-continuation-nextrowkey'], 'continuation expected');
  });

  test('Merge and Insert Or Replace with Atom bodies; the ETag header as for JSON', async () => {
    assert.equal((await insert(table, { PartitionKey: 'm', RowKey: 'r', A: 1 })).status, 201);
    const merge = await call({ method: 'MERGE', path: keyPath(table, 'm', 'r'), body: atomEntry('<ds:B md:type="Edm.Int64">7</ds:B>'), headers: { ...OLD, 'Content-Type': 'application/atom+xml', 'If-Match': '*' } });
    assert.equal(merge.status, 204, merge.body);
    assertEtag(merge.headers.etag);
    const got = await getEntity(table, 'm', 'r');
    assert.equal(got.json.A, 1);
    assert.equal(got.json.B, '7');
    const put = await call({ method: 'PUT', path: keyPath(table, 'm', 'u'), body: atomEntry('<ds:C md:type="Edm.Boolean">true</ds:C>'), headers: { ...OLD, 'Content-Type': 'application/atom+xml' } });
    assert.equal(put.status, 204, put.body);
    assert.equal((await getEntity(table, 'm', 'u')).json.C, true);
  });

  test('an invalid Atom body -> the JSON codec\'s error, as an XML error body', async () => {
    const res = await call({ method: 'POST', path: `/${table}`, body: atomEntry('<ds:PartitionKey>p</ds:PartitionKey><ds:RowKey>bad</ds:RowKey><ds:N md:type="Edm.Int32">x</ds:N>'), headers: { ...OLD, 'Content-Type': 'application/atom+xml' } });
    assert.equal(res.status, 400, res.body);
    assert.equal(res.headers['x-ms-error-code'], 'InvalidInput');
    assert.match(res.headers['content-type'] || '', /^application\/xml/);
    assert.match(res.body, /<code>InvalidInput<\/code>/);
    const malformed = await call({ method: 'POST', path: `/${table}`, body: '<entry', headers: { ...OLD, 'Content-Type': 'application/atom+xml' } });
    assert.equal(malformed.status, 400, malformed.body);
    assert.equal(malformed.headers['x-ms-error-code'], 'InvalidInput');
  });

  test('JSON is still served at 2013-08-15 when asked for', async () => {
    const res = await call({ path: keyPath(table, 'p', 'r'), headers: { 'x-ms-version': '2013-08-15', Accept: MINIMAL } });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.json.S, 'a&b<c>');
  });

  test('an Atom body at 2015-12-11 or later -> 415 AtomFormatNotSupported', async () => {
    const res = await call({ method: 'POST', path: `/${table}`, body: atomEntry('<ds:PartitionKey>p</ds:PartitionKey><ds:RowKey>late</ds:RowKey>'), headers: { 'x-ms-version': '2015-12-11', 'Content-Type': 'application/atom+xml' } });
    assert.equal(res.status, 415, res.body);
    assert.equal(res.headers['x-ms-error-code'], 'AtomFormatNotSupported');
    assert.match(res.body, /<code>AtomFormatNotSupported<\/code>/);
  });

  test('$batch at 2013-08-15: an Atom insert part without Accept -> 201 with an Atom entry (payload.md §6.7)', async () => {
    const b = `batch_${crypto.randomUUID()}`;
    const cs = `changeset_${crypto.randomUUID()}`;
    const body = [`--${b}`, `Content-Type: multipart/mixed; boundary=${cs}`, '', `--${cs}`, 'Content-Type: application/http',
      'Content-Transfer-Encoding: binary', '', `POST ${server.endpoint}/${table} HTTP/1.1`, 'Content-ID: 1', 'DataServiceVersion: 1.0;NetFx',
      'Content-Type: application/atom+xml', '', atomEntry('<ds:PartitionKey>batch</ds:PartitionKey><ds:RowKey>1</ds:RowKey><ds:Q md:type="Edm.Int32">4</ds:Q>'),
      `--${cs}--`, `--${b}--`, ''].join('\r\n');
    const res = await call({ method: 'POST', path: '/$batch', body, headers: { 'x-ms-version': '2013-08-15', 'Content-Type': `multipart/mixed; boundary=${b}` } });
    assert.equal(res.status, 202, res.body);
    assert.match(res.body, /HTTP\/1\.1 201 Created\r\n/);
    assert.match(res.body, /Content-Type: application\/atom\+xml;charset=utf-8\r\n/);
    assert.match(res.body, /<d:Q m:type="Edm.Int32">4<\/d:Q>/);
    assert.equal((await getEntity(table, 'batch', '1')).json.Q, 4);
  });
});
