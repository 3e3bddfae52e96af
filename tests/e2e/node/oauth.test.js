'use strict';
// OAuth at Azurite's "basic" level (--oauth basic, HTTPS only): bearer JWTs
// are decoded, not signature-checked; issuer, audience and lifetime are.
// @azure/data-tables is driven with a TokenCredential that hands out crafted
// tokens. Refused tokens get 401 InvalidAuthenticationInfo with a
// WWW-Authenticate Bearer challenge, as from the real service.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const https = require('node:https');
const { TableClient, TableServiceClient } = require('@azure/data-tables');

const { startServer: startPlainServer, uniqueTableName } = require('./server');
const { request } = require('./http');
const { makeCertificate, runBinary, startServer, httpsRequest, makeJwt, staticTokenCredential } = require('./tls-server');
const { assertError, rejectsWith } = require('./util');

const certs = makeCertificate();
const agent = new https.Agent({ ca: certs.ca, keepAlive: true });
const clientOptions = { agent, retryOptions: { maxRetries: 0 } };
const CHALLENGE_RE = /^Bearer authorization_uri=https:\/\/login\.microsoftonline\.com\/[^/ ]+\/oauth2\/authorize resource_id=https:\/\/storage\.azure\.com$/;

describe('--oauth basic over HTTPS', () => {
  let server;
  before(async () => {
    server = await startServer({ args: ['--cert', certs.cert, '--key', certs.key, '--oauth', 'basic'] });
  });
  after(async () => { if (server) await server.stop(); });

  const bearer = (claims) => ({ auth: `Bearer ${makeJwt(claims)}` });
  const now = () => Math.floor(Date.now() / 1000);

  test('@azure/data-tables with a TokenCredential: tables and entities', async () => {
    const credential = staticTokenCredential(makeJwt());
    const service = new TableServiceClient(server.endpoint, credential, clientOptions);
    const name = uniqueTableName('oauth');
    await service.createTable(name);
    const client = new TableClient(server.endpoint, name, credential, clientOptions);
    await client.createEntity({ partitionKey: 'p', rowKey: 'r', who: 'token' });
    await client.upsertEntity({ partitionKey: 'p', rowKey: 'r', more: 1 }, 'Merge');
    const got = await client.getEntity('p', 'r');
    assert.equal(got.who, 'token');
    assert.equal(got.more, 1);
    await client.submitTransaction([['create', { partitionKey: 'p', rowKey: 'r2' }], ['delete', { partitionKey: 'p', rowKey: 'r' }]]);
    const keys = [];
    for await (const e of client.listEntities()) keys.push(e.rowKey);
    assert.deepEqual(keys, ['r2']);
    const props = await service.getProperties();
    assert.ok(props);
    await service.deleteTable(name);
    assert.ok(credential.calls >= 1);
  });

  test('accepted audiences and issuers (v1 and v2 tokens, account-specific audience, aud array)', async () => {
    const accepted = [
      {},
      { aud: 'https://storage.azure.com/' },
      { aud: 'e406a681-f3d4-42a8-90b6-c2b029497af1' },
      { aud: 'https://devstoreaccount1.table.core.windows.net' },
      { aud: 'https://devstoreaccount1.table.core.windows.net/' },
      { aud: ['api://something', 'https://storage.azure.com'] },
      { iss: 'https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0', ver: '2.0' },
      { iss: 'https://sts.chinacloudapi.cn/72f988bf-86f1-41af-91ab-2d7cd011db47/' },
      { iat: undefined },
    ];
    for (const claims of accepted) {
      const res = await httpsRequest(server, certs.ca, { path: '/Tables', ...bearer(claims) });
      assert.equal(res.status, 200, `${JSON.stringify(claims)}: ${res.body}`);
    }
  });

  test('the SDK surfaces 401 InvalidAuthenticationInfo for an expired token', async () => {
    const credential = staticTokenCredential(makeJwt({ nbf: now() - 7200, exp: now() - 3600 }));
    const service = new TableServiceClient(server.endpoint, credential, clientOptions);
    await rejectsWith(service.createTable(uniqueTableName('expired')), 401, 'InvalidAuthenticationInfo');
  });

  const refusals = [
    ['an expired token', { nbf: () => now() - 7200, exp: () => now() - 3600 }, 'Lifetime validation failed. The token is expired.'],
    ['a token not yet valid', { nbf: () => now() + 3600, exp: () => now() + 7200 }, 'Lifetime validation failed. The token is not yet valid.'],
    ['a token without exp', { exp: () => undefined }, 'Lifetime validation failed. The token has no valid nbf and exp claims.'],
    ['a foreign issuer', { iss: () => 'https://accounts.google.com' }, 'Issuer validation failed. Issuer did not match.'],
    ['another service audience', { aud: () => 'https://vault.azure.net' }, 'Audience validation failed. Audience did not match.'],
    ["another account's table endpoint", { aud: () => 'https://someoneelse.table.core.windows.net' }, 'Audience validation failed. Audience did not match.'],
  ];
  for (const [what, claimFns, detail] of refusals) {
    test(`${what}: 401 InvalidAuthenticationInfo with a Bearer challenge`, async () => {
      const claims = Object.fromEntries(Object.entries(claimFns).map(([k, f]) => [k, f()]));
      const res = await httpsRequest(server, certs.ca, { path: '/Tables', ...bearer(claims) });
      assertError(res, 401, 'InvalidAuthenticationInfo', {
        message: `Server failed to authenticate the request. Please refer to the information in the www-authenticate header.\n${detail}`,
      });
      assert.match(res.headers['www-authenticate'] || '', CHALLENGE_RE);
    });
  }

  test('a bearer value that is not a JWT: 401 with the challenge', async () => {
    for (const token of ['not-a-jwt', 'a.b', '%%%.%%%.%%%', `${Buffer.from('{}').toString('base64url')}.${Buffer.from('[]').toString('base64url')}.x`]) {
      const res = await httpsRequest(server, certs.ca, { path: '/Tables', auth: `Bearer ${token}` });
      assertError(res, 401, 'InvalidAuthenticationInfo');
      assert.match(res.headers['www-authenticate'] || '', CHALLENGE_RE);
    }
  });

  test('Get/Set Table ACL are not available with OAuth: 403 AuthorizationFailure', async () => {
    const credential = staticTokenCredential(makeJwt());
    const name = uniqueTableName('oauthacl');
    const client = new TableClient(server.endpoint, name, credential, clientOptions);
    await client.createTable();
    const res = await httpsRequest(server, certs.ca, {
      path: `/${name}?comp=acl`, headers: { Accept: 'application/xml' }, ...bearer({}),
    });
    assert.equal(res.status, 403, res.body);
    assert.equal(res.headers['x-ms-error-code'], 'AuthorizationFailure');
  });

  test('bearer with x-ms-version older than 2017-11-09: 403 AuthenticationFailed', async () => {
    const res = await httpsRequest(server, certs.ca, { path: '/Tables', headers: { 'x-ms-version': '2017-07-29' }, ...bearer({}) });
    assertError(res, 403, 'AuthenticationFailed');
  });

  test('Shared Key keeps working next to OAuth', async () => {
    const res = await httpsRequest(server, certs.ca, { path: '/Tables' });
    assert.equal(res.status, 200, res.body);
  });
});

describe('OAuth start-up rules', () => {
  test('--oauth basic without --cert refuses to start (exit 1), as Azurite requires HTTPS for OAuth', () => {
    const r = runBinary(['--oauth', 'basic']);
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /OAuth requires HTTPS endpoint/);
    assert.doesNotMatch(r.stdout, /listening/);
  });

  test('--oauth with an unknown level is a usage error (exit 2)', () => {
    const r = runBinary(['--cert', certs.cert, '--key', certs.key, '--oauth', 'strict']);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /--oauth: unknown level 'strict'/);
  });

  test('--oauth BASIC is accepted case-insensitively', async () => {
    const server = await startServer({ args: ['--cert', certs.cert, '--key', certs.key, '--oauth', 'BASIC'] });
    try {
      const res = await httpsRequest(server, certs.ca, { path: '/Tables', auth: `Bearer ${makeJwt()}` });
      assert.equal(res.status, 200, res.body);
    } finally {
      await server.stop();
    }
  });

  test('HTTPS without --oauth: a valid-looking bearer token is refused (403 AuthenticationFailed)', async () => {
    const server = await startServer({ args: ['--cert', certs.cert, '--key', certs.key] });
    try {
      const res = await httpsRequest(server, certs.ca, { path: '/Tables', auth: `Bearer ${makeJwt()}` });
      assertError(res, 403, 'AuthenticationFailed');
    } finally {
      await server.stop();
    }
  });

  test('bearer over plain HTTP is refused: 403 AuthenticationFailed', async () => {
    const server = await startPlainServer();
    try {
      const res = await request(server, { path: '/Tables', auth: () => `Bearer ${makeJwt()}` });
      assertError(res, 403, 'AuthenticationFailed');
      assert.match(res.json['odata.error'].message.value, /Authentication scheme Bearer is not allowed with HTTP\./);
    } finally {
      await server.stop();
    }
  });
});
