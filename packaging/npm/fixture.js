'use strict';
// fixture(): a ready-made test fixture for node:test, mocha and vitest. Every fixture of a test
// process leases its own account on one shared server (started by the first, stopped after the
// last), so suites that run at once see only their own tables, snapshots and fault rules.

const { start } = require('./index');

// The shared server: started on the first acquire, stopped when the last fixture lets it go.
const SHARED_ACCOUNTS = 64;
let shared;
let users = 0;

async function acquireShared() {
  ++users;
  shared ??= start({ accounts: SHARED_ACCOUNTS });
  try {
    return await shared;
  } catch (e) {
    --users;
    shared = undefined;
    throw e;
  }
}

async function releaseShared() {
  if (--users > 0 || !shared) return;
  const server = await shared;
  shared = undefined;
  await server.stop();
}

const SEED_SNAPSHOT = 'fixture-seed';

// Registers hooks that give the suite an account of its own: `hooks` holds the test framework's
// functions ({ before, after } with node:test and mocha, { before: beforeAll, after: afterAll }
// with vitest; beforeEach and afterEach are optional). Options: seed(account), run once, after
// which the account is saved and, with beforeEach, restored before every test; server, start()
// options for a server of this fixture's own instead of the shared one (accounts is set to 1).
function fixture(hooks, { seed, server: serverOptions } = {}) {
  const { before, after, beforeEach, afterEach } = hooks ?? {};
  if (typeof before !== 'function' || typeof after !== 'function') {
    throw new TypeError('fixture() needs the test framework\'s hooks: fixture({ before, after, beforeEach })');
  }
  let server;
  let account;
  const state = {
    get account() {
      if (!account) throw new Error('the fixture\'s account exists from its before hook to its after hook');
      return account;
    },
    get server() {
      if (!server) throw new Error('the fixture\'s server exists from its before hook to its after hook');
      return server;
    },
    // Brings the account back to the state seed() left (a no-op without seed).
    async restore() {
      if (seed) await state.account.restoreSnapshot(SEED_SNAPSHOT);
    },
  };
  before(async () => {
    server = serverOptions ? await start({ ...serverOptions, accounts: 1 }) : await acquireShared();
    account = await server.leaseAccount();
    if (seed) {
      await seed(account);
      await account.saveSnapshot(SEED_SNAPSHOT);
    }
  });
  if (beforeEach) beforeEach(() => state.restore());
  if (afterEach) afterEach(() => account?.clearFaults());
  after(async () => {
    const a = account;
    account = undefined;
    if (serverOptions) {
      await server?.stop();
    } else {
      try {
        if (a) await a.release();
      } finally {
        await releaseShared();
      }
    }
    server = undefined;
  });
  return state;
}

module.exports = { fixture };
