'use strict';
// Writes held up in the database past the server's round-trip deadline (a
// lock another session holds, a synchronous standby that does not answer),
// and the check that no answer lies about them: a 503 ServerBusy write never
// took effect, a 2xx one did, and the only other answer is Azure's 500
// OperationTimedOut (outcome unknown). Used by pg-outage.test.js and
// pg-failover.test.js.

const assert = require('node:assert/strict');

// Runs an insert, an If-Match update and a change set of two inserts at once
// through `client` (a TableClient with retries off) on a table that holds
// {partitionKey 'p', rowKey 'upd', n 0} with ETag `etag`, while something
// holds writes up; `released` resolves once it no longer does. Resolves to
// [{what, status, code, applied}] once the writes were answered and what
// they did is read back.
async function heldWrites(client, etag, released) {
  const outcome = async (what, fn) => {
    const start = Date.now();
    try {
      await fn();
      return { what, status: 200, ms: Date.now() - start };
    } catch (e) {
      return { what, status: e.statusCode, code: e.response?.headers.get('x-ms-error-code'), ms: Date.now() - start, message: e.message };
    }
  };
  const answers = await Promise.all([
    outcome('insert', () => client.createEntity({ partitionKey: 'p', rowKey: 'ins' })),
    outcome('If-Match update', () => client.updateEntity({ partitionKey: 'p', rowKey: 'upd', n: 1 }, 'Replace', { etag })),
    outcome('change set', () => client.submitTransaction([
      ['create', { partitionKey: 'b', rowKey: '0' }], ['create', { partitionKey: 'b', rowKey: '1' }]])),
  ]);
  await released;
  const exists = async (pk, rk) => {
    try {
      return await client.getEntity(pk, rk);
    } catch (e) {
      if (e.statusCode === 404) return null;
      throw e;
    }
  };
  answers[0].applied = (await exists('p', 'ins')) !== null;
  answers[1].applied = (await exists('p', 'upd')).n === 1;
  const rows = [await exists('b', '0'), await exists('b', '1')].filter((r) => r !== null).length;
  assert.ok(rows === 0 || rows === 2, `a change set was applied in part (${rows} of 2 rows)`);
  answers[2].applied = rows === 2;
  return answers;
}

// Asserts that each answer of heldWrites told the truth; returns how many
// were 500 OperationTimedOut.
function assertTruthful(answers) {
  let unknown = 0;
  for (const a of answers) {
    const said = `${a.what}: ${a.status} ${a.code ?? ''} after ${a.ms} ms, ${a.applied ? '' : 'not '}applied`;
    if (a.status === 200) {
      assert.ok(a.applied, `answered as done but not applied: ${said}`);
    } else if (a.status === 503) {
      assert.equal(a.code, 'ServerBusy', said);
      assert.ok(!a.applied, `answered 503 ServerBusy (not done, retry) but applied: ${said}`);
    } else {
      assert.equal(a.status, 500, `${said} ${a.message}`);
      assert.equal(a.code, 'OperationTimedOut', said);
      unknown++;
    }
  }
  return unknown;
}

module.exports = { heldWrites, assertTruthful };
