'use strict';
// Query Entities pages rendered ahead (server/runtime/page_prefetch.h): after a page
// with a continuation is written, the server renders the next one; the
// request for it gets that rendering only if nothing was written meanwhile.
// Whether a rendering ahead is done before the next request arrives is a
// matter of timing, so what is asserted is what a client sees: every page is
// byte for byte what rendering it on request gives, pages are complete
// across continuations, a write between pages is in the next page, and the
// queries the rule excludes are never rendered ahead. Each group runs its own
// server, so its /_metrics counts are exactly ours.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const http = require('node:http');
const path = require('node:path');
const { TableClient, AzureNamedKeyCredential } = require('@azure/data-tables');

const { startServer, uniqueTableName } = require('./server');
const { request: sharedRequest } = require('./http');
const { metricCounts } = require('./util');

// Every request of this file goes over one connection, so that each arrives
// only once the server has finished writing the answer before it. On a
// second connection a request can be parsed before that answer's write has
// completed, while the server still counts two requests in flight, and then
// no page is rendered ahead after it.
const oneConnection = new http.Agent({ keepAlive: true, maxSockets: 1 });
const request = (server, options) => sharedRequest(server, { agent: oneConnection, ...options });

async function prefetchCounts(server) {
  const counts = await metricCounts(server, 'cerulean_page_prefetch_total', 'result', oneConnection);
  assert.deepEqual(Object.keys(counts).sort(), ['served', 'stale', 'started', 'stopped']);
  return counts;
}

const delta = (before, after) => Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - before[k]]));

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

    // [name, query, Accept, pages rendered ahead, rows]. A filter on other
    // properties than the keys is not rendered ahead (its next page may
    // examine any number of rows).
    const shapes = [
      ['no filter', '$top=7', undefined, true, 40],
      ['key range', `$filter=${encodeURIComponent("PartitionKey eq 'p1' and RowKey ge 'r010'")}&$top=4`, undefined, true, 15],
      ['$select', '$select=N,Name&$top=9', undefined, true, 40],
      ['full metadata', '$top=11', 'application/json;odata=fullmetadata', true, 40],
      ['residual filter', `$filter=${encodeURIComponent('N ge 5 and Even eq true')}&$top=3`, undefined, false, 17],
    ];
    // Pages through `query` as a client does, each request sent `pauseMs`
    // after the last page has arrived (at once by default).
    const readAll = async (query, accept, pauseMs = 0) => {
      const pages = [];
      let next = '';
      for (;;) {
        const p = await page(server, table, query, next, accept);
        pages.push({ next, body: p.body, rows: p.json.value.length });
        if (!p.next) return pages;
        next = p.next;
        if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
        assert.ok(pages.length < 50, 'too many pages');
      }
    };
    // The same pages asked again last to first: the rendering ahead after
    // each is for the page after it, never the one asked next, so each is
    // rendered on request.
    const onRequest = async (pages, query, accept) => {
      for (const p of [...pages].reverse()) {
        const again = await page(server, table, query, p.next, accept);
        assert.equal(again.body, p.body, `page after ${p.next}`);
      }
    };
    for (const [name, query, accept, ahead, rows] of shapes) {
      test(`${name}: ${ahead ? 'pages rendered ahead' : 'no page rendered ahead'}; each page is byte for byte what rendering it on request gives`, async () => {
        const before = await prefetchCounts(server);
        const pages = await readAll(query, accept);
        const d = delta(before, await prefetchCounts(server));
        assert.ok(pages.length > 1, `${pages.length} pages`);
        assert.equal(pages.reduce((n, p) => n + p.rows, 0), rows, 'every row once, across the continuations');
        // One client, one request at a time: a rendering ahead follows each
        // page with a continuation of a query the rule allows, and none
        // follows the others. Whether it is done when the next request
        // arrives (served) or not (stopped) is timing.
        assert.equal(d.started, ahead ? pages.length - 1 : 0, JSON.stringify(d));
        if (!ahead) assert.equal(d.served, 0, JSON.stringify(d));
        assert.equal(d.stale, 0, `nothing was written: ${JSON.stringify(d)}`);
        await onRequest(pages, query, accept);
      });
    }

    test('pages served from a rendering ahead are the pages rendered on request', async () => {
      // Over a few passes some page is served from a rendering ahead; every
      // page is compared with itself rendered on request. The client is
      // slower each pass (the pause is the point: it takes longer to ask
      // for the next page than the server takes to render it), so a loaded
      // machine, whose rendering ahead may lose the race with a client that
      // asks at once, still gets some page served.
      let served = 0;
      for (let pass = 0; pass < 20 && served === 0; pass++) {
        for (const [, query, accept, ahead] of shapes) {
          if (!ahead) continue;
          const before = await prefetchCounts(server);
          const pages = await readAll(query, accept, 20 * pass);
          served += delta(before, await prefetchCounts(server)).served;
          await onRequest(pages, query, accept);
        }
      }
      assert.ok(served > 0, 'no page was served from a rendering ahead in 20 passes');
    });

    test('a write between two pages is in the second: a page rendered before it is never served', async () => {
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
      // The second page (r4, r6) is being rendered ahead, or is done.
      // Insert r5, update r6, delete r4: all on the second page.
      assert.equal((await request(server, { method: 'POST', path: `/${t}`, body: { PartitionKey: 'p', RowKey: 'r5', V: 2 } })).status, 201);
      assert.equal((await request(server, { method: 'PUT', path: `/${t}(PartitionKey='p',RowKey='r6')`, body: { V: 3 } })).status, 204);
      assert.equal((await request(server, { method: 'DELETE', path: `/${t}(PartitionKey='p',RowKey='r4')`, headers: { 'If-Match': '*' } })).status, 204);
      const second = await page(server, t, '$top=2', first.next, nometa);
      assert.deepEqual(keysOf(second), ['r5:2', 'r6:3']);
      const d = delta(before, await prefetchCounts(server));
      assert.ok(d.started >= 1, JSON.stringify(d));
      assert.equal(d.served, 0, JSON.stringify(d));
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
      const seen = [];
      let n = 0;
      for await (const pageOfEntities of client.listEntities().byPage({ maxPageSize: 4 })) {
        seen.push(...pageOfEntities.map((e) => `${e.rowKey}:${e.V}`));
        n += 1;
        // After the first page, change one entity of a later page.
        if (n === 1) await client.updateEntity({ partitionKey: 'p', rowKey: 'r05', V: 50 }, 'Replace');
      }
      assert.deepEqual(seen, [
        'r00:0', 'r01:1', 'r02:2', 'r03:3', 'r04:4', 'r05:50', 'r06:6', 'r07:7', 'r08:8', 'r09:9', 'r10:10', 'r11:11',
      ]);
    });
  });
}
