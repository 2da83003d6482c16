/**
 * The right to be forgotten on the embedded store: after a purge (from the trash, or a delete
 * with `?purge=true`) and a checkpoint, the erased document's bytes are nowhere in the database
 * file or its WAL: not in the document, version, trash or change-log rows, not in freed pages.
 * And the store runs that checkpoint itself: on a server nobody writes to after a purge, the
 * bytes leave the files within the documented bound (erasureCheckpoint.ts).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { isoNow, newId } from '../../src/ids.js';
import { ERASURE_CHECKPOINT_BOUND_MS } from '../../src/store/embedded/documents/erasureCheckpoint.js';
import { DATABASE_FILE, type EmbeddedStore } from '../../src/store/embedded/index.js';
import type { DataScope } from '../../src/store/port.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from './embeddedFactory.js';
import { firstVersion, HINT, nextVersion, putWrite } from './fixtures.js';

const COLLECTION = 'people';

async function fileHolds(store: EmbeddedStore, marker: string): Promise<boolean> {
  store.db.pragma('wal_checkpoint(TRUNCATE)');
  const needle = Buffer.from(marker);
  for (const file of [store.file, `${store.file}-wal`]) {
    const bytes = await readFile(file).catch(() => Buffer.alloc(0));
    if (bytes.includes(needle)) return true;
  }
  return false;
}

describe('embedded store: erased documents leave no bytes in the file', () => {
  let store: EmbeddedStore;
  const scope: DataScope = { projectId: newId('prj'), env: 'test' };
  before(async () => {
    store = await createTempEmbeddedStore();
  });
  after(async () => {
    await destroyTempEmbeddedStore(store);
  });

  /** A document with two versions holding the marker, and some neighbours that stay. */
  async function writeMarked(marker: string): Promise<string> {
    const id = newId('doc');
    const v1 = firstVersion({ ssn: marker, note: 'first' }, id);
    const v2 = nextVersion(v1, { ssn: marker, note: 'second' });
    for (const v of [v1, v2]) {
      const result = await store.documents.commit(scope, COLLECTION, [putWrite(v)]);
      expect(result.ok).to.equal(true);
    }
    const neighbour = firstVersion({ note: 'stays' });
    await store.documents.commit(scope, COLLECTION, [putWrite(neighbour)]);
    return id;
  }

  it('a document purged from the trash', async () => {
    const marker = `MARKER-${newId('doc')}`;
    const id = await writeMarked(marker);
    const trash = { deletedAt: isoNow(), apiKeyHint: HINT, expiresAt: isoNow(Date.now() + 60_000) };
    await store.documents.commit(scope, COLLECTION, [{ kind: 'delete', id, expectedVersion: 2, trash }]);
    expect(await fileHolds(store, marker)).to.equal(true);
    expect(await store.trash.purge(scope, COLLECTION, id)).to.equal(true);
    expect(await fileHolds(store, marker)).to.equal(false);
  });

  it('a document deleted with purge (an erasing delete)', async () => {
    const marker = `MARKER-${newId('doc')}`;
    const id = await writeMarked(marker);
    expect(await fileHolds(store, marker)).to.equal(true);
    await store.documents.commit(scope, COLLECTION, [
      { kind: 'delete', id, expectedVersion: 2, erase: true },
    ]);
    expect(await fileHolds(store, marker)).to.equal(false);
  });

  it('a trash entry erased by the expiry sweep', async () => {
    const marker = `MARKER-${newId('doc')}`;
    const id = await writeMarked(marker);
    const trash = { deletedAt: isoNow(0), apiKeyHint: HINT, expiresAt: isoNow(1000) };
    await store.documents.commit(scope, COLLECTION, [{ kind: 'delete', id, expectedVersion: 2, trash }]);
    expect(await store.trash.purgeExpired(isoNow(1000), 100)).to.equal(1);
    expect(await fileHolds(store, marker)).to.equal(false);
  });
});

/** The files of the database that hold the marker, as they are on disk now. */
async function filesHolding(file: string, marker: string): Promise<string[]> {
  const needle = Buffer.from(marker);
  const holding: string[] = [];
  for (const name of [file, `${file}-wal`, `${file}-shm`]) {
    const bytes = await readFile(name).catch(() => Buffer.alloc(0));
    if (bytes.includes(needle)) holding.push(name);
  }
  return holding;
}

describe('embedded store: an erasure reaches the disk on a database nobody writes to after it', () => {
  let dataDir = '';
  let server: TestServer;
  let tenant: Tenant;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'folio-erasure-'));
    server = await startTestServer({ dataDir });
    tenant = await server.tenant({ plan: 'pro' });
  });
  after(async () => {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  /** A document with two versions holding a fresh marker: its path and the marker. */
  async function writeMarked(): Promise<{ path: string; id: string; marker: string }> {
    const marker = `MARKER-${newId('doc')}`;
    const created = await server.request('POST', `/${tenant.project}/people`, {
      key: tenant.key,
      body: { ssn: marker },
    });
    expect(created.status).to.equal(201);
    const path = `/${tenant.project}/people/${created.body._id}`;
    const updated = await server.request('PUT', path, { key: tenant.key, body: { ssn: marker, v: 2 } });
    expect(updated.status).to.equal(200);
    return { path, id: created.body._id, marker };
  }

  /** Polls the files, with nothing written meanwhile, until the marker is gone or the bound passes. */
  async function expectGoneWithinBound(marker: string): Promise<void> {
    const file = join(dataDir, DATABASE_FILE);
    const started = Date.now();
    let holding = await filesHolding(file, marker);
    while (holding.length > 0 && Date.now() - started < ERASURE_CHECKPOINT_BOUND_MS) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      holding = await filesHolding(file, marker);
    }
    expect(holding, `after ${Date.now() - started} ms`).to.deep.equal([]);
  }

  it(`DELETE ?purge=true: the text is in no file within ${ERASURE_CHECKPOINT_BOUND_MS} ms`, async () => {
    const { path, marker } = await writeMarked();
    expect(await filesHolding(join(dataDir, DATABASE_FILE), marker)).not.to.deep.equal([]);
    const erased = await server.request('DELETE', `${path}?purge=true`, { key: tenant.key });
    expect(erased.status).to.equal(204);
    await expectGoneWithinBound(marker);
  });

  it(`DELETE .../_trash/{id}: the text is in no file within ${ERASURE_CHECKPOINT_BOUND_MS} ms`, async () => {
    const { path, id, marker } = await writeMarked();
    expect((await server.request('DELETE', path, { key: tenant.key })).status).to.equal(204);
    const erased = await server.request('DELETE', `/${tenant.project}/people/_trash/${id}`, {
      key: tenant.key,
    });
    expect(erased.status).to.equal(204);
    await expectGoneWithinBound(marker);
  });
});
