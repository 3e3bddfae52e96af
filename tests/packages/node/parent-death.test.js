'use strict';
// A test process that dies without stopping its servers (SIGKILL: no exit handler runs) takes
// them along: start() gives each server a pipe as its stdin and --exitWithParent, and the server
// stops when that pipe closes. tests/packages/node.sh runs this file beside cerulean-tables.test.js.

const assert = require('node:assert/strict');
const { execFileSync, spawn } = require('node:child_process');
const readline = require('node:readline');
const { test } = require('node:test');
const cerulean = require('cerulean-tables');

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code !== 'ESRCH';
  }
}

// Resolves once `pid` is gone, polled every 20 ms; rejects after `ms`. (Its own
// poll: this file runs in a scratch project, without tests/e2e/node/util.js.)
async function gone(pid, ms) {
  const deadline = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} still runs ${ms} ms later`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('the server ends when its test process is killed with SIGKILL', async () => {
  // The "test process": starts a server, reports it, and waits to be killed.
  const parent = spawn(process.execPath, ['-e', `
    require('cerulean-tables').start({ storage: 'temporaryDirectory' }).then((s) => {
      console.log(JSON.stringify({ pid: s.pid, port: s.port }));
      setInterval(() => {}, 1000);
    }, (e) => { console.error(e); process.exit(1); });
  `], { cwd: __dirname, stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise((resolve, reject) => {
    readline.createInterface({ input: parent.stdout }).once('line', resolve);
    parent.once('exit', (code) => reject(new Error(`the parent exited (${code}) before starting a server`)));
  });
  const { pid, port } = JSON.parse(line);
  assert.ok(alive(pid));
  // The image's health check, against this server.
  execFileSync(cerulean.binaryPath(), ['health', '--tablePort', String(port)]);

  parent.kill('SIGKILL');
  await new Promise((resolve) => parent.once('exit', resolve));
  await gone(pid, 10000);
  assert.throws(() => execFileSync(cerulean.binaryPath(), ['health', '--tablePort', String(port)], { stdio: 'pipe' }),
    (e) => e.status === 1 && /cerulean health: 127\.0\.0\.1:\d+: connect/.test(e.stderr.toString()));
});
