'use strict';
// Finds the server executable for this machine: the `binary` option, else $CERULEAN_BINARY,
// else the one in the installed platform package (lib/platforms.js) that matches
// process.platform, process.arch and, on Linux, the C library.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { PLATFORMS } = require('./platforms.js');

const BINARY_ENV = 'CERULEAN_BINARY';
const MAIN_PACKAGE = 'cerulean-tables';

class CeruleanBinaryNotFoundError extends Error {
  constructor(message) {
    super(message);
    this.name = 'CeruleanBinaryNotFoundError';
    this.code = 'CERULEAN_BINARY_NOT_FOUND';
  }
}

// 'glibc' or 'musl' on Linux, null elsewhere. As detect-libc and esbuild decide: Node's
// diagnostic report names the glibc it runs on (header.glibcVersionRuntime), and a Node built
// against musl has no such field.
function detectLibc(platform = process.platform) {
  if (platform !== 'linux') return null;
  const report = process.report;
  if (!report || typeof report.getReport !== 'function') return 'glibc';
  const excludeNetwork = report.excludeNetwork;
  report.excludeNetwork = true;  // no reverse DNS look-ups for the report's sockets
  try {
    return report.getReport().header?.glibcVersionRuntime ? 'glibc' : 'musl';
  } finally {
    report.excludeNetwork = excludeNetwork;
  }
}

// The entry of PLATFORMS for this machine (or the one described), or undefined. Also returns
// the machine's description, e.g. "linux-arm64 (musl)".
function platformOf({ platform = process.platform, arch = process.arch, libc } = {}) {
  const c = platform === 'linux' ? (libc ?? detectLibc(platform)) : null;
  const entry = PLATFORMS.find((p) => p.os === platform && p.cpu === arch && p.libc === c);
  return { entry, machine: `${platform}-${arch}${c ? ` (${c})` : ''}` };
}

// The name of the platform package for this machine (or the one described), or null when
// cerulean-tables has none for it.
function platformPackage(options = {}) {
  return platformOf(options).entry?.package ?? null;
}

function existing(file, source) {
  const full = path.resolve(file);
  if (!fs.existsSync(full)) throw new CeruleanBinaryNotFoundError(`${source} names ${full}, which does not exist.`);
  return full;
}

// The server executable start() would run: options.binary, else $CERULEAN_BINARY, else the
// packaged server of this platform. Options platform, arch and libc ('glibc' or 'musl') describe
// another machine. Throws CeruleanBinaryNotFoundError when there is none.
function binaryPath({ binary, platform, arch, libc } = {}) {
  if (binary) return existing(binary, 'the binary option');
  const fromEnvironment = process.env[BINARY_ENV];
  if (fromEnvironment) return existing(fromEnvironment, `$${BINARY_ENV}`);
  const { entry, machine } = platformOf({ platform, arch, libc });
  // The platform packages this release lists (scripts/package.sh writes them when it packs).
  const shipped = Object.keys(require('../package.json').optionalDependencies ?? {});
  const orSet = `or set the environment variable ${BINARY_ENV} to a server executable (or pass { binary } to start()).`;
  if (!entry || !shipped.includes(entry.package)) {
    throw new CeruleanBinaryNotFoundError(
      `${MAIN_PACKAGE} has no prebuilt server for ${machine}; this release has one for ` +
      `${shipped.map((p) => p.split('/')[1]).join(', ') || 'no platform'}. Build the server from source ` +
      `(bash scripts/build.sh in the Cerulean repository) and set ${BINARY_ENV} to its path (build/cerulean), ` +
      'or pass { binary } to start().');
  }
  let manifest;
  try {
    manifest = require.resolve(`${entry.package}/package.json`, { paths: [path.join(__dirname, '..')] });
  } catch {
    throw new CeruleanBinaryNotFoundError(
      `The server for ${machine} is in the package ${entry.package}, which is not installed. npm installs it ` +
      `with ${MAIN_PACKAGE} as an optional dependency on ${machine} only: reinstall ${MAIN_PACKAGE} on this ` +
      `machine without --omit=optional / --no-optional (a node_modules copied from another platform lacks it), ` +
      `or install ${entry.package} itself, ${orSet}`);
  }
  const file = path.join(path.dirname(manifest), 'bin', entry.executable);
  if (!fs.existsSync(file)) {
    throw new CeruleanBinaryNotFoundError(`${entry.package} is installed but its server ${file} is missing; reinstall it, ${orSet}`);
  }
  return file;
}

// Returns a path to `file` that can be executed: the file itself, made executable if it was not,
// or a private copy when it cannot be changed. Windows has no execute bit.
function ensureExecutable(file) {
  if (process.platform === 'win32') return file;
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return file;
  } catch {
    // not executable yet
  }
  try {
    fs.chmodSync(file, fs.statSync(file).mode | 0o111);
    return file;
  } catch {
    const copy = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-bin-')), path.basename(file));
    fs.copyFileSync(file, copy);
    fs.chmodSync(copy, 0o700);
    return copy;
  }
}

module.exports = {
  BINARY_ENV,
  CeruleanBinaryNotFoundError,
  PLATFORMS,
  binaryPath,
  detectLibc,
  ensureExecutable,
  platformPackage,
};
