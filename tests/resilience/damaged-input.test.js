'use strict';
// Damaged and hostile input that does not come over the wire: a database
// file with zeroed pages (the server must say so on /_health, log it once
// and refuse writes into it; `cerulean check` and --startupCheck must find
// it), and fixture files (`cerulean import`, --seed) nested absurdly deep or
// naming tables Azure refuses (a clear error naming the line, never a crash
// or a table created). Loopback only, port 0; each server is stopped by the
// test that started it.

const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { startServer, binaryPath, uniqueTableName, tempDir } = require('../e2e/node/server');
const { request } = require('../e2e/node/http');

// Runs the binary to its end: {status, signal, stdout, stderr}.
function run(args, input) {
  const r = spawnSync(binaryPath(), args, { input, encoding: 'utf8', timeout: 120000, maxBuffer: 64 << 20 });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

const PAGE = 4096;

describe('a database file with damaged pages', () => {
  test('health turns 503 at the first failed request, the file is logged once, writes are refused', async () => {
    const dir = tempDir('cerulean-damaged-');
    const file = path.join(dir, 'cerulean.sqlite');
    const table = uniqueTableName('damaged');
    try {
      let server = await startServer({ location: dir });
      try {
        assert.equal((await request(server, { method: 'POST', path: '/Tables', body: { TableName: table } })).status, 201);
        const pad = 'x'.repeat(2000);
        for (let i = 0; i < 1500; i++) {
          const r = await request(server, { method: 'POST', path: `/${table}`, body: { PartitionKey: `p${i % 7}`, RowKey: `r${i}`, pad } });
          assert.equal(r.status, 201, r.body);
        }
      } finally {
        await server.stop();
      }
      assert.equal(run(['check', '--location', dir]).status, 0, 'the file is sound before it is damaged');

      // Zero a quarter of the pages: every other one of the second half (the
      // catalog's pages, at the start, stay readable).
      const fd = fs.openSync(file, 'r+');
      const pages = Math.floor(fs.fstatSync(fd).size / PAGE);
      assert.ok(pages > 400, `${pages} pages`);
      for (let p = Math.floor(pages / 2); p < pages; p += 2) fs.writeSync(fd, Buffer.alloc(PAGE), 0, PAGE, p * PAGE);
      fs.closeSync(fd);

      // Offline: the check lists problems and fails; --startupCheck refuses to serve.
      const check = run(['check', '--location', dir]);
      assert.notEqual(check.status, 0, check.stdout + check.stderr);
      assert.equal(check.signal, null);
      assert.match(check.stdout, /cerulean\.sqlite: .+/);
      assert.doesNotMatch(check.stdout, /: ok$/m);
      const refused = run(['--location', dir, '--tableHost', '127.0.0.1', '--tablePort', '0', '--silent', '--startupCheck']);
      assert.notEqual(refused.status, 0, refused.stderr);
      assert.match(refused.stderr, /quick_check/);

      // Served anyway (no --startupCheck): the first request that meets the
      // damage turns health to 503.
      server = await startServer({ location: dir });
      try {
        assert.equal((await request(server, { rawTarget: '/_health', auth: 'none' })).status, 200);
        const query = await request(server, { path: `/${table}()` });
        assert.equal(query.status, 500, query.body);
        const health = await request(server, { rawTarget: '/_health', auth: 'none' });
        assert.equal(health.status, 503, health.body);
        assert.match(JSON.parse(health.body).reason, /damaged/);
        // Writes are refused as Azure refuses on an internal failure.
        for (let i = 0; i < 3; i++) {
          const w = await request(server, { method: 'POST', path: `/${table}`, body: { PartitionKey: 'new', RowKey: `${i}` } });
          assert.equal(w.status, 500, w.body);
          assert.equal(w.headers['x-ms-error-code'], 'InternalError');
        }
        const created = await request(server, { method: 'POST', path: '/Tables', body: { TableName: uniqueTableName('after') } });
        assert.equal(created.status, 500, created.body);
        assert.equal((await request(server, { path: `/${table}()` })).status, 500);
        const lines = server.stderr().split('\n').filter((l) => l.includes('is damaged'));
        assert.equal(lines.length, 1, server.stderr());
        assert.ok(lines[0].includes(file), lines[0]);
      } finally {
        await server.stop();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('hostile fixture files', () => {
  const deep = (n) => `{"table":"deep","entity":{"PartitionKey":"p","RowKey":"r","x":${'['.repeat(n)}${']'.repeat(n)}}}\n`;

  test('a line nested 100,000 deep is refused by import with the line, not a crash', () => {
    const dir = tempDir('cerulean-fixtures-');
    try {
      for (const text of [deep(100000), `{"table":"deep"}\n${'['.repeat(100000)}${']'.repeat(100000)}\n`]) {
        const r = run(['import', '--location', dir], text);
        assert.equal(r.signal, null, `killed by ${r.signal}`);
        assert.equal(r.status, 1, r.stderr);
        assert.match(r.stderr, /line \d+: nested deeper than/);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the same file under --seed stops the server with the message, not a crash', () => {
    const dir = tempDir('cerulean-fixtures-');
    try {
      fs.mkdirSync(path.join(dir, 'seed'));
      fs.writeFileSync(path.join(dir, 'seed', 'deep.jsonl'), deep(100000));
      const r = run(['--inMemoryPersistence', '--tableHost', '127.0.0.1', '--tablePort', '0', '--silent', '--seed', path.join(dir, 'seed')]);
      assert.equal(r.signal, null, `killed by ${r.signal}`);
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, /deep\.jsonl: .*line 1: nested deeper than/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('table names Azure refuses are refused by import, naming the line, and nothing is created', () => {
    const dir = tempDir('cerulean-fixtures-');
    try {
      for (const name of ['_metrics', 'a b', 'ab', '1abc', 'Tables', 'x'.repeat(300), '']) {
        const text = `{"table":"goodtable","entity":{"PartitionKey":"p","RowKey":"r"}}\n` +
          `${JSON.stringify({ table: name, entity: { PartitionKey: 'p', RowKey: 'r' } })}\n`;
        const r = run(['import', '--location', dir], text);
        assert.equal(r.status, 1, `${JSON.stringify(name)}: ${r.stderr}`);
        assert.match(r.stderr, /line 2: table name/, r.stderr);
        const exported = run(['export', '--location', dir]);
        assert.equal(exported.status, 0, exported.stderr);
        for (const line of exported.stdout.split('\n').filter(Boolean)) {
          assert.equal(JSON.parse(line).table, 'goodtable', line);
        }
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
