/**
 * Backup, restore and migrate across store kinds, wherever a MongoDB is available (otherwise the
 * one `SKIPPED: no MongoDB` line): embedded → MongoDB by `folio migrate`, a backup of the MongoDB
 * store, and that backup restored into a new embedded store, each holding the same records; a
 * server on the MongoDB copy answers byte for byte what the embedded one answers, collection
 * schemas (enforced) and the trash (entries with their history) included.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { runFolio } from '../support/cli.js';
import { mongoConnection } from '../support/mongodb.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';

const mongo = await mongoConnection();

// biome-ignore lint/suspicious/noExplicitAny: backup records are checked by assertions
type Line = any;

/**
 * Records in a store-independent order, as text: MongoDB lists a collection's index definitions
 * after its documents and keeps no creation time for them.
 */
function comparable(records: Line[]): string[] {
  return records
    .map((r) => (r.type === 'index' ? { ...r, index: { ...r.index, createdAt: '' } } : r))
    .map((r) => JSON.stringify(r))
    .sort();
}

async function backupRecords(env: Record<string, string>, file: string): Promise<Line[]> {
  const made = await runFolio(['backup', '--out', file], env);
  expect(made.code, made.err).to.equal(0);
  return (await readFile(file, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .slice(1, -1)
    .map((l) => JSON.parse(l));
}

if (mongo) {
  describe('folio backup, restore and migrate across stores @mongodb', function () {
    this.timeout(180_000);
    let work: string;
    let embedded: TestServer;
    let onMongo: TestServer | undefined;
    let tenant: Tenant;
    const mongoEnv = {
      MONGODB_URI: mongo.uri,
      FOLIO_MONGODB_DB_PREFIX: mongo.dbPrefix,
      FOLIO_LOG_LEVEL: 'silent',
    };

    before(async () => {
      work = await mkdtemp(join(tmpdir(), 'folio-backup-mongo-'));
      embedded = await startTestServer({ dataDir: join(work, 'source') });
      tenant = await embedded.tenant({ plan: 'pro', project: 'shop' });
      for (let i = 0; i < 20; i++) {
        const put = await embedded.request('PUT', `/shop/items/i${i}`, {
          key: tenant.key,
          body: { '2': 'two', b: i, a: [1.5, { z: null }], text: 'é ✓' },
        });
        expect(put.status).to.equal(201);
        const patch = await embedded.request('PATCH', `/shop/items/i${i}`, {
          key: tenant.key,
          body: { b: i + 1 },
          contentType: 'application/merge-patch+json',
        });
        expect(patch.status).to.equal(200);
      }
      const index = await embedded.request('POST', '/shop/items/_indexes', {
        key: tenant.key,
        body: { fields: [{ path: 'b' }], unique: true },
      });
      expect(index.status).to.equal(201);
      const schema = await embedded.request('PUT', '/shop/items/_schema', {
        key: tenant.key,
        body: { schema: { type: 'object', properties: { b: { type: 'integer' } } } },
      });
      expect(schema.status, schema.text).to.equal(200);
      for (const id of ['t0', 't1']) {
        for (const step of [1, 2]) {
          const put = await embedded.request('PUT', `/shop/notes/${id}`, { key: tenant.key, body: { step } });
          expect(put.status).to.be.oneOf([200, 201]);
        }
        expect((await embedded.request('DELETE', `/shop/notes/${id}`, { key: tenant.key })).status).to.equal(
          204,
        );
      }
    });

    after(async () => {
      await onMongo?.close();
      await embedded.close();
      await rm(work, { recursive: true, force: true });
    });

    it('migrates embedded → MongoDB, backs the MongoDB store up and restores it into an empty embedded store', async () => {
      const sourceEnv = { FOLIO_DATA_DIR: join(work, 'source'), FOLIO_LOG_LEVEL: 'silent' };
      const original = await backupRecords(sourceEnv, join(work, 'embedded.backup'));
      expect(original.filter((r) => r.type === 'trashedVersion')).to.have.length(4);
      // One record per batch: a trashed history is written in batches after its entry's.
      const migrated = await runFolio(
        ['migrate', '--to', mongo.uri, '--work', join(work, 'state'), '--batch-size', '1'],
        {
          ...sourceEnv,
          FOLIO_MONGODB_DB_PREFIX: mongo.dbPrefix,
        },
      );
      expect(migrated.code, migrated.err).to.equal(0);
      const fromMongo = await backupRecords(mongoEnv, join(work, 'mongo.backup'));
      expect(comparable(fromMongo)).to.deep.equal(comparable(original));

      const restoredEnv = { FOLIO_DATA_DIR: join(work, 'restored'), FOLIO_LOG_LEVEL: 'silent' };
      const restored = await runFolio(['restore', join(work, 'mongo.backup')], restoredEnv);
      expect(restored.code, restored.err).to.equal(0);
      expect(comparable(await backupRecords(restoredEnv, join(work, 'restored.backup')))).to.deep.equal(
        comparable(original),
      );

      // A second restore into the (now full) MongoDB store is refused.
      const again = await runFolio(['restore', join(work, 'embedded.backup')], mongoEnv);
      expect(again.code).to.equal(1);
      expect(again.err).to.match(/is not empty/);

      onMongo = await startTestServer({
        config: { store: 'mongodb', mongodbUri: mongo.uri, mongodb: { dbPrefix: mongo.dbPrefix } },
      });
      for (let i = 0; i < 20; i++) {
        const a = await embedded.request('GET', `/shop/items/i${i}`, { key: tenant.key });
        const b = await onMongo.request('GET', `/shop/items/i${i}`, { key: tenant.key });
        expect(b.text).to.equal(a.text);
        expect(b.headers.get('etag')).to.equal(a.headers.get('etag'));
      }
      for (const path of ['/shop/items/_schema', '/shop/notes/_trash', '/shop/notes/_trash/t0']) {
        const a = await embedded.request('GET', path, { key: tenant.key });
        expect((await onMongo.request('GET', path, { key: tenant.key })).text, path).to.equal(a.text);
      }
      const refused = await onMongo.request('PUT', '/shop/items/bad', { key: tenant.key, body: { b: 'x' } });
      expect(refused.status).to.equal(422);
      const back = await onMongo.request('POST', '/shop/notes/_trash/t1/restore', { key: tenant.key });
      expect(back.status, back.text).to.equal(201);
      expect(back.body).to.include({ _id: 't1', step: 2, $version: 3 });
    });
  });
}
