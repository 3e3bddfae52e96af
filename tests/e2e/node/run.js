#!/usr/bin/env node
'use strict';
// Runs the Node end-to-end suites (every *.test.js here, or the files given as
// arguments) with node:test, showing the spec reporter on stdout, and ends
// with the line "N passed, N failed" taken from the TAP summary. Exits
// non-zero when a test failed or was cancelled.
//
//   node tests/e2e/node/run.js                       # all files
//   node tests/e2e/node/run.js raw-http.test.js      # one file
//   CERULEAN_BIN=/path/to/cerulean node tests/e2e/node/run.js

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const here = __dirname;
if (!fs.existsSync(path.join(here, 'node_modules'))) {
  console.error('tests/e2e/node/node_modules is missing: run `bash scripts/setup.sh` (or npm ci in tests/e2e/node)');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

let files = process.argv.slice(2).map((f) => path.resolve(process.cwd(), fs.existsSync(f) ? f : path.join(here, f)));
if (files.length === 0) {
  files = fs.readdirSync(here).filter((f) => f.endsWith('.test.js')).sort().map((f) => path.join(here, f));
}

const tapFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-node-e2e-')), 'results.tap');
const result = spawnSync(process.execPath, [
  '--test',
  '--test-reporter=spec', '--test-reporter-destination=stdout',
  '--test-reporter=tap', `--test-reporter-destination=${tapFile}`,
  ...files,
], { cwd: here, stdio: 'inherit', env: process.env });

let tap = '';
try { tap = fs.readFileSync(tapFile, 'utf8'); } catch { /* no report */ }
const count = (name) => {
  const m = new RegExp(`^# ${name} (\\d+)$`, 'm').exec(tap);
  return m ? Number(m[1]) : 0;
};
const passed = count('pass');
let failed = count('fail') + count('cancelled');
if (!/^# pass \d+$/m.test(tap)) failed = Math.max(failed, 1);
if (result.status !== 0 && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
