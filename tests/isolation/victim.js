'use strict';
// The victim of the isolation suite, run in a worker thread so that the
// attackers' work on the main thread's event loop cannot delay its clock:
// a client on `connections` keep-alive connections of its own (the first
// half for signed point reads of one entity, the rest for GET /_health) that
// sends on each a request every `intervalMs` whether or not the previous
// ones were answered (pipelined). A request's latency runs from the moment it was due to
// its answer, so a connection stalled for a second shows as a second of slow
// requests, not as one slow request among many fast ones. It records every
// request and answers the main thread's messages:
//   {type: 'mark'}  → {type: 'mark', at}: the time of a phase boundary
//   {type: 'answered'} → {type: 'answered', counts}: requests answered 200
//                     so far on each connection
//   {type: 'stop'}  → {type: 'samples', samples, at}: requests still
//                     unanswered are included, ending at `at`, status -1
// Samples: {conn (index), kind: 'read' | 'health', start, end, status (0:
// failed, -1: unanswered at stop)}; times are performance.now() of this
// thread.

const { parentPort, workerData } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const { sign } = require('../e2e/node/http');
const { RawConnection } = require('./raw-client');

const { server, table, partitionKey, rowKey, connections, intervalMs } = workerData;
const samples = [];
const inFlight = new Set();
let running = true;

const readTarget = `/${server.account}/${table}(PartitionKey='${partitionKey}',RowKey='${rowKey}')`;
let dateSecond = 0;
let date = '';
function readRequest() {
  const now = Date.now();
  if (Math.floor(now / 1000) !== dateSecond) {
    dateSecond = Math.floor(now / 1000);
    date = new Date(now).toUTCString();
  }
  const auth = sign(server, { method: 'GET', target: readTarget, date });
  return Buffer.from(`GET ${readTarget} HTTP/1.1\r\nHost: ${server.host}\r\nx-ms-version: 2019-02-02\r\n` +
    `x-ms-date: ${date}\r\nAccept: application/json;odata=nometadata\r\nAuthorization: ${auth}\r\n\r\n`);
}
const HEALTH = Buffer.from(`GET /_health HTTP/1.1\r\nHost: ${server.host}\r\n\r\n`);

// Sends a request on connection `index` every intervalMs until stopped,
// reopening the connection if the server closes it.
function run(index, first) {
  let conn = first;
  let opening = null;
  const kind = index < connections / 2 ? 'read' : 'health';
  const tick = async () => {
    if (!running) return;
    const sample = { conn: index, kind, start: performance.now(), end: 0, status: 0 };
    inFlight.add(sample);
    try {
      if (conn === null || conn.closed) {
        opening = opening || RawConnection.open(server.host, server.port);
        conn = await opening;
        opening = null;
      }
      const answer = await conn.send(kind === 'read' ? readRequest() : HEALTH);
      sample.status = answer.status;
    } catch {
      if (conn && !conn.closed) conn.destroy();
      conn = null;
      opening = null;
    }
    if (!inFlight.delete(sample)) return;  // reported as unanswered at stop
    sample.end = performance.now();
    samples.push(sample);
  };
  const timer = setInterval(tick, intervalMs);
  return () => {
    clearInterval(timer);
    if (conn) conn.destroy();
  };
}

(async () => {
  // The connections are opened one after the other before any attacker
  // connects, so that the listener, which deals connections out to the I/O
  // threads in turn, gives each thread of a 2-core machine a read connection
  // and a health connection.
  const conns = [];
  for (let i = 0; i < connections; i++) conns.push(await RawConnection.open(server.host, server.port));
  const stops = conns.map((c, i) => run(i, c));
  parentPort.postMessage({ type: 'ready' });
  parentPort.on('message', (msg) => {
    if (msg.type === 'mark') {
      parentPort.postMessage({ type: 'mark', at: performance.now() });
    } else if (msg.type === 'answered') {
      const counts = new Array(connections).fill(0);
      for (const s of samples) if (s.status === 200) counts[s.conn]++;
      parentPort.postMessage({ type: 'answered', counts });
    } else if (msg.type === 'stop') {
      running = false;
      const at = performance.now();
      for (const s of inFlight) samples.push({ ...s, end: at, status: -1 });
      inFlight.clear();
      for (const stop of stops) stop();
      parentPort.postMessage({ type: 'samples', samples, at });
    }
  });
})().catch((e) => {
  parentPort.postMessage({ type: 'error', message: String(e && e.stack || e) });
});
