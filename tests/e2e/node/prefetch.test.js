'use strict';
// Query Entities pages rendered ahead (server/http/page_prefetch.h): after a page
// with a continuation is written, the server renders the next one; the
// request for it gets that rendering only if nothing was written meanwhile.
// Each group runs its own server, so its /_metrics counts are exactly ours.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { TableClient, AzureNamedKeyCredential } = require('@azure/data-tables');

const { startServer, uniqueTableName } = require('./server');
const { request } = require('./http');
const { metricCounts } = require('./util');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// Time for a page to be rendered ahead once its predecessor is written:
// a few milliseconds suffice; this leaves room for a busy machine.
const PAUSE_MS = 200;

async function prefetchCounts(server) {
  const counts = await metricCounts(server, 'cerulean_page_prefetch_total', 'result');
  assert.deepEqual(Object.keys(counts).sort(), ['served', 'stale', 'started', 'stopped']);
  return counts;
}

// One page: body text, continuation query string ('' on the last page).
async function page(server, table, query, next, accept) {
  const q = [query, next].filter(Boolean).join('&');
  const headers = accept ? { Accept: accept } : {};
  const res = await request(server, { path: `/${table}()${q ? `?${q}` : ''}`, headers });
  assert.equal(res.status, 200, res.body);
  const npk = res.headers['x-ms-continuation-nextpartitionkey'];
  const nrk = res.headers['x-ms-continuation-nextrowkey'];
  const cont = npk ? `NextPartitionKey=${encodeURIComponent(npk)}&NextRowKey=${encodeURIComponent(nrk || '')}` : '';
  return { body: res.body, json: res.json, next: cont };
}

for (const mode of ['memory', 'disk']) {
  // With CERULEAN_E2E_DATABASE the "memory" server serves from PostgreSQL,
  // which renders no page ahead: other nodes write too, so no local count
  // can tell that a page rendered ahead is still current (no WriteEpoch).
  const skip = mode === 'memory' && process.env.CERULEAN_E2E_DATABASE
    ? 'PostgreSQL backend: no pages rendered ahead (no write epoch across nodes)' : false;
  describe(`pages rendered ahead (${mode})`, { skip }, () => {
    let server;
    let dir;
    let table;
    before(async () => {
      if (mode === 'disk') dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-prefetch-'));
      server = await startServer(dir ? { location: dir } : {});
      table = uniqueTableName('ahead');
      assert.equal((await request(server, { method: 'POST', path: '/Tables', body: { TableName: table } })).status, 201);
      for (let i = 0; i < 40; i++) {
        const body = {
          PartitionKey: `p${i % 2}`, RowKey: `r${String(i).padStart(3, '0')}`, N: i, Even: i % 2 === 0,
          'Big@odata.type': 'Edm.Int64', Big: String(i * 1e12), Name: `n"${i}\\`,
        };
        const res = await request(server, { method: 'POST', path: `/${table}`, body, headers: { Prefer: 'return-no-content' } });
        assert.equal(res.status, 204, res.body);
      }
    });
    after(async () => {
      if (server) await server.stop();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    // [name, query, Accept, pages rendered ahead]. A filter on other
    // properties than the keys is not rendered ahead (its next page may
    // examine any number of rows).
    const shapes = [
      ['no filter', '$top=7', undefined, true],
      ['key range', `$filter=${encodeURIComponent("PartitionKey eq 'p1' and RowKey ge 'r010'")}&$top=4`, undefined, true],
      ['$select', '$select=N,Name&$top=9', undefined, true],
      ['full metadata', '$top=11', 'application/json;odata=fullmetadata', true],
      ['residual filter', `$filter=${encodeURIComponent('N ge 5 and Even eq true')}&$top=3`, undefined, false],
    ];
    for (const [name, query, accept, ahead] of shapes) {
      test(`${name}: ${ahead ? 'each page is rendered ahead and served' : 'no page is rendered ahead'}, byte for byte what rendering it then gives`, async () => {
        const before = await prefetchCounts(server);
        const pages = [];
        let next = '';
        for (;;) {
          await sleep(PAUSE_MS);
          const p = await page(server, table, query, next, accept);
          pages.push({ next, body: p.body });
          if (!p.next) break;
          next = p.next;
          assert.ok(pages.length < 50, 'too many pages');
        }
        const after = await prefetchCounts(server);
        assert.ok(pages.length > 1, `${pages.length} pages`);
        // Every page but the first was rendered ahead (the /_metrics read
        // above came before the first page's request), or none.
        assert.equal(after.served - before.served, ahead ? pages.length - 1 : 0, JSON.stringify({ before, after }));
        assert.equal(after.started - before.started, ahead ? pages.length - 1 : 0, JSON.stringify({ before, after }));
        // Asked again (nothing held for them now), each page is rendered on
        // the request: the same bytes.
        for (const p of pages) {
          const again = await page(server, table, query, p.next, accept);
          assert.equal(again.body, p.body, `page after ${p.next}`);
        }
      });
    }

    test('a write between two pages is in the second: the page rendered ahead is dropped', async () => {
      const t = uniqueTableName('aheadw');
      assert.equal((await request(server, { method: 'POST', path: '/Tables', body: { TableName: t } })).status, 201);
      for (let i = 0; i < 10; i += 2) {
        const res = await request(server, { method: 'POST', path: `/${t}`, body: { PartitionKey: 'p', RowKey: `r${i}`, V: 1 } });
        assert.equal(res.status, 201, res.body);
      }
      const nometa = 'application/json;odata=nometadata';
      const keysOf = (p) => p.json.value.map((e) => `${e.RowKey}:${e.V}`);
      const before = await prefetchCounts(server);
      const first = await page(server, t, '$top=2', '', nometa);
      assert.deepEqual(keysOf(first), ['r0:1', 'r2:1']);
      await sleep(PAUSE_MS);  // the second page (r4, r6) is rendered ahead meanwhile
      // Insert r5, update r6, delete r4: all on the second page.
      assert.equal((await request(server, { method: 'POST', path: `/${t}`, body: { PartitionKey: 'p', RowKey: 'r5', V: 2 } })).status, 201);
      assert.equal((await request(server, { method: 'PUT', path: `/${t}(PartitionKey='p',RowKey='r6')`, body: { V: 3 } })).status, 204);
      assert.equal((await request(server, { method: 'DELETE', path: `/${t}(PartitionKey='p',RowKey='r4')`, headers: { 'If-Match': '*' } })).status, 204);
      const second = await page(server, t, '$top=2', first.next, nometa);
      assert.deepEqual(keysOf(second), ['r5:2', 'r6:3']);
      const after = await prefetchCounts(server);
      // Rendered ahead in the pause, then found stale (not stopped: the
      // writes came after it was done).
      assert.equal(after.stale - before.stale, 1, JSON.stringify({ before, after }));
      assert.equal(after.served - before.served, 0, JSON.stringify({ before, after }));
    });

    test('another request between two pages: the second page is still right', async () => {
      const first = await page(server, table, '$top=5');
      // Straight away: the rendering ahead, if under way, stops for it.
      const get = await request(server, { path: `/${table}(PartitionKey='p0',RowKey='r000')` });
      assert.equal(get.status, 200, get.body);
      const second = await page(server, table, '$top=5', first.next);
      const again = await page(server, table, '$top=5', first.next);
      assert.equal(second.body, again.body);
      assert.equal(second.json.value.length, 5);
    });

    test('@azure/data-tables pages through a table with writes between pages', async () => {
      const cred = new AzureNamedKeyCredential(server.account, server.key);
      const t = uniqueTableName('aheadsdk');
      const client = new TableClient(server.endpoint, t, cred, { allowInsecureConnection: true });
      await client.createTable();
      for (let i = 0; i < 12; i++) await client.createEntity({ partitionKey: 'p', rowKey: `r${String(i).padStart(2, '0')}`, V: i });
      const before = await prefetchCounts(server);
      const seen = [];
      let n = 0;
      for await (const pageOfEntities of client.listEntities().byPage({ maxPageSize: 4 })) {
        seen.push(...pageOfEntities.map((e) => `${e.rowKey}:${e.V}`));
        n += 1;
        await sleep(PAUSE_MS);
        // After the first page, change one entity of each later page.
        if (n === 1) await client.updateEntity({ partitionKey: 'p', rowKey: 'r05', V: 50 }, 'Replace');
      }
      assert.deepEqual(seen, [
        'r00:0', 'r01:1', 'r02:2', 'r03:3', 'r04:4', 'r05:50', 'r06:6', 'r07:7', 'r08:8', 'r09:9', 'r10:10', 'r11:11',
      ]);
      const after = await prefetchCounts(server);
      // Page 2 was rendered ahead before the update and dropped; page 3 was
      // rendered ahead after it and served.
      assert.equal(after.stale - before.stale, 1, JSON.stringify({ before, after }));
      assert.ok(after.served - before.served >= 1, JSON.stringify({ before, after }));
    });
  });
}
