#!/usr/bin/env node
'use strict';
// Writes the README's screenshot of the explorer (docs/explorer.png): a
// server in memory with a small "orders" table, the page connected, a
// filtered query and its plan.
//
//   node tests/e2e/browser/screenshot.js [out.png]

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { chromium } = require('playwright-core');
const { startServer, REPO } = require('../node/server');
const { request } = require('../node/http');

async function main() {
  const out = process.argv[2] || path.join(REPO, 'docs', 'explorer.png');
  const server = await startServer();
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM_BIN || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 720 },
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-dev-shm-usage'],
  });
  try {
    const send = (p, body) => request(server, { method: 'POST', path: p, body, headers: { Prefer: 'return-no-content' } });
    for (const t of ['customers', 'orders', 'sessions']) await send('/Tables', { TableName: t });
    const customers = ['contoso', 'fabrikam', 'northwind'];
    for (let i = 0; i < 60; i++) {
      await send('/orders', {
        PartitionKey: customers[i % 3],
        RowKey: `2026-11-${String(1 + (i % 28)).padStart(2, '0')}-${String(i).padStart(4, '0')}`,
        Amount: Math.round((10 + ((i * 37) % 500)) * 100) / 100 + 0.5,
        'Quantity@odata.type': 'Edm.Int64',
        Quantity: String(1 + (i % 9)),
        Shipped: i % 4 !== 0,
        'Placed@odata.type': 'Edm.DateTime',
        Placed: `2026-11-${String(1 + (i % 28)).padStart(2, '0')}T10:${String(i % 60).padStart(2, '0')}:00.1234567Z`,
      });
    }
    for (let i = 0; i < 12; i++) await send('/customers', { PartitionKey: 'eu', RowKey: `c${i}`, Name: `Customer ${i}` });
    const page = await context.newPage();
    await page.goto(`${server.url}/_explorer`);
    await page.click('#connect-button');
    await page.waitForFunction(() => document.querySelector('#tables li[data-table="orders"] .count')?.textContent === '60');
    await page.click('#tables li[data-table="orders"]');
    await page.waitForSelector('#entities tbody tr[data-index]');
    await page.fill('#b-pk', 'fabrikam');
    await page.fill('#b-rk-prefix', '2026-11-1');
    await page.click('#build-filter');
    await page.waitForFunction(() => !document.getElementById('plan').hidden
      && document.getElementById('q-filter').value.includes('fabrikam'));
    await page.fill('#q-filter', `${await page.inputValue('#q-filter')} and Shipped eq true`);
    await page.press('#q-filter', 'Enter');
    await page.waitForFunction(() => document.getElementById('plan-residual').textContent.includes('Shipped'));
    fs.mkdirSync(path.dirname(out), { recursive: true });
    await page.screenshot({ path: out });
    console.log(`wrote ${out} (${fs.statSync(out).size} bytes)`);
  } finally {
    await context.close();
    await server.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
