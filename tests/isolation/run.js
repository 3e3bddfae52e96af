#!/usr/bin/env node
'use strict';
// Runs the isolation suite (every *.test.js here, or the files given as
// arguments) against $CERULEAN_BIN (default <repo>/${BUILD_DIR:-build}/cerulean)
// and ends with the line "N passed, N failed". Uses only Node's standard
// library and the e2e helpers, so it needs no npm install. The servers it
// starts use the SQLite store (in memory or a temporary --location), so
// CERULEAN_E2E_DATABASE and CERULEAN_E2E_ENDPOINT are ignored.
//
//   node tests/isolation/run.js

const path = require('node:path');
const { runNodeTests } = require('../e2e/lib/run-node-tests');

const env = { ...process.env };
// The tests run in this directory: a relative binary path is the caller's.
if (env.CERULEAN_BIN) env.CERULEAN_BIN = path.resolve(env.CERULEAN_BIN);
delete env.CERULEAN_E2E_DATABASE;
delete env.CERULEAN_E2E_ENDPOINT;
runNodeTests(__dirname, process.argv.slice(2), env);
