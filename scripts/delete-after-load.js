// Loads the bench's 100k-entity table (lib/rest.js bulkLoad), waits, drops it
// with Delete Table and prints how long the drop took; ROUNDS times on the
// same server, each round a new table (so the previous drop's reaping runs
// beside the next load), as a long-running server sees loads and drops of
// tables by day. Used by scripts/delete-after-load.sh.
//   node scripts/delete-after-load.js PORT BENCH_DIR ROUNDS WAIT_MS
const path = require('node:path');

const port = Number(process.argv[2]);
const bench = path.resolve(process.argv[3]);
const rounds = Number(process.argv[4] || 6);
const waitMs = Number(process.argv[5] || 8000);
const { generateAccountSas, AzureNamedKeyCredential } =
  require(path.join(bench, 'node_modules/@azure/data-tables'));
const { TableRest, bulkLoad, keyedKeys } = require(path.join(bench, 'lib/rest.js'));
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

(async () => {
  const url = `http://127.0.0.1:${port}/devstoreaccount1`;
  const sas = generateAccountSas(new AzureNamedKeyCredential('devstoreaccount1', KEY), {
    expiresOn: new Date(Date.now() + 86400e3),
    permissions: { query: true, write: true, delete: true, list: true, add: true, update: true },
    resourceTypes: 'sco',
  });
  for (let i = 0; i < 200; i++) {
    try { await fetch(`${url}/Tables?${sas}`); break; } catch { await new Promise((r) => setTimeout(r, 50)); }
  }
  const rest = new TableRest({ endpoint: url, account: 'devstoreaccount1', sas });
  const times = [];
  for (let r = 0; r < rounds; r++) {
    const table = `day${r}`;
    await rest.createTable(table);
    const load = await bulkLoad(rest, table, { total: 100000, keysAt: (i) => keyedKeys(i, 100000), seed: r });
    if (load.loaded !== 100000) throw new Error(`load: ${JSON.stringify(load).slice(0, 300)}`);
    await new Promise((res) => setTimeout(res, waitMs));
    const t0 = process.hrtime.bigint();
    const res = await rest.deleteTable(table);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (res.status !== 204) throw new Error(`Delete Table: HTTP ${res.status}`);
    times.push(ms);
    console.log(`round ${r}: load ${Math.round(load.rate || 0)} entities/s, Delete Table ${ms.toFixed(2)} ms`);
  }
  rest.close();
  console.log(`Delete Table ms: ${times.map((t) => t.toFixed(1)).join(' ')}`);
})().catch((e) => { console.error(e); process.exit(1); });
