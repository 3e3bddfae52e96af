// Inserts small entities into the table "side" at RATE a second until killed:
// writes beside a read workload (scripts/profile.sh, SIDE_WRITES), as an
// application's traffic mixes them. Every commit empties each SQLite
// connection's own page cache (storage/README.md, "The shared page cache").
//   node scripts/side-writes.js PORT BENCH_DIR RATE
const path = require('node:path');

const port = Number(process.argv[2]);
const bench = path.resolve(process.argv[3]);
const rate = Number(process.argv[4] || 100);
const { generateAccountSas, AzureNamedKeyCredential } =
  require(path.join(bench, 'node_modules/@azure/data-tables'));
const { TableRest } = require(path.join(bench, 'lib/rest.js'));
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

(async () => {
  const sas = generateAccountSas(new AzureNamedKeyCredential('devstoreaccount1', KEY), {
    expiresOn: new Date(Date.now() + 86400e3),
    permissions: { query: true, write: true, delete: true, list: true, add: true, update: true },
    resourceTypes: 'sco',
  });
  const rest = new TableRest({ endpoint: `http://127.0.0.1:${port}/devstoreaccount1`, account: 'devstoreaccount1', sas });
  await rest.createTable('side');
  let i = 0;
  let failed = 0;
  setInterval(() => {
    const body = JSON.stringify({ PartitionKey: 's', RowKey: String(i++).padStart(10, '0'), V: i });
    rest.req('POST', rest.q('/side'), {
      body, headers: { 'Content-Type': 'application/json', Prefer: 'return-no-content' },
    }).then((r) => { if (r.status !== 204 && ++failed === 1) console.error(`side write: HTTP ${r.status}`); })
      .catch((e) => { if (++failed === 1) console.error(`side write: ${e.message}`); });
  }, 1000 / rate);
  process.on('SIGTERM', () => { console.error(`side writes: ${i} sent`); process.exit(0); });
})().catch((e) => { console.error(e); process.exit(1); });
