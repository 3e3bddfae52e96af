'use strict';
// A user's tests with the packed cerulean-tables: tests/packages/node.sh installs the tarball and
// @azure/data-tables into a scratch project and runs this file there with node --test.

const assert = require('node:assert/strict');
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { after, afterEach, before, beforeEach, describe, test } = require('node:test');
const { odata, RestError } = require('@azure/data-tables');
const cerulean = require('cerulean-tables');

const binDir = path.join(__dirname, 'node_modules', '.bin');

async function all(iterable) {
  const out = [];
  for await (const item of iterable) out.push(item);
  return out;
}

describe('a fixture restored before each test', () => {
  let server;
  let startupToFirstAnswerMs;

  before(async () => {
    const began = process.hrtime.bigint();
    server = await cerulean.start();
    await all(server.tableServiceClient().listTables());
    startupToFirstAnswerMs = Number(process.hrtime.bigint() - began) / 1e6;

    const orders = server.tableClient('orders');
    await orders.createTable();
    for (const [partitionKey, rowKey, amount] of [['alice', '001', 10], ['alice', '002', 25.5], ['bob', '001', 7.25]]) {
      await orders.createEntity({ partitionKey, rowKey, amount, status: 'open' });
    }
    await server.saveSnapshot('orders-seed');
  });
  beforeEach(() => server.restoreSnapshot('orders-seed'));
  afterEach(() => server.clearFaults());
  after(() => server.stop());

  test('start-up figures of the packaged server', async (t) => {
    t.diagnostic(`start-up to first answer ${startupToFirstAnswerMs.toFixed(1)} ms ` +
                 `(process start to listening ${server.startupMs.toFixed(1)} ms)`);
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/devstoreaccount1$/);
    assert.ok(server.connectionString.includes(`TableEndpoint=${server.url};`));
    assert.deepEqual((await all(server.tableServiceClient().listTables())).map((t) => t.name), ['orders']);
  });

  test('queries run on the server', async () => {
    const orders = server.tableClient('orders');
    const alice = await all(orders.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${'alice'}` } }));
    assert.deepEqual(alice.map((e) => e.rowKey), ['001', '002']);
    const large = await all(orders.listEntities({ queryOptions: { filter: odata`amount gt ${8.0} and status eq ${'open'}` } }));
    assert.deepEqual(large.map((e) => `${e.partitionKey}/${e.rowKey}`), ['alice/001', 'alice/002']);
    const bob = await orders.getEntity('bob', '001');
    assert.equal(bob.amount, 7.25);
  });

  test('writes of one test are gone in the next (1 of 2)', async () => {
    const orders = server.tableClient('orders');
    await orders.deleteEntity('bob', '001');
    await orders.createEntity({ partitionKey: 'carol', rowKey: '001' });
    await server.tableServiceClient().createTable('scratch');
  });

  test('writes of one test are gone in the next (2 of 2)', async () => {
    const entities = await all(server.tableClient('orders').listEntities());
    assert.deepEqual(entities.map((e) => `${e.partitionKey}/${e.rowKey}`), ['alice/001', 'alice/002', 'bob/001']);
    assert.deepEqual((await all(server.tableServiceClient().listTables())).map((t) => t.name), ['orders']);
  });

  test('snapshots are listed, saved and deleted', async () => {
    const seed = (await server.listSnapshots()).find((s) => s.name === 'orders-seed');
    assert.equal(seed.tables, 1);
    assert.equal(seed.entities, 3);
    assert.ok(seed.created instanceof Date);

    await server.tableClient('orders').createEntity({ partitionKey: 'dave', rowKey: '001' });
    const saved = await server.saveSnapshot('four-orders');
    assert.equal(saved.entities, 4);
    const restored = await server.restoreSnapshot('orders-seed');
    assert.equal(restored.name, 'orders-seed');
    await server.deleteSnapshot('four-orders');
    assert.ok(!(await server.listSnapshots()).some((s) => s.name === 'four-orders'));
    await assert.rejects(server.restoreSnapshot('four-orders'),
      (e) => e instanceof cerulean.CeruleanAdminError && e.statusCode === 404 && e.code === 'ResourceNotFound');
  });

  test('reset deletes every table', async () => {
    await server.reset();
    assert.deepEqual(await all(server.tableServiceClient().listTables()), []);
  });

  test("the SDK's retry policy rides out injected 503s", async () => {
    await server.setFaults([{ operation: 'InsertEntity', table: 'orders', status: 503, code: 'ServerBusy', count: 2 }]);
    const orders = server.tableClient('orders', { retryOptions: { maxRetries: 3, retryDelayInMs: 10, maxRetryDelayInMs: 20 } });
    await orders.createEntity({ partitionKey: 'erin', rowKey: '001', amount: 3 });
    const [rule] = await server.getFaults();
    assert.equal(rule.fired, 2);
    assert.equal((await orders.getEntity('erin', '001')).amount, 3);
  });

  test('a fault that outlasts the retries reaches the caller', async () => {
    const rules = await server.setFaults([{ operation: 'QueryEntities', status: 503, code: 'ServerBusy' }]);
    assert.equal(rules[0].fired, 0);
    const orders = server.tableClient('orders', { retryOptions: { maxRetries: 2, retryDelayInMs: 5, maxRetryDelayInMs: 10 } });
    await assert.rejects(all(orders.listEntities()),
      // The SDK reads no error code from a query's error body; the body carries it.
      (e) => e instanceof RestError && e.statusCode === 503 && /ServerBusy/.test(e.message));
    assert.equal((await server.getFaults())[0].fired, 3);
    // Rules read back may be set again as they are.
    await server.setFaults(await server.getFaults());
    await server.clearFaults();
    assert.deepEqual(await server.getFaults(), []);
  });

  test('a refused rule says why', async () => {
    await assert.rejects(server.setFaults([{ operation: 'NoSuchOperation', status: 503, code: 'ServerBusy' }]),
      (e) => e.statusCode === 400 && /NoSuchOperation/.test(e.message));
  });
});

describe('the server process', () => {
  test('a location keeps the tables across servers', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-node-'));
    try {
      const first = await cerulean.start({ location: dir });
      await first.tableClient('kept').createTable();
      await first.tableClient('kept').createEntity({ partitionKey: 'p', rowKey: 'r', value: 42 });
      await first.stop();
      assert.ok(fs.existsSync(path.join(dir, 'cerulean.sqlite')));
      const second = await cerulean.start({ location: dir });
      assert.equal((await second.tableClient('kept').getEntity('p', 'r')).value, 42);
      await second.stop();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('stop() ends the process and removes a temporary directory', async () => {
    const server = await cerulean.start({ storage: 'temporaryDirectory' });
    await server.tableServiceClient().createTable('gone');
    await server.stop();
    assert.throws(() => process.kill(server.pid, 0), { code: 'ESRCH' });
    await assert.rejects(all(server.tableServiceClient({ retryOptions: { maxRetries: 0 } }).listTables()));
  });

  test('a platform without a prebuilt server is told how to point at one', () => {
    assert.throws(() => cerulean.binaryPath({ platform: 'darwin', arch: 'arm64' }),
      (e) => e instanceof cerulean.CeruleanBinaryNotFoundError && /darwin-arm64/.test(e.message) &&
        /CERULEAN_BINARY/.test(e.message));
    assert.throws(() => cerulean.binaryPath({ binary: '/nonexistent/cerulean' }), /\/nonexistent\/cerulean/);
    assert.ok(fs.existsSync(cerulean.binaryPath()));
  });

  test('the cerulean command runs the packaged server', async () => {
    const cli = path.join(binDir, 'cerulean');
    assert.match(execFileSync(cli, ['--version'], { encoding: 'utf8' }), /^cerulean \d+\.\d+\.\d+/);

    const child = spawn(cli, ['--inMemoryPersistence', '--tablePort', '0', '--silent'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const line = await new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        if (out.includes('\n')) resolve(out.split('\n')[0]);
      });
      child.on('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    assert.match(line, /successfully listening at http:\/\/127\.0\.0\.1:\d+/);
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    child.kill('SIGTERM');
    assert.deepEqual(await exited, { code: 0, signal: null });
  });

  test('the cerulean command says when CERULEAN_BINARY names nothing', () => {
    let error;
    try {
      execFileSync(path.join(binDir, 'cerulean'), ['--version'], {
        env: { ...process.env, CERULEAN_BINARY: '/nonexistent/cerulean' }, stdio: 'pipe', encoding: 'utf8',
      });
    } catch (e) {
      error = e;
    }
    assert.equal(error?.status, 127);
    assert.match(error.stderr, /\$CERULEAN_BINARY names \/nonexistent\/cerulean/);
  });
});
