#!/usr/bin/env node
'use strict';
// Runs the browser suites (every *.test.js here, or the files given) with
// node:test in headless Chromium, and ends with "N passed, N failed" like the
// other runners. Exits non-zero when a test failed.
//
// Needs Debian's chromium (/usr/bin/chromium, or $CHROMIUM_BIN) and
// playwright-core (npm ci here). When chromium is missing the runner installs
// it with apt-get if it runs as root; only if that is impossible does it skip,
// printing why and "0 passed, 0 failed".
//
//   node tests/e2e/browser/run.js
//   CERULEAN_BIN=/path/to/cerulean node tests/e2e/browser/run.js

const { spawnSync } = require('node:child_process');
const { runNodeTests } = require('../lib/run-node-tests');
const fs = require('node:fs');
const path = require('node:path');

const here = __dirname;
const chromiumBin = process.env.CHROMIUM_BIN || '/usr/bin/chromium';

function skip(reason) {
  console.log(`browser suite skipped: ${reason}`);
  console.log('0 passed, 0 failed');
  process.exit(0);
}

function chromiumWorks() {
  if (!fs.existsSync(chromiumBin)) return false;
  const r = spawnSync(chromiumBin, ['--version'], { encoding: 'utf8', timeout: 30000 });
  return r.status === 0;
}

if (!chromiumWorks()) {
  if (process.env.CHROMIUM_BIN) skip(`CHROMIUM_BIN=${chromiumBin} does not run`);
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).status === 0;
  if (!isRoot || !hasApt) skip(`${chromiumBin} is missing and cannot be installed here (${isRoot ? 'no apt-get' : 'not root'})`);
  console.error('browser suite: installing chromium with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium'], { stdio: 'inherit', env });
  if (!chromiumWorks()) skip('apt-get could not install a working chromium');
}

if (!fs.existsSync(path.join(here, 'node_modules', 'playwright-core'))) {
  console.error('browser suite: npm ci (playwright-core)');
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: here, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error('npm ci failed in tests/e2e/browser');
    console.log('0 passed, 1 failed');
    process.exit(1);
  }
}

runNodeTests(here, process.argv.slice(2), { ...process.env, CHROMIUM_BIN: chromiumBin });
