/**
 * How an import reaches the disk on the embedded store: its batches commit without their own
 * sync, one sync per 10 batches and one before the answer (none more when the last batch just
 * synced), and every event of the import is published by the time it answers, with no other
 * write to carry its batches to the disk.
 */
import { expect } from 'chai';
import type { EmbeddedStore } from '../../src/store/embedded/index.js';
import { ChangeReader } from '../store/fixtures.js';
import { tenantScope } from '../support/scope.js';
import { startTestServer, type TestServer } from '../support/server.js';

const BATCH = 3;

describe('import: syncs per batches [embedded]', function () {
  this.timeout(60_000);
  let server: TestServer;
  before(async () => {
    server = await startTestServer({
      config: { imports: { batchDocuments: BATCH }, plans: { free: { maxImportDocuments: 1000 } } },
    });
  });
  after(async () => {
    await server?.close();
  });

  async function importCounting(
    records: number,
  ): Promise<{ groups: number; durable: number; status: number }> {
    const tenant = await server.tenant({ plan: 'free' });
    const store = server.running.services.store as EmbeddedStore;
    const collection = `sync${records}`;
    const reader = new ChangeReader(store.changes.watch(await tenantScope(server, tenant), collection));
    try {
      const before = store.documents.commitGroups;
      const body = Array.from({ length: records }, (_, i) => JSON.stringify({ _id: `r${i}`, i })).join('\n');
      const res = await fetch(`${server.url}/${tenant.project}/${collection}/_import`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${tenant.key}`, 'Content-Type': 'application/x-ndjson' },
        body,
      });
      const after = store.documents.commitGroups;
      expect(((await res.json()) as { imported: number }).imported).to.equal(records);
      // Published by the time it answered: nothing else is written that could sync them.
      const events = await reader.take(records);
      expect(events.map((e) => e.documentId)).to.deep.equal(
        Array.from({ length: records }, (_, i) => `r${i}`),
      );
      return {
        groups: after.groups - before.groups,
        durable: after.durable - before.durable,
        status: res.status,
      };
    } finally {
      reader.sub.close();
    }
  }

  it('10 batches: one sync, made after the tenth', async () => {
    expect(await importCounting(10 * BATCH)).to.deep.equal({ groups: 11, durable: 1, status: 200 });
  });

  it('11 batches: a second sync before the answer', async () => {
    expect(await importCounting(10 * BATCH + 1)).to.deep.equal({ groups: 13, durable: 2, status: 200 });
  });

  it('9 batches: the one sync before the answer', async () => {
    expect(await importCounting(9 * BATCH)).to.deep.equal({ groups: 10, durable: 1, status: 200 });
  });
});
