/** Embedded-store specifics the port cannot see: the file, the schema contract, the outbox. */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { loadConfig } from '../../src/config/load.js';
import { isoNow, newId } from '../../src/ids.js';
import { createEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded/index.js';
import { applySchema, SCHEMA_VERSION } from '../../src/store/embedded/layout/schema.js';
import { scopeKeyOf } from '../../src/store/embedded/layout/scopeKey.js';
import { openStore } from '../../src/store/open.js';
import type { DataScope, FolioDocument } from '../../src/store/port.js';
import { toStored } from '../../src/store/storedForm.js';
import { rejection } from '../support/timeout.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from './embeddedFactory.js';
import { putWrite } from './fixtures.js';

const scope: DataScope = { projectId: 'prj_embedded', env: 'test' };

function doc(version: number, id = newId('doc')): FolioDocument {
  return { _id: id, n: version, $createdAt: isoNow(), $updatedAt: isoNow(), $version: version };
}

describe('embedded store: database file and schema', () => {
  let dataDir: string;

  beforeEach(async () => {
    dataDir = path.join(await mkdtemp(path.join(os.tmpdir(), 'folio-embedded-')), 'nested', 'data');
  });

  afterEach(async () => {
    await rm(path.dirname(path.dirname(dataDir)), { recursive: true, force: true });
  });

  it('touches nothing before init(), then creates the directory and folio.db in WAL mode', async () => {
    const store = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    expect(existsSync(dataDir)).to.equal(false);
    expect(() => store.documents).to.throw(/init\(\)/);
    await store.init();
    try {
      expect(existsSync(path.join(dataDir, 'folio.db'))).to.equal(true);
      expect(store.db.pragma('journal_mode', { simple: true })).to.equal('wal');
      expect(store.db.pragma('synchronous', { simple: true })).to.equal(2); // FULL: acknowledged writes are on disk
      expect(store.db.pragma('foreign_keys', { simple: true })).to.equal(1);
      expect(store.db.pragma('busy_timeout', { simple: true })).to.be.greaterThan(0);
      expect(store.db.pragma('user_version', { simple: true })).to.equal(SCHEMA_VERSION);
      // 64 MiB of pages, not SQLite's 2 MiB (negative: KiB).
      expect(store.db.pragma('cache_size', { simple: true })).to.equal(-65_536);
    } finally {
      await store.close();
    }
  });

  it('keeps the page cache FOLIO_EMBEDDED_PAGE_CACHE_MB gives it; 0 is refused', async () => {
    const config = loadConfig({ FOLIO_EMBEDDED_PAGE_CACHE_MB: '8', FOLIO_DATA_DIR: dataDir });
    const opened = await openStore(config);
    try {
      expect((opened.store as EmbeddedStore).db.pragma('cache_size', { simple: true })).to.equal(-8192);
    } finally {
      await opened.stop();
    }
    expect(() => loadConfig({ FOLIO_EMBEDDED_PAGE_CACHE_MB: '0' })).to.throw(/FOLIO_EMBEDDED_PAGE_CACHE_MB/);
  });

  it('gives the documents table exactly the columns and indexes the query compiler relies on', async () => {
    const store = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await store.init();
    try {
      const columns = store.db.prepare<[], { name: string; type: string; notnull: number; pk: number }>(
        'SELECT name, type, "notnull", pk FROM pragma_table_info(\'documents\') ORDER BY cid',
      );
      expect(columns.all()).to.deep.equal([
        { name: 'scope', type: 'TEXT', notnull: 1, pk: 1 },
        { name: 'collection', type: 'TEXT', notnull: 1, pk: 2 },
        { name: 'id', type: 'TEXT', notnull: 1, pk: 3 },
        { name: 'version', type: 'INTEGER', notnull: 1, pk: 0 },
        { name: 'created_at', type: 'TEXT', notnull: 1, pk: 0 },
        { name: 'updated_at', type: 'TEXT', notnull: 1, pk: 0 },
        { name: 'body', type: 'BLOB', notnull: 1, pk: 0 },
        { name: 'api_form', type: 'INTEGER', notnull: 1, pk: 0 },
        { name: 'operation', type: 'TEXT', notnull: 0, pk: 0 },
        { name: 'api_key_hint', type: 'TEXT', notnull: 0, pk: 0 },
      ]);
      const indexColumns = (name: string) =>
        store.db
          .prepare<[string], { name: string }>('SELECT name FROM pragma_index_info(?) ORDER BY seqno')
          .all(name)
          .map((r) => r.name);
      expect(indexColumns('documents_created')).to.deep.equal(['scope', 'collection', 'created_at', 'id']);
      expect(indexColumns('documents_updated')).to.deep.equal(['scope', 'collection', 'updated_at', 'id']);
      expect(indexColumns('documents_version')).to.deep.equal(['scope', 'collection', 'version', 'id']);
    } finally {
      await store.close();
    }
  });

  it('stores the API form as the body: _id, the fields, then the metadata (api_form 1)', async () => {
    const store = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await store.init();
    try {
      const d = doc(1);
      await store.documents.commit(scope, 'things', [putWrite(d)]);
      const row = store.db
        .prepare<
          [],
          {
            scope: string;
            version: number;
            created_at: string;
            updated_at: string;
            api_form: number;
            body: string;
          }
        >('SELECT scope, version, created_at, updated_at, api_form, json(body) AS body FROM documents')
        .get()!;
      expect(row.scope).to.equal('prj_embedded:test');
      expect(row.version).to.equal(1);
      expect(row.created_at).to.equal(d.$createdAt);
      expect(row.updated_at).to.equal(d.$updatedAt);
      expect(row.api_form).to.equal(1);
      expect(row.body).to.equal(
        JSON.stringify({ _id: d._id, n: 1, $createdAt: d.$createdAt, $updatedAt: d.$updatedAt, $version: 1 }),
      );
    } finally {
      await store.close();
    }
  });

  it('writes a new version in place, and takes a changed $createdAt (an import replacing a document) into its row and index', async () => {
    const store = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await store.init();
    try {
      const first = { ...doc(1), $createdAt: '2026-01-01T00:00:00.000Z' };
      await store.documents.commit(scope, 'things', [putWrite(first)]);
      const rowOf = () =>
        store.db
          .prepare<[], { version: number; created_at: string; updated_at: string; body: string }>(
            'SELECT version, created_at, updated_at, json(body) AS body FROM documents',
          )
          .get()!;
      const byCreated = (createdAt: string) =>
        store.db
          .prepare(
            'SELECT id FROM documents INDEXED BY documents_created WHERE scope = ? AND collection = ? AND created_at = ?',
          )
          .pluck()
          .all(scopeKeyOf(scope), 'things', createdAt);
      const second = { ...doc(2, first._id), n: 'two', $createdAt: first.$createdAt };
      await store.documents.commit(scope, 'things', [putWrite(second)]);
      expect(rowOf()).to.deep.equal({
        version: 2,
        created_at: first.$createdAt,
        updated_at: second.$updatedAt,
        body: JSON.stringify({
          _id: first._id,
          n: 'two',
          $createdAt: first.$createdAt,
          $updatedAt: second.$updatedAt,
          $version: 2,
        }),
      });
      expect(await store.documents.get(scope, 'things', first._id)).to.deep.equal(second);
      const third = { ...doc(3, first._id), $createdAt: '2025-06-01T00:00:00.000Z' };
      await store.documents.commit(scope, 'things', [putWrite(third)]);
      expect(rowOf()).to.include({ version: 3, created_at: third.$createdAt, updated_at: third.$updatedAt });
      expect(JSON.parse(rowOf().body)).to.include({
        $version: 3,
        $createdAt: third.$createdAt,
        $updatedAt: third.$updatedAt,
      });
      expect(byCreated(third.$createdAt)).to.deep.equal([first._id]);
      expect(byCreated(first.$createdAt)).to.deep.equal([]);
      expect(
        (await store.documents.listVersions(scope, 'things', first._id)).map((v) => v.version),
      ).to.deep.equal([3, 2, 1]);
    } finally {
      await store.close();
    }
  });

  it('is idempotent on init() and keeps data across a reopen of the same directory', async () => {
    const first = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await first.init();
    await first.init();
    const d = doc(1);
    await first.documents.commit(scope, 'things', [putWrite(d)]);
    await first.close();
    await first.close();
    const second = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await second.init();
    try {
      expect(await second.documents.get(scope, 'things', d._id)).to.deep.equal(d);
      expect(second.db.pragma('user_version', { simple: true })).to.equal(SCHEMA_VERSION);
    } finally {
      await second.close();
    }
  });

  it('migrates a schema-3 directory whose webhook tables were made the old way, keeping their rows', async () => {
    await mkdir(dataDir, { recursive: true });
    const raw = new Database(path.join(dataDir, 'folio.db'));
    applySchema(raw, 3);
    // Before migration 4, the webhook part created its tables itself as it opened.
    raw.exec(
      'CREATE TABLE feed_consumers (name TEXT PRIMARY KEY, holder TEXT, lease_expires_ms INTEGER, position TEXT)',
    );
    raw.prepare("INSERT INTO feed_consumers (name, position) VALUES ('webhooks', 'kept')").run();
    raw.close();
    const reopened = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await reopened.init();
    try {
      expect(reopened.db.pragma('user_version', { simple: true })).to.equal(SCHEMA_VERSION);
      const row = reopened.db.prepare("SELECT position FROM feed_consumers WHERE name = 'webhooks'").get();
      expect(row).to.deep.equal({ position: 'kept' });
      const tables = reopened.db
        .prepare<[], { name: string }>(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'webhook%'",
        )
        .all();
      expect(tables.map((t) => t.name).sort()).to.deep.equal([
        'webhook_bodies',
        'webhook_deliveries',
        'webhooks',
      ]);
    } finally {
      await reopened.close();
    }
  });

  it('upgrades a schema-9 directory: its keys read without rules (unrestricted)', async () => {
    await mkdir(dataDir, { recursive: true });
    const raw = new Database(path.join(dataDir, 'folio.db'));
    applySchema(raw, 9);
    raw
      .prepare(
        `INSERT INTO api_keys (id, project_id, name, env, scope, config, status, key_hash, hint, created_at)
         VALUES ('key_old', 'prj_1', 'old', 'test', 'read-only', '{}', 'active', 'hash_old', 'hint', '2026-01-01T00:00:00.000Z')`,
      )
      .run();
    raw.close();
    const reopened = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await reopened.init();
    try {
      expect((await reopened.accounts.getKey('key_old'))?.rules).to.equal(null);
    } finally {
      await reopened.close();
    }
  });

  it('upgrades a schema-7 directory: its documents read as before and are converted to the API form', async () => {
    await mkdir(dataDir, { recursive: true });
    const raw = new Database(path.join(dataDir, 'folio.db'));
    applySchema(raw, 7);
    const d = doc(1);
    // The row as schema 7's upsert wrote it: metadata under `_folio`.
    raw
      .prepare(
        'INSERT INTO documents (scope, collection, id, version, created_at, updated_at, body) VALUES (?, ?, ?, ?, ?, ?, jsonb(?))',
      )
      .run('prj_embedded:test', 'things', d._id, 1, d.$createdAt, d.$updatedAt, JSON.stringify(toStored(d)));
    raw.close();
    const reopened = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await reopened.init();
    try {
      expect(JSON.stringify(await reopened.documents.get(scope, 'things', d._id))).to.equal(
        JSON.stringify(d),
      );
      // Start-up converts in the background; this waits for it, and finds nothing left.
      expect(await reopened.convertStoredForms()).to.equal(0);
      const row = reopened.db
        .prepare<[], { form: number; body: string }>(
          'SELECT api_form AS form, json(body) AS body FROM documents',
        )
        .get();
      expect(row).to.deep.equal({ form: 1, body: JSON.stringify(d) });
      expect(await reopened.documents.get(scope, 'things', d._id)).to.deep.equal(d);
    } finally {
      await reopened.close();
    }
  });

  it('refuses a database written by a newer schema', async () => {
    const store = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await store.init();
    await store.close();
    const raw = new Database(path.join(dataDir, 'folio.db'));
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    const newer = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    const error = await rejection(newer.init());
    expect(String(error)).to.match(/newer Folio/);
  });

  it('hands out one Agenda backend on the store’s own database connection', async () => {
    const store = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await store.init();
    try {
      const backend = store.agendaBackend();
      expect(store.agendaBackend()).to.equal(backend);
      // Agenda's stop() must not close the store's database.
      expect(backend.ownsConnection).to.equal(false);
      await backend.connect();
      await backend.disconnect();
      expect(store.db.open).to.equal(true);
    } finally {
      await store.close();
    }
  });

  it('refuses use after close()', async () => {
    const store = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await store.init();
    await store.close();
    expect(() => store.documents).to.throw(/closed/);
    expect(await rejection(store.init())).to.be.instanceOf(Error);
  });
});

describe('embedded store: commits', () => {
  let store: EmbeddedStore;

  beforeEach(async () => {
    store = await createTempEmbeddedStore();
  });

  afterEach(async () => {
    await destroyTempEmbeddedStore(store);
  });

  const count = (table: string) =>
    store.db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM ${table}`).get()!.n;

  it('writes the document, the version it replaces and its change-log row in one transaction', async () => {
    const first = doc(1);
    await store.documents.commit(scope, 'things', [putWrite(first)]);
    // A create: the current version is the document's row; no history yet.
    expect([count('documents'), count('versions'), count('changes')]).to.deep.equal([1, 0, 1]);
    await store.documents.commit(scope, 'things', [
      putWrite({ ...doc(2, first._id), $createdAt: first.$createdAt }),
    ]);
    expect([count('documents'), count('versions'), count('changes')]).to.deep.equal([1, 1, 2]);
    // Make the outbox insert fail: the document and version rows must roll back with it.
    store.db.exec(
      "CREATE TEMP TRIGGER refuse BEFORE INSERT ON changes BEGIN SELECT RAISE(ABORT, 'refused'); END",
    );
    const d = doc(1);
    const error = await rejection(store.documents.commit(scope, 'things', [putWrite(d)]));
    expect(String(error)).to.match(/refused/);
    expect(await store.documents.get(scope, 'things', d._id)).to.equal(null);
    // An update that fails takes the copy of the version it replaces back with it.
    const again = { ...doc(3, first._id), $createdAt: first.$createdAt };
    expect(String(await rejection(store.documents.commit(scope, 'things', [putWrite(again)])))).to.match(
      /refused/,
    );
    expect([count('documents'), count('versions'), count('changes')]).to.deep.equal([1, 1, 2]);
    expect((await store.documents.get(scope, 'things', first._id))?.$version).to.equal(2);
  });

  it('records the change type and the pre-delete document in the outbox', async () => {
    const d1 = doc(1);
    const d2 = { ...doc(2, d1._id), $createdAt: d1.$createdAt };
    await store.documents.commit(scope, 'things', [putWrite(d1)]);
    await store.documents.commit(scope, 'things', [putWrite(d2)]);
    await store.documents.commit(scope, 'things', [{ kind: 'delete', id: d1._id, expectedVersion: 2 }]);
    const rows = store.db
      .prepare<[], { seq: number; type: string; document: string }>(
        'SELECT seq, type, document FROM changes ORDER BY seq',
      )
      .all();
    expect(rows.map((r) => [r.seq, r.type])).to.deep.equal([
      [1, 'created'],
      [2, 'updated'],
      [3, 'deleted'],
    ]);
    expect(JSON.parse(rows[2]!.document)).to.deep.equal(d2);
  });

  it('evaluates a batch in order, so one commit may create a document and update it', async () => {
    const d1 = doc(1);
    const d2 = { ...doc(2, d1._id), $createdAt: d1.$createdAt };
    expect(await store.documents.commit(scope, 'things', [putWrite(d1), putWrite(d2)])).to.deep.equal({
      ok: true,
    });
    expect(await store.documents.get(scope, 'things', d1._id)).to.deep.equal(d2);
    const versions = await store.documents.listVersions(scope, 'things', d1._id);
    expect(versions.map((v) => v.version)).to.deep.equal([2, 1]);
  });

  it('throws, writing nothing, when a put breaks the expectedVersion + 1 rule', async () => {
    const d = doc(3);
    const error = await rejection(
      store.documents.commit(scope, 'things', [{ ...putWrite(d), expectedVersion: 0 }]),
    );
    expect(error).to.be.instanceOf(TypeError);
    expect(count('documents')).to.equal(0);
  });

  it('treats limit 0 as no limit, like MongoDB', async () => {
    for (let i = 0; i < 3; i++) await store.documents.commit(scope, 'things', [putWrite(doc(1))]);
    const found = await store.documents.find(scope, 'things', {
      filter: {},
      sort: [['_id', 1]],
      skip: 1,
      limit: 0,
    });
    expect(found).to.have.length(2);
  });
});

describe('embedded store: accounts and counters', () => {
  let store: EmbeddedStore;

  beforeEach(async () => {
    store = await createTempEmbeddedStore();
  });

  afterEach(async () => {
    await destroyTempEmbeddedStore(store);
  });

  it('sweeps expired sessions when a new one is created', async () => {
    const t = Date.now();
    const session = (hash: string, expiresMs: number) => ({
      tokenHash: hash,
      accountId: 'acc_x',
      createdAt: isoNow(t),
      expiresAt: isoNow(expiresMs),
    });
    await store.accounts.createSession(session('old', t + 1000));
    await store.accounts.createSession({ ...session('new', t + 60_000), createdAt: isoNow(t + 2000) });
    const hashes = store.db
      .prepare<[], { token_hash: string }>('SELECT token_hash FROM sessions')
      .all()
      .map((r) => r.token_hash);
    expect(hashes).to.deep.equal(['new']);
  });

  it('keeps the email as given while comparing it lower-cased', async () => {
    const account = {
      id: newId('acc'),
      email: 'Ada@Example.com',
      passwordHash: 'h',
      plan: 'free' as const,
      createdAt: isoNow(),
    };
    await store.accounts.createAccount(account);
    expect(await store.accounts.findAccountByEmail('ada@example.COM')).to.deep.equal(account);
  });

  it('forgets ended counter windows so memory stays bounded', async () => {
    const t0 = 1_700_000_000_000;
    for (let i = 0; i < 999; i++) await store.counters.hit(`k${i}`, 10, t0);
    expect(store.counters.size).to.equal(999);
    // The 1000th hit triggers a sweep; every earlier window has ended by then.
    await store.counters.hit('last', 10, t0 + 10);
    expect(store.counters.size).to.equal(1);
  });
});
