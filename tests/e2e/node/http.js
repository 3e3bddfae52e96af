'use strict';
// Raw HTTP client for the end-to-end tests: builds requests byte by byte,
// signs them with Shared Key or Shared Key Lite exactly as spec/auth.md §1–§2
// describe (Table flavour: no canonicalized x-ms- headers, only ?comp= in the
// canonicalized resource), and returns status, headers and body unparsed.

const crypto = require('node:crypto');
const http = require('node:http');

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

// Table-service Shared Key string-to-sign (auth.md §1).
function sharedKeyStringToSign({ method, contentMd5 = '', contentType = '', date, resource }) {
  return `${method}\n${contentMd5}\n${contentType}\n${date}\n${resource}`;
}

// Shared Key Lite string-to-sign (auth.md §2).
function sharedKeyLiteStringToSign({ date, resource }) {
  return `${date}\n${resource}`;
}

function hmac(key, stringToSign) {
  return crypto.createHmac('sha256', Buffer.from(key, 'base64')).update(stringToSign, 'utf8').digest('base64');
}

// Canonicalized resource: "/" + account + path as sent (still percent-encoded)
// + "?comp=<value>" when the query has comp.
function canonicalizedResource(account, rawPath) {
  const q = rawPath.indexOf('?');
  const pathPart = q < 0 ? rawPath : rawPath.slice(0, q);
  let resource = `/${account}${pathPart}`;
  if (q >= 0) {
    const params = new URLSearchParams(rawPath.slice(q + 1));
    if (params.has('comp')) resource += `?comp=${params.get('comp')}`;
  }
  return resource;
}

function headerValue(headers, name) {
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() === lower) return Array.isArray(v) ? v.join(',') : String(v);
  }
  return undefined;
}

// Sends one request.
//   server:  { host, port, account, key } (from server.js)
//   path:    request-target after the account, e.g. "/Tables" or
//            "/t1(PartitionKey='a',RowKey='b')?$select=X"; sent verbatim after
//            "/<account>" (set rawTarget to send an exact target instead)
//   auth:    'SharedKey' (default), 'SharedKeyLite', 'none', or a function
//            (stringToSignInfo) => Authorization header value
//   headers: extra headers (may override the defaults); a header whose value
//            is null is removed
//   body:    string | Buffer | object (JSON-encoded)
//   agent:   the http.Agent to send it with (default: a shared keep-alive one)
// Resolves to { status, statusMessage, headers (lower-case names), rawHeaders,
// body (string), json (parsed body or undefined) }.
function request(server, {
  method = 'GET',
  path = '/',
  rawTarget,
  headers = {},
  body,
  auth = 'SharedKey',
  key,
  account,
  date,
  signPath,
  agent: clientAgent,
} = {}) {
  const acct = account || server.account;
  const target = rawTarget !== undefined ? rawTarget : `/${server.account}${path}`;
  let payload;
  if (body === undefined || body === null) payload = undefined;
  else if (Buffer.isBuffer(body)) payload = body;
  else if (typeof body === 'string') payload = Buffer.from(body, 'utf8');
  else payload = Buffer.from(JSON.stringify(body), 'utf8');

  const h = {
    'x-ms-version': '2019-02-02',
    'x-ms-date': date || new Date().toUTCString(),
    Accept: 'application/json;odata=minimalmetadata',
    DataServiceVersion: '3.0',
    MaxDataServiceVersion: '3.0;NetFx',
  };
  if (payload !== undefined) h['Content-Type'] = 'application/json';
  for (const [k, v] of Object.entries(headers)) {
    for (const existing of Object.keys(h)) {
      if (existing.toLowerCase() === k.toLowerCase()) delete h[existing];
    }
    if (v !== null && v !== undefined) h[k] = v;
  }
  h['Content-Length'] = payload ? payload.length : 0;
  if (payload === undefined && (method === 'GET' || method === 'HEAD' || method === 'DELETE')) {
    delete h['Content-Length'];
  }

  const dateValue = headerValue(h, 'x-ms-date') ?? headerValue(h, 'Date') ?? '';
  const resource = canonicalizedResource(acct, signPath !== undefined ? signPath : target);
  const signingKey = key || server.key;
  if (typeof auth === 'function') {
    h.Authorization = auth({ method, date: dateValue, resource, headers: h });
  } else if (auth === 'SharedKey') {
    const sts = sharedKeyStringToSign({
      method,
      contentMd5: headerValue(h, 'Content-MD5') ?? '',
      contentType: headerValue(h, 'Content-Type') ?? '',
      date: dateValue,
      resource,
    });
    h.Authorization = `SharedKey ${acct}:${hmac(signingKey, sts)}`;
  } else if (auth === 'SharedKeyLite') {
    h.Authorization = `SharedKeyLite ${acct}:${hmac(signingKey, sharedKeyLiteStringToSign({ date: dateValue, resource }))}`;
  }

  return new Promise((resolve, reject) => {
    const req = http.request({
      host: server.host,
      port: server.port,
      method,
      path: target,
      headers: h,
      agent: clientAgent || agent,
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const buf = Buffer.concat(chunks);
        const text = buf.toString('utf8');
        let json;
        if (text.length > 0) {
          try { json = JSON.parse(text); } catch { json = undefined; }
        }
        resolve({
          status: res.statusCode,
          statusMessage: res.statusMessage,
          headers: res.headers,
          rawHeaders: res.rawHeaders,
          body: text,
          buffer: buf,
          json,
        });
      });
      res.on('error', reject);
    });
    req.setTimeout(60000, () => req.destroy(new Error(`timeout: ${method} ${target}`)));
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

// Sends raw bytes on a fresh TCP connection and returns the raw response text
// (for requests http.request refuses to build, e.g. duplicate headers).
function rawExchange(server, bytes, { timeoutMs = 10000, untilClose = false } = {}) {
  const net = require('node:net');
  return new Promise((resolve, reject) => {
    const sock = net.connect(server.port, server.host);
    const chunks = [];
    const timer = setTimeout(() => { sock.destroy(); resolve(Buffer.concat(chunks).toString('utf8')); }, timeoutMs);
    sock.on('connect', () => sock.write(bytes));
    sock.on('data', (c) => {
      chunks.push(c);
      const text = Buffer.concat(chunks).toString('utf8');
      const headEnd = text.indexOf('\r\n\r\n');
      if (headEnd >= 0 && !untilClose) {
        const m = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, headEnd));
        if (m && Buffer.byteLength(text.slice(headEnd + 4)) >= Number(m[1])) {
          clearTimeout(timer);
          sock.destroy();
          resolve(text);
        }
      }
    });
    sock.on('end', () => { clearTimeout(timer); resolve(Buffer.concat(chunks).toString('utf8')); });
    sock.on('error', (e) => {
      clearTimeout(timer);
      // A server may answer and close before reading the whole request (e.g.
      // 413 on Content-Length): keep what it sent.
      if (chunks.length > 0) resolve(Buffer.concat(chunks).toString('utf8'));
      else reject(e);
    });
  });
}

// Signs a request for rawExchange: returns the Authorization header value.
function sign(server, { method, target, contentType = '', date, lite = false }) {
  const resource = canonicalizedResource(server.account, target);
  if (lite) return `SharedKeyLite ${server.account}:${hmac(server.key, sharedKeyLiteStringToSign({ date, resource }))}`;
  return `SharedKey ${server.account}:${hmac(server.key, sharedKeyStringToSign({ method, contentType, date, resource }))}`;
}

module.exports = {
  request,
  rawExchange,
  sign,
  hmac,
  canonicalizedResource,
  sharedKeyStringToSign,
  sharedKeyLiteStringToSign,
};
