'use strict';
// The ready-made fixture under mocha (its globals before, after, beforeEach, it): tests/packages/node.sh
// runs this file with mocha in the scratch project where it installed the packed tarball.
const assert = require('node:assert/strict');
const { fixture } = require('cerulean-tables');

const tables = fixture({ before, after, beforeEach }, { seed: (account) => account.tableClient('orders').createTable() });
it('writes to the seeded table', () => tables.account.tableClient('orders').createEntity({ partitionKey: 'a', rowKey: '1' }));
it('starts from the seed again', async () => {
  for await (const e of tables.account.tableClient('orders').listEntities()) assert.fail(`left over: ${e.rowKey}`);
});
