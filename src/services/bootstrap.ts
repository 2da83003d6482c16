/**
 * First start on an empty embedded store: a dev account, a `default` project and a test
 * read-write key, so `npm start` is usable at once. The credentials are returned to be printed
 * once; only hashes are stored, so they can never be shown again. The server calls this only
 * once it listens (src/server.ts): a start that fails earlier leaves the store empty, and the
 * next start creates them afresh.
 */
import { randomBytes } from 'node:crypto';
import type { Services } from './index.js';

export const DEV_EMAIL = 'dev@folio.local';

export interface BootstrapResult {
  email: string;
  password: string;
  project: string;
  rawKey: string;
}

export async function bootstrapIfEmpty(services: Services): Promise<BootstrapResult | null> {
  if ((await services.store.accounts.countAccounts()) > 0) return null;
  const password = randomBytes(12).toString('base64url');
  const { account } = await services.accounts.signup({ email: DEV_EMAIL, password }, { force: true });
  const project = await services.accounts.createProject(account, 'default');
  const { rawKey } = await services.apiKeys.create(account, project, {
    name: 'Default test key',
    env: 'test',
    scope: 'read-write',
    config: {},
  });
  return { email: DEV_EMAIL, password, project: project.name, rawKey };
}
