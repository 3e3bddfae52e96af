'use strict';
// The table explorer's address and transport (the page itself runs in
// tests/e2e/browser/explorer.test.js): the start-up line that names its URL,
// and HEAD answered with GET's headers and no body.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer } = require('./server');
const { request, rawExchange } = require('./http');
const { waitFor } = require('./util');

// The server's stdout once it holds a line matching `re` (the lines are
// printed together, but may arrive in more than one chunk).
async function stdoutMatching(srv, re) {
  await waitFor(() => re.test(srv.stdout()), { what: () => `a line matching ${re} on stdout: ${JSON.stringify(srv.stdout())}` });
  return srv.stdout();
}

// The headers a GET and a HEAD of the same asset may differ in.
const PER_RESPONSE = new Set(['date', 'x-ms-request-id']);

function comparable(headers) {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !PER_RESPONSE.has(k)));
}

describe('explorer', () => {
  let server;
  before(async () => { server = await startServer(); });
  after(async () => { await server.stop(); });

  // The line starts as the listening line does, so that whatever sets the
  // start-up lines apart from the access log (--jsonLog) keeps doing so.
  test('the start-up output names the explorer URL, after the unchanged listening line', async () => {
    const out = await stdoutMatching(server, /^Cerulean Table service explorer is available at /m);
    const lines = out.split('\n');
    const listening = lines.findIndex((l) => /^Cerulean Table service is successfully listening at http:\/\/127\.0\.0\.1:\d+$/.test(l));
    assert.ok(listening >= 0, out);
    assert.equal(lines[listening + 1], `Cerulean Table service explorer is available at http://127.0.0.1:${server.port}/_explorer`);
    const res = await request(server, { rawTarget: new URL(lines[listening + 1].split(' at ')[1]).pathname, auth: 'none' });
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'], /^text\/html/);
  });

  for (const target of ['/_explorer', '/_explorer/app.js', '/_explorer/style.css']) {
    test(`HEAD ${target}: GET's headers, Content-Length included, and no body`, async () => {
      const get = await request(server, { rawTarget: target, auth: 'none' });
      assert.equal(get.status, 200);
      assert.ok(get.buffer.length > 0);
      assert.equal(Number(get.headers['content-length']), get.buffer.length);
      const head = await request(server, { method: 'HEAD', rawTarget: target, auth: 'none' });
      assert.equal(head.status, 200);
      assert.deepEqual(comparable(head.headers), comparable(get.headers));
      assert.equal(head.buffer.length, 0);
    });
  }

  test('HEAD then GET on one connection: nothing is sent after the HEAD response\'s headers', async () => {
    const host = `Host: ${server.host}:${server.port}`;
    const text = await rawExchange(server,
      `HEAD /_explorer/app.js HTTP/1.1\r\n${host}\r\n\r\n` +
      `GET /_explorer/style.css HTTP/1.1\r\n${host}\r\nConnection: close\r\n\r\n`,
      { untilClose: true });
    const second = text.indexOf('HTTP/1.1 ', 1);
    assert.ok(second > 0, text.slice(0, 500));
    const headResponse = text.slice(0, second);
    assert.match(headResponse, /^HTTP\/1\.1 200 /);
    assert.match(headResponse, /\r\ncontent-length: [1-9]\d*\r\n/i);
    assert.ok(headResponse.endsWith('\r\n\r\n'), 'the HEAD response ends with its headers');
    const getResponse = text.slice(second);
    assert.match(getResponse, /^HTTP\/1\.1 200 /);
    const length = Number(/\r\ncontent-length: (\d+)\r\n/i.exec(getResponse)[1]);
    const bodyStart = getResponse.indexOf('\r\n\r\n') + 4;
    assert.equal(Buffer.byteLength(getResponse.slice(bodyStart)), length);
  });

  test('--disableExplorer: no explorer line, and the listening line as ever', async () => {
    const off = await startServer({ args: ['--disableExplorer'] });
    try {
      const res = await request(off, { rawTarget: '/_explorer', auth: 'none' });
      assert.equal(res.status, 400);
      assert.match(off.stdout(), /^Cerulean Table service is successfully listening at http:\/\/127\.0\.0\.1:\d+$/m);
      assert.doesNotMatch(off.stdout(), /explorer/i);
    } finally {
      await off.stop();
    }
  });
});
