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

const { runNodeTests } = require('../lib/run-node-tests');
const fs = require('node:fs');
const path = require('node:path');

const here = __dirname;
if (!fs.existsSync(path.join(here, 'node_modules'))) {
  console.error('tests/e2e/node/node_modules is missing: run `bash scripts/setup.sh` (or npm ci in tests/e2e/node)');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

runNodeTests(here, process.argv.slice(2), process.env);
