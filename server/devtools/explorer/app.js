// Cerulean Explorer: a page that talks to the Table REST API of the server
// that serves it, like any other client, through client.js. This script,
// loaded last, holds the page's state, the tables, the query and its plan,
// the grid, the filter builder, and wires the controls to them and to
// editor.js and export_import.js.
'use strict';

const PAGE_SIZE = 50;

const $ = (id) => document.getElementById(id);

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
// Wiring.

// Connects with what the form holds. A later connect supersedes one still
// under way: only the latest one's account is used and shown.
let connects = 0;
async function connect() {
  const generation = ++connects;
  const next = {
    account: $('account').value.trim(),
    mode: $('auth-mode').value,
    sas: $('sas-token').value.trim(),
    endpoint: '',
    cryptoKey: null,
  };
  next.endpoint = ($('endpoint').value.trim() || defaultEndpoint(next.account)).replace(/\/+$/, '');
  const key = $('account-key').value;
  if (next.mode === 'key') next.cryptoKey = await importKey(key);
  if (generation !== connects) return;
  Object.assign(conn, next);
  state.table = null;
  $('table-view').hidden = true;
  $('welcome').hidden = false;
  await refreshTables();
  if (generation !== connects) return;
  document.body.dataset.connected = 'true';
}

// The development account's key is public, so the page opens connected to
// it, through the same signed Table API as any other account, when the
// server has it with that key. Anything else (another key for it, a page
// without Web Crypto, an endpoint that does not answer) leaves the form to
// ask, without an error: nothing was asked for yet.
async function connectDevelopmentAccount() {
  try {
    await connect();
  } catch {
    // The form asks.
  }
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
  connectDevelopmentAccount();
}

document.addEventListener('DOMContentLoaded', init);
