'use strict';
// cerulean-tables without its optional peer @azure/data-tables: tests/packages/node.sh runs this
// file in a second scratch project that installs the tarball alone.
const assert = require('node:assert/strict');
const { test } = require('node:test');
const { start, CeruleanSdkNotFoundError } = require('cerulean-tables');

test('without @azure/data-tables the server runs and tableClient() names the package to install', async () => {
  assert.throws(() => require.resolve('@azure/data-tables'), { code: 'MODULE_NOT_FOUND' });
  const server = await start();
  try {
    await server.reset();
    assert.throws(() => server.tableClient('orders'), (e) => e instanceof CeruleanSdkNotFoundError &&
      e.code === 'CERULEAN_SDK_NOT_FOUND' && /npm install --save-dev @azure\/data-tables/.test(e.message));
    assert.throws(() => server.tableServiceClient(), CeruleanSdkNotFoundError);
  } finally {
    await server.stop();
  }
});
