/**
 * The right to be forgotten on the embedded store: after a purge (from the trash, or a delete
 * with `?purge=true`) and a checkpoint, the erased document's bytes are nowhere in the database
 * file or its WAL: not in the document, version, trash or change-log rows, not in freed pages.
 */
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { isoNow, newId } from '../../src/ids.js';
import type { EmbeddedStore } from '../../src/store/embedded/index.js';
import type { DataScope } from '../../src/store/port.js';
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
