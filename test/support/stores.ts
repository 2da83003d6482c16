/**
 * Runs an HTTP suite once per available store: the embedded store always, MongoDB when
 * test/support/mongodb.ts finds one (it prints the SKIPPED line otherwise).
 */
import type { ConfigOverrides } from '../../src/config/load.js';
import type { EmbeddedStore } from '../../src/store/embedded/index.js';
import type { Plan } from '../../src/store/port.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from '../store/embeddedFactory.js';
import { fixture } from './fixture.js';
import { mongoServerOverrides } from './mongodb.js';
import { type Json, startTestServer, type Tenant, type TestServer } from './server.js';

export interface StoreTarget {
  /** `embedded`, or a name tagged `@mongodb` so `npm run test:mongodb` can select it. */
  name: string;
  overrides(): Promise<ConfigOverrides>;
}

const targets: StoreTarget[] = [
  { name: 'embedded', overrides: async () => ({}) },
  ...(await mongoServerOverrides()),
];

export interface SuiteContext {
  server: TestServer;
  tenant: Tenant;
}

/** `describe` the suite for each store, with a fresh server and tenant per store. */
export function forEachStore(
  title: string,
  body: (ctx: SuiteContext, target: StoreTarget) => void,
  options: { plan?: Plan; config?: ConfigOverrides; realRateLimits?: boolean } = {},
): void {
  for (const target of targets) {
    describe(`${title} [${target.name}]`, () => {
      const ctx = {} as SuiteContext;
      before(async () => {
        ctx.server = await startTestServer({
          config: { ...(await target.overrides()), ...options.config },
          realRateLimits: options.realRateLimits ?? false,
        });
        ctx.tenant = await ctx.server.tenant({ plan: options.plan ?? 'free' });
      });
      after(async () => {
        await ctx.server?.close();
      });
      body(ctx, target);
    });
  }
}

/**
 * The calls a suite of `forEachStore` makes as its tenant: `at` builds a collection's path in
 * the tenant's project, `call` sends a request with the tenant's key (or `key`).
 */
export function tenantCalls(ctx: SuiteContext) {
  const at = (collection: string, rest = '') => `/${ctx.tenant.project}/${collection}${rest}`;
  const call = (method: string, path: string, body?: Json, key = ctx.tenant.key, contentType?: string) =>
    ctx.server.request(method, path, {
      key,
      ...(body === undefined ? {} : { body }),
      ...(contentType ? { contentType } : {}),
    });
  return { at, call };
}

/** Call inside a suite: a read-only key of its tenant, made before its tests (a getter for it). */
export function readOnlyKey(ctx: SuiteContext): () => string {
  return fixture(
    'suite',
    async () => (await ctx.tenant.newKey({ scope: 'read-only' })).rawKey,
    async () => {},
  );
}

/** Call inside a `describe`: an embedded store in a temporary directory, for each test or the suite. */
export function tempEmbeddedStore(per: 'each' | 'suite'): () => EmbeddedStore {
  return fixture(per, () => createTempEmbeddedStore(), destroyTempEmbeddedStore);
}
