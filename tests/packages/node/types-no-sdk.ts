// Compiled with tsc --noEmit --strict by tests/packages/node.sh in a project without
// @azure/data-tables: the package's types compile without their optional peer (no TS2307, no
// --skipLibCheck), and `await using` stops a server.
import { start, fixture, CeruleanSdkNotFoundError, type CeruleanAccount } from 'cerulean-tables';
import { after, before } from 'node:test';

export async function example(): Promise<string> {
  await using server = await start({ accounts: 2 });
  await using account: CeruleanAccount = await server.leaseAccount();
  const tables = fixture({ before, after });
  try {
    server.tableClient('orders');
  } catch (e) {
    if (e instanceof CeruleanSdkNotFoundError) return e.code;
  }
  return account.connectionString + tables.restore.name;
}
