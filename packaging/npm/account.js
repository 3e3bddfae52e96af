'use strict';
// One account of a running Cerulean server, and the signed requests to its reserved /_reset,
// /_snapshots and /_faults endpoints. A server serves the development account and, when started
// with `accounts: N`, N more that tests lease one each (leaseAccount()): every reset, snapshot and
// fault rule is per account, so tests that run at once on one server do not see each other.

const crypto = require('node:crypto');
const http = require('node:http');

class CeruleanSdkNotFoundError extends Error {
  constructor(message, cause) {
    super(message, { cause });
    this.name = 'CeruleanSdkNotFoundError';
    this.code = 'CERULEAN_SDK_NOT_FOUND';
  }
}

class CeruleanAdminError extends Error {
  constructor(message, statusCode, code) {
    super(message);
    this.name = 'CeruleanAdminError';
    this.statusCode = statusCode;
    this.code = code;
  }
}

// @azure/data-tables, the optional peer dependency, loaded when a client is first asked for.
function dataTables(call) {
  try {
    return require('@azure/data-tables');
  } catch (e) {
    if (e?.code !== 'MODULE_NOT_FOUND' || !String(e.message).includes('@azure/data-tables')) throw e;
    throw new CeruleanSdkNotFoundError(
      `${call} needs the package @azure/data-tables, an optional peer dependency of cerulean-tables: ` +
      'npm install --save-dev @azure/data-tables (or connect any other client with connectionString).', e);
  }
}

// One request to a reserved endpoint, signed with Shared Key (Table service form: VERB,
// Content-MD5, Content-Type, Date, then "/{account}{path}"). Resolves to the parsed JSON body.
function adminRequest({ host, port, agent, account, key }, method, target, body) {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
  const contentType = payload ? 'application/json' : '';
  const date = new Date().toUTCString();
  const stringToSign = `${method}\n\n${contentType}\n${date}\n/${account}${target}`;
  const signature = crypto.createHmac('sha256', Buffer.from(key, 'base64')).update(stringToSign, 'utf8').digest('base64');
  const headers = {
    'x-ms-date': date,
    'x-ms-version': '2019-02-02',
    Authorization: `SharedKey ${account}:${signature}`,
    'Content-Length': payload ? payload.length : 0,
  };
  if (payload) headers['Content-Type'] = contentType;
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port, method, path: target, headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        if (res.statusCode >= 200 && res.statusCode < 300) return resolve(json);
        const code = res.headers['x-ms-error-code'];
        const message = json?.['odata.error']?.message?.value ?? text;
        reject(new CeruleanAdminError(`${method} ${target}: ${res.statusCode} ${code ?? ''}: ${message}`, res.statusCode, code));
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

function snapshotInfo(j) {
  return { name: j.name, created: new Date(j.created), tables: j.tables, entities: j.entities };
}

// The account `name` (key `key`) of the server at `endpoint` ({ protocol, host, port, agent }).
class CeruleanAccount {
  constructor(endpoint, name, key, release) {
    this._endpoint = endpoint;
    this._release = release;
    this.name = name;
    this.key = key;
    this.url = `${endpoint.protocol}://${endpoint.host}:${endpoint.port}/${name}`;
    this.connectionString =
      `DefaultEndpointsProtocol=${endpoint.protocol};AccountName=${name};AccountKey=${key};TableEndpoint=${this.url};`;
  }

  tableServiceClient(options = {}) {
    const { TableServiceClient } = dataTables('tableServiceClient()');
    return TableServiceClient.fromConnectionString(this.connectionString, { allowInsecureConnection: true, ...options });
  }

  tableClient(tableName, options = {}) {
    const { TableClient } = dataTables('tableClient()');
    return TableClient.fromConnectionString(this.connectionString, tableName, { allowInsecureConnection: true, ...options });
  }

  // Deletes every table of the account at once (snapshots stay).
  async reset() {
    await this._admin('POST', `/_reset/${this.name}`);
  }

  // Saves the account (tables, entities with their ETags and Timestamps, ACLs, service
  // properties) as `name`, replacing a snapshot of that name.
  async saveSnapshot(name) {
    return snapshotInfo(await this._admin('PUT', this._snapshotPath(name)));
  }

  // Brings the account back to exactly the state saved as `name`, atomically.
  async restoreSnapshot(name) {
    return this._admin('POST', `${this._snapshotPath(name)}/restore`);
  }

  async listSnapshots() {
    return (await this._admin('GET', `/_snapshots/${this.name}`)).snapshots.map(snapshotInfo);
  }

  async deleteSnapshot(name) {
    await this._admin('DELETE', this._snapshotPath(name));
  }

  // Replaces the account's fault rules (tried in order; the first that matches and fires decides)
  // and resolves to them as the server lists them, with their counters. Rules read back by
  // getFaults() may be passed again: their counters are left out.
  async setFaults(rules) {
    const clean = rules.map(({ account, matched, fired, ...rule }) => rule);
    return (await this._admin('PUT', `/_faults/${this.name}`, { rules: clean })).rules;
  }

  // The account's fault rules with how often each matched and fired.
  async getFaults() {
    return (await this._admin('GET', `/_faults/${this.name}`)).rules;
  }

  async clearFaults() {
    await this._admin('DELETE', `/_faults/${this.name}`);
  }

  // A leased account: empties it (tables, snapshots, fault rules) and gives it back to the server.
  async release() {
    if (!this._release) throw new TypeError(`account ${this.name} was not leased`);
    const release = this._release;
    this._release = undefined;
    await this.clearFaults();
    await this.reset();
    for (const s of await this.listSnapshots()) await this.deleteSnapshot(s.name);
    release(this);
  }

  async [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    if (this._release) await this.release();
  }

  _snapshotPath(name) {
    return `/_snapshots/${this.name}/${encodeURIComponent(name)}`;
  }

  _admin(method, target, body) {
    return adminRequest({ ...this._endpoint, account: this.name, key: this.key }, method, target, body);
  }
}

// `count` accounts for a server to serve beside the development account: names cerulean1…,
// random keys. Returns them and the AZURITE_ACCOUNTS value that declares them.
function accountPool(count) {
  const accounts = [];
  for (let i = 1; i <= count; ++i) accounts.push({ name: `cerulean${i}`, key: crypto.randomBytes(64).toString('base64') });
  return { accounts, spec: accounts.map((a) => `${a.name}:${a.key}`).join(';') };
}

module.exports = { CeruleanAccount, CeruleanAdminError, CeruleanSdkNotFoundError, accountPool, dataTables };
