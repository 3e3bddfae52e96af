'use strict';
// Failover under two Cerulean nodes given a libpq multi-host URL
// (postgresql://u@primary,standby/db?target_session_attrs=read-write) over a
// primary and a streaming standby that every commit waits for
// (scripts/pg-test-cluster.sh start-pair). Writers, batch writers and
// If-Match updaters run on both nodes while the primary dies (SIGKILL) or
// freezes (SIGSTOP: its backends alive, nothing answers) and the test, as an
// HA manager would, promotes the standby. Then: every acknowledged write is
// there with its acknowledged ETag, no acknowledged update was lost, nothing
// but 503 ServerBusy (not done) and 500 OperationTimedOut (outcome unknown;
// and the 409/412 a retry of that meets) was answered, no 503 was applied, the 503s lasted a bounded time, and each node's log names the
// host that serves. Creates clusters of its own: runs when
// CERULEAN_E2E_PG_FAILOVER is set (scripts/test.sh postgres).

const { test, describe } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile, execFileSync } = require('node:child_process');
const { promisify } = require('node:util');
const { AzureNamedKeyCredential, TableClient } = require('@azure/data-tables');

const { REPO, startServer, uniqueTableName } = require('./server');
const { heldWrites, assertTruthful } = require('./held-writes');
const { waitFor } = require('./util');

const skip = process.env.CERULEAN_E2E_PG_FAILOVER ? false
  : 'needs CERULEAN_E2E_PG_FAILOVER=1 (scripts/test.sh postgres): starts PostgreSQL clusters of its own';
const clientOptions = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// A client's pause before its next attempt after a failure, as a retry
// policy's would be: pacing the load, not waiting for a condition.
const RETRY_PAUSE_MS = 100;

// The longest the 503s may last: detection, promotion and reconnection with
// room for a loaded machine (measured figures are printed, and are a few
// seconds).
const OUTAGE_BOUND_MS = 30000;
// No single request may take longer than this: the server's deadlines bound it.
const REQUEST_BOUND_MS = 15000;

const SCRIPT = path.join(REPO, 'scripts', 'pg-test-cluster.sh');
function pair(command, state) {
  return execFileSync('bash', [SCRIPT, command, state], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' }).trim();
}
// The same without blocking: the clients go on meanwhile.
async function pairAsync(command, state) {
  await promisify(execFile)('bash', [SCRIPT, command, state], { timeout: 120000 });
}

// Runs `event` (which makes the primary go away and promotes the standby)
// under load from two nodes, then checks what the clients were told against
// what the database holds.
async function failover(t, event) {
  const state = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-failover-')), 'pair');
  const url = pair('start-pair', state);
  const [primaryPort, standbyPort] = /@127\.0\.0\.1:(\d+),127\.0\.0\.1:(\d+)\//.exec(url).slice(1);
  const nodes = [];
  try {
    nodes.push(await startServer({ database: url }), await startServer({ database: url }));
    for (const node of nodes) assert.match(node.stderr(), new RegExp(`database at 127\\.0\\.0\\.1:${primaryPort} serves`));
    const client = (node, table) =>
      new TableClient(node.endpoint, table, new AzureNamedKeyCredential(node.account, node.key), clientOptions);
    const table = uniqueTableName('failover');
    await client(nodes[0], table).createTable();
    const shared = ['u0', 'u1', 'u2'];
    for (const rk of shared) await client(nodes[0], table).createEntity({ partitionKey: 'upd', rowKey: rk, n: 0 });

    const inserts = new Map();  // "pk/rk" -> acknowledged ETag
    const batches = [];  // {pk, acknowledged}
    const updates = new Map(shared.map((rk) => [rk, []]));  // rk -> [{n, etag}] acknowledged
    const unexpected = [];
    const failures = [];  // {at, status} of every failed request
    let stop = false;
    let eventAt = 0;
    // 503 ServerBusy: not done; 500 OperationTimedOut: the outcome is not
    // known (a commit in flight when the primary went away). Nothing else.
    const unknownOutcome = (e) => e.statusCode === 500 && e.response?.headers.get('x-ms-error-code') === 'OperationTimedOut';
    const note = (e) => {
      failures.push({ at: Date.now(), status: e.statusCode });
      const code = e.response?.headers.get('x-ms-error-code');
      if ((e.statusCode !== 503 || code !== 'ServerBusy') && !unknownOutcome(e)) unexpected.push(`${e.statusCode} ${code}: ${e.message}`);
    };
    const timed = async (fn) => {
      const start = Date.now();
      try {
        return await fn();
      } finally {
        const ms = Date.now() - start;
        if (ms > REQUEST_BOUND_MS) unexpected.push(`a request took ${ms} ms`);
      }
    };

    // Inserts one at a time; a failure is retried with the same key. A 409
    // then means an earlier attempt happened: fine after 500
    // OperationTimedOut, a lie after 503 ServerBusy.
    const inserter = async (node, w) => {
      const c = client(node, table);
      for (let k = 0; !stop; k++) {
        let uncertain = false;  // an attempt's outcome was unknown
        let retried = false;
        for (;;) {
          try {
            const r = await timed(() => c.createEntity({ partitionKey: `ins-${node.port}-${w}`, rowKey: `${k}`, n: k }));
            inserts.set(`ins-${node.port}-${w}/${k}`, { etag: r.etag, at: Date.now() });
            break;
          } catch (e) {
            if (e.statusCode === 409 && uncertain) break;
            if (e.statusCode === 409 && retried) unexpected.push(`insert ins-${node.port}-${w}/${k} answered 503 ServerBusy, then found applied`);
            note(e);
            if ((e.statusCode !== 503 && !unknownOutcome(e)) || stop) break;
            uncertain ||= unknownOutcome(e);
            retried = true;
            await sleep(RETRY_PAUSE_MS);
          }
        }
      }
    };
    // Change sets of 5 inserts, each in a partition of its own.
    const batcher = async (node) => {
      const c = client(node, table);
      for (let k = 0; !stop; k++) {
        const b = { pk: `batch-${node.port}-${k}`, acknowledged: false, busy: false };
        batches.push(b);
        try {
          await timed(() => c.submitTransaction(Array.from({ length: 5 }, (_, i) => ['create', { partitionKey: b.pk, rowKey: `${i}` }])));
          b.acknowledged = true;
        } catch (e) {
          b.busy = e.statusCode === 503;
          note(e);
          await sleep(RETRY_PAUSE_MS);
        }
      }
    };
    // Read, then If-Match merge n + 1; both nodes race on the same entities.
    const updater = async (node, w) => {
      const c = client(node, table);
      for (let k = 0; !stop; k++) {
        const rk = shared[(k + w) % shared.length];
        try {
          const cur = await timed(() => c.getEntity('upd', rk));
          const n = cur.n + 1;
          const r = await timed(() => c.updateEntity({ partitionKey: 'upd', rowKey: rk, n }, 'Merge', { etag: cur.etag }));
          updates.get(rk).push({ n, etag: r.etag });
        } catch (e) {
          if (e.statusCode === 412) continue;  // another updater won (or our unknown write did)
          note(e);
          await sleep(RETRY_PAUSE_MS);
        }
      }
    };
    const workers = nodes.flatMap((node, i) => [
      inserter(node, 0), inserter(node, 1), batcher(node), updater(node, i), updater(node, i + 1),
    ]);

    let promotedAt = 0;
    const served = (port) => [...inserts.entries()].filter(([k, v]) => k.startsWith(`ins-${port}-`) && v.at > promotedAt).length;
    try {
      // Load before the event.
      await waitFor(() => inserts.size >= 40 || unexpected.length > 0,
        { timeoutMs: 60000, what: () => `40 inserts before the event (${inserts.size} so far)` });
      assert.deepEqual(unexpected, []);
      eventAt = Date.now();
      await event(state);
      promotedAt = Date.now();
      // Until both nodes' writers have been served again for a while.
      await waitFor(() => nodes.every((n) => served(n.port) >= 20), {
        timeoutMs: OUTAGE_BOUND_MS * 2,
        intervalMs: 50,
        what: () => `20 inserts served by each node after the promotion (${nodes.map((n) => served(n.port)).join(', ')} so far; ` +
          `unexpected: ${JSON.stringify(unexpected)})`,
      });
    } finally {
      stop = true;
      await Promise.all(workers);
    }
    assert.deepEqual(unexpected, []);
    for (const node of nodes) assert.ok(served(node.port) >= 20, `node ${node.port} not served after the failover`);

    // The 503s: from the event to the last one.
    const after = failures.filter((f) => f.at >= eventAt);
    const first503 = Math.min(...after.map((f) => f.at));
    const last503 = Math.max(eventAt, ...after.map((f) => f.at));
    t.diagnostic(`primary gone and standby promoted ${promotedAt - eventAt} ms after the event; ` +
      `${after.length} requests answered 503, from ${first503 - eventAt} to ${last503 - eventAt} ms after it`);
    assert.ok(last503 - eventAt < OUTAGE_BOUND_MS, `503s lasted ${last503 - eventAt} ms`);

    // What the new primary holds, read through each node.
    for (const node of nodes) {
      const got = new Map();
      for await (const e of client(node, table).listEntities()) got.set(`${e.partitionKey}/${e.rowKey}`, { etag: e.etag, n: e.n });
      for (const [key, { etag }] of inserts) assert.equal(got.get(key)?.etag, etag, `acknowledged insert ${key}`);
      for (const b of batches) {
        const rows = [...got.keys()].filter((k) => k.startsWith(`${b.pk}/`)).length;
        assert.ok(rows === 0 || rows === 5, `batch ${b.pk}: ${rows} of 5 rows`);
        if (b.acknowledged) assert.equal(rows, 5, `acknowledged batch ${b.pk} lost`);
        if (b.busy) assert.equal(rows, 0, `batch ${b.pk} answered 503 ServerBusy but applied`);
      }
      for (const [rk, acked] of updates) {
        const ns = acked.map((a) => a.n);
        assert.equal(new Set(ns).size, ns.length, `two acknowledged updates of ${rk} from the same ETag`);
        const final = got.get(`upd/${rk}`);
        const top = acked.reduce((m, a) => (a.n > m.n ? a : m), { n: 0 });
        assert.ok(final.n >= top.n, `acknowledged update ${rk} n=${top.n} lost (now n=${final.n})`);
        if (final.n === top.n && top.etag) assert.equal(final.etag, top.etag);
      }
    }
    // Each node's log: the outage and the host that serves now, once each,
    // not once per failed request.
    for (const node of nodes) {
      const lines = node.stderr().split('\n');
      for (const l of lines.filter((x) => x.includes('database'))) t.diagnostic(`node ${node.port}: ${l}`);
      // (None when the prober's connection found the promoted standby before a
      // probe failed: then "now served by".)
      const down = lines.filter((l) => l.includes('database unreachable')).length;
      assert.ok(down <= 2, node.stderr());
      assert.ok(lines.some((l) => new RegExp(`database (reachable again at|now served by) 127\\.0\\.0\\.1:${standbyPort}`).test(l)), node.stderr());
    }
    assert.ok(failures.length > 0, 'the failover cost no request: the test did not exercise it');
  } finally {
    for (const node of nodes) await node.stop();
    pair('stop', state);
    pair('stop', `${state}.standby`);
    fs.rmSync(path.dirname(state), { recursive: true, force: true });
  }
}

describe('a synchronous standby that stops answering', { skip }, () => {
  // Every commit waits for the standby: frozen (SIGSTOP), it holds the
  // COMMITs past the server's round-trip deadline. Whatever each write is
  // answered, it tells the truth (held-writes.js).
  test('no write is answered 503 ServerBusy and applied', async (t) => {
    const state = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-stall-')), 'pair');
    const url = pair('start-pair', state);
    let node;
    let frozen = false;
    try {
      node = await startServer({ database: url });
      const c = new TableClient(node.endpoint, uniqueTableName('stall'),
        new AzureNamedKeyCredential(node.account, node.key), clientOptions);
      await c.createTable();
      const { etag } = await c.createEntity({ partitionKey: 'p', rowKey: 'upd', n: 0 });
      pair('freeze', `${state}.standby`);
      frozen = true;
      // The standby stays frozen 8 s on purpose: past the 5 s deadline.
      const released = sleep(8000).then(() => {
        pair('thaw', `${state}.standby`);
        frozen = false;
      });
      const answers = await heldWrites(c, etag, released);
      for (const a of answers) t.diagnostic(`${a.what}: ${a.status} ${a.code ?? ''} after ${a.ms} ms, ${a.applied ? '' : 'not '}applied`);
      const unknown = assertTruthful(answers);
      t.diagnostic(`${unknown} of ${answers.length} answered 500 OperationTimedOut`);
      assert.ok(answers.some((a) => a.ms >= 5000), 'no write waited for the standby: the test did not exercise it');
    } finally {
      if (frozen) pair('thaw', `${state}.standby`);
      if (node) await node.stop();
      pair('stop', state);
      pair('stop', `${state}.standby`);
      fs.rmSync(path.dirname(state), { recursive: true, force: true });
    }
  });
});

describe('failover to a synchronous standby under two nodes', { skip }, () => {
  test('a killed primary: nothing acknowledged lost, a short window of 503s', async (t) => {
    await failover(t, async (state) => {
      await pairAsync('kill', state);
      await pairAsync('promote', `${state}.standby`);
    });
  });

  test('a frozen primary (SIGSTOP): requests fail within the timeout, the nodes move to the new primary', async (t) => {
    await failover(t, async (state) => {
      await pairAsync('freeze', state);
      // An HA manager notices the silence, then promotes: the primary stays
      // frozen a second on purpose, the requests meanwhile held by it.
      await sleep(1000);
      await pairAsync('promote', `${state}.standby`);
    });
  });
});
