'use strict';
// Several Cerulean nodes over one PostgreSQL database (CERULEAN_E2E_DATABASE,
// set by `scripts/test.sh postgres`): what one node writes the other serves,
// conditional writes race across nodes with exactly one winner, a batch is
// seen whole or not at all, continuation tokens and documents (ACLs, CORS)
// work on any node. Skipped without a database.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { AzureNamedKeyCredential, TableClient, TableServiceClient } = require('@azure/data-tables');

const { startServer, freshDatabase, uniqueTableName } = require('./server');

const clientOptions = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
const skip = process.env.CERULEAN_E2E_DATABASE ? false : 'needs CERULEAN_E2E_DATABASE (a PostgreSQL URL)';

describe('two nodes over one PostgreSQL database', { skip }, () => {
  let database;
  let nodes = [];
  const client = (node, table) =>
    new TableClient(node.endpoint, table, new AzureNamedKeyCredential(node.account, node.key), clientOptions);
  const service = (node) =>
    new TableServiceClient(node.endpoint, new AzureNamedKeyCredential(node.account, node.key), clientOptions);

  before(async () => {
    database = freshDatabase();
    nodes = [await startServer({ database: database.url }), await startServer({ database: database.url })];
  });
  after(async () => {
    for (const node of nodes) await node.stop();
    database.drop();
  });

  test('a table and entities written on one node are read on the other', async () => {
    const table = uniqueTableName('mn');
    await client(nodes[0], table).createTable();
    await client(nodes[0], table).createEntity({ partitionKey: 'p', rowKey: 'r', n: 1 });
    const got = await client(nodes[1], table).getEntity('p', 'r');
    assert.equal(got.n, 1);
    const names = [];
    for await (const t of service(nodes[1]).listTables()) names.push(t.name);
    assert.ok(names.includes(table));
    await client(nodes[1], table).deleteTable();
    await assert.rejects(client(nodes[0], table).getEntity('p', 'r'), (e) => e.statusCode === 404);
  });

  test('concurrent If-Match updates on both nodes: exactly one wins, ETags differ', async () => {
    const table = uniqueTableName('mn');
    await client(nodes[0], table).createTable();
    const created = await client(nodes[0], table).createEntity({ partitionKey: 'p', rowKey: 'r', n: 0 });
    let etag = created.etag;
    const seen = new Set([etag]);
    for (let round = 0; round < 25; round++) {
      const results = await Promise.allSettled(nodes.map((node, i) =>
        client(node, table).updateEntity({ partitionKey: 'p', rowKey: 'r', n: round * 2 + i }, 'Merge', { etag })));
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r) => r.status === 'rejected');
      assert.equal(won.length, 1, `round ${round}`);
      assert.equal(lost[0].reason.statusCode, 412);
      etag = won[0].value.etag;
      assert.ok(!seen.has(etag), `ETag ${etag} reused`);
      seen.add(etag);
      const [a, b] = await Promise.all(nodes.map((node) => client(node, table).getEntity('p', 'r')));
      assert.equal(a.etag, etag);
      assert.equal(b.etag, etag);
    }
  });

  test('a batch on one node is seen whole or not at all on the other', async () => {
    const table = uniqueTableName('mn');
    await client(nodes[0], table).createTable();
    const reader = client(nodes[1], table);
    let stop = false;
    const sizes = new Set();
    const watching = (async () => {
      while (!stop) {
        let count = 0;
        for await (const e of reader.listEntities({ queryOptions: { filter: "PartitionKey eq 'b'" } })) {
          if (e) count++;
        }
        sizes.add(count);
      }
    })();
    for (let round = 0; round < 5; round++) {
      const actions = [];
      for (let i = 0; i < 50; i++) actions.push(['create', { partitionKey: 'b', rowKey: `${round}-${i}` }]);
      await client(nodes[0], table).submitTransaction(actions);
    }
    stop = true;
    await watching;
    for (const size of sizes) assert.equal(size % 50, 0, `saw ${size} rows: part of a 50-entity batch`);
  });

  test('/_metrics reports the database pool and query latencies', async () => {
    const text = await (await fetch(`${nodes[0].url}/_metrics`)).text();
    const value = (name) => {
      const m = new RegExp(`^cerulean_store_${name} (\\d+)$`, 'm').exec(text);
      assert.ok(m, `no cerulean_store_${name} in /_metrics`);
      return Number(m[1]);
    };
    assert.ok(value('pg_connections_open') >= 1);
    assert.ok(value('pg_connections_in_use') >= 0);
    assert.ok(value('pg_pool_waits') >= 0);
    assert.ok(value('pg_operations') >= 1);
    assert.ok(value('pg_operation_microseconds') >= 1);
    assert.match(text, /# TYPE cerulean_store_pg_operations counter/);
  });

  test('a continuation from one node resumes on the other', async () => {
    const table = uniqueTableName('mn');
    await client(nodes[0], table).createTable();
    const actions = [];
    for (let i = 0; i < 30; i++) actions.push(['create', { partitionKey: 'p', rowKey: `r${10 + i}` }]);
    await client(nodes[0], table).submitTransaction(actions);
    const first = await client(nodes[0], table).listEntities().byPage({ maxPageSize: 10 }).next();
    assert.equal(first.value.length, 10);
    const token = first.value.continuationToken;
    assert.ok(token);
    const rest = await client(nodes[1], table).listEntities().byPage({ maxPageSize: 100, continuationToken: token }).next();
    assert.deepEqual(rest.value.map((e) => e.rowKey), Array.from({ length: 20 }, (_, i) => `r${20 + i}`));
  });

  test('ACLs and CORS rules set on one node apply on the other', async () => {
    const table = uniqueTableName('mn');
    await client(nodes[0], table).createTable();
    const acl = [{ id: 'policy1', accessPolicy: { permission: 'r', start: new Date('2030-01-01T00:00:00Z'), expiry: new Date('2030-01-02T00:00:00Z') } }];
    await client(nodes[0], table).setAccessPolicy(acl);
    const got = await client(nodes[1], table).getAccessPolicy();
    assert.equal(got[0].id, 'policy1');
    const rule = { allowedOrigins: 'https://example.test', allowedMethods: 'GET', allowedHeaders: '*', exposedHeaders: '*', maxAgeInSeconds: 60 };
    await service(nodes[0]).setProperties({ cors: [rule] });
    const props = await service(nodes[1]).getProperties();
    assert.equal(props.cors.length, 1);
    assert.equal(props.cors[0].allowedOrigins, 'https://example.test');
    // And the rule is enforced by the other node: a preflight from that origin is answered.
    const res = await fetch(`${nodes[1].endpoint}/${table}`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://example.test', 'Access-Control-Request-Method': 'GET' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), 'https://example.test');
    await service(nodes[0]).setProperties({ cors: [] });
  });
});
