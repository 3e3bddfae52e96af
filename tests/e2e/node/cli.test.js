'use strict';
// Command-line flags of the binary (README "Command line"): --loose,
// --skipApiVersionCheck, --disableProductStyleUrl, --debug, access logs,
// --help/--version, and the start-up line itself.

const { test, describe, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const { startServer, binaryPath, uniqueTableName, tempDir } = require('./server');
const { request } = require('./http');
const { assertError, waitFor } = require('./util');

const dirs = [];
after(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

async function withServer(options, fn) {
  const srv = await startServer(options);
  try {
    return await fn(srv);
  } finally {
    await srv.stop();
  }
}

describe('start-up', () => {
  test('--help and --version exit 0', () => {
    const help = spawnSync(binaryPath(), ['--help'], { encoding: 'utf8', timeout: 10000 });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout + help.stderr, /tablePort/);
    const version = spawnSync(binaryPath(), ['--version'], { encoding: 'utf8', timeout: 10000 });
    assert.equal(version.status, 0, version.stderr);
    assert.match(version.stdout + version.stderr, /\d+\.\d+\.\d+/);
  });

  test('an unknown flag is refused with a non-zero exit', () => {
    const r = spawnSync(binaryPath(), ['--noSuchFlag'], { encoding: 'utf8', timeout: 10000 });
    assert.notEqual(r.status, 0);
  });

  test('port 0 prints the real port in the Azurite start-up line', async () => {
    await withServer({}, async (srv) => {
      assert.ok(srv.port > 0 && srv.port < 65536);
      assert.match(srv.stdout(), /^Cerulean Table service is successfully listening at http:\/\/127\.0\.0\.1:\d+$/m);
    });
  });

  test('two servers on port 0 get different ports', async () => {
    const a = await startServer();
    const b = await startServer();
    try {
      assert.notEqual(a.port, b.port);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  test('an unusable --location fails at start-up', async () => {
    const d = tempDir();
    dirs.push(d);
    const file = path.join(d, 'not-a-dir');
    fs.writeFileSync(file, 'x');
    await assert.rejects(startServer({ location: file }));
  });
});

describe('flags', () => {
  test('--loose skips the x-ms-date skew check and ignores unsupported query options', async () => {
    const old = new Date(Date.now() - 3600 * 1000).toUTCString();
    await withServer({}, async (srv) => {
      assertError(await request(srv, { path: '/Tables', date: old }), 403, 'AuthenticationFailed');
    });
    await withServer({ args: ['--loose'] }, async (srv) => {
      const res = await request(srv, { path: '/Tables', date: old });
      assert.equal(res.status, 200, res.body);
      const t = uniqueTableName('loose');
      assert.equal((await request(srv, { method: 'POST', path: '/Tables', body: { TableName: t } })).status, 201);
      const q = await request(srv, { path: `/${t}()?$orderby=RowKey` });
      assert.equal(q.status, 200, q.body);
    });
  });

  test('--skipApiVersionCheck accepts a future well-formed x-ms-version', async () => {
    await withServer({}, async (srv) => {
      const res = await request(srv, { path: '/Tables', headers: { 'x-ms-version': '2099-01-01' } });
      assertError(res, 400, 'InvalidHeaderValue');
    });
    await withServer({ args: ['--skipApiVersionCheck'] }, async (srv) => {
      const res = await request(srv, { path: '/Tables', headers: { 'x-ms-version': '2099-01-01' } });
      assert.equal(res.status, 200, res.body);
    });
  });

  test('--disableProductStyleUrl reads the account from the path even for dotted hosts', async () => {
    await withServer({ args: ['--disableProductStyleUrl'] }, async (srv) => {
      const res = await request(srv, { path: '/Tables', headers: { Host: `myhost.example.com:${srv.port}` } });
      assert.equal(res.status, 200, res.body);
    });
  });

  test('--debug FILE logs headers with the Authorization value redacted', async () => {
    const d = tempDir();
    dirs.push(d);
    const file = path.join(d, 'debug.log');
    let signature;
    await withServer({ args: ['--debug', file] }, async (srv) => {
      const res = await request(srv, { path: '/Tables', headers: { 'x-ms-client-request-id': 'debug-marker' } });
      assert.equal(res.status, 200);
      const auth = await request(srv, { path: '/Tables', auth: ({ date, resource }) => {
        const h = require('./http');
        signature = h.hmac(srv.key, h.sharedKeyStringToSign({ method: 'GET', date, resource }));
        return `SharedKey ${srv.account}:${signature}`;
      } });
      assert.equal(auth.status, 200);
    });
    const log = fs.readFileSync(file, 'utf8');
    assert.match(log, /debug-marker/, 'request headers are logged');
    assert.ok(!log.includes(signature), 'the signature must not be logged');
  });

  test('--debug FILE logs the query plan: key ranges and residual of a $filter', async () => {
    const d = tempDir();
    dirs.push(d);
    const file = path.join(d, 'debug.log');
    await withServer({ args: ['--debug', file] }, async (srv) => {
      const created = await request(srv, { method: 'POST', path: '/Tables', body: { TableName: 'plans' } });
      assert.equal(created.status, 201, created.body);
      const filter = "PartitionKey eq 'M' and RowKey ge 'METABOLIS' and RowKey lt 'METABOLIT' and Amount gt 5";
      const res = await request(srv, { path: `/plans()?$filter=${encodeURIComponent(filter)}` });
      assert.equal(res.status, 200, res.body);
      const full = await request(srv, { path: `/plans()?$filter=${encodeURIComponent("PartitionKey eq 'A' or PartitionKey eq 'B'")}` });
      assert.equal(full.status, 200, full.body);
    });
    const plans = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.includes('query plan plans:'));
    assert.equal(plans.length, 2, plans.join('\n'));
    // One range inside partition M from the prefix to its successor; the
    // non-key comparison stays as the residual.
    assert.match(plans[0], /METABOLIS/);
    assert.match(plans[0], /METABOLIT/);
    assert.match(plans[0], /residual: .*Amount/);
    // Two partitions, two ranges, nothing left to evaluate.
    assert.match(plans[1], /'A'.*'B'/);
    assert.doesNotMatch(plans[1], /residual: \(/);
  });

  test('access log on stdout without --silent, JSON lines with --jsonLog', async () => {
    const accessLog = (srv) => srv.stdout().split('\n').filter((l) => l && !l.startsWith('Cerulean Table service'));
    // Until a whole access log line has arrived (stdout may come in pieces).
    const logged = (srv) => waitFor(() => srv.stdout().endsWith('\n') && accessLog(srv).length > 0,
      { what: () => `an access log line on stdout: ${JSON.stringify(srv.stdout())}` });
    await withServer({ silent: false }, async (srv) => {
      await request(srv, { path: '/Tables' });
      await logged(srv);
      const lines = accessLog(srv);
      assert.ok(lines.some((l) => /GET/.test(l) && /200/.test(l)), `access log lines: ${lines.join('\n')}`);
    });
    await withServer({ silent: false, args: ['--jsonLog'] }, async (srv) => {
      await request(srv, { path: '/Tables' });
      await logged(srv);
      const lines = accessLog(srv);
      assert.ok(lines.length > 0, 'expected access log lines');
      for (const l of lines) assert.doesNotThrow(() => JSON.parse(l), `not JSON: ${l}`);
    });
    // An absence cannot be waited for: the server is stopped and its stdout
    // read to the end, so whatever it would have logged is there.
    const srv = await startServer({});
    try {
      await request(srv, { path: '/Tables' });
    } finally {
      await srv.stop();
    }
    await waitFor(() => srv.child.stdout.readableEnded || srv.child.stdout.destroyed, { what: "the stopped server's stdout to end" });
    assert.deepEqual(accessLog(srv), [], '--silent: no access log');
  });
});
