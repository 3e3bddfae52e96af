'use strict';
// CORS as a browser enforces it: headless Chromium (Debian's package) loads a
// page from one loopback origin and calls the Table endpoint of a Cerulean on
// another with fetch(), authorized by an account SAS in the query string.
// Set Table Service Properties first installs a CORS rule for the allowed
// origin; a second origin (localhost instead of 127.0.0.1) is not in it.
//
// Checked: the allowed origin reads responses and exposed headers of
// simple requests and of preflighted ones (JSON bodies, custom x-ms-*
// headers, MERGE/DELETE); the denied origin's fetches fail and its
// preflighted writes never reach the store; '*' rules and removing the rules
// take effect.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const { chromium } = require('playwright-core');
const { startServer, uniqueTableName } = require('../node/server');
const { request } = require('../node/http');

const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';

// A tiny page server: every path answers the same empty HTML page, so the
// page's origin is http://<host>:<port>.
function startPageServer() {
  return new Promise((resolve) => {
    const srv = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>cors</title><body>cors test page</body>');
    });
    srv.listen(0, '127.0.0.1', () => resolve(srv));
  });
}

// Account SAS (spec/auth.md §4) for all table operations, signed here so the
// page never sees the key.
function accountSas(server) {
  const sv = '2019-02-02';
  const sp = 'rwdlacu';
  const ss = 't';
  const srt = 'sco';
  const se = new Date(Date.now() + 3600 * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const spr = 'https,http';
  const sts = `${server.account}\n${sp}\n${ss}\n${srt}\n\n${se}\n\n${spr}\n${sv}\n`;
  const sig = crypto.createHmac('sha256', Buffer.from(server.key, 'base64')).update(sts, 'utf8').digest('base64');
  return new URLSearchParams({ sv, ss, srt, sp, se, spr, sig }).toString();
}

function corsXml(rules) {
  const body = rules.map((r) => '<CorsRule>' +
    `<AllowedOrigins>${r.origins}</AllowedOrigins>` +
    `<AllowedMethods>${r.methods || 'GET,PUT,POST,MERGE,DELETE,OPTIONS,HEAD'}</AllowedMethods>` +
    `<MaxAgeInSeconds>${r.maxAge ?? 0}</MaxAgeInSeconds>` +
    `<ExposedHeaders>${r.exposed || 'x-ms-*,etag'}</ExposedHeaders>` +
    `<AllowedHeaders>${r.headers || 'x-ms-*,content-type,accept,if-match,dataserviceversion,maxdataserviceversion,prefer'}</AllowedHeaders>` +
    '</CorsRule>').join('');
  return '<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties>' +
    (rules.length ? `<Cors>${body}</Cors>` : '<Cors />') + '</StorageServiceProperties>';
}

describe('CORS in headless Chromium', () => {
  let server;
  let allowedPages;
  let deniedPages;
  let context;
  let allowedOrigin;
  let deniedOrigin;
  let sas;
  let table;

  async function setCors(rules) {
    const res = await request(server, {
      method: 'PUT',
      path: '/?restype=service&comp=properties',
      headers: { 'Content-Type': 'application/xml' },
      body: corsXml(rules),
    });
    assert.equal(res.status, 202, res.body);
  }

  // Opens `origin` in a new tab and runs fetch(url, init) there. Resolves to
  // { ok, status, body, headers (the ones JS may read) } or { error }.
  async function fetchFrom(origin, url, init = {}) {
    const page = await context.newPage();
    try {
      await page.goto(`${origin}/`);
      return await page.evaluate(async ({ url: u, init: i }) => {
        try {
          const r = await fetch(u, i);
          const headers = {};
          r.headers.forEach((v, k) => { headers[k] = v; });
          return { ok: r.ok, status: r.status, body: await r.text(), headers };
        } catch (e) {
          return { error: String(e) };
        }
      }, { url, init });
    } finally {
      await page.close();
    }
  }

  const entitiesUrl = (query = '') => `${server.endpoint}/${table}()?${sas}${query}`;
  const entityUrl = (pk, rk) => `${server.endpoint}/${table}(PartitionKey='${pk}',RowKey='${rk}')?${sas}`;
  const preflights = () => server.stdout().split('\n').filter((l) => l.includes('"operation":"Preflight"'))
    .map((l) => JSON.parse(l));

  before(async () => {
    server = await startServer({ silent: false, args: ['--jsonLog'] });
    allowedPages = await startPageServer();
    deniedPages = await startPageServer();
    allowedOrigin = `http://127.0.0.1:${allowedPages.address().port}`;
    deniedOrigin = `http://localhost:${deniedPages.address().port}`;
    sas = accountSas(server);
    table = uniqueTableName('cors');
    const created = await request(server, { method: 'POST', path: '/Tables', body: { TableName: table } });
    assert.equal(created.status, 201, created.body);
    const inserted = await request(server, { method: 'POST', path: `/${table}`, body: { PartitionKey: 'p', RowKey: 'seed', Text: 'from node' } });
    assert.equal(inserted.status, 201, inserted.body);
    await setCors([{ origins: allowedOrigin }]);

    const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
    });
  });

  after(async () => {
    if (context) await context.close();
    if (allowedPages) allowedPages.close();
    if (deniedPages) deniedPages.close();
    if (server) await server.stop();
  });

  test('allowed origin: a simple GET succeeds and JS reads the body and exposed x-ms-* headers', async () => {
    const r = await fetchFrom(allowedOrigin, entitiesUrl(), { headers: { Accept: 'application/json;odata=nometadata' } });
    assert.ok(!r.error, r.error);
    assert.equal(r.status, 200, r.body);
    const body = JSON.parse(r.body);
    assert.deepEqual(body.value.map((e) => [e.RowKey, e.Text]), [['seed', 'from node']]);
    assert.match(r.headers['x-ms-request-id'] || '', /^[0-9a-f-]{36}$/, JSON.stringify(r.headers));
    assert.ok(r.headers['x-ms-version'], 'x-ms-version is exposed by the x-ms-* rule');
  });

  test('allowed origin: a preflighted insert with JSON and custom x-ms-* headers succeeds', async () => {
    const before = preflights().length;
    const clientId = crypto.randomUUID();
    const r = await fetchFrom(allowedOrigin, entitiesUrl(), {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json;odata=nometadata',
        Prefer: 'return-content',
        'x-ms-version': '2019-02-02',
        'x-ms-client-request-id': clientId,
        DataServiceVersion: '3.0',
      },
      body: JSON.stringify({ PartitionKey: 'p', RowKey: 'browser', Text: 'from chromium' }),
    });
    assert.ok(!r.error, r.error);
    assert.equal(r.status, 201, r.body);
    assert.equal(JSON.parse(r.body).Text, 'from chromium');
    assert.equal(r.headers['x-ms-client-request-id'], clientId);
    assert.match(r.headers.etag || '', /^W\/"datetime'/, 'ETag is readable because the rule exposes it');
    const seen = preflights().slice(before);
    assert.ok(seen.some((l) => l.status === 200 && l.method === 'OPTIONS'), `expected a 200 preflight, saw ${JSON.stringify(seen)}`);
    const stored = await request(server, { path: `/${table}(PartitionKey='p',RowKey='browser')` });
    assert.equal(stored.status, 200);
  });

  test('allowed origin: MERGE and DELETE (non-simple methods) go through the preflight', async () => {
    const merged = await fetchFrom(allowedOrigin, entityUrl('p', 'browser'), {
      method: 'MERGE',
      headers: { 'Content-Type': 'application/json', 'If-Match': '*', 'x-ms-version': '2019-02-02' },
      body: JSON.stringify({ Extra: 5 }),
    });
    assert.ok(!merged.error, merged.error);
    assert.equal(merged.status, 204, merged.body);
    const got = await request(server, { path: `/${table}(PartitionKey='p',RowKey='browser')` });
    assert.equal(got.json.Extra, 5);
    assert.equal(got.json.Text, 'from chromium');
    const deleted = await fetchFrom(allowedOrigin, entityUrl('p', 'browser'), {
      method: 'DELETE', headers: { 'If-Match': '*', 'x-ms-version': '2019-02-02' },
    });
    assert.ok(!deleted.error, deleted.error);
    assert.equal(deleted.status, 204);
  });

  test('denied origin: the simple GET reaches the server but the browser withholds the response', async () => {
    const queries = () => server.stdout().split('\n').filter((l) => l.includes('"operation":"QueryEntities"')).length;
    const before = queries();
    const r = await fetchFrom(deniedOrigin, entitiesUrl(), { headers: { Accept: 'application/json;odata=nometadata' } });
    assert.ok(r.error, `expected a CORS failure, got ${JSON.stringify(r)}`);
    assert.match(r.error, /TypeError: Failed to fetch/);
    assert.equal(queries(), before + 1, 'the query was answered (without CORS headers)');
  });

  test('denied origin: the preflight fails (403 CorsPreflightFailure) and the insert never happens', async () => {
    const before = preflights().length;
    const r = await fetchFrom(deniedOrigin, entitiesUrl(), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'x-ms-version': '2019-02-02' },
      body: JSON.stringify({ PartitionKey: 'p', RowKey: 'denied' }),
    });
    assert.ok(r.error, `expected a CORS failure, got ${JSON.stringify(r)}`);
    const seen = preflights().slice(before);
    assert.ok(seen.some((l) => l.status === 403), `expected a refused preflight, saw ${JSON.stringify(seen)}`);
    const stored = await request(server, { path: `/${table}(PartitionKey='p',RowKey='denied')` });
    assert.equal(stored.status, 404, 'the denied insert must not reach the store');
  });

  test('allowed origin: a header outside AllowedHeaders fails the preflight', async () => {
    const r = await fetchFrom(allowedOrigin, entitiesUrl(), {
      headers: { Accept: 'application/json;odata=nometadata', 'X-Custom-Thing': '1' },
    });
    assert.ok(r.error, `expected a CORS failure, got ${JSON.stringify(r)}`);
  });

  test("a '*' rule opens every origin; removing the rules closes them again", async () => {
    await setCors([{ origins: '*' }]);
    const open = await fetchFrom(deniedOrigin, entitiesUrl(), {
      headers: { Accept: 'application/json;odata=nometadata', 'x-ms-version': '2019-02-02' },
    });
    assert.ok(!open.error, open.error);
    assert.equal(open.status, 200);
    await setCors([]);
    const closed = await fetchFrom(allowedOrigin, entitiesUrl(), { headers: { Accept: 'application/json;odata=nometadata' } });
    assert.ok(closed.error, `expected a CORS failure after <Cors />, got ${JSON.stringify(closed)}`);
    await setCors([{ origins: allowedOrigin }]);
  });
});
