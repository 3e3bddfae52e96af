'use strict';
// The table explorer (/_explorer) in headless Chromium: the page served by
// the binary signs its own requests (Shared Key with Web Crypto, or a pasted
// SAS) and every flow is driven through the page, asserting what it shows
// and, through a separate signed client, what the server stored.
//
// Flows: opening connected to the development account (its key is public)
// and connecting to another account, tables with counts,
// create / delete (confirmed) / reset, entities in key order with paging,
// the filter builder (PartitionKey equals, RowKey range, RowKey prefix with
// the successor bound), $select, $top, the query plan panel, the entity
// editor with every EDM type (insert, replace, merge, delete, ETag
// conflicts with reload), export and import as JSON Lines (compared with
// `cerulean export` and loaded back), deleting a query's entities with
// progress, Azure errors, SAS mode, the keyboard, --disableExplorer.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const { chromium } = require('playwright-core');
const { startServer, uniqueTableName, binaryPath, tempDir } = require('../node/server');
const { request } = require('../node/http');

const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';

function launch() {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-chromium-'));
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    acceptDownloads: true,
    viewport: { width: 1366, height: 800 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

async function createTable(server, name) {
  const res = await request(server, { method: 'POST', path: '/Tables', body: { TableName: name } });
  assert.equal(res.status, 201, res.body);
}

async function insert(server, table, entity) {
  const res = await request(server, { method: 'POST', path: `/${table}`, body: entity, headers: { Prefer: 'return-no-content' } });
  assert.equal(res.status, 204, res.body);
}

// Inserts entities with batches of up to 100 (one partition each).
async function insertMany(server, table, entities) {
  const groups = new Map();
  for (const e of entities) {
    if (!groups.has(e.PartitionKey)) groups.set(e.PartitionKey, []);
    groups.get(e.PartitionKey).push(e);
  }
  const chunks = [];
  for (const group of groups.values()) for (let i = 0; i < group.length; i += 100) chunks.push(group.slice(i, i + 100));
  for (const chunk of chunks) {
    const batch = `batch_${crypto.randomUUID()}`;
    const cs = `changeset_${crypto.randomUUID()}`;
    let body = `--${batch}\r\nContent-Type: multipart/mixed; boundary=${cs}\r\n\r\n`;
    for (const e of chunk) {
      body += `--${cs}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n` +
        `POST ${server.endpoint}/${table} HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json;odata=minimalmetadata\r\n` +
        `Prefer: return-no-content\r\nDataServiceVersion: 3.0;\r\n\r\n${JSON.stringify(e)}\r\n`;
    }
    body += `--${cs}--\r\n--${batch}--\r\n`;
    const res = await request(server, {
      method: 'POST', path: '/$batch', body,
      headers: { 'Content-Type': `multipart/mixed; boundary=${batch}` },
    });
    assert.equal(res.status, 202, res.body);
    assert.ok(!/HTTP\/1.1 [45]\d\d/.test(res.body), res.body);
  }
}

async function getEntity(server, table, pk, rk) {
  const res = await request(server, {
    path: `/${table}(PartitionKey='${encodeURIComponent(pk)}',RowKey='${encodeURIComponent(rk)}')`,
    headers: { Accept: 'application/json;odata=fullmetadata' },
  });
  return res;
}

async function queryAll(server, table) {
  const res = await request(server, { path: `/${table}()?$top=1000`, headers: { Accept: 'application/json;odata=fullmetadata' } });
  assert.equal(res.status, 200, res.body);
  return JSON.parse(res.body).value;
}

// Entities without their server-assigned metadata, for comparisons.
function strip(entities) {
  return entities.map((e) => {
    const o = {};
    for (const [k, v] of Object.entries(e)) {
      if (!k.startsWith('odata.') && k !== 'Timestamp' && k !== 'Timestamp@odata.type') o[k] = v;
    }
    return o;
  });
}

const ALL_TYPES = {
  PartitionKey: 'types',
  RowKey: 'all',
  Str: 'héllo \'quoted\' "double"',
  Bool: true,
  I32: -2147483648,
  'I64@odata.type': 'Edm.Int64',
  I64: '9223372036854775807',
  'Dbl@odata.type': 'Edm.Double',
  Dbl: 1.0,
  Frac: 2.5,
  'Nan@odata.type': 'Edm.Double',
  Nan: 'NaN',
  'Inf@odata.type': 'Edm.Double',
  Inf: 'Infinity',
  'NegInf@odata.type': 'Edm.Double',
  NegInf: '-Infinity',
  'When@odata.type': 'Edm.DateTime',
  When: '2024-02-29T23:59:59.1234567Z',
  'Round@odata.type': 'Edm.DateTime',
  Round: '2024-01-01T00:00:00.5Z',
  'Id@odata.type': 'Edm.Guid',
  Id: '0f8fad5b-d9cb-469f-a165-70867728950e',
  'Bin@odata.type': 'Edm.Binary',
  Bin: 'AAEC/f7/',
};

describe('explorer in headless Chromium', () => {
  let server;
  let context;
  let page;
  const apiRequests = [];

  // Opens the explorer in a fresh tab, which connects by itself with the
  // development account.
  async function openExplorer() {
    if (page) await page.close();
    page = await context.newPage();
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (!u.pathname.startsWith('/_explorer')) apiRequests.push({ method: r.method(), url: r.url(), headers: r.headers() });
    });
    await page.goto(`${server.url}/_explorer`);
    await page.waitForSelector('body[data-connected="true"]');
    return page;
  }

  async function selectTable(name) {
    await afterQuery(() => page.click(`#tables li[data-table="${name}"]`));
    assert.equal(await text('#table-title'), name);
  }

  const rowKeys = () => page.$$eval('#entities tbody tr', (trs) => trs.map((tr) => tr.cells[1]?.textContent));
  const text = (sel) => page.textContent(sel);
  const errorShown = async () => {
    await page.waitForSelector('#error:not([hidden])');
    return { code: await text('#error-code'), message: await text('#error-message') };
  };

  // Runs `fn`, then waits until the page has shown one more page of
  // entities (body[data-pages] counts them).
  async function afterQuery(fn) {
    const shown = await page.evaluate(() => Number(document.body.dataset.pages || 0));
    await fn();
    await page.waitForFunction((n) => Number(document.body.dataset.pages || 0) > n, shown);
  }

  before(async () => {
    server = await startServer();
    context = await launch();
  });

  after(async () => {
    if (context) await context.close();
    if (server) await server.stop();
  });

  test('the page opens connected to the development account, signs every request with Shared Key and lists tables with counts', async () => {
    const t = uniqueTableName('counted');
    await createTable(server, t);
    await insertMany(server, t, Array.from({ length: 1234 }, (_, i) => ({ PartitionKey: `p${i % 3}`, RowKey: `r${i}` })));
    apiRequests.length = 0;
    await openExplorer();  // no click
    assert.equal(await page.inputValue('#account'), 'devstoreaccount1');
    assert.equal(await page.inputValue('#account-key'),
      'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==');
    assert.equal(await page.inputValue('#endpoint'), server.endpoint);
    assert.ok(await page.isHidden('#error'));
    await page.waitForFunction((name) => {
      const li = document.querySelector(`#tables li[data-table="${name}"] .count`);
      return li && li.textContent === '1,234';
    }, t);
    assert.ok(apiRequests.length >= 3, 'tables and count pages were requested');
    for (const r of apiRequests) {
      assert.equal(new URL(r.url).origin, server.url, r.url);
      assert.match(r.headers.authorization || '', /^SharedKey devstoreaccount1:[A-Za-z0-9+/]{43}=$/, r.url);
      assert.ok(Date.parse(r.headers['x-ms-date']), r.url);
      assert.equal(r.headers['x-ms-version'], '2019-02-02');
    }
  });

  test('the page itself carries no data and needs no credentials; the data does', async () => {
    const res = await request(server, { rawTarget: '/_explorer', auth: 'none' });
    assert.equal(res.status, 200);
    assert.match(res.headers['content-security-policy'], /connect-src 'self'/);
    const p = await context.newPage();
    const noAuth = await p.goto(`${server.endpoint}/Tables`);
    assert.equal(noAuth.status(), 403);
    await p.close();
  });

  test('create, delete (confirmed) and reset tables', async () => {
    await openExplorer();
    const t = uniqueTableName('made');
    await page.fill('#new-table-name', t);
    await page.press('#new-table-name', 'Enter');
    await page.waitForSelector(`#tables li[data-table="${t}"]`);
    await page.waitForFunction((name) => document.getElementById('table-title').textContent === name, t);
    assert.equal((await request(server, { path: `/Tables('${t}')` })).status, 200);
    await page.waitForFunction((name) => document.querySelector(`#tables li[data-table="${name}"] .count`).textContent === '0', t);
    assert.equal(await text('#entities tbody td.empty'), 'No entities match.');

    // Cancel keeps the table.
    await page.click('#delete-table');
    await page.waitForSelector('#confirm-dialog[open]');
    assert.match(await text('#confirm-text'), new RegExp(`Delete table ${t}`));
    await page.click('#confirm-cancel');
    await page.waitForSelector('#confirm-dialog', { state: 'hidden' });
    assert.equal((await request(server, { path: `/Tables('${t}')` })).status, 200);

    await page.click('#delete-table');
    await page.click('#confirm-ok');
    await page.waitForSelector(`#tables li[data-table="${t}"]`, { state: 'detached' });
    assert.equal((await request(server, { path: `/Tables('${t}')` })).status, 404);

    // Invalid name: the Azure error code and message.
    await page.fill('#new-table-name', '1bad');
    await page.click('#create-table button');
    const err = await errorShown();
    assert.equal(err.code, 'InvalidResourceName');
    assert.match(err.message, /resource name/i);
  });

  test('entities in key order, paged by continuation; keyboard paging', async () => {
    const t = uniqueTableName('paged');
    await createTable(server, t);
    const keys = Array.from({ length: 120 }, (_, i) => `r${String(i).padStart(3, '0')}`);
    await insertMany(server, t, [...keys].reverse().map((rk, i) => ({ PartitionKey: 'p', RowKey: rk, N: i })));
    await openExplorer();
    await selectTable(t);
    assert.deepEqual(await rowKeys(), keys.slice(0, 50));
    assert.equal(await text('#page-info'), 'Page 1: entities 1–50');
    await afterQuery(() => page.click('#next-page'));
    assert.deepEqual(await rowKeys(), keys.slice(50, 100));
    await afterQuery(() => page.keyboard.press(']'));
    assert.deepEqual(await rowKeys(), keys.slice(100));
    assert.equal(await text('#page-info'), 'Page 3: entities 101–120 (last page)');
    assert.ok(await page.isDisabled('#next-page'));
    await afterQuery(() => page.keyboard.press('['));
    assert.deepEqual(await rowKeys(), keys.slice(0, 50));

    // $top and $select.
    await page.fill('#q-top', '7');
    await page.fill('#q-select', 'N');
    await afterQuery(() => page.press('#q-top', 'Enter'));
    assert.deepEqual(await rowKeys(), keys.slice(0, 7));
    const headers = await page.$$eval('#entities thead th', (ths) => ths.map((th) => th.firstChild.textContent));
    assert.deepEqual(headers, ['PartitionKey', 'RowKey', 'Timestamp', 'N']);
    assert.equal(await text('#page-info'), 'Page 1: entities 1–7');
  });

  test('filter builder, $filter box and the query plan', async () => {
    const t = uniqueTableName('plan');
    await createTable(server, t);
    const rows = [];
    for (const pk of ['a', 'b']) for (let i = 0; i < 30; i++) rows.push({ PartitionKey: pk, RowKey: `k${String(i).padStart(2, '0')}`, Num: i });
    await insertMany(server, t, rows.filter((r) => r.PartitionKey === 'a'));
    await insertMany(server, t, rows.filter((r) => r.PartitionKey === 'b'));
    await openExplorer();
    await selectTable(t);

    // PartitionKey equals + RowKey starts with: ge/lt with the successor.
    await page.fill('#b-pk', 'b');
    await page.fill('#b-rk-prefix', 'k1');
    await afterQuery(() => page.click('#build-filter'));
    assert.equal(await page.inputValue('#q-filter'), "PartitionKey eq 'b' and RowKey ge 'k1' and RowKey lt 'k2'");
    assert.deepEqual(await rowKeys(), Array.from({ length: 10 }, (_, i) => `k1${i}`));
    assert.match(await text('#plan-ranges'), /'b'/);
    assert.equal(await text('#plan-residual'), 'none (the key ranges decide)');
    assert.equal(await text('#plan-examined'), '10');
    assert.equal(await text('#plan-returned'), '10');
    assert.match(await text('#plan-time'), /^\d+\.\d{3} ms in the server, \d+\.\d ms round trip$/);

    // RowKey range.
    await page.fill('#b-rk-prefix', '');
    await page.fill('#b-pk', 'a');
    await page.fill('#b-rk-from', 'k05');
    await page.fill('#b-rk-to', 'k08');
    await afterQuery(() => page.click('#build-filter'));
    assert.equal(await page.inputValue('#q-filter'), "PartitionKey eq 'a' and RowKey ge 'k05' and RowKey lt 'k08'");
    assert.deepEqual(await rowKeys(), ['k05', 'k06', 'k07']);

    // A residual predicate over a whole partition, typed with the keyboard.
    await page.focus('#run-query');
    await page.keyboard.press('/');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'q-filter');
    await page.fill('#q-filter', "PartitionKey eq 'a' and Num ge 25");
    await afterQuery(() => page.keyboard.press('Control+Enter'));
    assert.deepEqual(await rowKeys(), ['k25', 'k26', 'k27', 'k28', 'k29']);
    assert.equal(await text('#plan-residual'), '(ge Num 25)');
    assert.equal(await text('#plan-examined'), '30');
    assert.equal(await text('#plan-returned'), '5');

    // A contradiction: no range at all.
    await page.fill('#q-filter', "PartitionKey eq 'a' and PartitionKey eq 'b'");
    await afterQuery(() => page.press('#q-filter', 'Enter'));
    assert.match(await text('#plan-ranges'), /^none/);
    assert.equal(await text('#plan-examined'), '0');

    // A bad filter: the Azure error.
    await page.fill('#q-filter', 'Num gt');
    await page.press('#q-filter', 'Enter');
    const err = await errorShown();
    assert.equal(err.code, 'InvalidInput');
  });

  test('entity view: every EDM type shown faithfully, replaced and merged without changing types', async () => {
    const t = uniqueTableName('types');
    await createTable(server, t);
    await insert(server, t, ALL_TYPES);
    await openExplorer();
    await selectTable(t);
    await page.focus('#entities tbody tr');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#entity-dialog[open]');
    const shown = await page.$$eval('#props tbody tr', (trs) => trs.map((tr) => [
      tr.querySelector('.p-name').value, tr.querySelector('.p-type').value, tr.querySelector('.p-value').value]));
    assert.deepEqual(shown, [
      ['Str', 'String', 'héllo \'quoted\' "double"'],
      ['Bool', 'Boolean', 'true'],
      ['I32', 'Int32', '-2147483648'],
      ['I64', 'Int64', '9223372036854775807'],
      ['Dbl', 'Double', '1.0'],
      ['Frac', 'Double', '2.5'],
      ['Nan', 'Double', 'NaN'],
      ['Inf', 'Double', 'Infinity'],
      ['NegInf', 'Double', '-Infinity'],
      ['When', 'DateTime', '2024-02-29T23:59:59.1234567Z'],
      ['Round', 'DateTime', '2024-01-01T00:00:00.5000000Z'],
      ['Id', 'Guid', '0f8fad5b-d9cb-469f-a165-70867728950e'],
      ['Bin', 'Binary', 'AAEC/f7/'],
    ]);
    const before = JSON.parse((await getEntity(server, t, 'types', 'all')).body);
    assert.equal(before.I32, -2147483648);
    assert.equal(await text('#e-etag'), before['odata.etag']);
    assert.match(await text('#e-timestamp'), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$/);

    // Replace with one value changed: every other value and type survives.
    await page.fill('#props tbody tr:nth-child(3) .p-value', '42');
    await page.click('#e-replace');
    await page.waitForFunction((old) => document.getElementById('e-etag').textContent !== old, before['odata.etag']);
    const afterReplace = JSON.parse((await getEntity(server, t, 'types', 'all')).body);
    assert.deepEqual(strip([afterReplace]), strip([{ ...before, I32: 42 }]));
    const raw = (await getEntity(server, t, 'types', 'all')).body;
    assert.match(raw, /"Dbl":1\.0[,}]/);

    // Merge a new property of each tricky type.
    await page.click('#add-prop');
    await page.fill('#props tbody tr:last-child .p-name', 'Added');
    await page.selectOption('#props tbody tr:last-child .p-type', 'Int64');
    await page.fill('#props tbody tr:last-child .p-value', '-9223372036854775808');
    await page.click('#e-merge');
    await page.waitForFunction(() => [...document.querySelectorAll('#props .p-name')].some((i) => i.value === 'Added')
      && document.getElementById('entity-error').hidden);
    await page.waitForFunction((old) => document.getElementById('e-etag').textContent !== old, afterReplace['odata.etag']);
    const merged = JSON.parse((await getEntity(server, t, 'types', 'all')).body);
    assert.equal(merged.Added, '-9223372036854775808');
    assert.equal(merged['Added@odata.type'], 'Edm.Int64');
    assert.equal(merged['When@odata.type'], 'Edm.DateTime');

    // A value its type rejects is refused in the page.
    await page.fill('#props tbody tr:nth-child(3) .p-value', '2147483648');
    await page.click('#e-replace');
    await page.waitForSelector('#entity-error:not([hidden])');
    assert.match(await text('#entity-error'), /I32.*Int32/);
    await page.keyboard.press('Escape');
    await page.waitForSelector('#entity-dialog', { state: 'hidden' });
  });

  test('insert a new entity of every type from the page', async () => {
    const t = uniqueTableName('insert');
    await createTable(server, t);
    await openExplorer();
    await page.click(`#tables li[data-table="${t}"]`);
    await page.waitForSelector('#entities tbody td.empty');
    await page.keyboard.press('n');
    await page.waitForSelector('#entity-dialog[open]');
    await page.fill('#e-pk', 'new');
    await page.fill('#e-rk', "it's");
    const props = [
      ['S', 'String', '0042'], ['B', 'Boolean', 'false'], ['I', 'Int32', '7'], ['L', 'Int64', '12345678901234'],
      ['D', 'Double', '3'], ['N', 'Double', 'NaN'], ['T', 'DateTime', '2001-01-01T00:00:00.0000001Z'],
      ['G', 'Guid', 'C56A4180-65AA-42EC-A945-5FD21DEC0538'], ['X', 'Binary', 'aGk='],
    ];
    for (let i = 0; i < props.length; i++) {
      if (i > 0) await page.click('#add-prop');
      const row = `#props tbody tr:nth-child(${i + 1})`;
      await page.fill(`${row} .p-name`, props[i][0]);
      await page.selectOption(`${row} .p-type`, props[i][1]);
      if (props[i][1] === 'Boolean') await page.selectOption(`${row} .p-value`, props[i][2]);
      else await page.fill(`${row} .p-value`, props[i][2]);
    }
    await page.click('#e-insert');
    await page.waitForFunction(() => document.getElementById('e-etag').textContent !== '—');
    const res = await getEntity(server, t, 'new', "it''s");
    assert.equal(res.status, 200, res.body);
    const e = JSON.parse(res.body);
    assert.equal(e.S, '0042');
    assert.equal(e.B, false);
    assert.match(res.body, /"I":7[,}]/);
    assert.equal(e.L, '12345678901234');
    assert.equal(e['L@odata.type'], 'Edm.Int64');
    assert.match(res.body, /"D":3\.0[,}]/);
    assert.equal(e.N, 'NaN');
    assert.equal(e.T, '2001-01-01T00:00:00.0000001Z');
    assert.equal(e.G, 'c56a4180-65aa-42ec-a945-5fd21dec0538');
    assert.equal(e.X, 'aGk=');
    await page.waitForSelector('#entities tbody tr[data-index]');
    assert.deepEqual(await rowKeys(), ["it's"]);

    // Inserting the same keys again: the Azure error in the dialog.
    await page.click('#e-close');
    await page.keyboard.press('n');
    await page.fill('#e-pk', 'new');
    await page.fill('#e-rk', "it's");
    await page.fill('#props tbody tr:first-child .p-name', 'S');
    await page.click('#e-insert');
    await page.waitForSelector('#entity-error:not([hidden])');
    assert.match(await text('#entity-error'), /^EntityAlreadyExists: /);
    await page.click('#e-close');
  });

  test('ETag concurrency: a 412 says someone else changed it, and reload shows their change', async () => {
    const t = uniqueTableName('etag');
    await createTable(server, t);
    await insert(server, t, { PartitionKey: 'p', RowKey: 'r', V: 'mine' });
    await openExplorer();
    await selectTable(t);
    await page.click('#entities tbody tr');
    await page.waitForSelector('#entity-dialog[open]');
    // Someone else updates it.
    const upd = await request(server, { method: 'PUT', path: `/${t}(PartitionKey='p',RowKey='r')`, body: { V: 'theirs' }, headers: { 'If-Match': '*' } });
    assert.equal(upd.status, 204, upd.body);
    await page.fill('#props tbody tr:first-child .p-value', 'edited');
    await page.click('#e-replace');
    await page.waitForSelector('#entity-error:not([hidden])');
    assert.match(await text('#entity-error'), /changed by someone else/);
    assert.equal(JSON.parse((await getEntity(server, t, 'p', 'r')).body).V, 'theirs');
    await page.click('#entity-error button');
    await page.waitForFunction(() => document.querySelector('#props .p-value').value === 'theirs');
    assert.ok(await page.isHidden('#entity-error'));
    // Now the ETag is current: the write goes through. The editor shows
    // the entity read back after it, with its new ETag (the value typed is
    // there before the write, so it tells nothing).
    const etagRead = await text('#e-etag');
    await page.fill('#props tbody tr:first-child .p-value', 'edited');
    await page.click('#e-replace');
    await page.waitForFunction((before) => document.getElementById('e-etag').textContent !== before
      && document.querySelector('#props .p-value').value === 'edited'
      && document.getElementById('entity-error').hidden, etagRead);
    assert.equal(JSON.parse((await getEntity(server, t, 'p', 'r')).body).V, 'edited');

    // Delete with a stale ETag is refused the same way; then confirmed.
    await request(server, { method: 'MERGE', path: `/${t}(PartitionKey='p',RowKey='r')`, body: { W: 1 }, headers: { 'If-Match': '*' } });
    await page.click('#e-delete');
    await page.click('#confirm-ok');
    await page.waitForSelector('#entity-error:not([hidden])');
    assert.match(await text('#entity-error'), /changed by someone else/);
    await page.click('#entity-error button');
    await page.waitForFunction(() => [...document.querySelectorAll('#props .p-name')].some((i) => i.value === 'W'));
    await page.click('#e-delete');
    await page.click('#confirm-ok');
    await page.waitForSelector('#entity-dialog', { state: 'hidden' });
    assert.equal((await getEntity(server, t, 'p', 'r')).status, 404);
    await page.waitForSelector('#entities tbody td.empty');
  });

  test('delete the entities of a query, with confirmation and progress', async () => {
    const t = uniqueTableName('bulkdel');
    await createTable(server, t);
    await insertMany(server, t, Array.from({ length: 150 }, (_, i) => ({ PartitionKey: 'p', RowKey: `r${String(i).padStart(3, '0')}`, Even: i % 2 === 0 })));
    await openExplorer();
    await selectTable(t);
    await page.evaluate(() => {
      window.progressSeen = [];
      new MutationObserver(() => {
        const p = document.getElementById('progress');
        if (!p.hidden) window.progressSeen.push(`${document.getElementById('progress-label').textContent} ${document.getElementById('progress-count').textContent}`);
      }).observe(document.getElementById('progress'), { attributes: true, subtree: true, childList: true, characterData: true });
    });
    await page.fill('#q-filter', 'Even eq true');
    await afterQuery(() => page.press('#q-filter', 'Enter'));
    await page.click('#delete-matching');
    assert.match(await text('#confirm-text'), /matching Even eq true/);
    await afterQuery(() => page.click('#confirm-ok'));
    await page.waitForSelector('#entities tbody td.empty');
    const left = await queryAll(server, t);
    assert.equal(left.length, 75);
    assert.ok(left.every((e) => e.Even === false));
    const seen = await page.evaluate(() => window.progressSeen);
    assert.ok(seen.some((s) => s.startsWith(`Deleting from ${t}`)), JSON.stringify(seen));
    assert.ok(seen.some((s) => / 75 \/ 75$/.test(s)), JSON.stringify(seen));
  });

  test('export a table and a query result as JSON Lines, import a file back', async () => {
    const t = uniqueTableName('export');
    await createTable(server, t);
    await insert(server, t, ALL_TYPES);
    await insertMany(server, t, Array.from({ length: 40 }, (_, i) => ({ PartitionKey: 'many', RowKey: `r${String(i).padStart(2, '0')}`, I: i })));
    await openExplorer();
    await selectTable(t);

    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-table')]);
    assert.equal(download.suggestedFilename(), `${t}.jsonl`);
    const lines = fs.readFileSync(await download.path(), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(lines[0], { table: t });
    assert.equal(lines.length, 42);
    assert.ok(lines.slice(1).every((l) => l.table === t && l.entity));
    assert.deepEqual(lines.slice(1).map((l) => l.entity.RowKey), [...Array.from({ length: 40 }, (_, i) => `r${String(i).padStart(2, '0')}`), 'all']);

    await page.fill('#q-filter', "PartitionKey eq 'many' and I lt 5");
    await afterQuery(() => page.press('#q-filter', 'Enter'));
    const [dq] = await Promise.all([page.waitForEvent('download'), page.click('#export-query')]);
    const qlines = fs.readFileSync(await dq.path(), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(qlines.map((l) => l.entity?.I), [undefined, 0, 1, 2, 3, 4]);

    // Every table: a header line per table, its entities after it.
    const [da] = await Promise.all([page.waitForEvent('download'), page.click('#export-all')]);
    assert.equal(da.suggestedFilename(), 'devstoreaccount1.jsonl');
    const all = fs.readFileSync(await da.path(), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    const at = all.findIndex((l) => l.table === t && !l.entity);
    assert.ok(at >= 0);
    assert.deepEqual(all.slice(at, at + 42), lines);

    // Import into another table name: the file is the export with the name changed.
    const t2 = uniqueTableName('imported');
    const file = path.join(tempDir(), 'in.jsonl');
    fs.writeFileSync(file, fs.readFileSync(await download.path(), 'utf8').split(`"table":"${t}"`).join(`"table":"${t2}"`));
    await page.setInputFiles('#import-file', file);
    await page.waitForSelector(`#tables li[data-table="${t2}"]`);
    await page.waitForFunction((name) => document.querySelector(`#tables li[data-table="${name}"] .count`).textContent === '41', t2);
    assert.deepEqual(strip(await queryAll(server, t2)), strip(await queryAll(server, t)));

    // A broken line: the error names it, nothing hangs.
    const bad = path.join(tempDir(), 'bad.jsonl');
    fs.writeFileSync(bad, `{"table":"${t2}"}\nnot json\n`);
    await page.setInputFiles('#import-file', bad);
    const err = await errorShown();
    assert.equal(err.code, 'InvalidInput');
    assert.match(err.message, /bad\.jsonl line 2/);
  });

  test('the page export is what `cerulean export` writes, and the page imports a CLI export', async () => {
    const dir = tempDir();
    const own = await startServer({ location: dir });
    const t = uniqueTableName('cli');
    try {
      await createTable(own, t);
      await insert(own, t, ALL_TYPES);
      await insert(own, t, { PartitionKey: 'x', RowKey: 'y', Text: 'plain' });
      const p = await context.newPage();
      await p.goto(`${own.url}/_explorer`);
      await p.click(`#tables li[data-table="${t}"]`);
      await p.waitForSelector('#entities tbody tr[data-index]');
      const [download] = await Promise.all([p.waitForEvent('download'), p.click('#export-table')]);
      const fromPage = fs.readFileSync(await download.path(), 'utf8');
      await p.close();
      await own.stop();
      const cli = spawnSync(binaryPath(), ['export', '--location', dir, '--table', t], { encoding: 'utf8' });
      assert.equal(cli.status, 0, cli.stderr);
      assert.equal(fromPage, cli.stdout);

      // The CLI's file, imported through the page into the shared server.
      const file = path.join(dir, 'cli.jsonl');
      fs.writeFileSync(file, cli.stdout);
      await openExplorer();
      await page.setInputFiles('#import-file', file);
      await page.waitForFunction((name) => document.querySelector(`#tables li[data-table="${name}"] .count`)?.textContent === '2', t);
      const ref = uniqueTableName('ref');
      await createTable(server, ref);
      await insert(server, ref, ALL_TYPES);
      await insert(server, ref, { PartitionKey: 'x', RowKey: 'y', Text: 'plain' });
      assert.deepEqual(strip(await queryAll(server, t)), strip(await queryAll(server, ref)));
    } finally {
      await own.stop().catch(() => {});
    }
  });

  test('another account is asked for: the form connects to it with its key', async () => {
    const otherKey = Buffer.alloc(64, 9).toString('base64');
    const own = await startServer({ env: { AZURITE_ACCOUNTS: `otheracct:${otherKey}` } });
    const other = { ...own, account: 'otheracct', key: otherKey, endpoint: `${own.url}/otheracct` };
    const mine = uniqueTableName('mine');
    const theirs = uniqueTableName('theirs');
    const p = await context.newPage();
    try {
      await createTable(own, mine);
      await createTable(other, theirs);
      await p.goto(`${own.url}/_explorer`);
      await p.waitForSelector(`#tables li[data-table="${mine}"]`);
      assert.equal(await p.$(`#tables li[data-table="${theirs}"]`), null);
      await p.fill('#account', 'otheracct');
      await p.fill('#account-key', otherKey);
      await p.click('#connect-button');
      await p.waitForSelector(`#tables li[data-table="${theirs}"]`);
      assert.equal(await p.$(`#tables li[data-table="${mine}"]`), null);
      assert.equal(await p.inputValue('#endpoint'), other.endpoint);
    } finally {
      await p.close();
      await own.stop();
    }
  });

  test('a pasted SAS works; a wrong key and reset without a key give Azure errors', async () => {
    const t = uniqueTableName('sas');
    await createTable(server, t);
    await openExplorer();
    await page.fill('#account-key', Buffer.alloc(64, 7).toString('base64'));
    await page.click('#connect-button');
    let err = await errorShown();
    assert.equal(err.code, 'AuthenticationFailed');

    const sv = '2019-02-02';
    const se = new Date(Date.now() + 3600e3).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const sts = `${server.account}\nrl\nt\nsco\n\n${se}\n\n\n${sv}\n`;
    const sig = crypto.createHmac('sha256', Buffer.from(server.key, 'base64')).update(sts, 'utf8').digest('base64');
    const sas = new URLSearchParams({ sv, ss: 't', srt: 'sco', sp: 'rl', se, sig }).toString();
    await page.selectOption('#auth-mode', 'sas');
    await page.fill('#sas-token', sas);
    apiRequests.length = 0;
    await page.click('#connect-button');
    await page.waitForSelector(`#tables li[data-table="${t}"]`);
    assert.ok(apiRequests.every((r) => !r.headers.authorization && r.url.includes('sig=')));
    // The SAS cannot write: the page says why.
    await page.fill('#new-table-name', uniqueTableName('nope'));
    await page.click('#create-table button');
    err = await errorShown();
    assert.equal(err.code, 'AuthorizationPermissionMismatch');
    await page.click('#reset-account');
    await page.click('#confirm-ok');
    err = await errorShown();
    assert.equal(err.code, 'AuthorizationFailure');
    assert.equal((await request(server, { path: `/Tables('${t}')` })).status, 200);
  });

  test('without Web Crypto (a page that is not a secure context) Shared Key says to use a SAS', async () => {
    const p = await context.newPage();
    try {
      // What an http:// page under another host name sees. It cannot open
      // connected, and says nothing until asked to connect.
      await p.addInitScript(() => Object.defineProperty(Crypto.prototype, 'subtle', { get: () => undefined }));
      await p.goto(`${server.url}/_explorer`);
      await p.waitForLoadState('networkidle');
      assert.ok(await p.isHidden('#error'));
      assert.equal(await p.getAttribute('body', 'data-connected'), null);
      await p.click('#connect-button');
      await p.waitForSelector('#error:not([hidden])');
      assert.equal(await p.textContent('#error-code'), 'NoWebCrypto');
      assert.match(await p.textContent('#error-message'), /paste a SAS/);
    } finally {
      await p.close();
    }
  });

  test('reset deletes every table of the account after confirmation', async () => {
    await createTable(server, uniqueTableName('gone'));
    await openExplorer();
    await page.click('#reset-account');
    assert.match(await text('#confirm-text'), /Reset account devstoreaccount1/);
    await page.click('#confirm-ok');
    await page.waitForSelector('#tables li.none');
    assert.equal(await text('#tables li.none'), 'No tables yet.');
    const res = await request(server, { path: '/Tables' });
    assert.deepEqual(JSON.parse(res.body).value, []);
  });

  test('--disableExplorer: no page', async () => {
    const off = await startServer({ args: ['--disableExplorer'] });
    try {
      const res = await request(off, { rawTarget: '/_explorer', auth: 'none' });
      assert.equal(res.status, 400);
      assert.equal(res.headers['x-ms-error-code'], 'InvalidUri');
    } finally {
      await off.stop();
    }
  });
});
