/** The data scope behind a test tenant's key, for suites that watch the store's change feed. */
import type { DataScope } from '../../src/store/port.js';
import { ChangeReader } from '../store/fixtures.js';
import type { Tenant, TestServer } from './server.js';

export async function tenantScope(server: TestServer, tenant: Tenant): Promise<DataScope> {
  const { accounts } = server.running.services.store;
  const account = await accounts.findAccountByEmail(tenant.email.toLowerCase());
  const project = account
    ? (await accounts.listProjects(account.id)).find((p) => p.name === tenant.project)
    : undefined;
  if (!project) throw new Error(`no project ${tenant.project} for ${tenant.email}`);
  return { projectId: project.id, env: 'test' };
}

/** Runs `read` with a reader of the tenant's changes to `collection`; closes it after. */
export async function withChanges(
  server: TestServer,
  tenant: Tenant,
  collection: string,
  read: (reader: ChangeReader) => Promise<void>,
): Promise<void> {
  const scope = await tenantScope(server, tenant);
  const reader = new ChangeReader(server.running.services.store.changes.watch(scope, collection));
  try {
    await read(reader);
  } finally {
    reader.sub.close();
  }
}
