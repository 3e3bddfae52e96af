// The ready-made fixture under vitest (beforeAll and afterAll as before and after):
// tests/packages/node.sh runs this file with vitest in the scratch project where it installed the
// packed tarball.
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { fixture } from 'cerulean-tables';

const tables = fixture({ before: beforeAll, after: afterAll, beforeEach }, { seed: (account) => account.tableClient('orders').createTable() });
test('writes to the seeded table', () => tables.account.tableClient('orders').createEntity({ partitionKey: 'a', rowKey: '1' }));
test('starts from the seed again', async () => {
  const rows = [];
  for await (const e of tables.account.tableClient('orders').listEntities()) rows.push(e.rowKey);
  expect(rows).toEqual([]);
});
