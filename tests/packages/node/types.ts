// Compiled with tsc --noEmit --strict by tests/packages/node.sh: the package's types describe
// what a TypeScript test writes.
import { start, binaryPath, fixture, CeruleanAdminError, type FaultRule, type FaultRuleStatus, type CeruleanServer } from 'cerulean-tables';
import type { TableClient } from '@azure/data-tables';
import { after, before, beforeEach } from 'node:test';

const tables = fixture({ before, after, beforeEach }, { seed: (account) => account.tableClient('orders').createTable().then(() => {}) });

export async function disposed(): Promise<string> {
  await using server = await start();
  const orders: TableClient = tables.account.tableClient('orders');
  return server.url + orders.tableName;
}

export async function example(): Promise<number> {
  const server: CeruleanServer = await start({ storage: 'temporaryDirectory', args: ['--loose'] });
  const orders: TableClient = server.tableClient('orders', { retryOptions: { maxRetries: 1 } });
  await orders.createTable();
  const rules: FaultRule[] = [{ operation: 'InsertEntity', status: 503, code: 'ServerBusy', count: 1 }];
  const set: FaultRuleStatus[] = await server.setFaults(rules);
  const fired: number = (await server.getFaults())[0].fired;
  const snapshot = await server.saveSnapshot('s');
  const created: Date = snapshot.created;
  const restored = await server.restoreSnapshot(snapshot.name);
  try {
    await server.deleteSnapshot('missing');
  } catch (e) {
    if (e instanceof CeruleanAdminError && e.statusCode === 404) console.log(e.code);
  }
  await server.reset();
  await server.stop();
  return set.length + fired + restored.tablesKept + created.getTime() + server.port + binaryPath().length;
}
