'use strict';
// A PostgreSQL outage under two Cerulean nodes: while the database is down
// both answer 503 ServerBusy (and /_health 503); once it is back they recover
// by themselves and every acknowledged write is there. Needs the throw-away
// cluster's state file in CERULEAN_E2E_PG_CLUSTER (scripts/test.sh postgres
// runs this file alone, since it stops the database under every server).

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { AzureNamedKeyCredential, TableClient } = require('@azure/data-tables');

const { REPO, startServer, freshDatabase, uniqueTableName } = require('./server');

const CLUSTER = process.env.CERULEAN_E2E_PG_CLUSTER;
const skip = CLUSTER && process.env.CERULEAN_E2E_DATABASE ? false
  : 'needs CERULEAN_E2E_DATABASE and CERULEAN_E2E_PG_CLUSTER (scripts/test.sh postgres)';
const clientOptions = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };

function cluster(command) {
  execFileSync('bash', [path.join(REPO, 'scripts', 'pg-test-cluster.sh'), command, CLUSTER], { stdio: 'inherit' });
}

describe('a database outage under two nodes', { skip }, () => {
  let database;
  let nodes = [];
  let down = false;
  const client = (node, table) =>
    new TableClient(node.endpoint, table, new AzureNamedKeyCredential(node.account, node.key), clientOptions);

  before(async () => {
    database = freshDatabase();
    nodes = [await startServer({ database: database.url }), await startServer({ database: database.url })];
  });
  after(async () => {
    if (down) cluster('up');
    for (const node of nodes) await node.stop();
    database.drop();
  });

  test('503 ServerBusy while the database is down, recovery after, nothing acknowledged lost', async () => {
    const table = uniqueTableName('outage');
    await client(nodes[0], table).createTable();
    const acknowledged = [];
    for (let i = 0; i < 20; i++) {
      await client(nodes[i % 2], table).createEntity({ partitionKey: 'p', rowKey: `before${i}`, i });
      acknowledged.push(`before${i}`);
    }

    cluster('down');
    down = true;
    for (const node of nodes) {
      const health = await fetch(`${node.url}/_health`);
      assert.equal(health.status, 503);
      await assert.rejects(client(node, table).createEntity({ partitionKey: 'p', rowKey: 'during' }), (e) => {
        assert.equal(e.statusCode, 503);
        assert.equal(e.response?.headers.get('x-ms-error-code'), 'ServerBusy');
        return true;
      });
      await assert.rejects(client(node, table).getEntity('p', 'before0'), (e) => e.statusCode === 503);
    }

    cluster('up');
    down = false;
    // Each node reconnects on its own.
    for (const node of nodes) {
      const deadline = Date.now() + 20000;
      let status = 0;
      while (Date.now() < deadline) {
        status = (await fetch(`${node.url}/_health`)).status;
        if (status === 200) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(status, 200);
    }
    for (let i = 0; i < 10; i++) {
      await client(nodes[i % 2], table).createEntity({ partitionKey: 'p', rowKey: `after${i}` });
      acknowledged.push(`after${i}`);
    }
    for (const node of nodes) {
      const keys = [];
      for await (const e of client(node, table).listEntities()) keys.push(e.rowKey);
      assert.deepEqual(keys.sort(), [...acknowledged].sort());
    }
  });
});
