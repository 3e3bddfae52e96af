'use strict';
// Assertions, /_metrics reading and waiting on a condition, shared by the
// Node end-to-end suites (and the isolation and resilience suites).

const assert = require('node:assert/strict');

const { request } = require('./http');

const ETAG_RE = /^W\/"datetime'(\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d(?:\.\d{1,7})?Z)'"$/;
const TIMESTAMP_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{0,6}[1-9])?Z$/;

// Asserts a raw response (http.js) is the error `code` (or one of `code` when
// an array) with `status`: x-ms-error-code header, odata.error body with
// lang en-US and a message ending in the RequestId/Time lines.
function assertError(res, status, code, { message, messagePrefix } = {}) {
  const codes = Array.isArray(code) ? code : [code];
  assert.equal(res.status, status, `expected ${status} ${codes.join('|')}, got ${res.status}: ${res.body.slice(0, 500)}`);
  assert.ok(res.json && res.json['odata.error'], `expected an odata.error JSON body, got: ${res.body.slice(0, 500)}`);
  const err = res.json['odata.error'];
  assert.ok(codes.includes(err.code), `odata.error.code ${err.code}, expected ${codes.join('|')}`);
  assert.equal(res.headers['x-ms-error-code'], err.code, 'x-ms-error-code header must equal odata.error.code');
  assert.equal(err.message && err.message.lang, 'en-US');
  const value = err.message.value;
  assert.equal(typeof value, 'string');
  const requestId = res.headers['x-ms-request-id'];
  assert.ok(requestId, 'x-ms-request-id missing on error');
  assert.match(value, new RegExp(`\\nRequestId:${requestId.replace(/[-]/g, '\\-')}\\nTime:\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{7}Z$`),
    `message must end with RequestId/Time lines: ${JSON.stringify(value)}`);
  const userMessage = value.slice(0, value.indexOf('\nRequestId:'));
  if (message !== undefined) assert.equal(userMessage, message);
  if (messagePrefix !== undefined) assert.ok(userMessage.startsWith(messagePrefix), `message ${JSON.stringify(userMessage)} should start with ${JSON.stringify(messagePrefix)}`);
  return err;
}

// The service error code of an SDK failure. @azure/data-tables' RestError
// leaves .code undefined for ordinary (non-batch) errors because core-client
// looks for body.error.code; the code is then read from the parsed
// odata.error body, or from the raw body text.
function errorCode(error) {
  if (error.code) return error.code;
  const parsed = error.response && error.response.parsedBody;
  if (parsed && parsed.odataError && parsed.odataError.code) return parsed.odataError.code;
  const text = error.response && (error.response.bodyAsText || error.response.body);
  if (typeof text === 'string') {
    try {
      const body = JSON.parse(text);
      if (body['odata.error']) return body['odata.error'].code;
    } catch { /* not JSON */ }
  }
  return undefined;
}

// Asserts an SDK RestError-like failure with statusCode and code.
async function rejectsWith(promise, statusCode, code) {
  const codes = Array.isArray(code) ? code : [code];
  let error;
  try {
    await promise;
  } catch (e) {
    error = e;
  }
  assert.ok(error, `expected a ${statusCode} ${codes.join('|')} failure, but the call succeeded`);
  const actual = errorCode(error);
  const text = typeof error.message === 'string' ? error.message : JSON.stringify(error.message);
  assert.equal(error.statusCode, statusCode, `statusCode ${error.statusCode} (${actual}): ${text}`);
  if (code !== undefined) assert.ok(codes.includes(actual), `code ${actual}, expected ${codes.join('|')}: ${text}`);
  return error;
}

function assertEtag(etag) {
  assert.match(String(etag), ETAG_RE, `bad ETag ${etag}`);
}

// The ETag the spec derives from a Timestamp string.
function etagOf(timestamp) {
  return `W/"datetime'${timestamp.replace(/:/g, '%3A')}'"`;
}

// Parses an ISO-8601 UTC date-time with up to 7 fractional digits into
// 100 ns ticks since the Unix epoch (BigInt), so instants can be compared
// without losing the last digits.
function ticks(iso) {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,7}))?Z$/.exec(iso);
  assert.ok(m, `not a UTC date-time: ${iso}`);
  const ms = Date.parse(`${m[1]}Z`);
  const frac = (m[2] || '').padEnd(7, '0');
  return BigInt(ms) * 10000n + BigInt(frac);
}

// Ordinal (UTF-16 code unit) comparison, the order of keys on the wire.
function ordinal(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareKeys(a, b) {
  return ordinal(a.partitionKey ?? a.PartitionKey, b.partitionKey ?? b.PartitionKey) ||
    ordinal(a.rowKey ?? a.RowKey, b.rowKey ?? b.RowKey);
}

// A counter of /_metrics by the values of one label, e.g.
// metricCounts(server, 'cerulean_queries_total', 'answered') -> { deferred: 1, inline: 3 }.
// `agent` sends it over that http.Agent's connections.
async function metricCounts(server, metric, label, agent) {
  const res = await request(server, { rawTarget: '/_metrics', auth: 'none', agent });
  assert.equal(res.status, 200, res.body);
  const counts = {};
  for (const m of res.body.matchAll(new RegExp(`^${metric}\\{${label}="(\\w+)"\\} (\\d+)$`, 'gm'))) {
    counts[m[1]] = Number(m[2]);
  }
  return counts;
}

// Polls `condition` (sync or async) every `intervalMs` until it returns a
// truthy value, and resolves to that value. Throws, naming `what` (a string,
// or a function called at the timeout for a message with the state then),
// when `timeoutMs` pass first. The cap is generous: it bounds a hang, it is
// not a measured expectation.
async function waitFor(condition, { timeoutMs = 10000, intervalMs = 20, what = 'the condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() >= deadline) {
      throw new assert.AssertionError({ message: `timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}` });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

module.exports = { waitFor, metricCounts, assertError, rejectsWith, errorCode, assertEtag, etagOf, ticks, ordinal, compareKeys, ETAG_RE, TIMESTAMP_RE };
