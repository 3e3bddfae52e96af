'use strict';
// Reads a 100k-entity table page by page ($top=1000, continuation tokens)
// as the bench's scan-100k does, and prints for each pass the entities/s and
// where a page's time went on the client: until the response headers, the
// body's arrival, Buffer.concat + toString, JSON.parse. Run by
// scan-phases.sh, which starts the server; needs the bench's node_modules.
//   node scripts/scan-phases.js PORT [BENCH_DIR] [PASSES]
const http = require('node:http');
const path = require('node:path');

const port = Number(process.argv[2]);
const bench = path.resolve(process.argv[3] || path.join(__dirname, '../../shared/bench'));
const passes = Number(process.argv[4] || 4);
const { generateAccountSas, AzureNamedKeyCredential } = require(path.join(bench, 'node_modules/@azure/data-tables'));
const { TableRest, bulkLoad, keyedKeys } = require(path.join(bench, 'lib/rest.js'));

const cred = new AzureNamedKeyCredential('devstoreaccount1',
  'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==');
const sas = generateAccountSas(cred, {
  expiresOn: new Date(Date.now() + 86400e3),
  permissions: { query: true, write: true, delete: true, list: true, add: true, update: true },
  resourceTypes: 'sco',
});
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const ms = (a, b) => Number(b - a) / 1e6;

function get(reqPath) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = http.request({ host: '127.0.0.1', port, path: reqPath, agent,
      headers: { 'x-ms-version': '2019-02-02', Accept: 'application/json;odata=minimalmetadata' } }, (res) => {
      const t1 = process.hrtime.bigint();
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const t2 = process.hrtime.bigint();
        const body = Buffer.concat(chunks).toString('utf8');
        const t3 = process.hrtime.bigint();
        const value = JSON.parse(body).value;
        const t4 = process.hrtime.bigint();
        resolve({ headers: res.headers, n: value.length, head: ms(t0, t1), body: ms(t1, t2), text: ms(t2, t3), parse: ms(t3, t4) });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

(async () => {
  const url = `http://127.0.0.1:${port}/devstoreaccount1`;
  for (let i = 0; i < 600; i++) {
    try { await fetch(`${url}/Tables?${sas}`); break; } catch { await new Promise((r) => setTimeout(r, 50)); }
  }
  const rest = new TableRest({ endpoint: url, account: 'devstoreaccount1', sas });
  await rest.createTable('scan');
  await bulkLoad(rest, 'scan', { total: 100000, keysAt: (i) => keyedKeys(i, 100000), seed: 7 });
  rest.close();
  for (let pass = 0; pass < passes; pass++) {
    const sum = { head: 0, body: 0, text: 0, parse: 0 };
    let next = ''; let pages = 0; let n = 0;
    const t0 = Date.now();
    for (;;) {
      const r = await get(`/devstoreaccount1/scan()?$top=1000&${sas}${next}`);
      pages += 1; n += r.n;
      for (const k of Object.keys(sum)) sum[k] += r[k];
      const npk = r.headers['x-ms-continuation-nextpartitionkey'];
      if (!npk) break;
      next = `&NextPartitionKey=${encodeURIComponent(npk)}&NextRowKey=${encodeURIComponent(r.headers['x-ms-continuation-nextrowkey'])}`;
    }
    const wall = Date.now() - t0;
    const per = (k) => (sum[k] / pages).toFixed(2);
    console.log(`pass ${pass}: ${Math.round(n / wall * 1000)} entities/s, ${(wall / pages).toFixed(2)} ms a page: ` +
      `headers ${per('head')}, body ${per('body')}, toString ${per('text')}, JSON.parse ${per('parse')} ms`);
  }
  const metrics = await (await fetch(`http://127.0.0.1:${port}/_metrics`)).text();
  console.log(metrics.split('\n').filter((l) => l.startsWith('cerulean_page_prefetch_total')).join('\n'));
  agent.destroy();
})().catch((e) => { console.error(e); process.exit(1); });
