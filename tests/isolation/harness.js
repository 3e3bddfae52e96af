'use strict';
// The isolation suite's measuring harness: a victim (victim.js, in a worker
// thread) measures its latency unloaded and then while an attack runs, and
// the server's memory is read from /proc. Also the fixtures' builders
// (tables, $batch inserts, table SAS) and a looping raw-socket attacker.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { request, sign, hmac } = require('../e2e/node/http');
const { waitFor } = require('../e2e/node/util');
const { RawConnection } = require('./raw-client');

const MiB = 1024 * 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The victim's load: two connections of point reads and two of health
// checks (one of each per I/O thread of a 2-core machine), a request every
// 20 ms on each: 100 point reads and 100 health checks a second, too few
// to load the server by themselves.
const VICTIM_CONNECTIONS = 4;
const VICTIM_INTERVAL_MS = 20;
// The unloaded window, measured right before each attack, and the window
// measured under attack once the attack is in its steady state.
const UNLOADED_MS = 2000;
const ATTACK_MS = 6000;
// The victim is warm, and its unloaded window may begin, once each of its
// connections has been answered this many times.
const WARM_ANSWERS = 5;

// The isolation bound. Under attack the victim's median point read and
// median /_health may take at most max(K × its unloaded median, FLOOR_MS).
// Unloaded they take ~0.3–4 ms on loopback. K and the floor leave room for
// what an isolated server still shares with an attacker on two cores that
// other processes also use: the attacker's work on the pool and the
// attacker's own client compete with the I/O threads for the CPU (a thread
// that wakes for a request waits at most a scheduler slice, a few ms, for
// a core). A request stuck behind an attacker's work on its I/O thread
// waits as long as that work: hundreds of ms to seconds, 10× to 1000× the
// bound.
const K = 10;
const FLOOR_MS = 50;
// Every /_health during an attack is answered, 200, within this.
const HEALTH_MAX_MS = 2000;

// --- the server's memory ------------------------------------------------------

// A field of /proc/<pid>/status in bytes (VmHWM: peak resident memory so
// far; VmRSS: resident now).
function procStatus(pid, field) {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) * 1024 : NaN;
}
const mib = (bytes) => `${(bytes / MiB).toFixed(1)} MiB`;

// User + system CPU seconds of process `pid`.
function cpuSeconds(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;  // utime + stime in USER_HZ ticks
}

// Waits (at most 20 s) until the server has used under a tenth of a core
// over half a second: work left from building a fixture or from a previous
// attack (a scan whose client has gone) would otherwise count as unloaded.
async function settle(pid) {
  const deadline = Date.now() + 20000;
  while (Date.now() < deadline) {
    const before = cpuSeconds(pid);
    await sleep(500);  // the window the CPU use is measured over
    if (cpuSeconds(pid) - before < 0.05) return;
  }
}

// --- fixtures -------------------------------------------------------------------

async function createTable(server, table) {
  const res = await request(server, { method: 'POST', path: '/Tables', body: { TableName: table },
    headers: { Prefer: 'return-no-content' } });
  assert.equal(res.status, 204, `create ${table}: ${res.status} ${res.body}`);
}

async function deleteTable(server, table) {
  const res = await request(server, { method: 'DELETE', path: `/Tables('${table}')` });
  assert.equal(res.status, 204, `delete ${table}: ${res.status} ${res.body}`);
}

// A $batch body inserting `entities` (one PartitionKey, at most 100) into
// `table`, each with `Prefer: <prefer>`: {body, contentType}.
function batchBody(server, table, entities, { prefer = 'return-no-content' } = {}) {
  const b = `batch_${crypto.randomUUID()}`;
  const cs = `changeset_${crypto.randomUUID()}`;
  const parts = [`--${b}\r\nContent-Type: multipart/mixed; boundary=${cs}\r\n\r\n`];
  entities.forEach((e, i) => {
    parts.push(`--${cs}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n` +
      `Content-ID: ${i + 1}\r\n\r\nPOST ${server.endpoint}/${table} HTTP/1.1\r\n` +
      `Accept: application/json;odata=nometadata\r\nPrefer: ${prefer}\r\n` +
      `Content-Type: application/json\r\n\r\n${JSON.stringify(e)}\r\n`);
  });
  parts.push(`--${cs}--\r\n--${b}--\r\n`);
  return { body: Buffer.from(parts.join('')), contentType: `multipart/mixed; boundary=${b}` };
}

// The bytes of a signed request (Shared Key) with `body` (a Buffer).
function signedRequest(server, method, target, body, contentType) {
  const date = new Date().toUTCString();
  const auth = sign(server, { method, target, contentType, date });
  const head = `${method} ${target} HTTP/1.1\r\nHost: ${server.host}\r\nx-ms-version: 2019-02-02\r\n` +
    `x-ms-date: ${date}\r\nAccept: application/json;odata=nometadata\r\nDataServiceVersion: 3.0\r\n` +
    `Content-Type: ${contentType}\r\nContent-Length: ${body.length}\r\nAuthorization: ${auth}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

// Inserts `entities` with $batch requests of up to 100 entities of one
// PartitionKey each (`entities` grouped by PartitionKey), on `parallel` raw
// connections (cheaper for the test process than http.request).
async function insertAll(server, table, entities, parallel = 2) {
  const groups = [];
  for (const e of entities) {
    const last = groups[groups.length - 1];
    if (last && last[0].PartitionKey === e.PartitionKey && last.length < 100) last.push(e);
    else groups.push([e]);
  }
  let next = 0;
  const worker = async () => {
    const conn = await RawConnection.open(server.host, server.port);
    try {
      while (next < groups.length) {
        const { body, contentType } = batchBody(server, table, groups[next++]);
        const res = await conn.send(signedRequest(server, 'POST', `/${server.account}/$batch`, body, contentType),
          { keepBody: true });
        assert.equal(res.status, 202, `$batch: ${res.status} ${res.body.slice(0, 300)}`);
        assert.doesNotMatch(res.body, /HTTP\/1\.1 [45]\d\d/, res.body.slice(0, 500));
      }
    } finally {
      conn.destroy();
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

// A table SAS (spec/auth.md §3) for `table` granting `permissions`, as a
// query string without '?'. `extra`: more signed fields (si, spk, ...).
function tableSas(server, table, permissions, extra = {}) {
  const f = { sv: '2019-02-02', tn: table, sp: permissions, st: '', se: '2099-01-01T00:00:00Z', si: '',
    sip: '', spr: 'https,http', spk: '', srk: '', epk: '', erk: '', ...extra };
  const stringToSign = [f.sp, f.st, f.se, `/table/${server.account}/${table.toLowerCase()}`, f.si, f.sip,
    f.spr, f.sv, f.spk, f.srk, f.epk, f.erk].join('\n');
  const sig = hmac(server.key, stringToSign);
  const params = Object.entries(f).filter(([, v]) => v !== '').map(([k, v]) => `${k}=${encodeURIComponent(v)}`);
  return `${params.join('&')}&sig=${encodeURIComponent(sig)}`;
}

// The bytes of a GET of `target` (path and query as sent): signed with
// Shared Key unless `auth` is false (a SAS in the query, or no
// authentication), with `headers` added.
function getRequest(server, target, { auth = true, headers = {} } = {}) {
  const date = new Date().toUTCString();
  const lines = [`GET ${target} HTTP/1.1`, `Host: ${server.host}`, 'x-ms-version: 2019-02-02',
    `x-ms-date: ${date}`, 'Accept: application/json;odata=nometadata'];
  if (auth) lines.push(`Authorization: ${sign(server, { method: 'GET', target, date })}`);
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}

// --- attackers --------------------------------------------------------------------

// An attack of `clients` raw connections, each sending `makeRequest(i)` (a
// Buffer: one request, or `pipeline` of them back to back) and waiting for
// every answer before the next round, until stopped. `check(answer, i)` is
// called on the first answer of each client (its body kept). start()
// resolves once every client has sent its first request; stop() closes the
// connections and resolves to {answers, statuses}.
function loopAttack(server, { clients, makeRequest, pipeline = 1, check }) {
  let running = true;
  const conns = [];
  const statuses = {};
  let answers = 0;
  let failure = null;
  const loops = [];
  const oneClient = async (i, conn, sentFirst) => {
    let first = true;
    while (running) {
      try {
        if (conn === null || conn.closed) {
          conn = await RawConnection.open(server.host, server.port);
          conns.push(conn);
        }
        const pending = [];
        for (let p = 0; p < pipeline; p++) {
          const answer = conn.next({ keepBody: first && p === 0 });
          answer.catch(() => {});  // awaited below; all fail when the connection closes
          pending.push(answer);
        }
        conn.write(makeRequest(i));
        sentFirst();
        for (const a of pending) {
          const answer = await a;
          statuses[answer.status] = (statuses[answer.status] || 0) + 1;
          answers++;
          if (first && check) check(answer, i);
          first = false;
        }
      } catch (e) {
        if (!running) return;
        if (e instanceof assert.AssertionError) {
          failure = failure || e;
          return;
        }
        if (conn) conn.destroy();
        conn = null;
        await sleep(10);  // a pause before reconnecting, not a wait for a condition
      }
    }
  };
  return {
    async start() {
      const started = [];
      for (let i = 0; i < clients; i++) {
        const conn = await RawConnection.open(server.host, server.port);
        conns.push(conn);
        let resolve;
        started.push(new Promise((r) => { resolve = r; }));
        loops.push(oneClient(i, conn, resolve));
      }
      await Promise.all(started);
    },
    async stop() {
      running = false;
      for (const c of conns) c.destroy();
      await Promise.all(loops);
      if (failure) throw failure;
      return { answers, statuses };
    },
  };
}

// Several attacks at once, named: start() starts them in order, stop()
// resolves to {statuses: {name: statuses of that attack}}.
function together(named) {
  return {
    async start() {
      for (const a of Object.values(named)) await a.start();
    },
    async stop() {
      const statuses = {};
      for (const [name, a] of Object.entries(named)) statuses[name] = (await a.stop()).statuses;
      return { statuses };
    },
  };
}

// --- measuring ----------------------------------------------------------------------

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

// Latency statistics of the victim's requests of `kind` due within [from,
// to): over all connections, and the median of the connection whose median
// is worst (`worst`): an attack that stalls one I/O thread stalls the
// connection served there.
function windowStats(samples, kind, from, to) {
  const mine = samples.filter((s) => s.kind === kind && s.start >= from && s.start < to);
  const sorted = (list) => list.map((s) => s.end - s.start).sort((a, b) => a - b);
  const ms = sorted(mine);
  const conns = [...new Set(mine.map((s) => s.conn))];
  const perConn = conns.map((c) => percentile(sorted(mine.filter((s) => s.conn === c)), 0.5));
  return {
    count: ms.length,
    failed: mine.filter((s) => s.status !== 200 && s.status !== -1).length,
    unanswered: mine.filter((s) => s.status === -1).length,
    p50: percentile(ms, 0.5),
    worst: Math.max(...perConn),
    p99: percentile(ms, 0.99),
    max: ms.length ? ms[ms.length - 1] : NaN,
  };
}

// Starts the victim against `fixture` ({table, partitionKey, rowKey}: an
// existing entity). Resolves to {mark() → time, answered() → [count per
// connection], stop() → {samples, at}}.
function startVictim(server, fixture) {
  const worker = new Worker(path.join(__dirname, 'victim.js'), {
    workerData: {
      server: { host: server.host, port: server.port, account: server.account, key: server.key },
      ...fixture,
      connections: VICTIM_CONNECTIONS,
      intervalMs: VICTIM_INTERVAL_MS,
    },
  });
  const waiters = [];
  let error = null;
  worker.on('message', (msg) => {
    if (msg.type === 'error') error = new Error(`victim: ${msg.message}`);
    const w = waiters.shift();
    if (w) {
      if (error) w.reject(error);
      else w.resolve(msg);
    }
  });
  worker.on('error', (e) => {
    error = e;
    for (const w of waiters.splice(0)) w.reject(e);
  });
  const reply = () => new Promise((resolve, reject) => waiters.push({ resolve, reject }));
  return reply().then(() => ({
    async mark() {
      const r = reply();
      worker.postMessage({ type: 'mark' });
      return (await r).at;
    },
    async answered() {
      const r = reply();
      worker.postMessage({ type: 'answered' });
      return (await r).counts;
    },
    async stop() {
      const r = reply();
      worker.postMessage({ type: 'stop' });
      const { samples, at } = await r;
      await worker.terminate();
      return { samples, at };
    },
  }));
}

// Measures the victim unloaded for UNLOADED_MS, then starts `attack`
// ({start, stop}, e.g. loopAttack) and measures it once attack.start() has
// resolved, for `attackMs` or, if the attack has a promise `done`, until
// that resolves. Resolves to the figures:
//   read, health: {unloaded, attack} windowStats of the victim's point
//     reads and health checks
//   hwmBefore, hwmAfter: the server's VmHWM before the attack and at its end
//   rssBefore, rssAfter: VmRSS likewise
//   attack: what attack.stop() resolved to
// With `phases` ([{name, ms, attack (optional)}]), `attack` runs through
// consecutive windows of `ms` each, a phase's own attack joining it for its
// window only, and the result is {name: figures of that window} (its
// `attack` is what the phase's attack resolved to).
async function measure(server, fixture, attack, { attackMs = ATTACK_MS, phases } = {}) {
  const pid = server.child.pid;
  await settle(pid);
  const victim = await startVictim(server, fixture);
  let stopped = false;
  try {
    let counts = [];
    await waitFor(async () => (counts = await victim.answered()).every((n) => n >= WARM_ANSWERS),
      { timeoutMs: 20000, what: () => `${WARM_ANSWERS} answers on each victim connection (${counts.join(', ')})` });
    const unloadedFrom = await victim.mark();
    await sleep(UNLOADED_MS);  // the unloaded window: a measurement, not a wait
    const unloadedTo = await victim.mark();
    const hwmBefore = procStatus(pid, 'VmHWM');
    const rssBefore = procStatus(pid, 'VmRSS');
    await attack.start();
    const windows = [];
    for (const phase of phases || [{ ms: attackMs }]) {
      if (phase.attack) await phase.attack.start();
      const from = await victim.mark();
      await (phases || !attack.done ? sleep(phase.ms) : attack.done);  // the attack window
      const to = await victim.mark();
      const window = { phase, from, to, hwm: procStatus(pid, 'VmHWM'), rss: procStatus(pid, 'VmRSS') };
      if (phase.attack) window.result = await phase.attack.stop();
      windows.push(window);
    }
    const { samples } = await victim.stop();
    stopped = true;
    const attackResult = await attack.stop();
    const figures = (w) => ({
      read: {
        unloaded: windowStats(samples, 'read', unloadedFrom, unloadedTo),
        attack: windowStats(samples, 'read', w.from, w.to),
      },
      health: {
        unloaded: windowStats(samples, 'health', unloadedFrom, unloadedTo),
        attack: windowStats(samples, 'health', w.from, w.to),
      },
      hwmBefore,
      hwmAfter: w.hwm,
      rssBefore,
      rssAfter: w.rss,
      attack: w.result || attackResult,
    });
    if (!phases) return figures(windows[0]);
    return Object.fromEntries(windows.map((w) => [w.phase.name, figures(w)]));
  } finally {
    if (!stopped) {
      await victim.stop().catch(() => {});
      await attack.stop().catch(() => {});
    }
  }
}

const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : String(x));

// One line of figures for the test's diagnostics.
function describeFigures(r) {
  const s = (w) => `p50 ${f1(w.p50)} ms (worst connection ${f1(w.worst)}), p99 ${f1(w.p99)} ms, max ${f1(w.max)} ms, n ${w.count}` +
    (w.failed ? `, ${w.failed} failed` : '') + (w.unanswered ? `, ${w.unanswered} unanswered at the end` : '');
  return `point read unloaded ${s(r.read.unloaded)} | under attack ${s(r.read.attack)}\n` +
    `/_health unloaded ${s(r.health.unloaded)} | under attack ${s(r.health.attack)}\n` +
    `VmHWM ${mib(r.hwmBefore)} -> ${mib(r.hwmAfter)} (+${mib(r.hwmAfter - r.hwmBefore)}), ` +
    `VmRSS ${mib(r.rssBefore)} -> ${mib(r.rssAfter)}; attacker answers ${JSON.stringify(r.attack.statuses || {})}`;
}

// Asserts that the victim was isolated from the attack (the bound above).
function assertIsolated(r) {
  const limit = (unloaded) => Math.max(K * unloaded, FLOOR_MS);
  assert.ok(r.read.unloaded.count >= 20 && r.read.unloaded.failed === 0,
    `the victim was not served unloaded: ${JSON.stringify(r.read.unloaded)}`);
  assert.ok(r.read.attack.count >= 1 && r.health.attack.count >= 1, 'no victim request during the attack');
  assert.ok(r.read.attack.worst <= limit(r.read.unloaded.p50),
    `point read p50 ${f1(r.read.attack.worst)} ms under attack, over the bound ` +
    `${f1(limit(r.read.unloaded.p50))} ms (unloaded ${f1(r.read.unloaded.p50)} ms)`);
  assert.equal(r.read.attack.failed, 0, `${r.read.attack.failed} point reads failed`);
  assert.ok(r.health.attack.worst <= limit(r.health.unloaded.p50),
    `/_health p50 ${f1(r.health.attack.worst)} ms under attack, over the bound ` +
    `${f1(limit(r.health.unloaded.p50))} ms (unloaded ${f1(r.health.unloaded.p50)} ms)`);
  assert.equal(r.health.attack.failed, 0, `${r.health.attack.failed} /_health failed`);
  assert.ok(r.health.attack.max <= HEALTH_MAX_MS,
    `a /_health took ${f1(r.health.attack.max)} ms under attack (bound ${HEALTH_MAX_MS} ms)`);
}

// Asserts that the server's peak resident memory grew by less than `bound`
// bytes during the attack.
function assertPeakGrowth(r, bound) {
  const grown = r.hwmAfter - r.hwmBefore;
  assert.ok(grown < bound, `peak resident memory grew by ${mib(grown)} under attack (bound ${mib(bound)})`);
}

module.exports = {
  MiB,
  K,
  FLOOR_MS,
  sleep,
  procStatus,
  mib,
  createTable,
  deleteTable,
  batchBody,
  signedRequest,
  insertAll,
  tableSas,
  getRequest,
  loopAttack,
  together,
  measure,
  describeFigures,
  assertIsolated,
  assertPeakGrowth,
};
