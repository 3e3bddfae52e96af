// Loads the bench's 100k-entity bulk table (lib/rest.js bulkLoad: 100-entity
// batches, eight in flight) into each table named on the command line, one
// after the other, and prints for each load its rate and p50/p99, the mean
// batch latency by stretch of time, and the start (ms since the load began)
// and latency of every batch slower than 0.75x the p99: whether the slow ones
// come together, and when. Used by scripts/bulk-trace.sh.
//   node scripts/bulk-trace.js PORT BENCH_DIR TABLE...
const path = require('node:path');

const port = Number(process.argv[2]);
const bench = path.resolve(process.argv[3]);
const tables = process.argv.slice(4);
const { generateAccountSas, AzureNamedKeyCredential, TableClient } =
  require(path.join(bench, 'node_modules/@azure/data-tables'));
const { TableRest, bulkLoad, keyedKeys } = require(path.join(bench, 'lib/rest.js'));
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

(async () => {
  const url = `http://127.0.0.1:${port}/devstoreaccount1`;
  const cred = new AzureNamedKeyCredential('devstoreaccount1', KEY);
  const sas = generateAccountSas(cred, {
    expiresOn: new Date(Date.now() + 86400e3),
    permissions: { query: true, write: true, delete: true, list: true, add: true, update: true },
    resourceTypes: 'sco',
  });
  for (let i = 0; i < 200; i++) {
    try { await fetch(`${url}/Tables?${sas}`); break; } catch { await new Promise((r) => setTimeout(r, 50)); }
  }
  for (const table of tables) {
    await new TableClient(url, table, cred, { allowInsecureConnection: true }).createTable();
    const rest = new TableRest({ endpoint: url, account: 'devstoreaccount1', sas });
    const t0 = process.hrtime.bigint();
    const batches = [];  // [start ms, latency ms]
    const send = rest.batch.bind(rest);
    rest.batch = async (...args) => {
      const start = ms(t0);
      const r = await send(...args);
      batches.push([start, ms(t0) - start]);
      return r;
    };
    const r = await bulkLoad(rest, table, { total: 100000, keysAt: (i) => keyedKeys(i, 100000), seed: 7 });
    rest.close();
    if (r.loaded !== 100000) throw new Error(`${table}: loaded ${r.loaded}: ${r.firstError}`);
    console.log(`${table}: ${r.rate.toFixed(0)} entities/s, p50 ${r.p50_ms.toFixed(1)} ms, p99 ${r.p99_ms.toFixed(1)} ms`);
    const stretches = [];
    let from = 0;
    for (const to of [250, 500, 1000, 2000, 3000, 4000, 5000, 8000, 1e9]) {
      const s = batches.filter(([start]) => start >= from && start < to);
      if (s.length) stretches.push(`${from}-${to < 1e9 ? to : ''} ms: ${s.length} batches, mean ${(s.reduce((a, b) => a + b[1], 0) / s.length).toFixed(0)} ms`);
      from = to;
    }
    console.log(`  ${stretches.join('; ')}`);
    const slow = batches.filter(([, lat]) => lat >= 0.75 * r.p99_ms);
    console.log(`  slower than 0.75x p99 (start:latency ms): ${slow.map(([s, l]) => `${s.toFixed(0)}:${l.toFixed(0)}`).join(' ')}`);
  }
})().catch((e) => { console.error(e); process.exit(1); });
