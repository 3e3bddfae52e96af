'use strict';
// A read-only npm registry on 127.0.0.1 that serves the packages of the tarballs named on the
// command line (and nothing else), so that npm resolves cerulean-tables' optionalDependencies
// as it would from a real registry, with each platform package's os/cpu/libc fields.
//   node registry.js A.tgz B.tgz ...   # prints "registry http://127.0.0.1:PORT/" once listening
// Each tarball's package.json is read with tar(1); a package name is requested as /@scope%2fname
// or /@scope/name. Runs until killed.

const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

const packuments = new Map();  // name -> packument
const tarballs = new Map();    // url path -> file
let origin;

for (const file of process.argv.slice(2)) {
  const manifest = JSON.parse(execFileSync('tar', ['-xOzf', file, 'package/package.json'], { encoding: 'utf8' }));
  const bytes = fs.readFileSync(file);
  const tarballPath = `/-/${path.basename(file)}`;
  tarballs.set(tarballPath, file);
  const entry = packuments.get(manifest.name) ?? { name: manifest.name, versions: {}, 'dist-tags': {} };
  entry.versions[manifest.version] = {
    ...manifest,
    _tarballPath: tarballPath,
    dist: {
      integrity: `sha512-${crypto.createHash('sha512').update(bytes).digest('base64')}`,
      shasum: crypto.createHash('sha1').update(bytes).digest('hex'),
    },
  };
  entry['dist-tags'].latest = manifest.version;
  packuments.set(manifest.name, entry);
}

const server = http.createServer((req, res) => {
  const url = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
  const file = tarballs.get(url);
  if (file) {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
    return;
  }
  const packument = packuments.get(url.slice(1));
  if (!packument) {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":"not found"}');
    return;
  }
  const versions = {};
  for (const [v, { _tarballPath, ...m }] of Object.entries(packument.versions)) {
    versions[v] = { ...m, dist: { ...m.dist, tarball: `${origin}${_tarballPath}` } };
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ ...packument, versions }));
});
server.listen(0, '127.0.0.1', () => {
  origin = `http://127.0.0.1:${server.address().port}`;
  console.log(`registry ${origin}/`);
});
