/**
 * The backup format (src/cli/backup/format.ts, writer.ts): a file the writer made is read back
 * record for record; any truncation and any changed byte is refused by `verifyBackup` (fast-check
 * over positions); record shapes are checked at their edges; and the MongoDB store's write plan
 * (a pure function) upserts every record by its identity. Schemas and trash entries: their shapes
 * at their edges, a trashed version only after its trashed document, and the MongoDB plan's
 * expiry for a trashed history, found in the batch or in an earlier one.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import fc from 'fast-check';
import { storeIdentity, targetConfig } from '../../src/cli/backup/commands.js';
import {
  BackupFileError,
  backupBatches,
  parseRecordLine,
  RECORD_TYPES,
  verifyBackup,
} from '../../src/cli/backup/format.js';
import { writeBackup } from '../../src/cli/backup/writer.js';
import { loadConfig } from '../../src/config/load.js';
import {
  planSnapshotWrites,
  snapshotLost,
  trashEntriesToLookUp,
  trashEntryKey,
} from '../../src/store/mongodb/snapshots/snapshot.js';
import { SnapshotLostError, type SnapshotRecord } from '../../src/store/port.js';

const scope = { projectId: 'prj_01J0000000000000000000000A', env: 'live' as const };
const doc = (id: string, version: number) => ({
  _id: id,
  '1': 'integer-like',
  z: [1.5, null, { é: '✓' }],
  a: 'text',
  $createdAt: '2026-01-01T00:00:00.000Z',
  $updatedAt: '2026-01-02T00:00:00.000Z',
  $version: version,
});

const RECORDS: SnapshotRecord[] = [
  { type: 'setting', name: 'webhookSealingKey', value: 'c2VjcmV0' },
  {
    type: 'account',
    account: {
      id: 'acc_1',
      email: 'a@b.test',
      passwordHash: 'scrypt$x',
      plan: 'pro',
      createdAt: '2026-01-01T00:00:00.000Z',
    },
  },
  {
    type: 'project',
    project: {
      id: scope.projectId,
      accountId: 'acc_1',
      name: 'shop',
      createdAt: '2026-01-01T00:00:00.000Z',
      allowedOrigins: ['https://a.example'],
      autoIndexes: false,
    },
  },
  {
    type: 'key',
    key: {
      id: 'key_1',
      projectId: scope.projectId,
      name: 'k',
      env: 'live',
      scope: 'read-write',
      config: {},
      status: 'active',
      keyHash: 'ab'.repeat(32),
      hint: 'folio_sk_live_...abcd',
      createdAt: '2026-01-01T00:00:00.000Z',
      lastUsedAt: null,
      revokedAt: null,
      rotatedFrom: null,
      rules: null,
    },
  },
  {
    type: 'webhook',
    webhook: {
      id: 'wh_1',
      scope,
      collection: 'orders',
      url: 'https://hooks.example/x',
      events: ['document.created'],
      description: '',
      status: 'active',
      sealedSecret: 'v1.sealed',
      consecutiveFailures: 0,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    },
  },
  {
    type: 'schema',
    scope,
    collection: 'orders',
    schema: {
      schema: '{"$defs": {"a": true},  "type":"object"}',
      mode: 'enforce',
      revision: 'sch_1',
      updatedAt: '2026-01-01T00:00:00.000Z',
    },
  },
  ...Array.from(
    { length: 30 },
    (_, i): SnapshotRecord => ({
      type: 'document',
      scope,
      collection: 'orders',
      document: doc(`d${i}`, 1),
    }),
  ),
  {
    type: 'version',
    scope,
    collection: 'orders',
    id: 'd0',
    version: { version: 1, operation: 'create', timestamp: '2026-01-02T00:00:00.000Z', apiKeyHint: 'x' },
    document: doc('d0', 1),
  },
  {
    type: 'trashedDocument',
    scope,
    collection: 'orders',
    entry: {
      id: 't0',
      deletedAt: '2026-01-03T00:00:00.000Z',
      apiKeyHint: 'folio_sk_live_...dele',
      expiresAt: '2026-02-02T00:00:00.000Z',
      document: doc('t0', 2),
    },
  },
  ...[1, 2].map(
    (version): SnapshotRecord => ({
      type: 'trashedVersion',
      scope,
      collection: 'orders',
      id: 't0',
      version: { version, operation: 'update', timestamp: '2026-01-02T00:00:00.000Z', apiKeyHint: 'x' },
      document: doc('t0', version),
    }),
  ),
  {
    type: 'index',
    scope,
    collection: 'orders',
    index: { name: 'a_1', fields: [{ path: 'a', order: 1 }], unique: true, state: 'ready', createdAt: '' },
  },
];

async function* fromArray(records: SnapshotRecord[]): AsyncGenerator<SnapshotRecord> {
  yield* records;
}

describe('backup file format', () => {
  let dir: string;
  let file: string;
  let bytes: Buffer;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'folio-format-'));
    file = join(dir, 'ok.backup');
    await writeBackup(fromArray(RECORDS), file, { source: 'embedded', gzip: false });
    bytes = await readFile(file);
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads back every record exactly, in batches, and skips the ones already written', async () => {
    const { trailer } = await verifyBackup(file);
    expect(trailer.records).to.equal(RECORDS.length);
    expect(trailer.counts).to.deep.equal({
      setting: 1,
      account: 1,
      project: 1,
      key: 1,
      webhook: 1,
      document: 30,
      version: 1,
      index: 1,
      schema: 1,
      trashedDocument: 1,
      trashedVersion: 2,
    });
    const batches: SnapshotRecord[][] = [];
    for await (const batch of backupBatches(file, 7)) batches.push(batch);
    expect(batches.map((b) => b.length)).to.deep.equal([7, 7, 7, 7, 7, 6]);
    // Key order is part of a document's bytes: kept as written.
    expect(batches.flat().map((r) => JSON.stringify(r))).to.deep.equal(RECORDS.map((r) => JSON.stringify(r)));
    const rest: SnapshotRecord[] = [];
    for await (const batch of backupBatches(file, 100, 34)) rest.push(...batch);
    expect(rest).to.deep.equal(RECORDS.slice(34));
  });

  it('refuses the file cut at any point (the trailer and its newline included)', async () => {
    const cut = join(dir, 'cut.backup');
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: bytes.length - 1 }), async (length) => {
        await writeFile(cut, bytes.subarray(0, length));
        const error = await verifyBackup(cut).then(
          () => null,
          (e: unknown) => e,
        );
        expect(error, `cut at ${length}`).to.be.instanceOf(BackupFileError);
      }),
      { numRuns: 60 },
    );
    // The boundary: all but the last byte (the trailer's newline).
    await writeFile(cut, bytes.subarray(0, bytes.length - 1));
    await verifyBackup(cut).then(
      () => expect.fail('accepted a file without its last newline'),
      (e: Error) => expect(e.message).to.match(/truncated/),
    );
  });

  it('refuses the file with any one byte changed', async () => {
    const changed = join(dir, 'changed.backup');
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: bytes.length - 1 }),
        fc.integer({ min: 1, max: 255 }),
        async (at, delta) => {
          const copy = Buffer.from(bytes);
          copy[at] = (copy[at]! + delta) % 256;
          await writeFile(changed, copy);
          const error = await verifyBackup(changed).then(
            () => null,
            (e: unknown) => e,
          );
          expect(error, `byte ${at} + ${delta}`).to.be.instanceOf(BackupFileError);
        },
      ),
      { numRuns: 80 },
    );
  });

  it('refuses a trashed version before its trashed document, or of another one, though the checksum holds', async () => {
    const entryAt = RECORDS.findIndex((r) => r.type === 'trashedDocument');
    const entry = RECORDS[entryAt]!;
    const versions = RECORDS.filter((r) => r.type === 'trashedVersion');
    const others = RECORDS.filter((r) => r.type !== 'trashedDocument' && r.type !== 'trashedVersion');
    const refusedWith = async (records: SnapshotRecord[]) => {
      const out = join(dir, `order-${Math.random()}.backup`);
      await writeBackup(fromArray(records), out, { source: 'embedded', gzip: false });
      return verifyBackup(out).then(
        () => null,
        (e: Error) => e.message,
      );
    };
    expect(await refusedWith([...others, versions[0]!, entry, versions[1]!])).to.match(
      /line \d+: a trashedVersion record of "t0" comes before its trashedDocument record/,
    );
    // The same id in another collection or scope is another entry.
    const elsewhere = { ...entry, collection: 'other' } as SnapshotRecord;
    expect(await refusedWith([...others, elsewhere, ...versions])).to.match(
      /comes before its trashedDocument/,
    );
    const otherEnv = { ...entry, scope: { ...scope, env: 'test' } } as SnapshotRecord;
    expect(await refusedWith([...others, otherEnv, ...versions])).to.match(
      /comes before its trashedDocument/,
    );
    // Right after it, or much later: accepted.
    expect(await refusedWith([...others, entry, ...versions])).to.equal(null);
    expect(await refusedWith([entry, ...others, ...versions])).to.equal(null);
  });

  it('refuses lines after the trailer', async () => {
    const appended = join(dir, 'appended.backup');
    await writeFile(appended, Buffer.concat([bytes, Buffer.from('{"type":"account"}\n')]));
    await verifyBackup(appended).then(
      () => expect.fail('accepted'),
      (e: Error) => expect(e.message).to.match(/follows the trailer/),
    );
  });

  it('checks each record type at its edges', () => {
    expect(RECORD_TYPES.sort()).to.deep.equal(
      [
        'account',
        'document',
        'index',
        'key',
        'project',
        'setting',
        'version',
        'webhook',
        'schema',
        'trashedDocument',
        'trashedVersion',
      ].sort(),
    );
    for (const record of RECORDS) expect(parseRecordLine(JSON.stringify(record), 2)).to.deep.equal(record);
    const bad = (value: unknown) => () => parseRecordLine(JSON.stringify(value), 9);
    // A field a newer Folio added is refused, not dropped.
    expect(
      bad({ ...RECORDS[1], account: { ...(RECORDS[1] as { account: object }).account, extra: 1 } }),
    ).to.throw(/line 9: invalid account record/);
    expect(
      bad({ type: 'document', scope, collection: 'orders', document: { ...doc('x', 1), $version: 0 } }),
    ).to.throw(/invalid document record at document.\$version/);
    expect(
      bad({ type: 'document', scope, collection: 'orders', document: { ...doc('x', 1), $version: 1 } }),
    ).to.not.throw();
    expect(
      bad({ type: 'document', scope: { ...scope, env: 'prod' }, collection: 'c', document: doc('x', 1) }),
    ).to.throw(/scope.env/);
    expect(bad({ type: 'trash' })).to.throw(/type "trash", which this Folio does not know/);
    const schema = RECORDS.find((r) => r.type === 'schema') as Extract<SnapshotRecord, { type: 'schema' }>;
    const withText = (text: string) => ({ ...schema, schema: { ...schema.schema, schema: text } });
    for (const text of ['true', 'false', '{}', ' {"type": "object"} '])
      expect(bad(withText(text))).to.not.throw();
    for (const text of ['', '[]', '1', 'null', '"s"', '{"type":', '{} x'])
      expect(bad(withText(text)), text).to.throw(
        /invalid schema record at schema.schema: not the JSON text of a schema/,
      );
    expect(bad({ ...schema, schema: { ...schema.schema, mode: 'off' } })).to.throw(/at schema.mode/);
    expect(bad({ ...schema, schema: { ...schema.schema, schema: {} } })).to.throw(/at schema.schema/);
    const trashed = RECORDS.find((r) => r.type === 'trashedDocument') as Extract<
      SnapshotRecord,
      { type: 'trashedDocument' }
    >;
    expect(bad({ ...trashed, entry: { ...trashed.entry, id: 't1' } })).to.throw(
      /invalid trashedDocument record at entry.id: the entry id is not its document _id/,
    );
    const { expiresAt: _, ...noExpiry } = trashed.entry;
    expect(bad({ ...trashed, entry: noExpiry })).to.throw(/at entry.expiresAt/);
    expect(bad({ ...trashed, entry: { ...trashed.entry, document: { _id: 't0' } } })).to.throw(
      /at entry.document/,
    );
    const trashedVersion = RECORDS.find((r) => r.type === 'trashedVersion')!;
    expect(bad({ ...trashedVersion, version: { version: 0 } })).to.throw(
      /invalid trashedVersion record at version/,
    );
    expect(bad([1])).to.throw(/not a backup record/);
    expect(() => parseRecordLine('{"type":', 3)).to.throw(/line 3 is not valid JSON/);
  });
});

describe('MongoDB snapshot write plan (pure)', () => {
  it('upserts every record by its identity, per collection, with indexes after the documents', () => {
    const plan = planSnapshotWrites('folio', RECORDS);
    expect(plan.system.settings).to.deep.equal([
      {
        replaceOne: {
          filter: { _id: 'webhookSealingKey' },
          replacement: { _id: 'webhookSealingKey', value: 'c2VjcmV0' },
          upsert: true,
        },
      },
    ]);
    for (const name of ['accounts', 'projects', 'keys', 'webhooks'] as const) {
      expect(plan.system[name]).to.have.length(1);
      const op = plan.system[name][0] as unknown as {
        replaceOne: { filter: { _id: string }; upsert: boolean };
      };
      expect(op.replaceOne.upsert).to.equal(true);
    }
    expect(
      (plan.system.accounts[0] as unknown as { replaceOne: { replacement: { emailLower: string } } })
        .replaceOne.replacement.emailLower,
    ).to.equal('a@b.test');
    const [writes, ...others] = [...plan.collections.values()];
    expect(others).to.have.length(0);
    expect(writes!.dbName).to.equal('folio_prj_01j0000000000000000000000a_live');
    expect(writes!.collection).to.equal('orders');
    expect(writes!.documents).to.have.length(30);
    const first = writes!.documents[0] as {
      replaceOne: { filter: unknown; replacement: Record<string, unknown>; upsert: boolean };
    };
    expect(first.replaceOne.filter).to.deep.equal({ _id: 'd0' });
    expect(first.replaceOne.upsert).to.equal(true);
    // The stored form: metadata under _folio, user keys in their order (JavaScript's own: an
    // integer-like key first, as every write of the store orders it).
    expect(Object.keys(first.replaceOne.replacement)).to.deep.equal(['1', '_id', 'z', 'a', '_folio']);
    expect(first.replaceOne.replacement._folio).to.deep.equal({
      version: 1,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-02T00:00:00.000Z',
    });
    expect((writes!.versions[0] as { replaceOne: { filter: unknown } }).replaceOne.filter).to.deep.equal({
      docId: 'd0',
      version: 1,
    });
    expect(plan.indexes.map((r) => r.index.name)).to.deep.equal(['a_1']);
  });
});

describe('MongoDB snapshot write plan for schemas and the trash (pure)', () => {
  const dbName = 'folio_prj_01j0000000000000000000000a_live';
  const entry = RECORDS.find((r) => r.type === 'trashedDocument') as Extract<
    SnapshotRecord,
    { type: 'trashedDocument' }
  >;
  const versions = RECORDS.filter((r) => r.type === 'trashedVersion');
  // biome-ignore lint/suspicious/noExplicitAny: driver operations are checked by assertions
  const replaceOf = (op: any) => op.replaceOne;

  it('a schema replaces the record of its scope and collection, text as given', () => {
    const plan = planSnapshotWrites('folio', RECORDS);
    expect(plan.system.collectionSchemas.map(replaceOf)).to.deep.equal([
      {
        filter: { _id: JSON.stringify([scope.projectId, 'live', 'orders']) },
        replacement: {
          _id: JSON.stringify([scope.projectId, 'live', 'orders']),
          schema: '{"$defs": {"a": true},  "type":"object"}',
          mode: 'enforce',
          revision: 'sch_1',
          updatedAt: '2026-01-01T00:00:00.000Z',
        },
        upsert: true,
      },
    ]);
  });

  it('a trash entry and its history are upserted by identity, the history expiring with its entry', () => {
    const plan = planSnapshotWrites('folio', RECORDS);
    const writes = [...plan.collections.values()][0]!;
    const [entryOp] = writes.trashEntries.map(replaceOf);
    expect(entryOp.filter).to.deep.equal({ _id: 't0' });
    expect(entryOp.upsert).to.equal(true);
    expect(entryOp.replacement).to.deep.include({
      _id: 't0',
      version: 2,
      deletedAt: '2026-01-03T00:00:00.000Z',
      apiKeyHint: 'folio_sk_live_...dele',
      expiresAt: '2026-02-02T00:00:00.000Z',
      expireAt: new Date('2026-02-02T00:00:00.000Z'),
    });
    expect(entryOp.replacement.document._folio).to.deep.equal({
      version: 2,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-02T00:00:00.000Z',
    });
    const ops = writes.trashVersions.map(replaceOf);
    expect(ops.map((o) => o.filter)).to.deep.equal([
      { docId: 't0', version: 1 },
      { docId: 't0', version: 2 },
    ]);
    for (const op of ops) expect(op.replacement.expireAt).to.deep.equal(new Date('2026-02-02T00:00:00.000Z'));
    expect(trashEntriesToLookUp('folio', RECORDS)).to.deep.equal([]);
  });

  it('a history whose entry came in an earlier batch takes its expiry from there; without one, it is refused', () => {
    expect(trashEntriesToLookUp('folio', versions)).to.deep.equal([
      { dbName, collection: 'orders', ids: ['t0'] },
    ]);
    const earlier = new Map([[trashEntryKey(dbName, 'orders', 't0'), '2026-05-05T00:00:00.000Z']]);
    const plan = planSnapshotWrites('folio', versions, earlier);
    const ops = [...plan.collections.values()][0]!.trashVersions.map(replaceOf);
    expect(ops.map((o) => o.replacement.expireAt)).to.deep.equal([
      new Date('2026-05-05T00:00:00.000Z'),
      new Date('2026-05-05T00:00:00.000Z'),
    ]);
    expect(() => planSnapshotWrites('folio', versions)).to.throw(
      /trashed version of orders\/t0 comes without/,
    );
    // Another collection's entry of the same id does not count.
    const elsewhere = new Map([[trashEntryKey(dbName, 'other', 't0'), '2026-05-05T00:00:00.000Z']]);
    expect(() => planSnapshotWrites('folio', versions, elsewhere)).to.throw(/comes without/);
    expect(() => planSnapshotWrites('folio', [entry, ...versions])).to.not.throw();
  });
});

describe('MongoDB snapshot failures (pure)', () => {
  it('SnapshotUnavailable (246) is a lost snapshot worth reading again; SnapshotTooOld (239) is not; others pass', () => {
    const unavailable = snapshotLost({ code: 246, message: 'pending collection catalog changes' });
    expect(unavailable).to.be.instanceOf(SnapshotLostError);
    expect(unavailable!.retryable).to.equal(true);
    const tooOld = snapshotLost({ code: 239 });
    expect(tooOld!.retryable).to.equal(false);
    expect(tooOld!.message).to.match(/minSnapshotHistoryWindowInSeconds/);
    for (const other of [{ code: 245 }, { code: 247 }, new Error('x'), null, undefined]) {
      expect(snapshotLost(other)).to.equal(null);
    }
  });
});

describe('folio migrate --to (pure)', () => {
  const config = loadConfig({}, { dataDir: 'data' });

  it('a mongodb:// or mongodb+srv:// target is MongoDB; anything else is an embedded data directory', () => {
    for (const uri of ['mongodb://a,b/?replicaSet=rs0', 'mongodb+srv://u:p@cluster.example/']) {
      expect(targetConfig(config, uri)).to.include({ store: 'mongodb', mongodbUri: uri });
    }
    for (const dir of ['./other', 'mongodb', '/srv/mongodb:/x']) {
      expect(targetConfig(config, dir)).to.include({ store: 'embedded', dataDir: dir, mongodbUri: '' });
    }
  });

  it('two stores are the same when their place is: a data directory however spelled, a URI with its prefix', () => {
    expect(storeIdentity(targetConfig(config, './data'))).to.equal(storeIdentity(config));
    expect(storeIdentity(targetConfig(config, './data2'))).to.not.equal(storeIdentity(config));
    const mongo = targetConfig(config, 'mongodb://h/?replicaSet=rs0');
    expect(storeIdentity(mongo)).to.equal(storeIdentity({ ...mongo }));
    expect(storeIdentity({ ...mongo, mongodb: { ...mongo.mongodb, dbPrefix: 'other' } })).to.not.equal(
      storeIdentity(mongo),
    );
  });
});
