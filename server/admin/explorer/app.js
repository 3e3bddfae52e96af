// Cerulean Explorer: a page that talks to the Table REST API of the server
// that serves it, like any other client. Every request is signed here, in
// the browser (Shared Key with Web Crypto HMAC-SHA256, or a SAS the user
// pastes); the key stays in this page's memory and is never sent.
'use strict';

const API_VERSION = '2019-02-02';
const PAGE_SIZE = 50;
const EDM_TYPES = ['String', 'Boolean', 'Int32', 'Int64', 'Double', 'DateTime', 'Guid', 'Binary'];
// The development account's published key (Azurite and the Storage Emulator).
const DEV_ACCOUNT = 'devstoreaccount1';
const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

const $ = (id) => document.getElementById(id);

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
// the canonical resource /account/path[?comp=...].
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

// ---------------------------------------------------------------------------
// Feedback: errors and progress.

function showError(err, { reload } = {}) {
  const box = $('error');
  if (err instanceof ExplorerError) {
    $('error-code').textContent = err.code;
    $('error-message').textContent = err.message;
  } else {
    $('error-code').textContent = 'Error';
    $('error-message').textContent = String(err && err.message ? err.message : err);
  }
  $('error-reload').hidden = !reload;
  $('error-reload').onclick = reload ? () => { clearError(); reload(); } : null;
  box.hidden = false;
}

function clearError() { $('error').hidden = true; }

// Runs `fn(step, signal)` with the progress bar shown; step(done, total)
// updates it. Cancel aborts `signal`.
async function withProgress(label, fn) {
  const ctl = new AbortController();
  $('progress-label').textContent = label;
  $('progress-bar').removeAttribute('value');
  $('progress-count').textContent = '';
  $('progress').hidden = false;
  $('progress-cancel').onclick = () => ctl.abort();
  const step = (done, total) => {
    if (total) {
      $('progress-bar').max = total;
      $('progress-bar').value = done;
      $('progress-count').textContent = `${done.toLocaleString('en-US')} / ${total.toLocaleString('en-US')}`;
    } else {
      $('progress-count').textContent = done.toLocaleString('en-US');
    }
  };
  try {
    return await fn(step, ctl.signal);
  } finally {
    $('progress').hidden = true;
  }
}

function confirmDialog(text, okLabel = 'Confirm') {
  return new Promise((resolve) => {
    const d = $('confirm-dialog');
    $('confirm-text').textContent = text;
    $('confirm-ok').textContent = okLabel;
    d.returnValue = '';
    d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
    d.showModal();
    $('confirm-cancel').focus();
  });
}

async function guarded(fn) {
  try {
    clearError();
    return await fn();
  } catch (e) {
    if (e.name === 'AbortError' || e.code === 'Cancelled') return undefined;
    showError(e);
    return undefined;
  }
}

// ---------------------------------------------------------------------------
// Tables.

const state = {
  tables: [],
  table: null,
  pageStack: [],      // continuation of each page shown so far ([0] = null)
  next: null,         // continuation after the current page
  rows: [],
  query: null,        // {filter, select, top} of the shown result
  countGeneration: 0,
};

function continuationQuery(c) {
  if (!c) return '';
  let q = `&NextPartitionKey=${encodeURIComponent(c.pk)}`;
  if (c.rk !== null) q += `&NextRowKey=${encodeURIComponent(c.rk)}`;
  return q;
}

function continuationOf(res, prefix) {
  const pk = res.headers.get(`x-ms-continuation-Next${prefix}`);
  if (pk === null) return null;
  return { pk, rk: prefix === 'PartitionKey' ? res.headers.get('x-ms-continuation-NextRowKey') : null };
}

async function listTables() {
  const names = [];
  let c = null;
  do {
    const q = c ? `?NextTableName=${encodeURIComponent(c.pk)}` : '';
    const res = await api('GET', `/Tables${q}`);
    const doc = parseJson(await res.text());
    for (const t of doc.value) names.push(t.TableName);
    c = continuationOf(res, 'TableName');
  } while (c);
  return names;
}

async function refreshTables() {
  state.tables = await listTables();
  renderTables();
  countAll(++state.countGeneration);
}

function renderTables() {
  const ul = $('tables');
  ul.textContent = '';
  if (!state.tables.length) {
    const li = document.createElement('li');
    li.className = 'none';
    li.textContent = 'No tables yet.';
    ul.append(li);
  }
  for (const name of state.tables) {
    const li = document.createElement('li');
    li.tabIndex = 0;
    li.dataset.table = name;
    li.setAttribute('role', 'button');
    const label = document.createElement('span');
    label.textContent = name;
    const count = document.createElement('span');
    count.className = 'count';
    count.textContent = '…';
    li.append(label, count);
    if (name === state.table) li.classList.add('selected');
    li.addEventListener('click', () => openTable(name));
    li.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); openTable(name); }
      if (ev.key === 'ArrowDown') { ev.preventDefault(); li.nextElementSibling?.focus(); }
      if (ev.key === 'ArrowUp') { ev.preventDefault(); li.previousElementSibling?.focus(); }
    });
    ul.append(li);
  }
}

// Counts the entities of `table` by reading its keys, page after page.
async function countEntities(table, onPage, signal) {
  let n = 0;
  let c = null;
  do {
    if (signal?.aborted) throw new ExplorerError('Cancelled', 'cancelled');
    const res = await api('GET', `/${table}()?$select=PartitionKey&$top=1000${continuationQuery(c)}`,
      { headers: { Accept: 'application/json;odata=nometadata' } });
    n += parseJson(await res.text()).value.length;
    c = continuationOf(res, 'PartitionKey');
    if (onPage) onPage(n);
  } while (c);
  return n;
}

async function countAll(generation) {
  for (const name of state.tables) {
    if (generation !== state.countGeneration) return;
    const cell = document.querySelector(`#tables li[data-table="${CSS.escape(name)}"] .count`);
    try {
      const n = await countEntities(name, (k) => { if (cell) cell.textContent = `${k.toLocaleString('en-US')}…`; });
      if (cell && generation === state.countGeneration) cell.textContent = n.toLocaleString('en-US');
    } catch {
      if (cell) cell.textContent = '?';
    }
  }
}

async function createTable(name) {
  await api('POST', '/Tables', { body: JSON.stringify({ TableName: name }), headers: { Prefer: 'return-no-content' } });
}

// ---------------------------------------------------------------------------
// Entities: the query, its plan, the grid and paging.

function currentQuery() {
  const top = $('q-top').value.trim();
  return { filter: $('q-filter').value.trim(), select: $('q-select').value.trim(), top: top ? Number(top) : PAGE_SIZE };
}

function queryString(q, c, { top } = {}) {
  const parts = [];
  if (q.filter) parts.push(`$filter=${encodeURIComponent(q.filter)}`);
  if (q.select) parts.push(`$select=${encodeURIComponent(q.select)}`);
  parts.push(`$top=${top ?? q.top}`);
  return `?${parts.join('&')}${continuationQuery(c)}`;
}

async function openTable(name) {
  state.table = name;
  $('welcome').hidden = true;
  $('table-view').hidden = false;
  $('table-title').textContent = name;
  for (const li of document.querySelectorAll('#tables li')) li.classList.toggle('selected', li.dataset.table === name);
  $('q-filter').value = '';
  $('q-select').value = '';
  $('q-top').value = '';
  for (const id of ['b-pk', 'b-rk-from', 'b-rk-to', 'b-rk-prefix']) $(id).value = '';
  await guarded(() => runQuery());
}

async function runQuery() {
  state.query = currentQuery();
  state.pageStack = [null];
  await loadPage(null);
}

async function loadPage(c) {
  const q = { ...state.query };
  // The keys are always read, so that every row shown can be opened.
  if (q.select) {
    const names = q.select.split(',').map((n) => n.trim());
    for (const key of ['RowKey', 'PartitionKey']) if (!names.includes(key)) names.unshift(key);
    q.select = names.join(',');
  }
  const started = performance.now();
  const res = await api('GET', `/${state.table}()${queryString(q, c)}`, { headers: { 'x-cerulean-query-plan': '1' } });
  const text = await res.text();
  const roundTrip = performance.now() - started;
  const doc = parseJson(text);
  state.rows = doc.value.map(fromWire);
  state.next = continuationOf(res, 'PartitionKey');
  renderPlan(res.headers.get('x-cerulean-query-plan'), roundTrip);
  renderGrid();
  // Pages shown so far: lets a test (or an extension) wait for the next one.
  document.body.dataset.pages = String(Number(document.body.dataset.pages || 0) + 1);
}

function renderPlan(header, roundTrip) {
  const box = $('plan');
  if (!header) { box.hidden = true; return; }
  const plan = JSON.parse(header);
  $('plan-ranges').textContent = plan.ranges.length ? plan.ranges.join('  ∪  ') : 'none (the filter matches nothing: no rows read)';
  $('plan-residual').textContent = plan.residual ?? 'none (the key ranges decide)';
  $('plan-examined').textContent = plan.examined.toLocaleString('en-US');
  $('plan-returned').textContent = plan.returned.toLocaleString('en-US') + (plan.more ? ' (more on the next page)' : '');
  $('plan-time').textContent = `${plan.elapsedMs.toFixed(3)} ms in the server, ${roundTrip.toFixed(1)} ms round trip`;
  box.hidden = false;
}

function renderGrid() {
  const columns = [];
  const types = new Map();
  for (const r of state.rows) {
    for (const p of r.props) {
      if (!types.has(p.name)) { types.set(p.name, new Set()); columns.push(p.name); }
      types.get(p.name).add(p.type);
    }
  }
  const head = $('entities').tHead.rows[0];
  head.textContent = '';
  for (const label of ['PartitionKey', 'RowKey', 'Timestamp', ...columns]) {
    const th = document.createElement('th');
    th.textContent = label;
    if (types.has(label)) {
      const small = document.createElement('small');
      small.textContent = ` ${[...types.get(label)].join('|')}`;
      th.append(small);
    }
    head.append(th);
  }
  const body = $('entities').tBodies[0];
  body.textContent = '';
  if (!state.rows.length) {
    const tr = body.insertRow();
    const td = tr.insertCell();
    td.colSpan = 3 + columns.length;
    td.className = 'empty';
    td.textContent = 'No entities match.';
  }
  state.rows.forEach((r, idx) => {
    const tr = body.insertRow();
    tr.tabIndex = 0;
    tr.dataset.index = idx;
    const cell = (text, cls) => {
      const td = tr.insertCell();
      td.textContent = text;
      if (cls) td.className = cls;
      return td;
    };
    cell(r.pk, 'key');
    cell(r.rk, 'key');
    cell(r.timestamp, 'v');
    for (const col of columns) {
      const p = r.props.find((x) => x.name === col);
      const td = cell(p ? p.value : '', 'v');
      if (p) td.title = `${p.type}: ${p.value}`;
    }
    tr.addEventListener('click', () => openEntity(r));
    tr.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') { ev.preventDefault(); openEntity(r); }
      if (ev.key === 'ArrowDown') { ev.preventDefault(); tr.nextElementSibling?.focus(); }
      if (ev.key === 'ArrowUp') { ev.preventDefault(); tr.previousElementSibling?.focus(); }
    });
  });
  const page = state.pageStack.length;
  const first = (page - 1) * state.query.top;
  $('page-info').textContent = state.rows.length
    ? `Page ${page}: entities ${(first + 1).toLocaleString('en-US')}–${(first + state.rows.length).toLocaleString('en-US')}${state.next ? '' : ' (last page)'}`
    : `Page ${page}: empty${state.next ? ' (the server stopped early; there may be more)' : ''}`;
  $('next-page').disabled = !state.next;
  $('first-page').disabled = page <= 1;
}

async function nextPage() {
  if (!state.next) return;
  const c = state.next;
  state.pageStack.push(c);
  await loadPage(c);
}

async function firstPage() {
  state.pageStack = [null];
  await loadPage(null);
}

// Every entity of the current query (all pages), for export and deletes.
async function* allEntities(q, signal) {
  let c = null;
  do {
    if (signal?.aborted) throw new ExplorerError('Cancelled', 'cancelled');
    const res = await api('GET', `/${state.table}()${queryString(q, c, { top: 1000 })}`);
    const doc = parseJson(await res.text());
    yield doc.value;
    c = continuationOf(res, 'PartitionKey');
  } while (c);
}

// ---------------------------------------------------------------------------
// Filter builder: the common shapes, with the successor trick for prefixes.

// The smallest string greater than every string starting with `prefix`:
// its last UTF-16 unit incremented (dropping trailing U+FFFF units). Null
// when there is none (empty, or all U+FFFF).
function prefixSuccessor(prefix) {
  let p = prefix;
  while (p.length && p.charCodeAt(p.length - 1) === 0xffff) p = p.slice(0, -1);
  if (!p.length) return null;
  return p.slice(0, -1) + String.fromCharCode(p.charCodeAt(p.length - 1) + 1);
}

function buildFilter() {
  const pk = $('b-pk').value;
  const from = $('b-rk-from').value;
  const to = $('b-rk-to').value;
  const prefix = $('b-rk-prefix').value;
  const terms = [];
  if (pk) terms.push(`PartitionKey eq ${odataString(pk)}`);
  if (prefix) {
    terms.push(`RowKey ge ${odataString(prefix)}`);
    const succ = prefixSuccessor(prefix);
    if (succ !== null) terms.push(`RowKey lt ${odataString(succ)}`);
  }
  if (from) terms.push(`RowKey ge ${odataString(from)}`);
  if (to) terms.push(`RowKey lt ${odataString(to)}`);
  $('q-filter').value = terms.join(' and ');
}

// ---------------------------------------------------------------------------
// Entity editor.

const editor = { original: null, isNew: false };

function propRow(p) {
  const tr = document.createElement('tr');
  const name = document.createElement('input');
  name.value = p.name;
  name.className = 'p-name';
  name.setAttribute('aria-label', 'Property name');
  name.spellcheck = false;
  const type = document.createElement('select');
  type.className = 'p-type';
  type.setAttribute('aria-label', 'Type');
  for (const t of EDM_TYPES) type.add(new Option(t, t, false, t === p.type));
  const valueCell = document.createElement('td');
  const makeValue = (t, v) => {
    valueCell.textContent = '';
    let input;
    if (t === 'Boolean') {
      input = document.createElement('select');
      for (const b of ['true', 'false']) input.add(new Option(b, b, false, b === v));
    } else {
      input = document.createElement('input');
      input.value = v;
      input.spellcheck = false;
      input.placeholder = {
        DateTime: '2024-01-31T12:00:00.0000000Z', Guid: '00000000-0000-0000-0000-000000000000',
        Binary: 'base64', Double: '1.5, NaN, Infinity, -Infinity', Int64: '-9223372036854775808…', Int32: '0',
      }[t] || '';
    }
    input.className = 'p-value';
    input.setAttribute('aria-label', 'Value');
    valueCell.append(input);
  };
  makeValue(p.type, p.value);
  type.addEventListener('change', () => {
    const old = valueCell.querySelector('.p-value').value;
    makeValue(type.value, type.value === 'Boolean' ? (old === 'true' ? 'true' : 'false') : old);
  });
  const remove = document.createElement('button');
  remove.type = 'button';
  remove.textContent = 'Remove';
  remove.addEventListener('click', () => tr.remove());
  const td = (el) => { const c = document.createElement('td'); c.append(el); return c; };
  tr.append(td(name), td(type), valueCell, td(remove));
  return tr;
}

function fillEditor(e, isNew) {
  editor.original = e;
  editor.isNew = isNew;
  $('entity-title').textContent = isNew ? `New entity in ${state.table}` : `${state.table}: ${e.pk} / ${e.rk}`;
  $('e-pk').value = e.pk;
  $('e-rk').value = e.rk;
  $('e-pk').readOnly = !isNew;
  $('e-rk').readOnly = !isNew;
  $('e-timestamp').textContent = e.timestamp || '—';
  $('e-etag').textContent = e.etag || '—';
  const body = $('props').tBodies[0];
  body.textContent = '';
  for (const p of e.props) body.append(propRow(p));
  $('e-insert').hidden = !isNew;
  for (const id of ['e-replace', 'e-merge', 'e-reload', 'e-delete']) $(id).hidden = isNew;
  $('entity-error').hidden = true;
}

function editedEntity() {
  const props = [...$('props').tBodies[0].rows].map((tr) => ({
    name: tr.querySelector('.p-name').value,
    type: tr.querySelector('.p-type').value,
    value: tr.querySelector('.p-value').value,
  }));
  return { pk: $('e-pk').value, rk: $('e-rk').value, props };
}

function openEntity(e) {
  fillEditor(e, false);
  if (!$('entity-dialog').open) $('entity-dialog').showModal();
  $('props').querySelector('input')?.focus();
}

function newEntity() {
  if (!state.table) return;
  fillEditor({ pk: '', rk: '', timestamp: '', etag: '', props: [{ name: '', type: 'String', value: '' }] }, true);
  $('entity-dialog').showModal();
  $('e-pk').focus();
}

function entityError(err) {
  const box = $('entity-error');
  box.textContent = '';
  if (err instanceof ExplorerError && err.status === 412) {
    box.append('This entity was changed by someone else since you loaded it (412 UpdateConditionNotSatisfied). ');
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = 'Reload it';
    b.addEventListener('click', () => reloadEntity());
    box.append(b);
  } else if (err instanceof ExplorerError) {
    box.textContent = `${err.code}: ${err.message}`;
  } else {
    box.textContent = String(err.message || err);
  }
  box.hidden = false;
}

async function entityAction(fn) {
  $('entity-error').hidden = true;
  try {
    await fn();
  } catch (e) {
    entityError(e);
  }
}

async function fetchEntity(pk, rk) {
  const res = await api('GET', entityPath(state.table, pk, rk));
  const e = fromWire(parseJson(await res.text()));
  e.etag = res.headers.get('ETag') || e.etag;
  return e;
}

async function reloadEntity() {
  await entityAction(async () => {
    const e = await fetchEntity(editor.original.pk, editor.original.rk);
    fillEditor(e, false);
  });
}

async function afterWrite(pk, rk) {
  const e = await fetchEntity(pk, rk);
  fillEditor(e, false);
  await guarded(() => loadPage(state.pageStack[state.pageStack.length - 1]));
}

function insertEntity() {
  return entityAction(async () => {
    const e = editedEntity();
    const body = toWireText(e, true);
    await api('POST', `/${state.table}`, { body, headers: { Prefer: 'return-no-content' } });
    await afterWrite(e.pk, e.rk);
  });
}

function updateEntity(method) {
  return entityAction(async () => {
    const e = editedEntity();
    const body = toWireText(e, false);
    await api(method, entityPath(state.table, editor.original.pk, editor.original.rk),
      { body, headers: { 'If-Match': editor.original.etag || '*' } });
    await afterWrite(editor.original.pk, editor.original.rk);
  });
}

function deleteEntity() {
  return entityAction(async () => {
    const o = editor.original;
    if (!(await confirmDialog(`Delete entity ${o.pk} / ${o.rk}?`, 'Delete'))) return;
    await api('DELETE', entityPath(state.table, o.pk, o.rk), { headers: { 'If-Match': o.etag || '*' } });
    $('entity-dialog').close();
    await guarded(() => loadPage(state.pageStack[state.pageStack.length - 1]));
  });
}

// ---------------------------------------------------------------------------
// Export and import: JSON Lines as `cerulean export` writes them: a line
// {"table":T} per table, then {"table":T,"entity":{...}} per entity (JSON
// with minimal metadata, types annotated).

function download(name, text) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([text], { type: 'application/x-ndjson' }));
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60000);
}

function exportLine(table, entity) {
  return `{"table":${JSON.stringify(table)},"entity":${stringifyJson(entity)}}\n`;
}

async function exportTables(tables, q, fileName) {
  await withProgress(`Exporting ${tables.length === 1 ? tables[0] : `${tables.length} tables`}`, async (step, signal) => {
    const lines = [];
    let n = 0;
    const saved = state.table;
    try {
      for (const t of tables) {
        state.table = t;
        lines.push(`{"table":${JSON.stringify(t)}}\n`);
        for await (const page of allEntities(q, signal)) {
          for (const e of page) lines.push(exportLine(t, e));
          n += page.length;
          step(n);
        }
      }
    } finally {
      state.table = saved;
    }
    download(fileName, lines.join(''));
    return n;
  });
}

async function importJsonLines(file) {
  const text = await file.text();
  const lines = text.split(/\r?\n/).map((l, k) => ({ l, no: k + 1 })).filter((x) => x.l.trim());
  await withProgress(`Importing ${file.name}`, async (step, signal) => {
    const created = new Set();
    const work = [];
    for (const { l, no } of lines) {
      let doc;
      try { doc = parseJson(l); } catch { doc = null; }
      if (!doc || typeof doc !== 'object' || typeof doc.table !== 'string') {
        throw new ExplorerError('InvalidInput', `${file.name} line ${no}: expected {"table":...,"entity":{...}}`);
      }
      work.push({ doc, no });
    }
    let done = 0;
    step(0, work.length);
    // Tables first (in order), then entities, a few at a time.
    for (const { doc } of work) {
      const key = doc.table.toLowerCase();
      if (created.has(key)) continue;
      const res = await api('POST', '/Tables', { body: JSON.stringify({ TableName: doc.table }),
        headers: { Prefer: 'return-no-content' }, allow: [409] });
      if (res.status === 409) await res.text();
      created.add(key);
    }
    const entities = work.filter((w) => w.doc.entity);
    done = work.length - entities.length;
    step(done, work.length);
    let next = 0;
    const worker = async () => {
      while (next < entities.length) {
        if (signal.aborted) throw new ExplorerError('Cancelled', 'cancelled');
        const { doc, no } = entities[next++];
        const e = doc.entity;
        if (typeof e.PartitionKey !== 'string' || typeof e.RowKey !== 'string') {
          throw new ExplorerError('InvalidInput', `${file.name} line ${no}: the entity has no PartitionKey and RowKey`);
        }
        const body = {};
        for (const [k, v] of Object.entries(e)) {
          if (!k.startsWith('odata.') && k !== 'Timestamp' && k !== 'Timestamp@odata.type') body[k] = v;
        }
        try {
          await api('PUT', entityPath(doc.table, e.PartitionKey, e.RowKey), { body: stringifyJson(body) });
        } catch (err) {
          if (err instanceof ExplorerError) err.message = `${file.name} line ${no}: ${err.message}`;
          throw err;
        }
        step(++done, work.length);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
  });
}

// Deletes every entity the current query matches, after confirmation.
async function deleteMatching() {
  const q = { ...currentQuery() };
  const what = q.filter ? `matching ${q.filter}` : '(all of them)';
  if (!(await confirmDialog(`Delete every entity of ${state.table} ${what}?`, 'Delete'))) return;
  await withProgress(`Deleting from ${state.table}`, async (step, signal) => {
    const keys = [];
    for await (const page of allEntities({ ...q, select: 'PartitionKey,RowKey' }, signal)) {
      for (const e of page) keys.push([e.PartitionKey, e.RowKey]);
      step(keys.length);
    }
    let done = 0;
    let next = 0;
    step(0, keys.length);
    const worker = async () => {
      while (next < keys.length) {
        if (signal.aborted) throw new ExplorerError('Cancelled', 'cancelled');
        const [pk, rk] = keys[next++];
        await api('DELETE', entityPath(state.table, pk, rk), { headers: { 'If-Match': '*' }, allow: [404] });
        step(++done, keys.length);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
  });
}

// ---------------------------------------------------------------------------
// Wiring.

async function connect() {
  conn.account = $('account').value.trim();
  conn.mode = $('auth-mode').value;
  conn.sas = $('sas-token').value.trim();
  conn.endpoint = ($('endpoint').value.trim() || defaultEndpoint(conn.account)).replace(/\/+$/, '');
  if (conn.mode === 'key') conn.cryptoKey = await importKey($('account-key').value);
  state.table = null;
  $('table-view').hidden = true;
  $('welcome').hidden = false;
  await refreshTables();
  document.body.dataset.connected = 'true';
}

function bind(id, event, fn) {
  $(id).addEventListener(event, (ev) => {
    if (event === 'submit') ev.preventDefault();
    guarded(() => fn(ev));
  });
}

function init() {
  $('account').value = DEV_ACCOUNT;
  $('account-key').value = DEV_KEY;
  $('endpoint').value = defaultEndpoint(DEV_ACCOUNT);
  $('account').addEventListener('input', () => { $('endpoint').value = defaultEndpoint($('account').value.trim()); });
  $('auth-mode').addEventListener('change', () => {
    const sas = $('auth-mode').value === 'sas';
    $('sas-field').hidden = !sas;
    $('key-field').hidden = sas;
  });
  $('error-close').addEventListener('click', clearError);

  bind('connect', 'submit', connect);
  bind('refresh-tables', 'click', refreshTables);
  bind('create-table', 'submit', async () => {
    const name = $('new-table-name').value.trim();
    if (!name) return;
    await createTable(name);
    $('new-table-name').value = '';
    await refreshTables();
    await openTable(name);
  });
  bind('delete-table', 'click', async () => {
    const t = state.table;
    if (!(await confirmDialog(`Delete table ${t} and all its entities? This cannot be undone.`, 'Delete table'))) return;
    await withProgress(`Deleting table ${t}`, () => api('DELETE', `/Tables('${encodeURIComponent(t.replace(/'/g, "''"))}')`));
    state.table = null;
    $('table-view').hidden = true;
    $('welcome').hidden = false;
    await refreshTables();
  });
  bind('reset-account', 'click', async () => {
    if (!(await confirmDialog(`Reset account ${conn.account}: delete every table and entity? This cannot be undone.`, 'Reset'))) return;
    if (conn.mode !== 'key') throw new ExplorerError('AuthorizationFailure', 'Resetting an account needs its key (Shared Key); a SAS cannot.');
    await withProgress(`Resetting ${conn.account}`, () => api('POST', `//_reset/${encodeURIComponent(conn.account)}`));
    state.table = null;
    $('table-view').hidden = true;
    $('welcome').hidden = false;
    await refreshTables();
  });
  bind('query', 'submit', runQuery);
  bind('build-filter', 'click', async () => { buildFilter(); await runQuery(); });
  bind('next-page', 'click', nextPage);
  bind('first-page', 'click', firstPage);
  bind('new-entity', 'click', async () => newEntity());
  bind('export-table', 'click', () => exportTables([state.table], { filter: '', select: '', top: 1000 }, `${state.table}.jsonl`));
  bind('export-query', 'click', () => exportTables([state.table], { ...currentQuery() }, `${state.table}-query.jsonl`));
  bind('export-all', 'click', async () => {
    const tables = await listTables();
    await exportTables(tables, { filter: '', select: '', top: 1000 }, `${conn.account}.jsonl`);
  });
  bind('delete-matching', 'click', async () => {
    await deleteMatching();
    await runQuery();
    countAll(++state.countGeneration);
  });
  bind('import-file', 'change', async (ev) => {
    const file = ev.target.files[0];
    ev.target.value = '';
    if (!file) return;
    try {
      await importJsonLines(file);
    } finally {
      await refreshTables();
      if (state.table) await loadPage(state.pageStack[state.pageStack.length - 1] ?? null);
    }
  });

  $('add-prop').addEventListener('click', () => {
    const tr = propRow({ name: '', type: 'String', value: '' });
    $('props').tBodies[0].append(tr);
    tr.querySelector('input').focus();
  });
  $('e-insert').addEventListener('click', insertEntity);
  $('e-replace').addEventListener('click', () => updateEntity('PUT'));
  $('e-merge').addEventListener('click', () => updateEntity('MERGE'));
  $('e-delete').addEventListener('click', deleteEntity);
  $('e-reload').addEventListener('click', reloadEntity);
  $('e-close').addEventListener('click', () => $('entity-dialog').close());

  document.addEventListener('keydown', (ev) => {
    const typing = ['INPUT', 'SELECT', 'TEXTAREA'].includes(document.activeElement?.tagName);
    const dialogOpen = document.querySelector('dialog[open]');
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey) && state.table && !dialogOpen) {
      ev.preventDefault();
      guarded(runQuery);
      return;
    }
    if (typing || dialogOpen || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === '/' && state.table) { ev.preventDefault(); $('q-filter').focus(); }
    else if ((ev.key === 'n' || ev.key === 'N') && state.table) { ev.preventDefault(); newEntity(); }
    else if (ev.key === ']' && state.table) { ev.preventDefault(); guarded(nextPage); }
    else if (ev.key === '[' && state.table) { ev.preventDefault(); guarded(firstPage); }
    else if (ev.key === 'r' || ev.key === 'R') { ev.preventDefault(); guarded(refreshTables); }
  });

  $('connect-button').focus();
}

document.addEventListener('DOMContentLoaded', init);
