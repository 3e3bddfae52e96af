'use strict';
// Runs the node:test files of one suite directory (every *.test.js there, or
// the files given as arguments), showing the spec reporter on stdout, prints
// the line "N passed, N failed" taken from the TAP summary and exits non-zero
// when a test failed or was cancelled. Shared by tests/e2e/node/run.js and
// tests/e2e/browser/run.js.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

function runNodeTests(dir, args, env) {
  let files = args.map((f) => path.resolve(process.cwd(), fs.existsSync(f) ? f : path.join(dir, f)));
  if (files.length === 0) {
    files = fs.readdirSync(dir).filter((f) => f.endsWith('.test.js')).sort().map((f) => path.join(dir, f));
  }
  const tapFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-e2e-')), 'results.tap');
  const result = spawnSync(process.execPath, [
    '--test',
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    '--test-reporter=tap', `--test-reporter-destination=${tapFile}`,
    ...files,
  ], { cwd: dir, stdio: 'inherit', env });

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
}

module.exports = { runNodeTests };
