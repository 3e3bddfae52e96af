#!/usr/bin/env node
'use strict';
// The `cerulean` command: runs the packaged server (or $CERULEAN_BINARY) with these arguments,
// passing signals on and exiting with its status. `cerulean --help` lists the options.

const { spawn } = require('node:child_process');
const os = require('node:os');
const { binaryPath, ensureExecutable } = require('../index.js');

let binary;
try {
  binary = ensureExecutable(binaryPath());
} catch (error) {
  console.error(`cerulean: ${error.message}`);
  process.exit(127);
}

const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal));
}
child.on('error', (error) => {
  console.error(`cerulean: ${error.message}`);
  process.exit(127);
});
child.on('exit', (code, signal) => {
  process.exit(code ?? 128 + (os.constants.signals[signal] ?? 0));
});
