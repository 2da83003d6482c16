/**
 * A tenant and its webhooks written straight through the store, for the suites that drive the
 * dispatcher and the job runner without the HTTP API.
 */
import { isoNow, newId } from '../../src/ids.js';
import { SecretVault } from '../../src/services/webhooks/secretVault.js';
import type { DeliveryTask } from '../../src/store/deliveryJob.js';
import type { DataScope, Store } from '../../src/store/port.js';

/** A Free account with one project; its test environment's scope. */
export async function seedTenantScope(store: Store): Promise<DataScope> {
  const now = isoNow();
  const account = {
    id: newId('acc'),
    email: `${newId('acc')}@example.test`,
    passwordHash: 'x',
    plan: 'free' as const,
    createdAt: now,
  };
  await store.accounts.createAccount(account);
  const project = {
    id: newId('prj'),
    accountId: account.id,
    name: 'app',
    createdAt: now,
    allowedOrigins: null,
  };
  await store.accounts.createProject(project);
  return { projectId: project.id, env: 'test' };
}

/** An active webhook on `document.created` of `collection`, signing with `whsec_test`; its id. */
export async function seedWebhookOn(
  store: Store,
  scope: DataScope,
  collection: string,
  url: string,
): Promise<string> {
  const now = isoNow();
  const id = newId('wh');
  const sealer = await new SecretVault(store, '').sealer();
  await store.webhooks.create(
    {
      id,
      scope,
      collection,
      url,
      events: ['document.created'],
      description: '',
      status: 'active',
      sealedSecret: sealer.seal('whsec_test', id),
      consecutiveFailures: 0,
      createdAt: now,
      updatedAt: now,
    },
    1,
  );
  return id;
}

/**
 * A `document.created` delivery of document `doc_<n>` in collection `orders`, as the dispatcher
 * hands it to the job runner; a scope and webhook of their own unless given.
 */
export function deliveryTask(
  n: number,
  scope: DataScope = { projectId: newId('prj'), env: 'test' },
  webhookId = newId('wh'),
): DeliveryTask {
  const deliveryId = newId('dlv');
  return {
    dedupeKey: deliveryId,
    deliveryId,
    webhookId,
    projectId: scope.projectId,
    env: scope.env,
    collection: 'orders',
    event: 'document.created',
    documentId: `doc_${n}`,
    timestamp: isoNow(),
    body: JSON.stringify({ n }),
    bodyKey: `body_${deliveryId}`,
    enqueuedAt: Date.now(),
  };
}
