'use strict';
// Crash rounds: a --location server is killed (SIGKILL) while concurrent
// writers are inserting, restarted on the same folder, and must hold every
// insert it acknowledged. Run on every platform build (scripts/test.sh
// platforms) as well as the native one.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { AzureNamedKeyCredential, TableClient } = require('@azure/data-tables');

const { startServer, uniqueTableName, tempDir } = require('./server');

const WRITERS = 8;
const ACKS_BEFORE_KILL = 300;
const ROUNDS = 2;

const clientOptions = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
const tableClient = (srv, name) =>
  new TableClient(srv.endpoint, name, new AzureNamedKeyCredential(srv.account, srv.key), clientOptions);

test('kill -9 under concurrent writers loses no acknowledged insert', async () => {
  const location = tempDir();
  const table = uniqueTableName('crash');
  const acked = new Set();
  try {
    for (let round = 0; round < ROUNDS; round += 1) {
      const srv = await startServer({ location });
      let killed = false;
      try {
        const client = tableClient(srv, table);
        if (round === 0) await client.createTable();
        // Every entity acknowledged before this round is still there.
        const keys = new Set();
        for await (const e of client.listEntities()) keys.add(`${e.partitionKey}/${e.rowKey}`);
        const lost = [...acked].filter((k) => !keys.has(k));
        assert.deepEqual(lost, [], `round ${round}: ${lost.length} acknowledged inserts lost`);
        let enough;
        const reached = new Promise((resolve) => { enough = resolve; });
        let roundAcks = 0;
        const writer = async (w) => {
          for (let i = 0; !killed; i += 1) {
            const entity = { partitionKey: `p${w}`, rowKey: `r${round}-${String(i).padStart(6, '0')}`, round, i };
            try {
              await client.createEntity(entity);
            } catch {
              if (killed) return;  // the connection died with the server
              throw new Error(`insert failed before the kill (writer ${w}, ${i})`);
            }
            acked.add(`${entity.partitionKey}/${entity.rowKey}`);
            roundAcks += 1;
            if (roundAcks >= ACKS_BEFORE_KILL) enough();
          }
        };
        const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));
        await Promise.race([reached, Promise.all(writers)]);
        killed = true;
        await srv.stop('SIGKILL');
        await Promise.all(writers);
      } finally {
        killed = true;
        await srv.stop('SIGKILL');
      }
    }
    const srv = await startServer({ location });
    try {
      const keys = new Set();
      for await (const e of tableClient(srv, table).listEntities()) keys.add(`${e.partitionKey}/${e.rowKey}`);
      const lost = [...acked].filter((k) => !keys.has(k));
      assert.deepEqual(lost, [], `${lost.length} of ${acked.size} acknowledged inserts lost`);
      assert.ok(acked.size >= ROUNDS * ACKS_BEFORE_KILL);
    } finally {
      await srv.stop();
    }
  } finally {
    fs.rmSync(location, { recursive: true, force: true });
  }
});
