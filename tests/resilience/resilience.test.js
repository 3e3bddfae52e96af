'use strict';
// Drives the real binary with hostile clients (framing, limits, slow and
// endless senders, connection and descriptor exhaustion, parser bombs) and
// checks after each attack that the process is alive, that another client
// was served during the attack, and that peak memory (VmHWM) stayed flat.
// Loopback only, port 0; each server is stopped by the test that started it.
//
// The server runs with a small --maxConnections and short --keepAliveTimeout
// and --requestTimeout so that the timeouts are reached within the test's
// time.

const { describe, test, before, after, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { startServer, binaryPath, uniqueTableName } = require('../e2e/node/server');
const { request, sign } = require('../e2e/node/http');
const { waitFor } = require('../e2e/node/util');

const MAX_CONNECTIONS = 48;
const KEEP_ALIVE_TIMEOUT_S = 3;
const REQUEST_TIMEOUT_S = 3;
const MiB = 1024 * 1024;
// Peak resident memory may grow by at most this much over a case (4 MiB
// bodies and their parse trees are legitimate).
const CASE_GROWTH_LIMIT = 64 * MiB;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function procStatus(pid, field) {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) * 1024 : NaN;
}
// User + system CPU seconds of `pid`.
function cpuSeconds(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;  // utime + stime, in clock ticks (USER_HZ)
}

// GET /_health on a fresh connection; resolves to the status (or throws
// after `timeoutMs`).
function health(server, timeoutMs = 5000) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: server.host, port: server.port, path: '/_health', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`/_health did not answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

// A raw connection that records what the server sends and when it closes.
function connect(server) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(server.port, server.host);
    const conn = { sock, chunks: [], closed: false, error: null };
    conn.closedPromise = new Promise((r) => sock.on('close', () => { conn.closed = true; r(); }));
    sock.on('data', (d) => conn.chunks.push(d));
    sock.on('error', (e) => { conn.error = e; });
    sock.once('connect', () => resolve(conn));
    sock.once('error', reject);
  });
}
const text = (conn) => Buffer.concat(conn.chunks).toString('latin1');

// Resolves true iff `conn` closes within `ms`.
async function closesWithin(conn, ms) {
  return Promise.race([conn.closedPromise.then(() => true), sleep(ms).then(() => false)]);
}

// True iff `t` holds a whole response (head, and a body of Content-Length).
function complete(t) {
  const end = t.indexOf('\r\n\r\n');
  if (end < 0 || /^HTTP\/1\.1 100 /.test(t)) return false;
  const m = /\r\ncontent-length:\s*(\d+)/i.exec(t.slice(0, end));
  return t.length - end - 4 >= (m ? Number(m[1]) : 0);
}

// Sends `bytes` on a fresh connection and waits until the server closes it,
// or has sent a whole response and 200 ms passed, or `ms` passed; resolves
// to {text, closed}.
async function exchange(server, bytes, ms = 5000) {
  const conn = await connect(server);
  conn.sock.write(bytes);
  const deadline = Date.now() + ms;
  let closed = false;
  while (!closed && Date.now() < deadline) {
    if (complete(text(conn))) {
      closed = await closesWithin(conn, 200);
      break;
    }
    closed = await closesWithin(conn, 50);
  }
  conn.sock.destroy();
  return { text: text(conn), closed };
}

// Writes `piece()` as fast as the socket takes it until the server closes
// the connection or `ms` pass; resolves to {closed, sent}.
async function flood(conn, piece, ms) {
  const deadline = Date.now() + ms;
  let sent = 0;
  while (!conn.closed && !conn.error && Date.now() < deadline) {
    const chunk = piece();
    sent += chunk.length;
    if (!conn.sock.write(chunk)) {
      await Promise.race([new Promise((r) => conn.sock.once('drain', r)), conn.closedPromise, sleep(200)]);
    }
  }
  const closed = conn.closed || conn.error !== null || await closesWithin(conn, 1000);
  conn.sock.destroy();
  return { closed, sent };
}

// Sends `bytes` one byte every `intervalMs` until the server closes the
// connection or `ms` pass; resolves to the time the server took to close
// it, or Infinity.
async function trickle(conn, bytes, intervalMs, ms) {
  const start = Date.now();
  for (let i = 0; Date.now() - start < ms; i++) {
    if (conn.closed || conn.error) return Date.now() - start;
    conn.sock.write(bytes.subarray(i % bytes.length, (i % bytes.length) + 1));
    await sleep(intervalMs);  // the slowness is the attack
  }
  return conn.closed ? Date.now() - start : Infinity;
}

const CHUNKED_HEAD = (target = '/_health', method = 'POST') =>
  `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n`;

// An answer is acceptable for hostile input iff it is a 4xx (or a closed
// connection with nothing sent).
function assertRefused({ text: t, closed }, what) {
  if (t.length === 0) {
    assert.ok(closed, `${what}: neither an answer nor a closed connection`);
    return;
  }
  assert.match(t, /^HTTP\/1\.[01] 4\d\d /, `${what}: ${t.slice(0, 200)}`);
}

describe('resilience of the transport against hostile clients', () => {
  let server;
  let baseline;
  let table;

  before(async () => {
    server = await startServer({
      args: ['--maxConnections', String(MAX_CONNECTIONS), '--keepAliveTimeout', String(KEEP_ALIVE_TIMEOUT_S),
        '--requestTimeout', String(REQUEST_TIMEOUT_S)],
    });
    table = uniqueTableName('res');
    const res = await request(server, { method: 'POST', path: '/Tables', body: { TableName: table } });
    assert.equal(res.status, 201, res.body);
    for (let i = 0; i < 20; i++) assert.equal(await health(server), 200);
    baseline = procStatus(server.child.pid, 'VmHWM');
  });
  after(async () => {
    const end = await server.stop();
    assert.equal(end.signal, null, `server ended by ${end.signal}\n${server.stderr()}`);
  });

  // Runs `attack` while another client asks for /_health, then checks that
  // the server is alive and peak memory grew by less than `limit`.
  async function survives(attack, limit = CASE_GROWTH_LIMIT) {
    const before = procStatus(server.child.pid, 'VmHWM');
    const other = (async () => {
      await sleep(100);  // so that it is sent while the attack runs, not before
      return health(server);
    })();
    const result = await attack();
    assert.equal(await other, 200, 'another client was not served during the attack');
    assert.equal(server.exited(), null, `server died: ${server.stderr()}`);
    assert.equal(await health(server), 200);
    const signed = await request(server, { path: `/${table}()?$top=1` });
    assert.equal(signed.status, 200, signed.body);
    const grown = procStatus(server.child.pid, 'VmHWM') - before;
    assert.ok(grown < limit, `peak RSS grew by ${(grown / MiB).toFixed(1)} MiB`);
    return result;
  }

  test('a trailer field over 64 KiB (to /_health and a table) is refused, not a crash', async () => {
    await survives(async () => {
      for (const target of ['/_health', `/devstoreaccount1/${table}`]) {
        for (const size of [70 * 1024, 60 * 1024, 200 * 1024]) {
          const r = await exchange(server, `${CHUNKED_HEAD(target)}1\r\na\r\n0\r\nX-Long: ${'v'.repeat(size)}\r\n\r\n`);
          assertRefused(r, `trailer of ${size}`);
          assert.ok(r.closed, `trailer of ${size}: connection left open`);
        }
      }
    });
  });

  test('an endless trailer ends with a closed connection and flat memory', async () => {
    const r = await survives(async () => {
      const conn = await connect(server);
      conn.sock.write(`${CHUNKED_HEAD()}1\r\na\r\n0\r\n`);
      const line = Buffer.from(`X-A: ${'b'.repeat(1000)}\r\n`);
      return flood(conn, () => line, 8000);
    }, 16 * MiB);
    assert.ok(r.closed, `not closed after ${r.sent} bytes`);
    assert.ok(r.sent < 64 * MiB, `${r.sent} bytes accepted`);
  });

  test('endless chunk extensions, and too many of them, end the connection', async () => {
    const r = await survives(async () => {
      const conn = await connect(server);
      conn.sock.write(`${CHUNKED_HEAD()}1;x=`);
      const piece = Buffer.alloc(16 * 1024, 'e');
      return flood(conn, () => piece, 8000);
    }, 16 * MiB);
    assert.ok(r.closed, `not closed after ${r.sent} bytes`);
    const many = `${CHUNKED_HEAD()}${`1;n=${'v'.repeat(200)}\r\nx\r\n`.repeat(100)}0\r\n\r\n`;
    assertRefused(await exchange(server, many), 'many chunk extensions');
  });

  test('an endless chunk-size line and bad chunk sizes are refused', async () => {
    await survives(async () => {
      const conn = await connect(server);
      conn.sock.write(CHUNKED_HEAD());
      const digits = Buffer.alloc(16 * 1024, '0');
      const r = await flood(conn, () => digits, 8000);
      assert.ok(r.closed, `zeros: not closed after ${r.sent} bytes`);
      for (const size of ['zz', '-1', 'ffffffffffffffffffff', '1 1', '0x10', '', '4000001']) {
        const ex = await exchange(server, `${CHUNKED_HEAD(`/devstoreaccount1/${table}`)}${size}\r\nabc\r\n0\r\n\r\n`);
        assertRefused(ex, `chunk size '${size}'`);
        // 413 keeps reading (and dropping) the body a while; the rest close.
        if (!/^HTTP\/1\.1 413 /.test(ex.text)) assert.ok(ex.closed, `chunk size '${size}': connection left open`);
      }
    });
  });

  test('slowloris headers and a slow body are closed at the request timeout', async () => {
    await survives(async () => {
      // The request line may take up to the keep-alive timeout, the rest the
      // request timeout.
      const limitMs = (KEEP_ALIVE_TIMEOUT_S + REQUEST_TIMEOUT_S + 2) * 1000;
      const [headers, body] = await Promise.all([
        connect(server).then((c) => trickle(c, Buffer.from('GET /_health HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'), 100, limitMs + 2000)),
        connect(server).then((c) => {
          c.sock.write(`PUT /devstoreaccount1/${table}(PartitionKey='a',RowKey='b') HTTP/1.1\r\nContent-Length: 100000\r\n\r\n`);
          return trickle(c, Buffer.from('{"a":1}'), 100, limitMs + 2000);
        }),
      ]);
      assert.ok(headers <= limitMs, `slow headers held the connection ${headers} ms`);
      assert.ok(body <= limitMs, `slow body held the connection ${body} ms`);
    });
  });

  test('an idle keep-alive connection is closed at the keep-alive timeout', async () => {
    const conn = await connect(server);
    conn.sock.write('GET /_health HTTP/1.1\r\nHost: h\r\n\r\n');
    const start = Date.now();
    assert.ok(await closesWithin(conn, (KEEP_ALIVE_TIMEOUT_S + 3) * 1000), 'idle connection left open');
    assert.ok(Date.now() - start >= (KEEP_ALIVE_TIMEOUT_S - 1) * 1000, 'closed before the keep-alive timeout');
    assert.match(text(conn), /^HTTP\/1\.1 200 /);
  });

  test('a request that begins late still gets the whole request timeout', async () => {
    const conn = await connect(server);
    // Deliberately idle until just before the keep-alive timeout, then a
    // request whose head straddles it: the connection must not be closed
    // at the keep-alive timeout once the request has begun.
    await sleep((KEEP_ALIVE_TIMEOUT_S - 1) * 1000);
    conn.sock.write('GET /_health HTTP/1.1\r\n');
    await sleep(1500);
    conn.sock.write('Host: h\r\n\r\n');
    await waitFor(() => complete(text(conn)) || conn.closed, { what: 'an answer or a close' });
    assert.match(text(conn), /^HTTP\/1\.1 200 /);
    conn.sock.destroy();
  });

  test('a huge request line, huge headers and one huge header get 414 / 431', async () => {
    await survives(async () => {
      const line = await exchange(server, `GET /_health?${'a'.repeat(200 * 1024)} HTTP/1.1\r\n\r\n`);
      assert.match(line.text, /^HTTP\/1\.1 414 /);
      const many = await exchange(server, `GET /_health HTTP/1.1\r\n${`X-H: ${'v'.repeat(1000)}\r\n`.repeat(1000)}\r\n`);
      assert.match(many.text, /^HTTP\/1\.1 431 /);
      const one = await exchange(server, `GET /_health HTTP/1.1\r\nX-One: ${'v'.repeat(70 * 1024)}\r\n\r\n`);
      assert.match(one.text, /^HTTP\/1\.1 431 /);
      // Many tiny fields within the limit: answered, at linear cost.
      const tiny = await exchange(server, `GET /_health HTTP/1.1\r\n${'a:\r\n'.repeat(12000)}\r\n`);
      assert.match(tiny.text, /^HTTP\/1\.1 200 /);
      const auth = await exchange(server, `GET /devstoreaccount1/Tables HTTP/1.1\r\nAuthorization: SharedKey devstoreaccount1:${'A'.repeat(60 * 1024)}\r\n\r\n`);
      assertRefused(auth, 'huge Authorization');
    });
  });

  test('an endless header section is refused at the header limit', async () => {
    const r = await survives(async () => {
      const conn = await connect(server);
      conn.sock.write('GET /_health HTTP/1.1\r\n');
      const line = Buffer.from(`X-A: ${'b'.repeat(100)}\r\n`);
      return flood(conn, () => line, 8000);
    }, 16 * MiB);
    assert.ok(r.closed, `not closed after ${r.sent} bytes`);
  });

  test('connections past --maxConnections: the longest-waiting ones make room', async () => {
    await survives(async () => {
      const conns = [];
      for (let i = 0; i < MAX_CONNECTIONS * 2; i++) conns.push(await connect(server));
      // The newest connections are served; the oldest idle ones were closed.
      assert.equal(await health(server), 200);
      const closedCount = () => conns.filter((c) => c.closed).length;
      await waitFor(() => closedCount() >= MAX_CONNECTIONS - 2,
        { what: () => `${MAX_CONNECTIONS - 2} connections closed (${closedCount()} of ${conns.length} so far)` });
      const closed = conns.filter((c) => c.closed).length;
      assert.ok(closed >= MAX_CONNECTIONS - 2, `only ${closed} of ${conns.length} closed`);
      const last = conns[conns.length - 1];
      last.sock.write('GET /_health HTTP/1.1\r\nHost: h\r\n\r\n');
      await waitFor(() => complete(text(last)) || last.closed, { what: 'an answer or a close' });
      assert.match(text(last), /^HTTP\/1\.1 200 /);
      for (const c of conns) c.sock.destroy();
    });
  });

  test('a pipelining flood is answered in order with bounded memory', async () => {
    await survives(async () => {
      const n = 20000;
      const conn = await connect(server);
      const one = 'GET /_health HTTP/1.1\r\nHost: h\r\n\r\n';
      conn.sock.write(one.repeat(n));
      // Read nothing for a while (deliberately: the server must stop
      // reading, not buffer).
      conn.sock.pause();
      await sleep(1000);
      conn.sock.resume();
      const answered = () => (text(conn).match(/HTTP\/1\.1 200 /g) || []).length;
      await waitFor(() => answered() >= n || conn.closed,
        { timeoutMs: 20000, intervalMs: 100, what: () => `${n} answers (${answered()} so far)` });
      assert.equal(answered(), n);
      conn.sock.destroy();
    });
  });

  test('absurd, conflicting and oversized Content-Length', async () => {
    await survives(async () => {
      const target = `/devstoreaccount1/${table}`;
      for (const cl of ['99999999999999999999999', '-1', '1e9', '1, 2', '0x10']) {
        const r = await exchange(server, `POST ${target} HTTP/1.1\r\nContent-Length: ${cl}\r\n\r\n{}`);
        assertRefused(r, `Content-Length ${cl}`);
      }
      const two = await exchange(server, `POST ${target} HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x`);
      assertRefused(two, 'two Content-Length');
      const smuggle = await exchange(server,
        `POST ${target} HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /_health HTTP/1.1\r\n\r\n`);
      assertRefused(smuggle, 'Content-Length with chunked');
      const big = await exchange(server, `POST ${target} HTTP/1.1\r\nContent-Length: ${5 * MiB}\r\nContent-Type: application/json\r\n\r\n`, 15000);
      assert.match(big.text, /^HTTP\/1\.1 413 /);
      assert.match(big.text, /RequestBodyTooLarge/);
    });
  });

  test('Expect: 100-continue: 100 Continue at once when signed, the 403 at once when not, 413 when too large', async () => {
    await survives(async () => {
      const body = '{"PartitionKey":"e","RowKey":"1"}';
      const date = new Date().toUTCString();
      const target = `/devstoreaccount1/${table}`;
      const head = `POST ${target} HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nAccept: application/json\r\n` +
        `x-ms-version: 2019-02-02\r\nx-ms-date: ${date}\r\nPrefer: return-no-content\r\n` +
        `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n`;
      const conn = await connect(server);
      conn.sock.write(`${head}Authorization: ${sign(server, { method: 'POST', target, contentType: 'application/json', date })}\r\n\r\n`);
      await waitFor(() => text(conn).includes('\r\n\r\n') || conn.closed, { what: 'an interim answer or a close' });
      assert.match(text(conn), /^HTTP\/1\.1 100 Continue\r\n\r\n$/);
      conn.sock.write(body);
      await waitFor(() => /\r\n\r\nHTTP\/1\.1 [^]*\r\n\r\n/.test(text(conn)) || conn.closed, { what: 'the final answer or a close' });
      assert.match(text(conn), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 204 /);
      conn.sock.destroy();

      // Unsigned: refused from the head, before the client sends its body;
      // the connection closes, since the client may or may not send it now.
      const unsigned = await connect(server);
      unsigned.sock.write(`${head}\r\n`);
      assert.ok(await closesWithin(unsigned, 2000), 'not closed after 403');
      assert.match(text(unsigned), /^HTTP\/1\.1 403 /);
      assert.doesNotMatch(text(unsigned), /100 Continue/);

      const big = await connect(server);
      big.sock.write(`PUT /devstoreaccount1/${table}(PartitionKey='a',RowKey='b') HTTP/1.1\r\nHost: h\r\n` +
        `Content-Length: ${10 * MiB}\r\nExpect: 100-continue\r\n\r\n`);
      assert.ok(await closesWithin(big, 2000), 'not closed after 413');
      assert.match(text(big), /^HTTP\/1\.1 413 /);
    });
  });

  test('unsigned bodies are refused from the head and never held: 40 connections each sending 4 MiB', async () => {
    await survives(async () => {
      const size = 4 * MiB;
      const conns = [];
      for (let i = 0; i < 40; i++) {
        const conn = await connect(server);
        conn.sock.write(`POST /devstoreaccount1/${table} HTTP/1.1\r\nHost: h\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`);
        conns.push(conn);
      }
      // Each is refused before it sends its body...
      for (const conn of conns) {
        await waitFor(() => complete(text(conn)) || conn.closed, { what: 'an answer or a close' });
        assert.match(text(conn), /^HTTP\/1\.1 403 /);
      }
      // ...which then costs the server no memory (all but its last byte).
      const piece = Buffer.alloc(64 * 1024, 'x');
      await Promise.all(conns.map(async (conn) => {
        for (let sent = 0; sent < size - 1 && !conn.closed;) {
          const n = Math.min(piece.length, size - 1 - sent);
          if (!conn.sock.write(piece.subarray(0, n))) {
            await Promise.race([new Promise((r) => conn.sock.once('drain', r)), conn.closedPromise]);
          }
          sent += n;
        }
      }));
      for (const conn of conns) conn.sock.destroy();
    }, 32 * MiB);
  });

  test('malformed requests: folding, NUL bytes, bad encoding, HTTP/1.0, garbage', async () => {
    await survives(async () => {
      const cases = [
        'GET /_health HTTP/1.1\r\nX-Fold: a\r\n  b\r\n\r\n',
        'GET /_health HTTP/1.1\r\nX-Nul: a\0b\r\n\r\n',
        'GET /_he\0alth HTTP/1.1\r\n\r\n',
        'GET /devstoreaccount1/Tables%zz%00%ff HTTP/1.1\r\n\r\n',
        `GET /devstoreaccount1/${table}()?$filter=${'%'.repeat(1000)} HTTP/1.1\r\n\r\n`,
        'GET http://evil.example/devstoreaccount1/Tables HTTP/1.1\r\n\r\n',
        'GET * HTTP/1.1\r\n\r\n',
        'GET /_health HTTP/9.9\r\n\r\n',
        'GET /_health\r\n\r\n',
        'GET /_health HTTP/1.1\nHost: lf-only\n\n',
        'BREW /_health HTTP/1.1\r\n\r\n',
        `${'A'.repeat(10000)} /_health HTTP/1.1\r\n\r\n`,
        ': empty-name\r\n\r\n',
        'GET /_health HTTP/1.1\r\n: novalue\r\n\r\n',
        '\r\n\r\n\r\n\r\n',
        Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]).toString('latin1'),
        `POST /devstoreaccount1/$batch HTTP/1.1\r\nContent-Type: multipart/mixed; boundary=${'b'.repeat(5000)}\r\nContent-Length: 4\r\n\r\n--bb`,
        `GET /devstoreaccount1/${table}()?${'a=1&'.repeat(15000)} HTTP/1.1\r\n\r\n`,
      ];
      for (const c of cases) {
        const r = await exchange(server, Buffer.from(c, 'latin1'), 3000);
        if (r.text.length > 0) assert.match(r.text, /^HTTP\/1\.[01] [2-5]\d\d /, `${JSON.stringify(c.slice(0, 60))}: ${r.text.slice(0, 200)}`);
        assert.doesNotMatch(r.text, /^HTTP\/1\.[01] 5\d\d /, JSON.stringify(c.slice(0, 60)));
      }
      // HTTP/1.0 without keep-alive: answered, then closed.
      const old = await exchange(server, 'GET /_health HTTP/1.0\r\n\r\n');
      assert.match(old.text, /^HTTP\/1\.0 200 /);
      assert.ok(old.closed);
    });
  });

});

// Parser bombs: the parsers' depth caps and linear option parsing make these
// clean 4xx answers (the server must not die of stack overflow or stall).
// Each runs against a server of its own, so that one failure does not hide
// the others.
describe('resilience against parser bombs', () => {
  let server;
  let table;
  let baseline;
  beforeEach(async () => {
    server = await startServer();
    table = uniqueTableName('bomb');
    const res = await request(server, { method: 'POST', path: '/Tables', body: { TableName: table } });
    assert.equal(res.status, 201, res.body);
    baseline = procStatus(server.child.pid, 'VmHWM');
  });
  afterEach(async () => {
    const end = await server.stop();
    assert.equal(end.signal, null, `server ended by ${end.signal}`);
  });
  async function survives(attack) {
    await attack();
    assert.equal(server.exited(), null, 'server died');
    assert.equal(await health(server), 200);
    const grown = procStatus(server.child.pid, 'VmHWM') - baseline;
    assert.ok(grown < CASE_GROWTH_LIMIT, `peak RSS grew by ${(grown / MiB).toFixed(1)} MiB`);
  }

  {
    const deep = (open, close, n) => open.repeat(n) + close.repeat(n);
    const xmlHeaders = { 'Content-Type': 'application/xml' };
    const timed = async (what, fn) => {
      const start = Date.now();
      const res = await fn();
      assert.ok(Date.now() - start < 10000, `${what} took ${Date.now() - start} ms`);
      assert.ok(res.status >= 400 && res.status < 500, `${what}: ${res.status} ${res.body.slice(0, 200)}`);
      return res;
    };

    test('deeply nested XML to Set Table ACL', async () => {
      await survives(() => timed('ACL', () => request(server, {
        method: 'PUT', path: `/${table}?comp=acl`, headers: xmlHeaders,
        body: `<?xml version="1.0"?><SignedIdentifiers>${deep('<a>', '</a>', 200000)}</SignedIdentifiers>`,
      })));
    });
    test('deeply nested XML to Set Service Properties', async () => {
      await survives(() => timed('properties', () => request(server, {
        method: 'PUT', path: '/?restype=service&comp=properties', headers: xmlHeaders,
        body: `<?xml version="1.0"?><StorageServiceProperties>${deep('<Cors>', '</Cors>', 200000)}</StorageServiceProperties>`,
      })));
    });
    test('deeply nested JSON entity', async () => {
      await survives(() => timed('JSON', () => request(server, {
        method: 'POST', path: `/${table}`,
        body: `{"PartitionKey":"p","RowKey":"r","X":${deep('[', ']', 500000)}}`,
      })));
    });
    test('deeply nested $filter parentheses', async () => {
      await survives(() => timed('$filter', () => request(server, {
        path: `/${table}()?$filter=${encodeURIComponent(deep('(', ')', 20000).replace('()', "(PartitionKey eq 'a')"))}`,
      })));
    });
    test('$select with 100k names (in a batch, as a URL cannot hold them)', async () => {
      await survives(async () => {
        const names = Array.from({ length: 100000 }, (_, i) => `p${i}`).join(',');
        await timed('$select URL', () => request(server, { path: `/${table}()?$select=${names.slice(0, 60000)}` }));
        const b = 'batch_resilience';
        const body = [`--${b}`, 'Content-Type: application/http', 'Content-Transfer-Encoding: binary', '',
          `GET ${server.endpoint}/${table}(PartitionKey='a',RowKey='b')?$select=${names} HTTP/1.1`,
          'Accept: application/json;odata=nometadata', '', '', `--${b}--`, ''].join('\r\n');
        const start = Date.now();
        const res = await request(server, { method: 'POST', path: '/$batch', body, headers: { 'Content-Type': `multipart/mixed; boundary=${b}` } });
        assert.ok(Date.now() - start < 10000, `batch took ${Date.now() - start} ms`);
        assert.ok(res.status === 202 || (res.status >= 400 && res.status < 500), `${res.status}`);
        if (res.status === 202) assert.match(res.body, /HTTP\/1\.1 4\d\d/);
      });
    });
  }
});

describe('resilience when file descriptors run out', () => {
  let server;
  let wrapper;
  before(async () => {
    // The binary under a low descriptor limit, through a wrapper that execs
    // it (the same process, so /proc/PID is the server's).
    wrapper = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-res-')), 'low-nofile.sh');
    fs.writeFileSync(wrapper, `#!/bin/sh\nulimit -n 64 || exit 1\nexec "${binaryPath()}" "$@"\n`, { mode: 0o755 });
    const saved = process.env.CERULEAN_BIN;
    process.env.CERULEAN_BIN = wrapper;
    try {
      server = await startServer({ args: ['--requestTimeout', '30'] });
    } finally {
      if (saved === undefined) delete process.env.CERULEAN_BIN;
      else process.env.CERULEAN_BIN = saved;
    }
  });
  after(async () => {
    if (server) await server.stop();
    fs.rmSync(path.dirname(wrapper), { recursive: true, force: true });
  });

  test('EMFILE pauses accepting without a busy loop; service recovers', async () => {
    const pid = server.child.pid;
    assert.equal(await health(server), 200);
    const descriptors = () => fs.readdirSync(`/proc/${pid}/fd`).length;
    const idle = descriptors();
    const conns = [];
    for (let i = 0; i < 150; i++) conns.push(await connect(server));
    const cpu0 = cpuSeconds(pid);
    const t0 = Date.now();
    await sleep(2000);  // the window the CPU share is measured over
    const cpuShare = (cpuSeconds(pid) - cpu0) / ((Date.now() - t0) / 1000);
    assert.ok(cpuShare < 0.5, `server used ${(cpuShare * 100).toFixed(0)} % of a CPU while out of descriptors`);
    // Another client is still served (waiting connections make room).
    assert.equal(await health(server, 10000), 200);
    const logLines = (server.stderr().match(/pausing accept/g) || []).length;
    assert.ok(logLines >= 1 && logLines <= 5, `${logLines} accept log lines`);
    for (const c of conns) c.sock.destroy();
    // Until the server has closed its ends (descriptors back to the idle count).
    await waitFor(() => descriptors() <= idle, { what: () => `the server's descriptors back to ${idle} (${descriptors()} now)` });
    for (let i = 0; i < 10; i++) assert.equal(await health(server), 200);
    assert.equal(server.exited(), null);
  });
});
