// Resident memory of a server while a test suite creates, fills and drops
// temporary tables around a snapshotted fixture (storage/README.md,
// "Snapshots": the key log a restore relies on).
//   node scripts/keylog-memory.js [BINARY] [TABLES] [KEYS_PER_TABLE]
// BINARY defaults to build/cerulean, TABLES to 60, KEYS_PER_TABLE to 16384
// (what the key log keeps of one table at most). A file store in a temporary
// directory; the fixture table is saved as snapshot "fixture", then each
// temporary table gets KEYS_PER_TABLE inserts (transactions of 100) and is
// dropped. Prints the server's RSS after the first and the last table, the
// growth per table in between, and the key log's own figure from /_metrics
// when the server exports it.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const REPO = path.resolve(__dirname, '..');
const NODE = path.join(REPO, 'tests/e2e/node');
process.env.CERULEAN_BIN = path.resolve(process.argv[2] || path.join(REPO, 'build/cerulean'));
const tables = Number(process.argv[3] || 60);
const keys = Number(process.argv[4] || 16384);

const { TableClient, AzureNamedKeyCredential } = require(path.join(NODE, 'node_modules/@azure/data-tables'));
const { startServer, tempDir } = require(path.join(NODE, 'server.js'));
const { request } = require(path.join(NODE, 'http.js'));

function rssMiB(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) / 1024;
}

async function keyLogBytes(server) {
  const res = await request(server, { rawTarget: '/_metrics' });
  const m = /^cerulean_memory_bytes\{structure="key_log"\} (\d+)$/m.exec(res.body);
  return m ? Number(m[1]) : undefined;
}

(async () => {
  const dir = tempDir('cerulean-keylog-');
  const server = await startServer({ location: dir });
  try {
    const credential = new AzureNamedKeyCredential(server.account, server.key);
    const client = (name) => new TableClient(server.endpoint, name, credential, { allowInsecureConnection: true });
    const fixture = client('fixture');
    await fixture.createTable();
    await fixture.createEntity({ partitionKey: 'p', rowKey: 'r', v: 1 });
    const saved = await request(server, { method: 'PUT', rawTarget: `/_snapshots/${server.account}/fixture` });
    if (saved.status !== 201) throw new Error(`snapshot save: ${saved.status} ${saved.body}`);
    let first;
    for (let t = 0; t < tables; t++) {
      const temp = client(`temp${t}`);
      await temp.createTable();
      for (let i = 0; i < keys; i += 100) {
        const actions = [];
        for (let j = i; j < Math.min(keys, i + 100); j++) {
          actions.push(['create', { partitionKey: 'p', rowKey: String(j).padStart(8, '0'), v: j }]);
        }
        await temp.submitTransaction(actions);
      }
      await temp.deleteTable();
      if (t === 0) first = rssMiB(server.child.pid);
    }
    const last = rssMiB(server.child.pid);
    const perTable = tables > 1 ? (last - first) / (tables - 1) : 0;
    console.log(`tables dropped: ${tables} x ${keys} keys`);
    console.log(`RSS after the first: ${first.toFixed(1)} MiB, after the last: ${last.toFixed(1)} MiB, ` +
      `${perTable.toFixed(2)} MiB per table in between`);
    const logged = await keyLogBytes(server);
    if (logged !== undefined) console.log(`cerulean_memory_bytes{structure="key_log"}: ${logged}`);
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
