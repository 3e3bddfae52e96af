'use strict';
// $filter semantics, literals, ordering and paging edge cases (spec/query.md),
// over raw HTTP so exactly the filter text under test reaches the server.

const { test, describe, before } = require('node:test');
const assert = require('node:assert/strict');

const { useServer, uniqueTableName } = require('./server');
const { request } = require('./http');
const { assertError, ordinal } = require('./util');

const server = useServer();
const call = (opts) => request(server, opts);
const NOMETA = 'application/json;odata=nometadata';

async function newTable(prefix, rows = []) {
  const name = uniqueTableName(prefix);
  const res = await call({ method: 'POST', path: '/Tables', body: { TableName: name } });
  assert.equal(res.status, 201, res.body);
  for (const r of rows) {
    const ins = await call({ method: 'POST', path: `/${name}`, body: r, headers: { Prefer: 'return-no-content' } });
    assert.equal(ins.status, 204, ins.body);
  }
  return name;
}

// All entities matching `filter` (following continuation), as "PK/RK".
async function matches(table, filter, { top, select } = {}) {
  const keys = [];
  let next = '';
  for (let pages = 0; ; pages += 1) {
    assert.ok(pages < 500, 'too many pages');
    const q = [];
    if (filter !== undefined) q.push(`$filter=${encodeURIComponent(filter)}`);
    if (top) q.push(`$top=${top}`);
    if (select) q.push(`$select=${select}`);
    if (next) q.push(next);
    const res = await call({ path: `/${table}()?${q.join('&')}`, headers: { Accept: NOMETA } });
    assert.equal(res.status, 200, `${filter}: ${res.body}`);
    keys.push(...res.json.value.map((e) => `${e.PartitionKey}/${e.RowKey}`));
    const npk = res.headers['x-ms-continuation-nextpartitionkey'];
    if (!npk) return keys;
    next = `NextPartitionKey=${encodeURIComponent(npk)}&NextRowKey=${encodeURIComponent(res.headers['x-ms-continuation-nextrowkey'] || '')}`;
  }
}

describe('typed comparisons (query.md §3)', () => {
  let t;
  before(async () => {
    t = await newTable('types', [
      { PartitionKey: 'p', RowKey: 'i32', V: 5 },
      { PartitionKey: 'p', RowKey: 'i64', 'V@odata.type': 'Edm.Int64', V: '5' },
      { PartitionKey: 'p', RowKey: 'dbl', 'V@odata.type': 'Edm.Double', V: '5' },
      { PartitionKey: 'p', RowKey: 'dblfrac', V: 5.5 },
      { PartitionKey: 'p', RowKey: 'str', V: '5' },
      { PartitionKey: 'p', RowKey: 'bool', V: true },
      { PartitionKey: 'p', RowKey: 'none' },
      { PartitionKey: 'p', RowKey: 'negzero', 'V@odata.type': 'Edm.Double', V: '-0' },
      { PartitionKey: 'p', RowKey: 'zero', V: 0 },
    ]);
  });

  const rows = async (f) => (await matches(t, f)).map((k) => k.split('/')[1]).sort();

  test('Int32 literal widens to Int64 and Double', async () => {
    assert.deepEqual(await rows('V eq 5'), ['dbl', 'i32', 'i64']);
    assert.deepEqual(await rows('V gt 5'), ['dblfrac']);
  });

  test('Int64 literal: Int64 and Double, never Int32', async () => {
    assert.deepEqual(await rows('V eq 5L'), ['dbl', 'i64']);
  });

  test('Double literal: Double only', async () => {
    assert.deepEqual(await rows('V eq 5.0'), ['dbl']);
    assert.deepEqual(await rows('V ge 5.0'), ['dbl', 'dblfrac']);
    assert.deepEqual(await rows('V eq 0.0'), ['negzero'], '-0.0 equals 0.0; Int32 0 is not a Double');
  });

  test('String and Boolean literals match only their type', async () => {
    assert.deepEqual(await rows("V eq '5'"), ['str']);
    assert.deepEqual(await rows('V eq true'), ['bool']);
    assert.deepEqual(await rows('V'), ['bool'], 'a bare Boolean property is a predicate');
    assert.deepEqual(await rows('not V'), ['dbl', 'dblfrac', 'i32', 'i64', 'negzero', 'none', 'str', 'zero']);
  });

  test('missing property: every comparison false, ne included; not() inverts', async () => {
    assert.ok(!(await rows('V ne 5')).includes('none'));
    assert.ok((await rows('not (V eq 5)')).includes('none'));
    assert.ok(!(await rows("V ne 'x'")).includes('none'));
  });

  test("incompatible types: eq false, ne true", async () => {
    assert.deepEqual(await rows("V ne '5'"), ['bool', 'dbl', 'dblfrac', 'i32', 'i64', 'negzero', 'zero']);
  });

  test('constants true/false as predicates', async () => {
    assert.deepEqual(await rows("(true and RowKey eq 'i32') or (false or RowKey eq 'str')"), ['i32', 'str']);
    assert.deepEqual(await rows('false'), []);
  });

  test('literal on the left: 5 lt V means V gt 5', async () => {
    assert.deepEqual(await rows('5 lt V'), ['dblfrac']);
  });

  test('precedence: and binds tighter than or; not binds to the next term', async () => {
    assert.deepEqual(await rows("RowKey eq 'str' or RowKey eq 'i32' and V eq 6"), ['str']);
    assert.deepEqual(await rows("not RowKey eq 'str' and RowKey ge 's'"), ['zero']);
  });

  // PartitionKey and RowKey are Edm.String and Timestamp Edm.DateTime:
  // never a Boolean, so never an operand of not / and / or or a whole filter.
  for (const f of ['not PartitionKey', 'PartitionKey', 'not RowKey', "RowKey and V eq 5", 'V eq 5 or not Timestamp', '(RowKey)']) {
    test(`a key or Timestamp as a predicate: ${f} -> 400 InvalidInput`, async () => {
      assertError(await call({ path: `/${t}()?$filter=${encodeURIComponent(f)}` }), 400, 'InvalidInput');
    });
  }

  test('comparisons of keys and Timestamp with other literal types stay valid: no match', async () => {
    assert.deepEqual(await rows('PartitionKey eq 5'), []);
    assert.deepEqual(await rows("Timestamp eq 'x'"), []);
    assert.equal((await rows('RowKey ne true')).length, 9);
  });
});

describe('literal forms (query.md §2.1)', () => {
  let t;
  before(async () => {
    t = await newTable('lits', [
      { PartitionKey: 'p', RowKey: '1', 'D@odata.type': 'Edm.Double', D: '1E+20', 'T@odata.type': 'Edm.DateTime', T: '2024-01-01T00:00:00.1234567Z', 'G@odata.type': 'Edm.Guid', G: 'c9da6455-213d-42c9-9a79-3e9149a57833', 'B@odata.type': 'Edm.Binary', B: 'AQI=', 'L@odata.type': 'Edm.Int64', L: '-9223372036854775808', S: "it's" },
    ]);
  });
  const hit = async (f) => (await matches(t, f)).length === 1;

  for (const f of ['D eq 1E+20', 'D eq 1e+20', 'D eq 1e20', 'D eq 100000000000000000000.0', 'D eq 1E+20d']) {
    test(`double literal: ${f}`, async () => assert.ok(await hit(f)));
  }
  for (const f of [
    "T eq datetime'2024-01-01T00:00:00.1234567Z'",
    "T gt datetime'2024-01-01T00:00:00.123456Z'",
    "T lt datetime'2024-01-01T00:00:00.124Z'",
    "T gt datetime'2024-01-01T00:00:00Z'",
    "T gt datetime'2024-01-01T00:00:00'",
  ]) {
    test(`datetime literal: ${f}`, async () => assert.ok(await hit(f)));
  }
  test('datetime precision: 100 ns matters', async () => {
    assert.ok(!(await hit("T gt datetime'2024-01-01T00:00:00.1234567Z'")));
    assert.ok(await hit("T gt datetime'2024-01-01T00:00:00.1234566Z'"));
  });
  for (const f of ["G eq guid'c9da6455-213d-42c9-9a79-3e9149a57833'", "G eq guid'C9DA6455-213D-42C9-9A79-3E9149A57833'"]) {
    test(`guid literal: ${f}`, async () => assert.ok(await hit(f)));
  }
  for (const f of ["B eq X'0102'", "B eq x'0102'", "B eq binary'0102'", "B gt X'01'", "B lt X'010201'", "B lt X'02'"]) {
    test(`binary literal: ${f}`, async () => assert.ok(await hit(f)));
  }
  for (const f of ['L eq -9223372036854775808L', 'L lt 0L', 'L lt 0', "S eq 'it''s'"]) {
    test(`literal: ${f}`, async () => assert.ok(await hit(f)));
  }
  for (const f of [
    'L eq 9223372036854775808L', "T eq datetime'yesterday'", "G eq guid'xyz'", "B eq X'012'", 'D eq .5',
    "S eq 'a' eq 'b'", 'S eq S', '1 eq 1', "S Eq 'x'", "S eq \"x\"", "S eq 'x' and",
  ]) {
    test(`invalid: ${f} -> 400 InvalidInput`, async () => {
      assertError(await call({ path: `/${t}()?$filter=${encodeURIComponent(f)}` }), 400, 'InvalidInput');
    });
  }
});

describe('ordering (ordinal UTF-16) in keys and property comparisons', () => {
  const keys = ['', ' ', 'A', 'B', 'Z', '_', 'a', 'aa', 'b', '~', '\u00e9', '\u4e2d', '\uE000', '\uFFFD', '\u{1F600}', '\u{10000}'];
  let t;
  before(async () => {
    t = await newTable('ord', keys.map((k, i) => ({ PartitionKey: k, RowKey: String(i), S: k })));
  });

  test('entities come back ordered by PartitionKey in UTF-16 code-unit order', async () => {
    const got = (await matches(t)).map((k) => k.slice(0, k.lastIndexOf('/')));
    assert.deepEqual(got, [...keys].sort(ordinal));
  });

  test('string property comparisons use the same order', async () => {
    const got = (await matches(t, "S gt '\uE000'")).map((k) => k.slice(0, k.lastIndexOf('/'))).sort(ordinal);
    assert.deepEqual(got, keys.filter((k) => k > '\uE000').sort(ordinal));
    const low = (await matches(t, "S lt 'a'")).map((k) => k.slice(0, k.lastIndexOf('/'))).sort(ordinal);
    assert.deepEqual(low, keys.filter((k) => k < 'a').sort(ordinal));
  });

  test('paging through keys including the empty key and non-BMP keys', async () => {
    const all = await matches(t, undefined, { top: 1 });
    assert.equal(all.length, keys.length);
    assert.deepEqual(all.map((k) => k.slice(0, k.lastIndexOf('/'))), [...keys].sort(ordinal));
  });
});

describe('continuation tokens', () => {
  let t;
  before(async () => {
    const rows = [];
    for (const pk of ['', 'a', "q'uote", 'b c', '\u{1F600}']) {
      for (const rk of ['', '1', '2']) rows.push({ PartitionKey: pk, RowKey: rk, N: 1 });
    }
    t = await newTable('cont', rows);
  });

  test('tokens are never empty, even when the next key is the empty string', async () => {
    let next = '';
    let pages = 0;
    for (;;) {
      const res = await call({ path: `/${t}()?$top=1${next}` });
      assert.equal(res.status, 200, res.body);
      pages += 1;
      const npk = res.headers['x-ms-continuation-nextpartitionkey'];
      const nrk = res.headers['x-ms-continuation-nextrowkey'];
      if (npk === undefined) break;
      assert.ok(npk.length > 0 && nrk && nrk.length > 0, `empty continuation token: ${npk} / ${nrk}`);
      next = `&NextPartitionKey=${encodeURIComponent(npk)}&NextRowKey=${encodeURIComponent(nrk)}`;
      assert.ok(pages < 30);
    }
    // 15 entities at $top=1: 15 pages, or 16 if the last full page still
    // carries a continuation (an empty last page is legal, query.md §6.1).
    assert.ok(pages === 15 || pages === 16, `pages: ${pages}`);
  });

  test('NextPartitionKey without NextRowKey starts at the beginning of that partition', async () => {
    const first = await call({ path: `/${t}()?$top=4` });
    const npk = first.headers['x-ms-continuation-nextpartitionkey'];
    assert.ok(npk);
    const res = await call({ path: `/${t}()?NextPartitionKey=${encodeURIComponent(npk)}`, headers: { Accept: NOMETA } });
    assert.equal(res.status, 200, res.body);
    // The 4th entity is partition 'a' row '' (keys '', then 'a'); resuming from partition 'a' starts at its first row.
    assert.deepEqual(res.json.value.slice(0, 1).map((e) => [e.PartitionKey, e.RowKey]), [['a', '']]);
  });

  test('continuation with a filter and $select resumes correctly', async () => {
    const all = await matches(t, "RowKey ne '1'", { top: 2, select: 'PartitionKey,RowKey' });
    assert.deepEqual(all, (await matches(t, "RowKey ne '1'")));
    assert.equal(all.length, 10);
  });

  test('an undecodable token -> 400 InvalidInput', async () => {
    assertError(await call({ path: `/${t}()?NextPartitionKey=${encodeURIComponent('1!99!@@@')}&NextRowKey=x` }), 400, 'InvalidInput');
  });
});

describe('Query Tables', () => {
  test('$select=TableName, $top, ne/gt filters on TableName', async () => {
    const prefix = `qt${Date.now().toString(36)}`;
    for (const s of ['a', 'b', 'c']) await newTable(`${prefix}${s}`);
    const res = await call({ path: `/Tables?$select=TableName&$filter=${encodeURIComponent(`TableName gt '${prefix}c' and TableName lt '${prefix}z'`)}`, headers: { Accept: NOMETA } });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.json.value.length, 1);
    assert.ok(res.json.value[0].TableName.startsWith(`${prefix}c`));
  });

  test('filter on another property than TableName -> 400 InvalidInput', async () => {
    assertError(await call({ path: `/Tables?$filter=${encodeURIComponent("Foo eq 'x'")}` }), 400, 'InvalidInput');
  });

  test('TableName (Edm.String) as a predicate -> 400 InvalidInput', async () => {
    for (const f of ['not TableName', "TableName eq 'a' or TableName"]) {
      assertError(await call({ path: `/Tables?$filter=${encodeURIComponent(f)}` }), 400, 'InvalidInput');
    }
  });

  test('more than 1000 tables: first page exactly 1000, then the rest', async () => {
    const prefix = `many${Date.now().toString(36)}`;
    const names = [];
    for (let i = 0; i < 1005; i += 1) names.push(`${prefix}${String(i).padStart(4, '0')}`);
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(names.slice(i, i + 50).map((n) => call({ method: 'POST', path: '/Tables', body: { TableName: n }, headers: { Prefer: 'return-no-content' } })
        .then((r) => assert.equal(r.status, 204, r.body))));
    }
    const filter = encodeURIComponent(`TableName ge '${prefix}' and TableName lt '${prefix}~'`);
    const first = await call({ path: `/Tables?$filter=${filter}` });
    assert.equal(first.json.value.length, 1000);
    const token = first.headers['x-ms-continuation-nexttablename'];
    assert.ok(token);
    const second = await call({ path: `/Tables?$filter=${filter}&NextTableName=${encodeURIComponent(token)}` });
    assert.equal(second.json.value.length, 5);
    assert.equal(second.headers['x-ms-continuation-nexttablename'], undefined);
    assert.deepEqual([...first.json.value, ...second.json.value].map((x) => x.TableName), names);
  });
});

describe('full pages', () => {
  test('$top pages are full while matching entities remain (sparse residual filter)', async () => {
    const rows = [];
    for (let i = 0; i < 400; i += 1) rows.push({ PartitionKey: `p${i % 4}`, RowKey: String(i).padStart(4, '0'), Hit: i % 37 === 0 });
    const t = await newTable('full');
    for (let i = 0; i < rows.length; i += 100) {
      await Promise.all(rows.slice(i, i + 100).map((r) => call({ method: 'POST', path: `/${t}`, body: r, headers: { Prefer: 'return-no-content' } })));
    }
    const total = rows.filter((r) => r.Hit).length;
    const res = await call({ path: `/${t}()?$filter=${encodeURIComponent('Hit eq true')}&$top=5` });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.json.value.length, Math.min(5, total), 'the first page should be full when enough rows match');
    assert.equal((await matches(t, 'Hit eq true', { top: 3 })).length, total);
  });
});
