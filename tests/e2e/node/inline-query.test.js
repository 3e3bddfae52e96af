'use strict';
// Where Query Entities is answered (server/operations/query_entities.cc): a short
// page of key ranges only, with a short filter, on the thread that read the
// request; anything else (a residual filter, Atom, a long filter, a long
// page) on the blocking pool. Both must give the same answer; /_metrics
// counts which one did (each group runs its own server, so the counts are
// exactly ours). Where exactly "short" ends is the server's tuning, not
// asserted here: only that short pages are answered inline at all, that what
// the rule sends to the pool never is, and that every query is counted once.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { TableClient, AzureNamedKeyCredential, odata } = require('@azure/data-tables');

const { startServer, uniqueTableName } = require('./server');
const { request } = require('./http');
const { metricCounts } = require('./util');

async function queryCounts(server) {
  const counts = await metricCounts(server, 'cerulean_queries_total', 'answered');
  assert.deepEqual(Object.keys(counts).sort(), ['deferred', 'inline']);
  return counts;
}

// Runs `query` (raw HTTP, JSON) and returns the answer with how many
// queries each path answered meanwhile.
async function counted(server, table, query, accept, more = {}) {
  const before = await queryCounts(server);
  const headers = { ...(accept ? { Accept: accept } : {}), ...more };
  const res = await request(server, { path: `/${table}()?${query}`, headers });
  assert.equal(res.status, 200, res.body);
  const after = await queryCounts(server);
  return {
    res,
    inline: after.inline - before.inline,
    deferred: after.deferred - before.deferred,
  };
}

const filter = (f) => `$filter=${encodeURIComponent(f)}`;

for (const mode of ['memory', 'disk']) {
  describe(`queries answered inline or on the pool (${mode})`, () => {
    let server;
    let dir;
    let table;
    let client;
    const big = 'x'.repeat(30000); // ~30 KB of JSON per entity of partition "big"
    before(async () => {
      if (mode === 'disk') dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-inline-'));
      server = await startServer(dir ? { location: dir } : {});
      table = uniqueTableName('inline');
      const cred = new AzureNamedKeyCredential(server.account, server.key);
      client = new TableClient(server.endpoint, table, cred, { allowInsecureConnection: true });
      await client.createTable();
      for (let b = 0; b < 2; b++) {
        const ops = [];
        for (let i = b * 75; i < (b + 1) * 75; i++) {
          ops.push(['create', {
            partitionKey: 'p', rowKey: `r${String(i).padStart(3, '0')}`, N: i, Even: i % 2 === 0,
            Big: { value: String(i * 1e12), type: 'Int64' }, Name: `n"${i}\\é`,
          }]);
        }
        await client.submitTransaction(ops);
      }
      const ops = [];
      for (let i = 0; i < 40; i++) ops.push(['create', { partitionKey: 'big', rowKey: String(i).padStart(2, '0'), Text: big, N: i }]);
      await client.submitTransaction(ops);
    });
    after(async () => {
      if (server) await server.stop();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    test('key-range pages agree whichever thread answers them; short ones are answered inline', async () => {
      const range = filter("PartitionKey eq 'p' and RowKey ge 'r010'");
      for (const accept of [undefined, 'application/json;odata=fullmetadata', 'application/json;odata=nometadata']) {
        const short = await counted(server, table, `${range}&$top=10`, accept);
        const long = await counted(server, table, range, accept);
        const tiny = await counted(server, table, `${range}&$top=1`, accept);
        for (const r of [short, long, tiny]) assert.equal(r.inline + r.deferred, 1, 'counted once');
        assert.ok(short.inline + tiny.inline > 0, `short pages answered inline (${accept})`);
        const a = short.res.json.value;
        const b = long.res.json.value;
        assert.equal(a.length, 10);
        assert.equal(b.length, 140);
        assert.deepEqual(a, b.slice(0, 10));
        assert.deepEqual(tiny.res.json.value, b.slice(0, 1));
        assert.equal(a[0].RowKey, 'r010');
        // The short one continues where it stopped; the long one is whole.
        const r = short.res;
        const next = `NextPartitionKey=${encodeURIComponent(r.headers['x-ms-continuation-nextpartitionkey'])}` +
          `&NextRowKey=${encodeURIComponent(r.headers['x-ms-continuation-nextrowkey'])}`;
        const rest = await request(server, { path: `/${table}()?${range}&$top=1&${next}`, headers: { Accept: 'application/json;odata=nometadata' } });
        assert.equal(rest.status, 200, rest.body);
        assert.equal(rest.json.value[0].RowKey, 'r020');
        assert.equal(long.res.headers['x-ms-continuation-nextpartitionkey'], undefined);
        assert.equal(short.res.json['odata.metadata'], long.res.json['odata.metadata']);
      }
    });

    test('$select pages are answered inline too', async () => {
      let inline = 0;
      for (const top of [1, 5]) {
        const r = await counted(server, table, `${filter("PartitionKey eq 'p'")}&$select=N,Name&$top=${top}`);
        assert.equal(r.inline + r.deferred, 1);
        inline += r.inline;
        assert.deepEqual(r.res.json.value.map((e) => [e.N, e.Name]), [...Array(top).keys()].map((i) => [i, `n"${i}\\é`]));
      }
      assert.ok(inline > 0);
    });

    test('a residual filter, Atom, a long filter and a whole table go to the pool', async () => {
      const residual = await counted(server, table, `${filter('N ge 5 and Even eq true')}&$top=3`);
      assert.deepEqual([residual.inline, residual.deferred], [0, 1]);
      assert.deepEqual(residual.res.json.value.map((e) => e.N), [6, 8, 10]);
      const atom = await counted(server, table, `${filter("PartitionKey eq 'p'")}&$top=2`, 'application/atom+xml',
        { 'x-ms-version': '2013-08-15' });
      assert.deepEqual([atom.inline, atom.deferred], [0, 1]);
      assert.match(atom.res.body, /<d:RowKey>r001<\/d:RowKey>/);
      // A list of 1000 keys (~20 KB of filter): parsed and planned on the
      // pool, even for a page of one row of key ranges.
      const keys = [...Array(1000).keys()].map((i) => `RowKey eq 'r${String(i).padStart(3, '0')}'`);
      const list = await counted(server, table, `${filter(`PartitionKey eq 'p' and (${keys.join(' or ')})`)}&$top=1`);
      assert.deepEqual([list.inline, list.deferred], [0, 1]);
      assert.deepEqual(list.res.json.value.map((e) => e.RowKey), ['r000']);
      // The whole table (2.5 MB of JSON) is no short page.
      const all = await counted(server, table, '');
      assert.deepEqual([all.inline, all.deferred], [0, 1]);
      assert.equal(all.res.json.value.length, 190);
    });

    test('a page of a few large entities is rendered whole, counted once', async () => {
      const r = await counted(server, table, `${filter("PartitionKey eq 'big'")}&$top=100`);
      assert.equal(r.inline + r.deferred, 1);
      assert.ok(r.res.body.length > 1 << 20, `${r.res.body.length} bytes`);
      const rows = r.res.json.value;
      assert.deepEqual(rows.map((e) => e.N), [...Array(40).keys()]);
      assert.ok(rows.every((e) => e.Text === big));
      assert.equal(r.res.headers['x-ms-continuation-nextpartitionkey'], undefined);
    });

    test('@azure/data-tables pages through a partition in short pages, some inline, each counted once', async () => {
      const before = await queryCounts(server);
      const keys = [];
      let pages = 0;
      const iter = client.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${'p'}` } }).byPage({ maxPageSize: 20 });
      for await (const page of iter) {
        keys.push(...page.map((e) => e.rowKey));
        pages += 1;
      }
      const after = await queryCounts(server);
      assert.deepEqual(keys, [...Array(150).keys()].map((i) => `r${String(i).padStart(3, '0')}`));
      assert.equal((after.inline - before.inline) + (after.deferred - before.deferred), pages);
      assert.ok(after.inline > before.inline, 'short pages of key ranges are answered inline');
    });
  });
}
