'use strict';
// cerulean-tables: starts the Cerulean server (an Azure Table Storage service) for a test or a
// development session, and controls it: reset, snapshots and injected faults through the
// server's reserved /_reset, /_snapshots and /_faults endpoints, signed with Shared Key.
// Types: index.d.ts. The server comes from the platform package of this machine
// (lib/binary.js); CERULEAN_BINARY (or the `binary` option) names another.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { CeruleanAccount, CeruleanAdminError, CeruleanSdkNotFoundError, accountPool } = require('./account');
const {
  BINARY_ENV, CeruleanBinaryNotFoundError, binaryPath, detectLibc, ensureExecutable, platformPackage,
} = require('./lib/binary.js');

const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const READY = /successfully listening at (https?):\/\/(\[[^\]]+\]|[^\s:/]+):(\d+)/;

// Servers not yet stopped: killed when this process exits, so none outlives a test run.
const running = new Set();
process.on('exit', () => {
  for (const server of running) server._kill();
});

class CeruleanServer {
  constructor(child, url, startupMs, temporaryDirectory, pool) {
    const u = new URL(url);
    this._child = child;
    this._temporaryDirectory = temporaryDirectory;
    this._exited = new Promise((resolve) => child.once('exit', resolve));
    this._agent = new http.Agent({ keepAlive: true });
    this._endpoint = { protocol: u.protocol.replace(':', ''), host: u.hostname, port: Number(u.port), agent: this._agent };
    this._free = pool.slice();
    this._waiting = [];
    this.developmentAccount = new CeruleanAccount(this._endpoint, ACCOUNT, KEY);
    this.host = u.hostname;
    this.port = Number(u.port);
    this.account = ACCOUNT;
    this.key = KEY;
    this.url = url;
    this.connectionString = this.developmentAccount.connectionString;
    this.startupMs = startupMs;
    this.pid = child.pid;
    this.accounts = pool.length;
  }

  // Clients of @azure/data-tables (an optional peer dependency) for the development account.
  tableServiceClient(options) {
    return this.developmentAccount.tableServiceClient(options);
  }

  tableClient(tableName, options) {
    return this.developmentAccount.tableClient(tableName, options);
  }

  // The reserved endpoints of the development account (account.js describes them).
  reset() { return this.developmentAccount.reset(); }
  saveSnapshot(name) { return this.developmentAccount.saveSnapshot(name); }
  restoreSnapshot(name) { return this.developmentAccount.restoreSnapshot(name); }
  listSnapshots() { return this.developmentAccount.listSnapshots(); }
  deleteSnapshot(name) { return this.developmentAccount.deleteSnapshot(name); }
  setFaults(rules) { return this.developmentAccount.setFaults(rules); }
  getFaults() { return this.developmentAccount.getFaults(); }
  clearFaults() { return this.developmentAccount.clearFaults(); }

  // One of the `accounts` the server was started with, for the caller alone until it calls
  // account.release(); waits while all are leased.
  leaseAccount() {
    if (this.accounts === 0) {
      return Promise.reject(new TypeError('leaseAccount() needs a server started with { accounts: N }'));
    }
    const { name, key } = this._free.shift() ?? {};
    if (name) return Promise.resolve(new CeruleanAccount(this._endpoint, name, key, (a) => this._giveBack(a)));
    return new Promise((resolve) => this._waiting.push(resolve));
  }

  _giveBack({ name, key }) {
    const next = this._waiting.shift();
    if (next) next(new CeruleanAccount(this._endpoint, name, key, (a) => this._giveBack(a)));
    else this._free.push({ name, key });
  }

  // Stops the server (SIGTERM, then SIGKILL after 5 s) and removes its temporary directory.
  async stop() {
    if (!running.delete(this)) return this._exited;
    this._agent.destroy();
    this._child.ref();
    if (this._child.exitCode === null && this._child.signalCode === null) {
      this._child.kill('SIGTERM');
      const timer = setTimeout(() => this._child.kill('SIGKILL'), 5000);
      await this._exited;
      clearTimeout(timer);
    }
    this._removeTemporaryDirectory();
  }

  async [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    await this.stop();
  }

  _kill() {
    if (this._child.exitCode === null && this._child.signalCode === null) this._child.kill('SIGKILL');
    this._removeTemporaryDirectory();
  }

  _removeTemporaryDirectory() {
    if (this._temporaryDirectory) fs.rmSync(this._temporaryDirectory, { recursive: true, force: true });
    this._temporaryDirectory = undefined;
  }
}

// Starts a server on 127.0.0.1 and resolves once it listens. Options: binary, storage ('memory',
// the default, or 'temporaryDirectory'), location (a directory kept afterwards), port (0: a free
// one), accessLog, args, onOutput(line), startTimeoutMs, accounts (how many accounts to serve
// beside the development account, for leaseAccount()).
async function start(options = {}) {
  const {
    storage = 'memory', location, port = 0, accessLog = false, args = [], onOutput, startTimeoutMs = 30000,
    accounts = 0,
  } = options;
  if (!Number.isInteger(accounts) || accounts < 0) throw new TypeError(`accounts must be a whole number, not ${accounts}`);
  const binary = ensureExecutable(binaryPath(options));
  const argv = ['--tableHost', '127.0.0.1', '--tablePort', String(port)];
  let temporaryDirectory;
  if (location) {
    argv.push('--location', path.resolve(location));
  } else if (storage === 'temporaryDirectory') {
    temporaryDirectory = fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-'));
    argv.push('--location', temporaryDirectory);
  } else if (storage === 'memory') {
    argv.push('--inMemoryPersistence');
  } else {
    throw new TypeError(`storage must be 'memory' or 'temporaryDirectory', not ${JSON.stringify(storage)}`);
  }
  if (!accessLog) argv.push('--silent');
  argv.push(...args);

  const began = process.hrtime.bigint();
  const pool = accountPool(accounts);
  const env = { ...process.env };
  if (accounts > 0) env.AZURITE_ACCOUNTS = [env.AZURITE_ACCOUNTS, pool.spec].filter(Boolean).join(';');
  // The server's stdin is a pipe only this process writes to: --exitWithParent makes the server
  // stop when it closes, so a test process that dies (even by SIGKILL) takes its servers along.
  argv.push('--exitWithParent');
  const child = spawn(binary, argv, { stdio: ['pipe', 'pipe', 'pipe'], env });
  const early = [];
  const url = await new Promise((resolve, reject) => {
    let settled = false;
    const fail = (error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      if (temporaryDirectory) fs.rmSync(temporaryDirectory, { recursive: true, force: true });
      reject(error);
    };
    const timer = setTimeout(() => fail(new Error(`cerulean did not listen within ${startTimeoutMs} ms:\n${early.join('\n')}`)), startTimeoutMs);
    child.once('error', fail);
    child.once('exit', (code, signal) => fail(new Error(`cerulean exited (${signal ?? code}) before listening:\n${early.join('\n')}`)));
    // Both pipes are read for the server's whole life, so it never blocks on a full one.
    for (const [stream, isStdout] of [[child.stdout, true], [child.stderr, false]]) {
      readline.createInterface({ input: stream }).on('line', (line) => {
        if (!settled) early.push(line);
        if (onOutput) onOutput(line);
        const m = isStdout && !settled && READY.exec(line);
        if (m) {
          settled = true;
          clearTimeout(timer);
          resolve(`${m[1]}://${m[2]}:${m[3]}/${ACCOUNT}`);
        }
      });
    }
  });
  const startupMs = Number(process.hrtime.bigint() - began) / 1e6;
  const server = new CeruleanServer(child, url, startupMs, temporaryDirectory, pool.accounts);
  running.add(server);
  // A server left running does not keep the test process alive; it is killed when that exits.
  child.unref();
  child.stdin.unref();
  child.stdout.unref();
  child.stderr.unref();
  return server;
}

module.exports = {
  start,
  fixture: (...args) => require('./fixture').fixture(...args),
  CeruleanAccount,
  binaryPath,
  CeruleanServer,
  CeruleanBinaryNotFoundError,
  CeruleanSdkNotFoundError,
  CeruleanAdminError,
  ACCOUNT,
  KEY,
  BINARY_ENV,
  ensureExecutable,
  platformPackage,
  detectLibc,
};
