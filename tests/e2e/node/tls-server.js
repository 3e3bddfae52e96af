'use strict';
// HTTPS helpers for https.test.js and oauth.test.js: a throw-away self-signed
// certificate made with the openssl CLI, a Cerulean started with --cert/--key
// (or --cert x.pfx --pwd), raw HTTPS requests that trust that certificate,
// and unsigned JWTs for --oauth basic.
//
// The server is started like server.js does (127.0.0.1, port 0, --silent,
// in memory) but its start-up line reads https://HOST:PORT.

const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const https = require('node:https');
const path = require('node:path');

const { ACCOUNT, KEY, binaryPath, tempDir } = require('./server');
const { canonicalizedResource, hmac, sharedKeyLiteStringToSign } = require('./http');

const READY_RE = /Cerulean Table service is successfully listening at (https?):\/\/(\[[^\]]+\]|[^\s:]+):(\d+)/;
const START_TIMEOUT_MS = 20000;

// Makes a self-signed certificate for 127.0.0.1/localhost in a fresh
// directory: cert.pem, key.pem, cert.pfx and key.enc.pem (both protected by
// `pfxPassword`).
function makeCertificate({ pfxPassword = 'p@ss word' } = {}) {
  const dir = tempDir('cerulean-tls-');
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  const pfx = path.join(dir, 'cert.pfx');
  const encryptedKey = path.join(dir, 'key.enc.pem');
  const openssl = (args) => {
    const r = spawnSync('openssl', args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr || r.error}`);
  };
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-days', '2',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-keyout', key, '-out', cert]);
  openssl(['pkcs12', '-export', '-in', cert, '-inkey', key, '-out', pfx, '-passout', `pass:${pfxPassword}`]);
  openssl(['pkey', '-in', key, '-aes256', '-passout', `pass:${pfxPassword}`, '-out', encryptedKey]);
  return { dir, cert, key, encryptedKey, pfx, pfxPassword, ca: fs.readFileSync(cert, 'utf8') };
}

// Runs the binary to completion (for start-up refusals): { status, stdout, stderr }.
function runBinary(args, { timeoutMs = 15000 } = {}) {
  const r = spawnSync(binaryPath(), ['--tableHost', '127.0.0.1', '--tablePort', '0', '--silent',
    '--inMemoryPersistence', ...args], { encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status, signal: r.signal, stdout: r.stdout || '', stderr: r.stderr || '' };
}

// Starts Cerulean with `args` (e.g. ['--cert', c, '--key', k]). Resolves to
// { scheme, host, port, url, endpoint, account, key, connectionString, stop(),
// stderr() }; stop(signal = 'SIGTERM') resolves to the exit { code, signal }.
function startServer({ args = [], env = {} } = {}) {
  const bin = binaryPath();
  if (!fs.existsSync(bin)) {
    return Promise.reject(new Error(`Cerulean binary not found at ${bin} (set CERULEAN_BIN or build first)`));
  }
  const child = spawn(bin, ['--tableHost', '127.0.0.1', '--tablePort', '0', '--silent', '--inMemoryPersistence', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  let exited = null;
  const exitPromise = new Promise((resolve) => child.on('exit', (code, signal) => {
    exited = { code, signal };
    resolve(exited);
  }));
  process.on('exit', () => { if (!exited) child.kill('SIGKILL'); });
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-64 * 1024); });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no start-up line within ${START_TIMEOUT_MS} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, START_TIMEOUT_MS);
    let ready = false;
    child.stdout.on('data', (d) => {
      stdout = (stdout + d).slice(-64 * 1024);
      if (ready) return;
      const m = READY_RE.exec(stdout);
      if (!m) return;
      ready = true;
      clearTimeout(timer);
      const [, scheme, host, portText] = m;
      const port = Number(portText);
      const url = `${scheme}://${host}:${port}`;
      const endpoint = `${url}/${ACCOUNT}`;
      resolve({
        scheme,
        host,
        port,
        url,
        endpoint,
        account: ACCOUNT,
        key: KEY,
        connectionString:
          `DefaultEndpointsProtocol=${scheme};AccountName=${ACCOUNT};AccountKey=${KEY};TableEndpoint=${endpoint};`,
        child,
        stdout: () => stdout,
        stderr: () => stderr,
        stop: async (signal = 'SIGTERM') => {
          if (exited) return exited;
          child.kill(signal);
          const killer = setTimeout(() => child.kill('SIGKILL'), 8000);
          const result = await exitPromise;
          clearTimeout(killer);
          return result;
        },
      });
    });
    exitPromise.then(({ code, signal }) => {
      if (ready) return;
      clearTimeout(timer);
      reject(new Error(`Cerulean exited before listening (code ${code}, signal ${signal})\nstderr: ${stderr}`));
    });
  });
}

// One HTTPS request to `server` trusting `ca`. auth: 'SharedKeyLite'
// (default), 'none', or a full Authorization header value. Resolves to
// { status, headers, body, json }.
function httpsRequest(server, ca, { method = 'GET', path: p = '/Tables', headers = {}, body, auth = 'SharedKeyLite', agent } = {}) {
  const target = `/${server.account}${p}`;
  const h = {
    'x-ms-version': '2020-12-06',
    'x-ms-date': new Date().toUTCString(),
    Accept: 'application/json;odata=minimalmetadata',
    ...headers,
  };
  const payload = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  if (payload) {
    h['Content-Type'] = h['Content-Type'] || 'application/json';
    h['Content-Length'] = payload.length;
  }
  if (auth === 'SharedKeyLite') {
    const sts = sharedKeyLiteStringToSign({ date: h['x-ms-date'], resource: canonicalizedResource(server.account, target) });
    h.Authorization = `SharedKeyLite ${server.account}:${hmac(server.key, sts)}`;
  } else if (auth !== 'none') {
    h.Authorization = auth;
  }
  return new Promise((resolve, reject) => {
    const req = https.request({ host: server.host, port: server.port, method, path: target, headers: h, ca, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, body: text, json });
      });
      res.on('error', reject);
    });
    req.setTimeout(30000, () => req.destroy(new Error(`timeout: ${method} ${target}`)));
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

const b64url = (obj) => Buffer.from(JSON.stringify(obj)).toString('base64url');

// An unsigned-in-spirit JWT (random signature bytes) with Entra ID-like
// claims for Azure Storage; `claims` overrides or adds claims (undefined
// values remove them).
function makeJwt(claims = {}) {
  const now = Math.floor(Date.now() / 1000);
  const payload = {
    aud: 'https://storage.azure.com',
    iss: 'https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/',
    iat: now - 60,
    nbf: now - 60,
    exp: now + 3600,
    oid: crypto.randomUUID(),
    tid: '72f988bf-86f1-41af-91ab-2d7cd011db47',
    ver: '1.0',
    ...claims,
  };
  for (const k of Object.keys(payload)) if (payload[k] === undefined) delete payload[k];
  const header = { alg: 'RS256', typ: 'JWT', kid: 'test' };
  return `${b64url(header)}.${b64url(payload)}.${crypto.randomBytes(64).toString('base64url')}`;
}

// A TokenCredential (@azure/core-auth) that always hands out `token`, and
// counts the calls.
function staticTokenCredential(token) {
  const credential = {
    calls: 0,
    async getToken() {
      credential.calls += 1;
      return { token, expiresOnTimestamp: Date.now() + 3600 * 1000 };
    },
  };
  return credential;
}

module.exports = { makeCertificate, runBinary, startServer, httpsRequest, makeJwt, staticTokenCredential };
