'use strict';
// A user's tests with the ready-made fixture of cerulean-tables: tests/packages/node.sh runs this
// file with node --test in the scratch project where it installed the packed tarball.
const assert = require('node:assert/strict');
const { after, before, beforeEach, describe, test } = require('node:test');
const { fixture, start } = require('cerulean-tables');

// What a user writes: the first six lines of code below are the whole fixture.
const tables = fixture({ before, after, beforeEach }, {
  seed: async (account) => {
    await account.tableClient('orders').createTable();
    await account.tableClient('orders').createEntity({ partitionKey: 'alice', rowKey: '001', amount: 10 });
  },
});

test('a write of one test (1 of 2)', async () => {
  await tables.account.tableClient('orders').createEntity({ partitionKey: 'bob', rowKey: '001' });
});

test('is gone in the next (2 of 2): the seed is restored before each test', async () => {
  const rows = [];
  for await (const e of tables.account.tableClient('orders').listEntities()) rows.push(`${e.partitionKey}/${e.rowKey}`);
  assert.deepEqual(rows, ['alice/001']);
});

async function tableNames(account) {
  const names = [];
  for await (const t of account.tableServiceClient().listTables()) names.push(t.name);
  return names;
}

describe('fixtures of one process share a server, each with an account of its own', () => {
  const a = fixture({ before, after });
  const b = fixture({ before, after });

  test('tables, resets and fault rules of one account are not seen by the other', async () => {
    assert.equal(a.server, b.server);
    assert.equal(a.server, tables.server);
    assert.notEqual(a.account.name, b.account.name);
    assert.notEqual(a.account.name, 'devstoreaccount1');
    assert.match(a.account.connectionString, new RegExp(`AccountName=${a.account.name};`));
    await a.account.tableClient('mine').createTable();
    assert.deepEqual(await tableNames(a.account), ['mine']);
    assert.deepEqual(await tableNames(b.account), []);
    const rules = await b.account.setFaults([{ operation: 'CreateTable', status: 503, code: 'ServerBusy' }]);
    assert.equal(rules[0].fired, 0);
    await a.account.tableClient('second').createTable();
    await assert.rejects(b.account.tableClient('refused').createTable({ retryOptions: { maxRetries: 0 } }), { statusCode: 503 });
    await b.account.reset();
    assert.deepEqual(await tableNames(a.account), ['mine', 'second']);
    assert.deepEqual((await a.account.getFaults()), []);
  });
});

describe('leaseAccount()', () => {
  test('a released account comes back empty; a lease waits while all are out', async () => {
    const server = await start({ accounts: 1 });
    try {
      const first = await server.leaseAccount();
      await first.tableClient('leased').createTable();
      await first.saveSnapshot('s');
      await first.setFaults([{ operation: 'QueryEntities', status: 500, code: 'InternalError' }]);
      let second;
      const waiting = server.leaseAccount().then((x) => { second = x; });
      await new Promise(setImmediate);
      assert.equal(second, undefined);
      await first.release();
      await waiting;
      assert.equal(second.name, first.name);
      assert.deepEqual(await tableNames(second), []);
      assert.deepEqual(await second.listSnapshots(), []);
      assert.deepEqual(await second.getFaults(), []);
      await assert.rejects(first.release(), TypeError);
    } finally {
      await server.stop();
    }
  });

  test('a server started without accounts says how to get some', async () => {
    const server = await start();
    try {
      await assert.rejects(server.leaseAccount(), /accounts: N/);
    } finally {
      await server.stop();
    }
  });
});
