// Cerulean Explorer's Table API client (the page itself is app.js, loaded
// after this script): JSON that keeps each number's text, the connection and
// its signing (Shared Key with Web Crypto HMAC-SHA256, or a SAS the user
// pastes; the key stays in this page's memory and is never sent), signed
// requests, and typed entities to and from the wire.
'use strict';

const API_VERSION = '2019-02-02';
const EDM_TYPES = ['String', 'Boolean', 'Int32', 'Int64', 'Double', 'DateTime', 'Guid', 'Binary'];
// The development account's published key (Azurite and the Storage Emulator).
const DEV_ACCOUNT = 'devstoreaccount1';
const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

// ---------------------------------------------------------------------------
// JSON that keeps each number's text, so that Int32 1 and Double 1.0 stay
// apart (JSON.parse makes both the number 1). Numbers parse to RawNumber.

class RawNumber {
  constructor(text) { this.text = text; }
}

function parseJson(text) {
  let i = 0;
  const fail = () => { throw new SyntaxError(`bad JSON at ${i}`); };
  const ws = () => { while (i < text.length && ' \t\r\n'.includes(text[i])) i++; };
  function value() {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const obj = {};
      ws();
      if (text[i] === '}') { i++; return obj; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        const k = string();
        ws();
        if (text[i++] !== ':') fail();
        obj[k] = value();
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return obj; }
        fail();
      }
    }
    if (c === '[') {
      i++;
      const arr = [];
      ws();
      if (text[i] === ']') { i++; return arr; }
      for (;;) {
        arr.push(value());
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return arr; }
        fail();
      }
    }
    if (c === '"') return string();
    const m = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400));
    if (!m) fail();
    i += m[0].length;
    if (m[0] === 'true') return true;
    if (m[0] === 'false') return false;
    if (m[0] === 'null') return null;
    return new RawNumber(m[0]);
  }
  function string() {
    const m = /^"(?:[^"\\\u0000-\u001f]|\\.)*"/.exec(text.slice(i));
    if (!m) fail();
    i += m[0].length;
    return JSON.parse(m[0]);
  }
  const v = value();
  ws();
  if (i !== text.length) fail();
  return v;
}

function stringifyJson(v) {
  if (v instanceof RawNumber) return v.text;
  if (Array.isArray(v)) return `[${v.map(stringifyJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${stringifyJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

// ---------------------------------------------------------------------------
// Connection and signing.

const conn = { account: '', mode: 'key', key: '', sas: '', endpoint: '', cryptoKey: null };

function defaultEndpoint(account) {
  // Path-style (account in the path) for IP addresses, names without a dot
  // and host.docker.internal, as the server decides; else the host names it.
  const host = location.hostname;
  const pathStyle = /^[\d.]+$/.test(host) || host.startsWith('[') || !host.includes('.') ||
    host === 'host.docker.internal';
  return pathStyle ? `${location.origin}/${account}` : location.origin;
}

function b64ToBytes(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let k = 0; k < s.length; k++) out[k] = s.charCodeAt(k);
  return out;
}

function bytesToB64(bytes) {
  let s = '';
  const u = new Uint8Array(bytes);
  for (let k = 0; k < u.length; k += 0x8000) s += String.fromCharCode(...u.subarray(k, k + 0x8000));
  return btoa(s);
}

async function importKey(b64) {
  if (!globalThis.crypto || !crypto.subtle) {
    throw new ExplorerError('NoWebCrypto', 'Shared Key signing needs Web Crypto, which the browser offers only to secure pages ' +
      '(https, or http://localhost / 127.0.0.1). Open the explorer that way, or paste a SAS instead.');
  }
  let raw;
  try { raw = b64ToBytes(b64.trim()); } catch { throw new ExplorerError('InvalidKey', 'The account key is not valid base64.'); }
  return crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
}

// Adds x-ms-date and Authorization (Shared Key) to `headers` for a request
// to `url`. The string to sign: verb, Content-MD5, Content-Type, date and
// the canonical resource /account/path[?comp=...]. Full Shared Key, not
// Lite: the reserved endpoints (/_reset) take only a signature that covers
// the verb.
async function signSharedKey(method, url, headers) {
  const u = new URL(url);
  const date = new Date().toUTCString();
  headers['x-ms-date'] = date;
  const comp = u.searchParams.get('comp');
  const resource = `/${conn.account}${u.pathname}${comp !== null ? `?comp=${comp}` : ''}`;
  const sts = [method, headers['Content-MD5'] || '', headers['Content-Type'] || '', date, resource].join('\n');
  const sig = await crypto.subtle.sign('HMAC', conn.cryptoKey, new TextEncoder().encode(sts));
  headers.Authorization = `SharedKey ${conn.account}:${bytesToB64(sig)}`;
}

class ExplorerError extends Error {
  constructor(code, message, status = 0) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

// The Azure error of a failed response: x-ms-error-code and the
// odata.error message (JSON), or the XML <Message>.
async function azureError(res) {
  const text = await res.text();
  let code = res.headers.get('x-ms-error-code') || `HTTP ${res.status}`;
  let message = res.statusText;
  try {
    const doc = JSON.parse(text);
    if (doc['odata.error']) {
      code = doc['odata.error'].code || code;
      message = doc['odata.error'].message?.value || message;
    }
  } catch {
    const m = /<Message>([\s\S]*?)<\/Message>/.exec(text);
    if (m) message = m[1];
  }
  return new ExplorerError(code, message, res.status);
}

// Sends a signed request. `path` is relative to the account endpoint
// ("/Tables", "/t()?$top=5"), or absolute from the origin when it starts
// with "//" ("//_reset/acct"). Returns the Response; throws ExplorerError
// for a status >= 400 unless `allow` lists it.
async function api(method, path, { body, headers = {}, allow = [] } = {}) {
  let url = path.startsWith('//') ? location.origin + path.slice(1) : conn.endpoint + path;
  const h = {
    'x-ms-version': API_VERSION,
    Accept: 'application/json;odata=minimalmetadata',
    DataServiceVersion: '3.0;NetFx',
    MaxDataServiceVersion: '3.0;NetFx',
    ...headers,
  };
  if (body !== undefined && !h['Content-Type']) h['Content-Type'] = 'application/json';
  if (conn.mode === 'sas') {
    url += (url.includes('?') ? '&' : '?') + conn.sas.replace(/^\?/, '');
  } else {
    await signSharedKey(method, url, h);
  }
  let res;
  try {
    res = await fetch(url, { method, headers: h, body, cache: 'no-store', credentials: 'omit' });
  } catch (e) {
    throw new ExplorerError('NetworkError', `The request did not reach the server: ${e.message}`);
  }
  if (res.status >= 400 && !allow.includes(res.status)) throw await azureError(res);
  return res;
}

const quoteKey = (k) => encodeURIComponent(k.replace(/'/g, "''"));
const entityPath = (table, pk, rk) => `/${table}(PartitionKey='${quoteKey(pk)}',RowKey='${quoteKey(rk)}')`;
const odataString = (s) => `'${s.replace(/'/g, "''")}'`;

// ---------------------------------------------------------------------------
// Typed entities: {pk, rk, timestamp, etag, props: [{name, type, value}]}
// with each value as text in the form it is edited in.

// A DateTime with all 7 fractional digits (the service drops trailing
// zeros: ".56Z" is ".5600000Z").
function sevenDigits(text) {
  const m = /^(.*T\d{2}:\d{2}:\d{2})(?:\.(\d{1,7}))?Z$/.exec(text);
  return m ? `${m[1]}.${(m[2] || '').padEnd(7, '0')}Z` : text;
}

function fromWire(obj) {
  const e = { pk: '', rk: '', timestamp: '', etag: obj['odata.etag'] || '', props: [] };
  for (const [name, v] of Object.entries(obj)) {
    if (name.startsWith('odata.') || name.endsWith('@odata.type')) continue;
    if (name === 'PartitionKey') { e.pk = v; continue; }
    if (name === 'RowKey') { e.rk = v; continue; }
    if (name === 'Timestamp') { e.timestamp = sevenDigits(v); continue; }
    let type = obj[`${name}@odata.type`];
    type = type ? type.replace(/^Edm\./, '') : null;
    let value;
    if (v instanceof RawNumber) {
      if (!type) type = /[.eE]/.test(v.text) ? 'Double' : 'Int32';
      value = v.text;
    } else if (typeof v === 'boolean') {
      type = type || 'Boolean';
      value = String(v);
    } else {
      type = type || 'String';
      value = v === null ? '' : String(v);
      if (type === 'DateTime') value = sevenDigits(value);
    }
    e.props.push({ name, type, value });
  }
  return e;
}

const INT32 = /^-?\d+$/;
const DOUBLE = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,7})?)?Z$/;
const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const STRING_FORMS = {
  DateTime: { pattern: DATETIME, expected: 'yyyy-mm-ddThh:mm:ss.fffffffZ (UTC, up to 7 fractional digits)', canonical: (t) => t },
  Guid: { pattern: GUID, expected: 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx', canonical: (t) => t.toLowerCase() },
  Binary: { pattern: BASE64, expected: 'base64', canonical: (t) => t },
};

// The JSON body of an entity: each property written so that the service
// stores exactly the type chosen (annotations for every type JSON cannot
// carry on its own). Throws ExplorerError on a value the type rejects.
function toWireText(e, withKeys) {
  const parts = [];
  const member = (name, text) => parts.push(`${JSON.stringify(name)}:${text}`);
  const annotate = (name, type) => member(`${name}@odata.type`, JSON.stringify(`Edm.${type}`));
  if (withKeys) {
    member('PartitionKey', JSON.stringify(e.pk));
    member('RowKey', JSON.stringify(e.rk));
  }
  const seen = new Set();
  for (const p of e.props) {
    const name = p.name.trim();
    const bad = (why) => new ExplorerError('InvalidValue', `Property '${name}' (${p.type}): ${why}`);
    if (!name) throw new ExplorerError('InvalidValue', 'A property has no name.');
    if (seen.has(name)) throw new ExplorerError('InvalidValue', `Property '${name}' appears twice.`);
    seen.add(name);
    const v = p.value;
    switch (p.type) {
      case 'String':
        member(name, JSON.stringify(v));
        break;
      case 'Boolean':
        if (v !== 'true' && v !== 'false') throw bad('true or false');
        member(name, v);
        break;
      case 'Int32': {
        const t = v.trim();
        if (!INT32.test(t) || Number(t) < -2147483648 || Number(t) > 2147483647) throw bad('an integer from -2147483648 to 2147483647');
        member(name, String(Number(t)));
        break;
      }
      case 'Int64': {
        const t = v.trim();
        if (!INT32.test(t) || BigInt(t) < -(2n ** 63n) || BigInt(t) >= 2n ** 63n) throw bad('an integer from -2^63 to 2^63-1');
        annotate(name, 'Int64');
        member(name, JSON.stringify(BigInt(t).toString()));
        break;
      }
      case 'Double': {
        const t = v.trim();
        annotate(name, 'Double');
        if (t === 'NaN' || t === 'Infinity' || t === '-Infinity') {
          member(name, JSON.stringify(t));
        } else {
          if (!DOUBLE.test(t) || !Number.isFinite(Number(t))) throw bad('a number, NaN, Infinity or -Infinity');
          // Written with a '.' or an exponent, as the service writes doubles.
          let n = t.replace(/^(-?)\./, '$10.').replace(/\.(?=$|[eE])/, '.0');
          if (!/[.eE]/.test(n)) n += '.0';
          member(name, n);
        }
        break;
      }
      default: {
        // The types written as an annotated JSON string.
        const form = STRING_FORMS[p.type];
        if (!form) throw bad('unknown type');
        if (!form.pattern.test(v.trim())) throw bad(form.expected);
        annotate(name, p.type);
        member(name, JSON.stringify(form.canonical(v.trim())));
      }
    }
  }
  return `{${parts.join(',')}}`;
}
