#!/usr/bin/env node
'use strict';
// Runs the resilience suite (every *.test.js here, or the files given as
// arguments) against $CERULEAN_BIN (default <repo>/${BUILD_DIR:-build}/cerulean)
// and ends with the line "N passed, N failed". Uses only Node's standard
// library and the e2e helpers, so it needs no npm install.
//
//   node tests/resilience/run.js

const { runNodeTests } = require('../e2e/lib/run-node-tests');

runNodeTests(__dirname, process.argv.slice(2), process.env);
