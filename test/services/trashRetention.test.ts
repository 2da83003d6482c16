/**
 * Trash retention through the services, on a real embedded store, with the clock moved by the
 * test: a Free plan's deleted document is restorable until one second before its day is out,
 * gone to readers at the day, and erased by the sweep then.
 */
import { expect } from 'chai';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { newId } from '../../src/ids.js';
import type { KeyContext } from '../../src/services/context.js';
import { createServices, type Services } from '../../src/services/index.js';
import { compileKeyAccess } from '../../src/services/keyAccess.js';
import type { EmbeddedStore } from '../../src/store/embedded/index.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from '../store/embeddedFactory.js';

const DAY_MS = 24 * 60 * 60 * 1000;

describe('trash retention (services, moved clock)', () => {
  let store: EmbeddedStore;
  let services: Services;
  let now = Date.parse('2030-06-01T12:00:00.000Z');
  const config = loadConfig({});
  const ctx = (plan: 'free' | 'pro' | 'team'): KeyContext =>
    ({
      plan,
      limits: config.plans[plan],
      scope: { projectId: newId('prj'), env: 'test' },
      key: { hint: 'folio_sk_test_...wxyz' },
      access: compileKeyAccess(null, 'read-write'),
    }) as KeyContext;

  before(async () => {
    store = await createTempEmbeddedStore();
    services = createServices(store, config, pino({ level: 'silent' }), () => now);
  });
  after(async () => {
    await destroyTempEmbeddedStore(store);
  });

  it('keeps the plan retention to the second, then the entry is gone and the sweep erases it', async () => {
    const free = ctx('free');
    const doc = await services.documents.create(free, 'notes', { a: 1 });
    const deletedAt = now;
    await services.documents.delete(free, 'notes', doc._id);
    const listed = await services.trash.list(free, 'notes', {});
    expect(listed.data[0]).to.include({ _id: doc._id, deletedBy: 'folio_sk_test_...wxyz' });
    expect(Date.parse(listed.data[0]!.expiresAt)).to.equal(deletedAt + DAY_MS);

    now = deletedAt + DAY_MS - 1000;
    expect((await services.trash.get(free, 'notes', doc._id))._id).to.equal(doc._id);
    expect(await services.trashSweeper.sweep()).to.equal(0);

    now = deletedAt + DAY_MS;
    const gone = await services.trash.get(free, 'notes', doc._id).catch((e: { status: number }) => e.status);
    expect(gone).to.equal(404);
    const restored = await services.trash
      .restore(free, 'notes', doc._id)
      .catch((e: { status: number }) => e.status);
    expect(restored).to.equal(404);
    expect(await services.trashSweeper.sweep()).to.equal(1);
  });

  it('restores within the retention (Pro: 30 days)', async () => {
    const pro = ctx('pro');
    const doc = await services.documents.create(pro, 'notes', { a: 1 });
    const deletedAt = now;
    await services.documents.delete(pro, 'notes', doc._id);
    now = deletedAt + 30 * DAY_MS - 1000;
    const back = await services.trash.restore(pro, 'notes', doc._id);
    expect(back).to.include({ _id: doc._id, a: 1, $version: 2 });
  });

  it('a plan with 0 days keeps no trash: a delete erases', async () => {
    const team = { ...ctx('team'), limits: { ...config.plans.team, trashRetentionDays: 0 } };
    const doc = await services.documents.create(team, 'notes', { a: 1 });
    await services.documents.delete(team, 'notes', doc._id);
    expect((await services.trash.list(team, 'notes', {})).data).to.deep.equal([]);
  });

  it('config holds the documented retention per plan', () => {
    expect(
      [config.plans.free, config.plans.pro, config.plans.team].map((p) => p.trashRetentionDays),
    ).to.deep.equal([1, 30, 90]);
  });
});
