'use strict';
// cerulean-tables: starts the Cerulean server (an Azure Table Storage service) for a test or a
// development session, and controls it: reset, snapshots and injected faults through the
// server's reserved /_reset, /_snapshots and /_faults endpoints, signed with Shared Key.
// Types: index.d.ts. The server comes from the platform package of this machine
// (lib/binary.js); CERULEAN_BINARY (or the `binary` option) names another.

const { spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const {
  BINARY_ENV, CeruleanBinaryNotFoundError, binaryPath, detectLibc, ensureExecutable, platformPackage,
} = require('./lib/binary.js');

const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const READY = /successfully listening at (https?):\/\/(\[[^\]]+\]|[^\s:/]+):(\d+)/;

class CeruleanAdminError extends Error {
  constructor(message, statusCode, code) {
    super(message);
    this.name = 'CeruleanAdminError';
    this.statusCode = statusCode;
    this.code = code;
  }
}

// Servers not yet stopped: killed when this process exits, so none outlives a test run.
const running = new Set();
process.on('exit', () => {
  for (const server of running) server._kill();
});

class CeruleanServer {
  constructor(child, url, startupMs, temporaryDirectory) {
    const u = new URL(url);
    this._child = child;
    this._temporaryDirectory = temporaryDirectory;
    this._exited = new Promise((resolve) => child.once('exit', resolve));
    this._agent = new http.Agent({ keepAlive: true });
    this.host = u.hostname;
    this.port = Number(u.port);
    this.account = ACCOUNT;
    this.key = KEY;
    this.url = url;
    this.connectionString =
      `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${KEY};TableEndpoint=${url};`;
    this.startupMs = startupMs;
    this.pid = child.pid;
  }

  // A TableServiceClient of @azure/data-tables (a peer dependency) for this server.
  tableServiceClient(options = {}) {
    const { TableServiceClient } = require('@azure/data-tables');
    return TableServiceClient.fromConnectionString(this.connectionString, { allowInsecureConnection: true, ...options });
  }

  // A TableClient of @azure/data-tables for one table of this server.
  tableClient(tableName, options = {}) {
    const { TableClient } = require('@azure/data-tables');
    return TableClient.fromConnectionString(this.connectionString, tableName, { allowInsecureConnection: true, ...options });
  }

  // Deletes every table of the account at once (snapshots stay).
  async reset() {
    await this._admin('POST', `/_reset/${ACCOUNT}`);
  }

  // Saves the account (tables, entities with their ETags and Timestamps, ACLs, service
  // properties) as `name`, replacing a snapshot of that name.
  async saveSnapshot(name) {
    return snapshotInfo(await this._admin('PUT', snapshotPath(name)));
  }

  // Brings the account back to exactly the state saved as `name`, atomically.
  async restoreSnapshot(name) {
    return this._admin('POST', `${snapshotPath(name)}/restore`);
  }

  async listSnapshots() {
    return (await this._admin('GET', `/_snapshots/${ACCOUNT}`)).snapshots.map(snapshotInfo);
  }

  async deleteSnapshot(name) {
    await this._admin('DELETE', snapshotPath(name));
  }

  // Replaces the account's fault rules (tried in order; the first that matches and fires decides).
  // Rules read back by getFaults() may be passed again: their counters are left out.
  async setFaults(rules) {
    const clean = rules.map(({ account, matched, fired, ...rule }) => rule);
    return (await this._admin('PUT', `/_faults/${ACCOUNT}`, { rules: clean })).rules;
  }

  // The account's fault rules with how often each matched and fired.
  async getFaults() {
    return (await this._admin('GET', `/_faults/${ACCOUNT}`)).rules;
  }

  async clearFaults() {
    await this._admin('DELETE', `/_faults/${ACCOUNT}`);
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

  // One request to a reserved endpoint, signed with Shared Key (Table service form: VERB,
  // Content-MD5, Content-Type, Date, then "/{account}{path}"). Resolves to the parsed JSON body.
  _admin(method, target, body) {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
    const contentType = payload ? 'application/json' : '';
    const date = new Date().toUTCString();
    const stringToSign = `${method}\n\n${contentType}\n${date}\n/${ACCOUNT}${target}`;
    const signature = crypto.createHmac('sha256', Buffer.from(KEY, 'base64')).update(stringToSign, 'utf8').digest('base64');
    const headers = {
      'x-ms-date': date,
      'x-ms-version': '2019-02-02',
      Authorization: `SharedKey ${ACCOUNT}:${signature}`,
      'Content-Length': payload ? payload.length : 0,
    };
    if (payload) headers['Content-Type'] = contentType;
    return new Promise((resolve, reject) => {
      const req = http.request({ host: this.host, port: this.port, method, path: target, headers, agent: this._agent }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          if (res.statusCode >= 200 && res.statusCode < 300) return resolve(json);
          const code = res.headers['x-ms-error-code'];
          const message = json?.['odata.error']?.message?.value ?? text;
          reject(new CeruleanAdminError(`${method} ${target}: ${res.statusCode} ${code ?? ''}: ${message}`, res.statusCode, code));
        });
      });
      req.on('error', reject);
      req.end(payload);
    });
  }
}

function snapshotPath(name) {
  return `/_snapshots/${ACCOUNT}/${encodeURIComponent(name)}`;
}

function snapshotInfo(j) {
  return { name: j.name, created: new Date(j.created), tables: j.tables, entities: j.entities };
}

// Starts a server on 127.0.0.1 and resolves once it listens. Options: binary, storage ('memory',
// the default, or 'temporaryDirectory'), location (a directory kept afterwards), port (0: a free
// one), accessLog, args, onOutput(line), startTimeoutMs.
async function start(options = {}) {
  const {
    storage = 'memory', location, port = 0, accessLog = false, args = [], onOutput, startTimeoutMs = 30000,
  } = options;
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
  // The server's stdin is a pipe only this process writes to: --exitWithParent makes the server
  // stop when it closes, so a test process that dies (even by SIGKILL) takes its servers along.
  argv.push('--exitWithParent');
  const child = spawn(binary, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
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
  const server = new CeruleanServer(child, url, startupMs, temporaryDirectory);
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
  binaryPath,
  CeruleanServer,
  CeruleanBinaryNotFoundError,
  CeruleanAdminError,
  ACCOUNT,
  KEY,
  BINARY_ENV,
  ensureExecutable,
  platformPackage,
  detectLibc,
};
