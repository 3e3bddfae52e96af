'use strict';
// Starts the real Cerulean binary for one test file and stops it afterwards.
//
// The binary is $CERULEAN_BIN, or <repo>/${BUILD_DIR:-build}/cerulean. It is
// started on 127.0.0.1 with --tablePort 0 (the kernel picks a free port) and
// --silent, in memory unless a --location directory is asked for; the port is
// read from the start-up line
//   Cerulean Table service is successfully listening at http://HOST:PORT
//
// Usage in a node:test file:
//   const { useServer } = require('./server');
//   const server = useServer();          // registers before/after hooks
//   test('x', async () => { server.endpoint ... });
//
// With CERULEAN_E2E_DATABASE (a PostgreSQL URL, e.g. from
// scripts/pg-test-cluster.sh) a server not given a --location serves from a
// fresh database of that cluster (createdb; dropped when it stops) instead of
// memory, so the suites run against the PostgreSQL backend. Tests given a
// location exercise the SQLite file store itself and keep it.
//
// With CERULEAN_E2E_ON_DISK=1 a server given neither a --location nor a
// database serves from a fresh temporary folder (removed when it exits)
// instead of memory, so the suites run against the SQLite file store.
//
// Setting CERULEAN_E2E_ENDPOINT (and optionally CERULEAN_E2E_ACCOUNT /
// CERULEAN_E2E_KEY) points the suites at an already running server or at real
// Azure instead of starting the binary.

const { spawn, execFileSync, execFile } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const REPO = path.resolve(__dirname, '..', '..', '..');
const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const READY_RE = /Cerulean Table service is successfully listening at http:\/\/(\[[^\]]+\]|[^\s:]+):(\d+)/;
const START_TIMEOUT_MS = 20000;

const live = new Set();
const stopping = new WeakSet();
process.on('exit', () => {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
});

function binaryPath() {
  if (process.env.CERULEAN_BIN) return path.resolve(process.env.CERULEAN_BIN);
  return path.resolve(REPO, process.env.BUILD_DIR || 'build', 'cerulean');
}

// Builds the object the tests use to reach a server at http://host:port.
function describe(host, port, account = ACCOUNT, key = KEY) {
  const url = `http://${host}:${port}`;
  const endpoint = `${url}/${account}`;
  return {
    host,
    port,
    url,
    account,
    key,
    endpoint,
    connectionString:
      `DefaultEndpointsProtocol=http;AccountName=${account};AccountKey=${key};TableEndpoint=${endpoint};`,
  };
}

// A new database in the CERULEAN_E2E_DATABASE cluster ({url, drop()}), or
// null when that is not set.
let databases = 0;
function freshDatabase() {
  const base = process.env.CERULEAN_E2E_DATABASE;
  if (!base) return null;
  const name = `cerulean_e2e_${process.pid}_${++databases}`;
  execFileSync('createdb', [`--maintenance-db=${base}`, name], { stdio: ['ignore', 'ignore', 'inherit'] });
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => execFile('dropdb', ['--if-exists', '--force', `--maintenance-db=${base}`, name], () => {}),
  };
}

// Starts the binary. Options: location (directory: durable SQLite store;
// default in-memory), database (a PostgreSQL URL, e.g. freshDatabase().url,
// for servers sharing one database), args (extra CLI arguments), env (extra environment),
// silent (default true; false keeps the access log, read with stdout()).
// Resolves to describe(...) plus stop(), which resolves to the exit
// {code, signal}, and child / stderr() for diagnostics.
function startServer(options = {}) {
  const bin = binaryPath();
  if (!fs.existsSync(bin)) {
    return Promise.reject(new Error(`Cerulean binary not found at ${bin} (set CERULEAN_BIN or build first)`));
  }
  const args = ['--tableHost', '127.0.0.1', '--tablePort', '0'];
  if (options.silent !== false) args.push('--silent');
  const database = options.location || options.database ? null : freshDatabase();
  const scratch = !options.location && !options.database && !database && process.env.CERULEAN_E2E_ON_DISK === '1'
    ? fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-e2e-disk-'))
    : null;
  if (options.location) args.push('--location', options.location);
  else if (options.database) args.push('--database', options.database);
  else if (database) args.push('--database', database.url);
  else if (scratch) args.push('--location', scratch);
  else args.push('--inMemoryPersistence');
  args.push(...(options.args || []));

  const child = spawn(bin, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...(options.env || {}) },
  });
  live.add(child);
  let stdout = '';
  let stderr = '';
  let exited = null;
  const exitPromise = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      live.delete(child);
      if (database) database.drop();
      if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
      exited = { code, signal };
      resolve(exited);
    });
  });
  child.stderr.on('data', (d) => {
    stderr += d;
    if (stderr.length > 64 * 1024) stderr = stderr.slice(-32 * 1024);
  });

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`Cerulean did not print its start-up line within ${START_TIMEOUT_MS} ms\n` +
        `stdout: ${stdout}\nstderr: ${stderr}`));
    }, START_TIMEOUT_MS);
    let ready = false;
    child.stdout.on('data', (d) => {
      stdout += d;  // keep draining so the child never blocks on a full pipe
      if (stdout.length > 256 * 1024) stdout = stdout.slice(-128 * 1024);
      if (ready) return;
      const m = READY_RE.exec(stdout);
      if (!m) return;
      ready = true;
      clearTimeout(timer);
      const host = m[1];
      const port = Number(m[2]);
      const server = describe(host, port);
      server.child = child;
      server.args = args;
      server.stderr = () => stderr;
      server.stdout = () => stdout;
      server.exited = () => exited;
      server.stop = async (signal = 'SIGTERM') => {
        if (exited) return exited;
        stopping.add(child);
        child.kill(signal);
        const killer = setTimeout(() => child.kill('SIGKILL'), 8000);
        const result = await exitPromise;
        clearTimeout(killer);
        return result;
      };
      resolve(server);
    });
    exitPromise.then(({ code, signal }) => {
      if (ready) {
        if (!stopping.has(child)) {
          process.stderr.write(`cerulean exited unexpectedly (code ${code}, signal ${signal})\n${stderr}\n`);
        }
        return;
      }
      clearTimeout(timer);
      reject(new Error(`Cerulean exited before listening (code ${code}, signal ${signal})\n` +
        `stdout: ${stdout}\nstderr: ${stderr}`));
    });
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

// Registers node:test hooks that start a server before the file's tests and
// stop it after them. Returns an object filled in by the before hook (the
// fields of startServer's result), so tests read server.endpoint etc.
function useServer(options = {}) {
  const { before, after } = require('node:test');
  const server = {};
  before(async () => {
    if (process.env.CERULEAN_E2E_ENDPOINT) {
      const u = new URL(process.env.CERULEAN_E2E_ENDPOINT);
      const account = process.env.CERULEAN_E2E_ACCOUNT || u.pathname.split('/')[1] || ACCOUNT;
      Object.assign(server, describe(u.hostname, Number(u.port || 80), account, process.env.CERULEAN_E2E_KEY || KEY));
      server.stop = async () => ({ code: 0, signal: null });
      server.external = true;
      return;
    }
    Object.assign(server, await startServer(options));
  });
  after(async () => {
    if (server.stop) await server.stop();
  });
  return server;
}

// A table name that no other test uses: letter first, letters and digits only.
function uniqueTableName(prefix = 't') {
  const clean = prefix.replace(/[^A-Za-z0-9]/g, '') || 't';
  const base = /^[A-Za-z]/.test(clean) ? clean : `t${clean}`;
  return (base + crypto.randomBytes(6).toString('hex')).slice(0, 63);
}

function tempDir(prefix = 'cerulean-e2e-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

module.exports = {
  ACCOUNT,
  KEY,
  REPO,
  binaryPath,
  startServer,
  freshDatabase,
  useServer,
  uniqueTableName,
  tempDir,
};
