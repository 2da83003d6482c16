/**
 * Where the embedded store keeps a document's history (documents.ts): the current version is the
 * document's row alone, `versions` holds the ones before it, and a write copies the version it
 * replaces. Rows written before that layout (schema 8: `versions` held the current version too,
 * and the row had no operation) read and move on exactly as new ones, and are moved to the new
 * layout after start-up (historyLayout.ts). Checked on the tables themselves, against a model of
 * what the history must list, on generated sequences of writes and moves.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import fc from 'fast-check';
import { isoNow, newId } from '../../src/ids.js';
import { createEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded/index.js';
import { applySchema, SCHEMA_VERSION } from '../../src/store/embedded/layout/schema.js';
import type { DataScope, FolioDocument, SnapshotRecord, TrashStamp } from '../../src/store/port.js';
import { HINT, putWrite } from './fixtures.js';

const scope: DataScope = { projectId: 'prj_history', env: 'test' };
const SCOPE_KEY = 'prj_history:test';
const COLLECTION = 'things';

function version(id: string, n: number, createdAt: string): FolioDocument {
  return { _id: id, n, $createdAt: createdAt, $updatedAt: isoNow(), $version: n };
}

function stamp(): TrashStamp {
  const now = Date.now();
  return { deletedAt: isoNow(now), apiKeyHint: HINT, expiresAt: isoNow(now + 60_000) };
}

/** A schema-8 directory with `id` at versions 1..`versions`, as the code of then wrote it. */
async function oldLayout(dataDir: string, id: string, versions: number): Promise<FolioDocument[]> {
  await mkdir(dataDir, { recursive: true });
  const raw = new Database(path.join(dataDir, 'folio.db'));
  applySchema(raw, 8);
  try {
    return writeOldRows(raw, id, versions);
  } finally {
    raw.close();
  }
}

/**
 * `id` at versions 1..`versions` as schema 8's code wrote it (the row without an operation, every
 * version in `versions`), into a database of schema 8 or later: on an open store, rows written
 * after start-up stay so until a write or `convertHistoryLayout`. `timestampOf` gives the current
 * version's history row another time than the row's (a row the conversion must leave as it is).
 */
function writeOldRows(
  raw: Database.Database,
  id: string,
  versions: number,
  timestampOf: (doc: FolioDocument) => string = (doc) => doc.$updatedAt,
): FolioDocument[] {
  const createdAt = isoNow();
  const docs = Array.from({ length: versions }, (_, i) => version(id, i + 1, createdAt));
  const last = docs.at(-1)!;
  raw
    .prepare(
      'INSERT INTO documents (scope, collection, id, version, created_at, updated_at, api_form, body) ' +
        'VALUES (?, ?, ?, ?, ?, ?, 1, jsonb(?))',
    )
    .run(SCOPE_KEY, COLLECTION, id, last.$version, createdAt, last.$updatedAt, JSON.stringify(last));
  const insertVersion = raw.prepare(
    'INSERT INTO versions (scope, collection, doc_id, version, operation, timestamp, api_key_hint, body) ' +
      'VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  for (const d of docs) {
    const operation = d.$version === 1 ? 'create' : 'update';
    const timestamp = d === last ? timestampOf(d) : d.$updatedAt;
    insertVersion.run(SCOPE_KEY, COLLECTION, id, d.$version, operation, timestamp, HINT, JSON.stringify(d));
  }
  return docs;
}

describe('embedded store: the current version is the document’s row, the history the ones before', () => {
  let dataDir: string;
  let store: EmbeddedStore;

  beforeEach(async () => {
    dataDir = path.join(await mkdtemp(path.join(os.tmpdir(), 'folio-history-')), 'data');
  });
  afterEach(async () => {
    await store?.close();
    await rm(path.dirname(dataDir), { recursive: true, force: true });
  });

  const open = async () => {
    store = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await store.init();
    return store;
  };
  const historyRows = (id: string) =>
    store.db
      .prepare<[string], number>('SELECT version FROM versions WHERE doc_id = ? ORDER BY version')
      .pluck()
      .all(id);
  const commit = async (writes: Parameters<EmbeddedStore['documents']['commit']>[2]) =>
    expect(await store.documents.commit(scope, COLLECTION, writes)).to.deep.equal({ ok: true });

  it('a create writes no version row; each later write copies the version it replaces, pruned to keepVersions', async () => {
    await open();
    const id = newId('doc');
    const createdAt = isoNow();
    const docs: FolioDocument[] = [];
    const keep = 3;
    for (let n = 1; n <= 5; n++) {
      docs.push(version(id, n, createdAt));
      await commit([putWrite(docs.at(-1)!, { keepVersions: keep })]);
      // Versions n-keep+1 .. n are kept; n itself is the row, so `versions` holds the others.
      const first = Math.max(1, n - keep + 1);
      expect(historyRows(id), `after version ${n}`).to.deep.equal(
        Array.from({ length: n - first }, (_, i) => first + i),
      );
    }
    const listed = await store.documents.listVersions(scope, COLLECTION, id);
    expect(listed.map((v) => v.version)).to.deep.equal([5, 4, 3]);
    expect(listed[0]).to.deep.equal({
      version: 5,
      operation: 'update',
      timestamp: docs[4]!.$updatedAt,
      apiKeyHint: HINT,
    });
    for (const n of [5, 4, 3]) {
      expect(await store.documents.getVersion(scope, COLLECTION, id, n)).to.deep.equal(docs[n - 1]);
    }
    expect(await store.documents.getVersion(scope, COLLECTION, id, 2)).to.equal(null);
    expect(await store.documents.getVersion(scope, COLLECTION, id, 6)).to.equal(null);
  });

  it('a delete takes the current version to the trash with the rest; a restore brings them all back', async () => {
    await open();
    const id = newId('doc');
    const createdAt = isoNow();
    const docs = [1, 2].map((n) => version(id, n, createdAt));
    for (const d of docs) await commit([putWrite(d)]);
    await commit([{ kind: 'delete', id, expectedVersion: 2, trash: stamp() }]);
    expect(historyRows(id)).to.deep.equal([]);
    const trashed = await store.trash.listVersions(scope, COLLECTION, id, isoNow());
    expect(trashed.map((v) => [v.version, v.operation])).to.deep.equal([
      [2, 'update'],
      [1, 'create'],
    ]);
    const back = version(id, 3, createdAt);
    await commit([{ ...putWrite(back), expectedVersion: 0, operation: 'restore', fromTrash: true }]);
    expect(historyRows(id)).to.deep.equal([1, 2]);
    const listed = await store.documents.listVersions(scope, COLLECTION, id);
    expect(listed.map((v) => [v.version, v.operation])).to.deep.equal([
      [3, 'restore'],
      [2, 'update'],
      [1, 'create'],
    ]);
    expect(await store.documents.getVersion(scope, COLLECTION, id, 2)).to.deep.equal(docs[1]);
  });

  it('upgrades a schema-8 directory: each current version moves to its row at start-up, the history reads as before', async () => {
    const id = newId('doc');
    const docs = await oldLayout(dataDir, id, 3);
    await open();
    expect(store.db.pragma('user_version', { simple: true })).to.equal(SCHEMA_VERSION);
    // Start-up's background move (its first chunk runs before init resolves); waited for here.
    expect(await store.convertHistoryLayout()).to.equal(0);
    expect(historyRows(id)).to.deep.equal([1, 2]);
    const listed = await store.documents.listVersions(scope, COLLECTION, id);
    expect(listed).to.deep.equal(
      [...docs].reverse().map((d) => ({
        version: d.$version,
        operation: d.$version === 1 ? 'create' : 'update',
        timestamp: d.$updatedAt,
        apiKeyHint: HINT,
      })),
    );
    for (const d of docs)
      expect(await store.documents.getVersion(scope, COLLECTION, id, d.$version)).to.deep.equal(d);
  });

  it('an old row reads as before, and its next write copies nothing twice', async () => {
    await open();
    const id = newId('doc');
    const docs = writeOldRows(store.db, id, 2);
    expect(historyRows(id)).to.deep.equal([1, 2]);
    const listed = await store.documents.listVersions(scope, COLLECTION, id);
    expect(listed.map((v) => v.version)).to.deep.equal([2, 1]);
    expect(await store.documents.getVersion(scope, COLLECTION, id, 2)).to.deep.equal(docs[1]);
    // The write finds version 2 in `versions` already and copies nothing.
    docs.push(version(id, 3, docs[0]!.$createdAt));
    await commit([putWrite(docs[2]!)]);
    expect(historyRows(id)).to.deep.equal([1, 2]);
    docs.push(version(id, 4, docs[0]!.$createdAt));
    await commit([putWrite(docs[3]!)]);
    expect(historyRows(id)).to.deep.equal([1, 2, 3]);
    expect((await store.documents.listVersions(scope, COLLECTION, id)).map((v) => v.version)).to.deep.equal([
      4, 3, 2, 1,
    ]);
    for (const d of docs)
      expect(await store.documents.getVersion(scope, COLLECTION, id, d.$version)).to.deep.equal(d);
  });

  it('an old row deleted to the trash keeps each version once', async () => {
    await open();
    const id = newId('doc');
    writeOldRows(store.db, id, 3);
    await commit([{ kind: 'delete', id, expectedVersion: 3, trash: stamp() }]);
    const trashed = await store.trash.listVersions(scope, COLLECTION, id, isoNow());
    expect(trashed.map((v) => v.version)).to.deep.equal([3, 2, 1]);
  });

  it('moves old rows in chunks (one row fewer than a chunk, a chunk, one more); leaves a row whose history row disagrees', async () => {
    // With the row left as it is: 4, 5 and 6 old rows in chunks of 5.
    for (const rows of [3, 4, 5]) {
      await store?.close();
      await rm(dataDir, { recursive: true, force: true });
      store = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000, sweepChunkRows: 5 });
      await store.init();
      const ids = Array.from({ length: rows }, () => newId('doc'));
      const docs = ids.map((id) => writeOldRows(store.db, id, 2));
      // Its history row's time is not the row's: moved, the version would list another time.
      const odd = newId('doc');
      writeOldRows(store.db, odd, 2, () => '2001-01-01T00:00:00.000Z');
      const all = [...ids, odd];
      const before = await Promise.all(all.map((id) => store.documents.listVersions(scope, COLLECTION, id)));
      expect(await store.convertHistoryLayout(), `${rows} rows`).to.equal(rows);
      expect(await store.convertHistoryLayout(), `${rows} rows, again`).to.equal(0);
      for (const id of ids) expect(historyRows(id), id).to.deep.equal([1]);
      expect(historyRows(odd)).to.deep.equal([1, 2]);
      const after = await Promise.all(all.map((id) => store.documents.listVersions(scope, COLLECTION, id)));
      expect(after).to.deep.equal(before);
      for (const [i, id] of ids.entries()) {
        for (const d of docs[i]!)
          expect(await store.documents.getVersion(scope, COLLECTION, id, d.$version)).to.deep.equal(d);
      }
    }
  });

  it('a backup lists every version of every document once, the current one from its row', async () => {
    const oldId = newId('doc');
    const oldDocs = await oldLayout(dataDir, oldId, 2);
    await open();
    const id = newId('doc');
    const createdAt = isoNow();
    const docs = [1, 2, 3].map((n) => version(id, n, createdAt));
    for (const d of docs) await commit([putWrite(d)]);
    const records: SnapshotRecord[] = [];
    for await (const record of store.snapshots.read()) records.push(record);
    const versions = records.flatMap((r) =>
      r.type === 'version' ? [[r.id, r.version.version, r.version.operation, r.document] as const] : [],
    );
    const expected = [
      ...oldDocs.map((d) => [oldId, d.$version, d.$version === 1 ? 'create' : 'update', d] as const),
      ...docs.map((d) => [id, d.$version, d.$version === 1 ? 'create' : 'update', d] as const),
    ].sort((a, b) => (a[0] === b[0] ? a[1] - b[1] : a[0] < b[0] ? -1 : 1));
    expect(versions).to.deep.equal(expected);
  });

  it('generated writes and moves, on new and old documents: the history lists exactly the versions kept @slow', async function () {
    this.timeout(60_000);
    type Step = { kind: 'put' } | { kind: 'trash' } | { kind: 'restore' } | { kind: 'move' };
    const step = fc.oneof(
      { weight: 4, arbitrary: fc.constant<Step>({ kind: 'put' }) },
      fc.constant<Step>({ kind: 'trash' }),
      fc.constant<Step>({ kind: 'restore' }),
      fc.constant<Step>({ kind: 'move' }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(step, { maxLength: 12 }),
        async (oldVersions, keep, steps) => {
          await store?.close();
          await rm(dataDir, { recursive: true, force: true });
          const id = newId('doc');
          await open();
          // The model: every version's document, whether the document is live or in the trash.
          const all: FolioDocument[] = oldVersions > 0 ? writeOldRows(store.db, id, oldVersions) : [];
          let state: 'live' | 'trash' | 'none' = oldVersions > 0 ? 'live' : 'none';
          // The old rows were written with no pruning: all of them are kept until a write.
          let kept = all.length;
          // Until a write or a move, an old document's current version is in `versions` too.
          let twice = oldVersions > 0;
          const createdAt = all[0]?.$createdAt ?? isoNow();
          for (const s of steps) {
            const current = all.at(-1)?.$version ?? 0;
            if (s.kind === 'put' && state !== 'trash') {
              const d = version(id, current + 1, createdAt);
              await commit([putWrite(d, { keepVersions: keep })]);
              all.push(d);
              kept = Math.min(kept + 1, keep);
              state = 'live';
              twice = false;
            } else if (s.kind === 'trash' && state === 'live') {
              await commit([{ kind: 'delete', id, expectedVersion: current, trash: stamp() }]);
              state = 'trash';
            } else if (s.kind === 'restore' && state === 'trash') {
              const d = version(id, current + 1, createdAt);
              await commit([
                {
                  ...putWrite(d, { keepVersions: keep }),
                  expectedVersion: 0,
                  operation: 'restore',
                  fromTrash: true,
                },
              ]);
              all.push(d);
              kept = Math.min(kept + 1, keep);
              state = 'live';
              twice = false;
            } else if (s.kind === 'move') {
              // A trashed document has no row to move; its history is the trash's.
              const moved = await store.convertHistoryLayout();
              expect(moved).to.equal(state === 'live' && twice ? 1 : 0);
              if (state === 'live') twice = false;
            }
          }
          const expected = all.slice(all.length - kept).reverse();
          const listed =
            state === 'trash'
              ? await store.trash.listVersions(scope, COLLECTION, id, isoNow())
              : await store.documents.listVersions(scope, COLLECTION, id);
          expect(listed.map((v) => v.version)).to.deep.equal(
            state === 'none' ? [] : expected.map((d) => d.$version),
          );
          if (state === 'live') {
            for (const d of expected) {
              expect(await store.documents.getVersion(scope, COLLECTION, id, d.$version)).to.deep.equal(d);
            }
            // Each version is stored once: the current in its row, the others in `versions`.
            expect(historyRows(id).length).to.equal(twice ? kept : kept - 1);
          }
        },
      ),
      { numRuns: 30 },
    );
  });
});
