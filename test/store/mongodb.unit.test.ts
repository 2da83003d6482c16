/**
 * The MongoDB store's logic that needs no server: stored form through BSON, index definitions,
 * the server check, database naming, the exact find() arguments (evaluated by mingo against the
 * embedded store's answers), the write plan (its conditional filters evaluated by mingo), the
 * change-stream pipeline, event mapping and failure classification, the cluster clock and the
 * counter update.
 * The live behaviour is the conformance suite's (`test/store/conformance.test.ts`, `@mongodb`).
 */
import { expect } from 'chai';
import { aggregate, find, Query, updateOne } from 'mingo';
import type { PipelineStage } from 'mingo/updater';
import {
  Binary,
  BSON,
  type ChangeStreamDocument,
  type Document,
  MongoErrorLabel,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  type Sort,
  Timestamp,
} from 'mongodb';
import { isoNow, newId } from '../../src/ids.js';
import { parseListQuery, type RawQuery } from '../../src/query/listQuery.js';
import { positionFilter } from '../../src/store/documentQuery/cursor.js';
import type { EmbeddedStore } from '../../src/store/embedded/index.js';
import { toDuplicateError } from '../../src/store/mongodb/accounts/accounts.js';
import {
  COUNTER_TTL_GRACE_MS,
  COUNTER_WRITE_CONCERN,
  type CounterDoc,
  counterUpdatePipeline,
  resetInCallerClock,
} from '../../src/store/mongodb/accounts/counters.js';
import {
  fromAccountDoc,
  fromKeyDoc,
  fromProjectDoc,
  fromSessionDoc,
  toAccountDoc,
  toKeyDoc,
  toProjectDoc,
  toSessionDoc,
} from '../../src/store/mongodb/accounts/systemRecords.js';
import {
  CHANGE_STREAM_OPTIONS,
  changeStreamPipeline,
  classifyChange,
  compareTokens,
  isWellFormedToken,
  normalizeToken,
  toChangeEvent,
  tokenFromString,
} from '../../src/store/mongodb/changes/changeEvents.js';
import {
  asTimestamp,
  ClusterClock,
  compareTimestamps,
  isAfterStart,
  majorityOpTime,
} from '../../src/store/mongodb/changes/clusterClock.js';
import {
  classifyStreamError,
  isTransient,
  reopenDelayMs,
} from '../../src/store/mongodb/changes/streamErrors.js';
import {
  acquireSlotFilter,
  acquireSlotUpdate,
  renewSlotFilter,
  renewSlotUpdate,
} from '../../src/store/mongodb/changes/streamSlots.js';
import { MISSING_PACKAGE_MESSAGE } from '../../src/store/mongodb/database/memoryServer.js';
import {
  duplicateKeyFields,
  isDuplicateKeyError,
  queryRejection,
} from '../../src/store/mongodb/database/serverErrors.js';
import { transactionOptions } from '../../src/store/mongodb/database/transactions.js';
import { toDriverFind, toProjection } from '../../src/store/mongodb/documents/documents.js';
import { planWrites, type VersionRecord } from '../../src/store/mongodb/documents/writePlan.js';
import { createMongoStore } from '../../src/store/mongodb/index.js';
import {
  DOCUMENT_COLLECTION_OPTIONS,
  DOCUMENT_INDEXES,
  documentCollectionIndexes,
  indexServesSort,
  SYSTEM_INDEXES,
  VERSIONS_INDEXES,
} from '../../src/store/mongodb/layout/indexes.js';
import {
  assertDbPrefix,
  COLLECTION_NAME_PATTERN,
  MAX_DB_NAME_BYTES,
  projectDbName,
  projectDbPattern,
  projectSegment,
  SYSTEM_COLLECTIONS,
  scopeFromDbName,
  systemDbName,
  versionsCollectionName,
} from '../../src/store/mongodb/layout/naming.js';
import { checkServer, parseServerVersion } from '../../src/store/mongodb/startup/serverCheck.js';
import {
  type ApiKeyRecord,
  type DataScope,
  type DocumentWrite,
  DuplicateError,
  type FindQuery,
  type FolioDocument,
  type JsonObject,
  QueryRejectedError,
  type StoredFilter,
} from '../../src/store/port.js';
import { fromStored, type StoredDocument, toStored } from '../../src/store/storedForm.js';
import { assertContiguous, findConflicts } from '../../src/store/writeConditions.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from './embeddedFactory.js';
import { putWrite } from './fixtures.js';

/** Through the driver's own BSON encoding and back, as a document makes a round trip to MongoDB. */
function throughBson<T extends Document>(doc: T): Document {
  return BSON.deserialize(BSON.serialize(doc));
}

function folioDoc(fields: JsonObject, version = 1, id = newId('doc')): FolioDocument {
  const created = '2024-05-01T10:00:00.000Z';
  return {
    _id: id,
    ...fields,
    $createdAt: created,
    $updatedAt: isoNow(Date.parse(created) + version),
    $version: version,
  };
}

describe('MongoDB store: stored form', () => {
  it('round-trips documents through BSON with metadata under _folio', () => {
    const doc = folioDoc(
      {
        name: 'Ada',
        n: 3,
        big: 2 ** 40 + 1,
        ratio: 1.5,
        negative: -7,
        flag: false,
        nothing: null,
        nested: { list: [1, 'two', null, { x: true }], deeper: { a: [] } },
        empty: {},
      },
      4,
    );
    const stored = toStored(doc);
    expect(stored._folio).to.deep.equal({ version: 4, createdAt: doc.$createdAt, updatedAt: doc.$updatedAt });
    expect(Object.keys(stored).filter((k) => k.startsWith('$'))).to.deep.equal([]);
    const back = fromStored(throughBson(stored));
    expect(back).to.deep.equal(doc);
    expect(typeof back.big).to.equal('number');
  });

  it('keeps metadata timestamps as ISO strings, so filters on them compare like the embedded store', () => {
    const stored = throughBson(toStored(folioDoc({})));
    expect(stored._folio.createdAt).to.be.a('string');
    expect(stored._folio.updatedAt).to.be.a('string');
    expect(stored._folio.version).to.be.a('number');
  });

  it('maps a projected stored document back with only the metadata it holds', () => {
    expect(fromStored(throughBson({ _id: 'doc_1', name: 'x', _folio: { version: 2 } }))).to.deep.equal({
      _id: 'doc_1',
      name: 'x',
      $version: 2,
    });
  });
});

describe('MongoDB store: system records', () => {
  it('stores accounts with a lower-cased email key and maps them back unchanged', () => {
    const account = {
      id: newId('acc'),
      email: 'Ada.Lovelace@Example.COM',
      passwordHash: 'scrypt$x',
      plan: 'pro' as const,
      createdAt: isoNow(),
    };
    const doc = toAccountDoc(account);
    expect(doc._id).to.equal(account.id);
    expect(doc.emailLower).to.equal('ada.lovelace@example.com');
    expect(fromAccountDoc(throughBson(doc) as typeof doc)).to.deep.equal(account);
  });

  it('stores a session expiry as a BSON Date (for the TTL index) and returns the same ISO string', () => {
    const session = {
      tokenHash: 'abc123',
      accountId: newId('acc'),
      createdAt: isoNow(1_700_000_000_000),
      expiresAt: isoNow(1_700_000_060_123),
    };
    const doc = toSessionDoc(session);
    expect(doc.expiresAt).to.be.instanceOf(Date);
    const back = throughBson(doc);
    expect(back.expiresAt).to.be.instanceOf(Date);
    expect(fromSessionDoc(back as typeof doc)).to.deep.equal(session);
  });

  it('round-trips projects and keys, config and nulls included', () => {
    const project = {
      id: newId('prj'),
      accountId: newId('acc'),
      name: 'shop',
      createdAt: isoNow(),
      allowedOrigins: ['https://a.example'],
    };
    expect(
      fromProjectDoc(throughBson(toProjectDoc(project)) as ReturnType<typeof toProjectDoc>),
    ).to.deep.equal(project);
    const { allowedOrigins: _, ...older } = toProjectDoc(project);
    expect(fromProjectDoc(older).allowedOrigins, 'a project written before origins existed').to.equal(null);
    const key: ApiKeyRecord = {
      id: newId('key'),
      projectId: project.id,
      name: 'server',
      env: 'live',
      scope: 'read-only',
      config: { note: 'x', nested: { a: [1, 2.5, null] } },
      status: 'active',
      keyHash: 'f'.repeat(64),
      hint: 'folio_sk_live_...abcd',
      createdAt: isoNow(),
      lastUsedAt: null,
      revokedAt: null,
      rotatedFrom: newId('key'),
      rules: [
        {
          collections: ['posts', 'public_*'],
          access: 'read',
          filter: { published: true, 'author.team': 'a' },
        },
      ],
    };
    expect(fromKeyDoc(throughBson(toKeyDoc(key)) as ReturnType<typeof toKeyDoc>)).to.deep.equal(key);
    // A rule filter names paths (`author.team`): stored as text, never as MongoDB field names.
    expect(toKeyDoc(key).rules).to.equal(JSON.stringify(key.rules));
    expect(fromKeyDoc({ ...toKeyDoc(key), rules: undefined }).rules, 'a key from before rules').to.equal(
      null,
    );
  });
});

describe('MongoDB store: index definitions', () => {
  it('declares the unique, lookup and TTL indexes of the system database', () => {
    expect(Object.keys(SYSTEM_INDEXES).sort()).to.deep.equal(Object.keys(SYSTEM_COLLECTIONS).sort());
    const find = (collection: keyof typeof SYSTEM_INDEXES, key: Record<string, 1 | -1>) =>
      SYSTEM_INDEXES[collection].find((index) => JSON.stringify(index.key) === JSON.stringify(key));
    // The uniqueness the port promises (DuplicateError) rests on these.
    for (const [collection, key] of [
      ['accounts', { emailLower: 1 }],
      ['projects', { accountId: 1, name: 1 }],
      ['keys', { keyHash: 1 }],
    ] as const) {
      expect(find(collection, key)?.unique, `${collection} ${JSON.stringify(key)}`).to.equal(true);
    }
    // Expiring records go once `expiresAt` (a BSON Date) has passed.
    for (const collection of ['sessions', 'counters', 'streamSlots'] as const) {
      expect(find(collection, { expiresAt: 1 })?.expireAfterSeconds, collection).to.equal(0);
    }
    // Lookups in the order the store reads them: a project's keys newest first, a collection's
    // webhooks oldest first, a webhook's deliveries newest first.
    expect(find('keys', { projectId: 1, createdAt: -1 })).to.not.equal(undefined);
    expect(find('webhooks', { projectId: 1, env: 1, collection: 1, createdAt: 1 })).to.not.equal(undefined);
    expect(find('webhookDeliveries', { webhookId: 1, createdAt: -1, _id: -1 })).to.not.equal(undefined);
    // Nothing else is unique: a unique index the port does not promise would refuse valid writes.
    const unique = Object.values(SYSTEM_INDEXES).flatMap((list) => list.filter((index) => index.unique));
    expect(unique).to.have.length(3);
    for (const list of Object.values(SYSTEM_INDEXES)) {
      expect(new Set(list.map((index) => index.name)).size, 'index names within a collection').to.equal(
        list.length,
      );
    }
  });

  it('keys each version sidecar uniquely by (docId, version), and documents by each metadata field then _id', () => {
    expect(VERSIONS_INDEXES).to.deep.equal([
      { key: { docId: 1, version: 1 }, name: 'docId_version_unique', unique: true },
    ]);
    expect(DOCUMENT_INDEXES.map((index) => index.key)).to.deep.equal([
      { '_folio.createdAt': 1, _id: 1 },
      { '_folio.updatedAt': 1, _id: 1 },
      { '_folio.version': 1, _id: 1 },
    ]);
    expect(documentCollectionIndexes()).to.deep.equal({
      documents: DOCUMENT_INDEXES,
      versions: VERSIONS_INDEXES,
    });
  });

  it('serves every sort on a metadata field the service sends, ascending or descending, by an index', () => {
    for (const field of ['$createdAt', '$updatedAt', '$version']) {
      for (const sort of [field, `-${field}`]) {
        const { sort: sent } = parseListQuery({ sort });
        const serving = DOCUMENT_INDEXES.filter((index) => indexServesSort(index.key as Document, sent));
        expect(serving, sort).to.have.length(1);
      }
    }
  });

  it('knows when an index serves a sort: leading paths in order, all directions kept or all reversed', () => {
    const key = { a: 1, b: -1, _id: 1 };
    expect(indexServesSort(key, [['a', 1]])).to.equal(true);
    expect(
      indexServesSort(key, [
        ['a', -1],
        ['b', 1],
        ['_id', -1],
      ]),
    ).to.equal(true);
    expect(
      indexServesSort(key, [
        ['a', 1],
        ['b', -1],
        ['_id', 1],
      ]),
    ).to.equal(true);
    expect(
      indexServesSort(key, [
        ['a', 1],
        ['b', 1],
      ]),
    ).to.equal(false);
    expect(indexServesSort(key, [['b', -1]])).to.equal(false);
    expect(
      indexServesSort(key, [
        ['a', 1],
        ['b', -1],
        ['_id', 1],
        ['c', 1],
      ]),
    ).to.equal(false);
    expect(indexServesSort(key, [])).to.equal(false);
  });

  it('creates document collections with pre- and post-images recorded', () => {
    expect(DOCUMENT_COLLECTION_OPTIONS).to.deep.equal({ changeStreamPreAndPostImages: { enabled: true } });
  });

  it('runs transactions with snapshot reads and majority writes on the primary, each bounded in time', () => {
    expect(transactionOptions({ commitTimeoutMs: 7000, writeConcernTimeoutMs: 8000 })).to.deep.equal({
      readConcern: { level: 'snapshot' },
      writeConcern: { w: 'majority', wtimeoutMS: 8000 },
      readPreference: 'primary',
      maxCommitTimeMS: 7000,
    });
  });
});

describe('MongoDB store: server check', () => {
  const build = (version: string) => ({
    version,
    versionArray: version.split('.').map(Number).concat(0),
    ok: 1,
  });
  const replicaSet = {
    isWritablePrimary: true,
    setName: 'rs0',
    hosts: ['db:27017'],
    maxWireVersion: 21,
    ok: 1,
  };
  const mongos = { isWritablePrimary: true, msg: 'isdbgrid', maxWireVersion: 21, ok: 1 };
  const standalone = { isWritablePrimary: true, maxWireVersion: 21, ok: 1 };

  it('accepts a replica set and a sharded cluster on 6.0 or later', () => {
    expect(checkServer(replicaSet, build('6.0.0'))).to.deep.equal({
      ok: true,
      topology: 'replicaSet',
      version: '6.0.0',
      versionArray: [6, 0, 0],
    });
    expect(checkServer(replicaSet, build('7.0.12'))).to.include({ ok: true, topology: 'replicaSet' });
    expect(checkServer(mongos, build('8.0.4'))).to.deep.equal({
      ok: true,
      topology: 'sharded',
      version: '8.0.4',
      versionArray: [8, 0, 4],
    });
  });

  it('refuses a standalone server, saying why and how to make a replica set', () => {
    const verdict = checkServer(standalone, build('7.0.2'));
    expect(verdict.ok).to.equal(false);
    if (verdict.ok) return;
    expect(verdict.problems).to.deep.equal(['standalone']);
    expect(verdict.message).to.match(/standalone/);
    expect(verdict.message).to.match(/transaction/);
    expect(verdict.message).to.match(/change stream/);
    expect(verdict.message).to.include('--replSet');
    expect(verdict.message).to.include('rs.initiate()');
    expect(verdict.message).to.include('?replicaSet=');
  });

  it('tells a replica set member that was never initiated to run rs.initiate()', () => {
    const verdict = checkServer({ isWritablePrimary: false, isreplicaset: true, ok: 1 }, build('7.0.2'));
    expect(verdict.ok).to.equal(false);
    if (verdict.ok) return;
    expect(verdict.problems).to.deep.equal(['uninitiatedReplicaSet']);
    expect(verdict.message).to.include('rs.initiate()');
  });

  it('refuses MongoDB older than 6.0, naming the version found', () => {
    const verdict = checkServer(replicaSet, build('5.0.14'));
    expect(verdict.ok).to.equal(false);
    if (verdict.ok) return;
    expect(verdict.problems).to.deep.equal(['version']);
    expect(verdict.message).to.include('5.0.14');
    expect(verdict.message).to.include('6.0');
  });

  it('reports both problems of an old standalone server', () => {
    const verdict = checkServer(standalone, build('4.4.29'));
    expect(verdict.ok).to.equal(false);
    if (!verdict.ok) expect(verdict.problems).to.deep.equal(['version', 'standalone']);
  });

  it('reads the version from versionArray, else from the version string', () => {
    expect(parseServerVersion({ versionArray: [6, 0, 3, 0], version: 'ignored' })).to.deep.equal([6, 0, 3]);
    expect(parseServerVersion({ version: '7.0.0-rc1' })).to.deep.equal([7, 0, 0]);
    expect(parseServerVersion({ version: 'garbage' })).to.equal(null);
    expect(checkServer(replicaSet, { version: '6.0.1' }).ok).to.equal(true);
    expect(checkServer(replicaSet, {}).ok).to.equal(false);
  });
});

describe('MongoDB store: naming', () => {
  const forbidden = /[/\\. "$*<>:|?\0]/;
  const scope = (projectId: string, env: DataScope['env'] = 'live'): DataScope => ({ projectId, env });

  it('names one database per project environment, readable for canonical project ids', () => {
    const id = newId('prj');
    expect(projectDbName('folio', scope(id))).to.equal(`folio_${id.toLowerCase()}_live`);
    expect(projectDbName('folio', scope(id, 'test'))).to.equal(`folio_${id.toLowerCase()}_test`);
    expect(systemDbName('folio')).to.equal('folio_system');
  });

  it('keeps every database name within 63 bytes and free of forbidden characters', () => {
    const longPrefix = `p${'x'.repeat(19)}`;
    assertDbPrefix(longPrefix);
    const ids = [newId('prj'), 'p1', 'weird/id.with "chars"$', 'é'.repeat(300), '', 'prj_lowercase'];
    for (const id of ids) {
      for (const env of ['live', 'test'] as const) {
        const name = projectDbName(longPrefix, scope(id, env));
        expect(Buffer.byteLength(name), name).to.be.at.most(MAX_DB_NAME_BYTES);
        expect(name).not.to.match(forbidden);
      }
    }
    expect(Buffer.byteLength(systemDbName(longPrefix))).to.be.at.most(MAX_DB_NAME_BYTES);
  });

  it('never maps two project ids to names that clash, even ones differing only in case', () => {
    const ids = [newId('prj'), newId('prj'), 'P1', 'p1', 'x', 'X', 'prj_abc', 'PRJ_ABC'];
    const names = ids.map((id) => projectDbName('folio', scope(id)).toLowerCase());
    expect(new Set(names).size).to.equal(ids.length);
    // A hashed segment can never look like a canonical one.
    expect(projectSegment('p1')).to.match(/^x[0-9a-f]{32}$/);
    expect(projectSegment(newId('prj'))).to.match(/^prj_[0-9a-z]{26}$/);
  });

  it('refuses prefixes the configuration would refuse', () => {
    for (const bad of ['', '1abc', 'a-b', 'a.b', 'x'.repeat(21)]) {
      expect(() => assertDbPrefix(bad), bad).to.throw(/prefix/);
    }
  });

  it('names version sidecars so that no Folio collection can ever take the name', () => {
    expect(versionsCollectionName('things')).to.equal('_folio.versions.things');
    expect(COLLECTION_NAME_PATTERN.test(versionsCollectionName('things'))).to.equal(false);
    expect(() => versionsCollectionName('bad.name')).to.throw();
  });
});

describe('MongoDB store: find() arguments', () => {
  it('passes the filter through and sends sort, skip, limit and an inclusion projection', () => {
    const filter: StoredFilter = {
      $and: [{ age: { $gt: 30 } }, { 'city.name': { $in: ['London', 'Paris'] } }],
    };
    const query: FindQuery = {
      filter,
      sort: [
        ['age', -1],
        ['_id', -1],
      ],
      skip: 20,
      limit: 10,
      projection: ['_id', 'name', 'city', 'city.name', '_folio.version'],
    };
    const { filter: sent, options } = toDriverFind(query, 1234);
    expect(sent).to.equal(filter);
    expect(options).to.deep.equal({
      sort: [
        ['age', -1],
        ['_id', -1],
      ],
      skip: 20,
      limit: 10,
      maxTimeMS: 1234,
      projection: { _id: 1, name: 1, city: 1, '_folio.version': 1 },
    });
  });

  it('a cursor page (after) adds the keyset of its position; the rows after it, by mingo, are the rest of the order', () => {
    const sort: FindQuery['sort'] = [
      ['age', 1],
      ['_id', 1],
    ];
    const docs = [
      { _id: 'a', age: 30 },
      { _id: 'b', age: 20 },
      { _id: 'c', age: 30 },
      { _id: 'd', age: 'x' },
      { _id: 'e' },
    ];
    const { filter } = toDriverFind(
      { filter: { age: { $exists: true } }, sort, skip: 0, limit: 0, after: { keys: [30], id: 'a' } },
      10_000,
    );
    expect(filter).to.deep.equal({
      $and: [{ age: { $exists: true } }, positionFilter({ keys: [30], id: 'a' }, sort)],
    });
    const after = (new Query(filter as JsonObject).find(docs).all() as JsonObject[]).map((d) => d._id);
    expect(after.sort()).to.deep.equal(['c', 'd']);
  });

  it('sorts by _id when no sort is given, passes limit 0 (no limit) through, and projects nothing by default', () => {
    const { options } = toDriverFind({ filter: {}, sort: [], skip: 0, limit: 0 }, 10_000);
    expect(options).to.deep.equal({ sort: [['_id', 1]], skip: 0, limit: 0, maxTimeMS: 10_000 });
  });

  it('always includes _id and drops paths inside other requested paths', () => {
    expect(toProjection(['a.b', 'a', 'c.d', 'c.d.e', 'c.f'])).to.deep.equal({
      _id: 1,
      a: 1,
      'c.d': 1,
      'c.f': 1,
    });
    expect(toProjection([])).to.deep.equal({ _id: 1 });
  });

  describe('evaluated by mingo, the arguments give the embedded store’s answers', () => {
    const scope: DataScope = { projectId: newId('prj'), env: 'test' };
    const COLLECTION = 'people';
    let embedded: EmbeddedStore;
    let stored: StoredDocument[];

    before(async () => {
      embedded = await createTempEmbeddedStore();
      const rows: JsonObject[] = [
        { name: 'Ada', age: 36, city: { name: 'London', zip: 'N1' }, tags: ['math'], active: true },
        { name: 'alan', age: 41, city: { name: 'Wilmslow' }, tags: ['math', 'code'], active: false },
        { name: 'Grace', age: 85, city: { name: 'Arlington' }, active: true, score: 9 },
        { name: 'Linus', age: 28, city: { name: 'Helsinki' }, tags: ['code'] },
        { name: 'Barbara', age: 41, score: 9.5 },
        { name: 'Édith', age: 47, city: { name: 'Paris' }, tags: [], score: 7.25 },
        { name: 'ken', age: 41, city: { name: 'london' }, score: 8, note: 'a.b (c)' },
        { name: 'Zed', age: '41', city: { name: 'Oslo', zip: '0150' }, active: 'true' },
      ];
      const docs: FolioDocument[] = [];
      for (const [i, fields] of rows.entries()) {
        const doc = folioDoc(fields, 1, `doc_${String(i).padStart(2, '0')}`);
        await embedded.documents.commit(scope, COLLECTION, [putWrite(doc)]);
        docs.push(doc);
      }
      // Two more versions of one document, so version and update-time filters discriminate.
      let current = docs[4]!;
      for (const age of [42, 43]) {
        const next = {
          ...current,
          age,
          $version: current.$version + 1,
          $updatedAt: isoNow(Date.now() + age),
        };
        await embedded.documents.commit(scope, COLLECTION, [putWrite(next)]);
        current = next;
      }
      docs[4] = current;
      stored = docs.map(toStored);
    });

    after(async () => {
      if (embedded) await destroyTempEmbeddedStore(embedded);
    });

    /** What MongoDB would answer for the driver arguments, per mingo. */
    function mingoFind(query: FindQuery): FolioDocument[] {
      const { filter, options } = toDriverFind(query, 10_000);
      const sort = options.sort as Sort;
      expect(Array.isArray(sort)).to.equal(true);
      const sortSpec: Record<string, 1 | -1> = {};
      for (const [path, direction] of sort as Array<[string, 1 | -1]>) sortSpec[path] = direction;
      let cursor = find(stored, filter, options.projection)
        .sort(sortSpec)
        .skip(options.skip ?? 0);
      if (options.limit) cursor = cursor.limit(options.limit);
      return (cursor.all() as JsonObject[]).map(fromStored);
    }

    const queries: RawQuery[] = [
      {},
      { 'filter[age][gt]': '36', sort: '-age' },
      { 'filter[name][contains]': 'a', sort: 'name' },
      { 'filter[city.name]': 'London' },
      { 'filter[city.name][contains]': 'LON', select: 'city.name' },
      { 'filter[tags]': 'code' },
      { 'filter[tags][exists]': 'false', sort: 'name' },
      { 'filter[age][in]': '28,41', sort: '-age,name', limit: '2', offset: '1' },
      { 'filter[age]': '41', sort: 'name' },
      { 'filter[active]': 'true' },
      { 'filter[name][neq]': 'Ada', select: 'name,city.name' },
      { 'filter[$version][gte]': '2' },
      { sort: '-$updatedAt', select: 'name,$version,$updatedAt' },
      { 'filter[score][lte]': '9', sort: 'score' },
      { sort: 'city.name', select: 'city' },
      { 'filter[note][contains]': '.b (', select: 'note' },
      { 'filter[age][gte]': '41', 'filter[age][lt]': '50', sort: '-name', limit: '3' },
      { 'filter[city.zip][exists]': 'true', sort: '-city.zip' },
      { offset: '6', limit: '5' },
    ];

    for (const raw of queries) {
      it(`agrees on ${JSON.stringify(raw)}`, async () => {
        const q = parseListQuery(raw);
        const query: FindQuery = {
          filter: q.filter,
          sort: q.sort,
          skip: q.offset,
          limit: q.limit,
          projection: q.projection,
        };
        const expected = await embedded.documents.find(scope, COLLECTION, query);
        expect(mingoFind(query)).to.deep.equal(expected);
        const mingoCount = new Query(toDriverFind(query, 10_000).filter).find(stored).all().length;
        expect(mingoCount).to.equal(await embedded.documents.count(scope, COLLECTION, q.filter));
      });
    }
  });
});

describe('MongoDB store: write plan', () => {
  const v1 = folioDoc({ name: 'a' }, 1, 'doc_a');
  const v2 = { ...v1, name: 'b', $version: 2 };
  const other = folioDoc({ name: 'o' }, 1, 'doc_o');

  it('refuses a $version that is not expectedVersion + 1, as a caller bug', () => {
    expect(() => assertContiguous([{ ...putWrite(v2), expectedVersion: 0 }])).to.throw(TypeError);
    expect(() => assertContiguous([putWrite(v2)])).not.to.throw();
  });

  it('reports each failed condition with the current version, in write order', () => {
    const current = new Map([
      ['doc_a', 3],
      ['doc_o', 1],
    ]);
    const writes: DocumentWrite[] = [
      putWrite(folioDoc({}, 1, 'doc_new')),
      putWrite(v1), // exists at 3
      putWrite(v2), // expects 1, is 3
      { kind: 'delete', id: 'doc_o', expectedVersion: 1 },
      { kind: 'delete', id: 'doc_missing', expectedVersion: 4 },
      putWrite({ ...folioDoc({}, 2, 'doc_gone') }), // update of a missing document
    ];
    expect(findConflicts(writes, (id) => current.get(id) ?? null)).to.deep.equal([
      { id: 'doc_a', currentVersion: 3 },
      { id: 'doc_a', currentVersion: 3 },
      { id: 'doc_missing', currentVersion: null },
      { id: 'doc_gone', currentVersion: null },
    ]);
  });

  it('evaluates each condition against what the earlier writes of the batch leave', () => {
    const writes: DocumentWrite[] = [
      putWrite(v1),
      putWrite(v2),
      { kind: 'delete', id: 'doc_a', expectedVersion: 2 },
      putWrite(v1),
    ];
    expect(findConflicts(writes, () => null)).to.deep.equal([]);
    expect(findConflicts([{ kind: 'delete', id: 'doc_a', expectedVersion: 0 }], () => null)).to.deep.equal([
      { id: 'doc_a', currentVersion: null },
    ]);
  });

  it('plans an insert for a create, a version-conditioned replace for an update, and pruning', () => {
    const v5 = { ...v1, $version: 5 };
    const plan = planWrites([
      putWrite(v1),
      putWrite(v5, { keepVersions: 3 }),
      { kind: 'delete', id: 'doc_o', expectedVersion: 2 },
    ]);
    const s1 = toStored(v1);
    const s5 = toStored(v5);
    expect(plan.documentOps).to.deep.equal([
      { insertOne: { document: s1 } },
      { replaceOne: { filter: { _id: 'doc_a', '_folio.version': 4 }, replacement: s5 } },
      { deleteOne: { filter: { _id: 'doc_o', '_folio.version': 2 } } },
    ]);
    const record = (doc: FolioDocument, operation: string): VersionRecord =>
      ({
        docId: doc._id,
        version: doc.$version,
        operation,
        timestamp: doc.$updatedAt,
        apiKeyHint: 'folio_sk_test_...abcd',
        document: toStored(doc),
      }) as VersionRecord;
    expect(plan.versionOps).to.deep.equal([
      { deleteMany: { filter: { docId: 'doc_a' } } },
      { insertOne: { document: record(v1, 'create') } },
      { insertOne: { document: record(v5, 'update') } },
      { deleteMany: { filter: { docId: 'doc_a', version: { $lte: 2 } } } },
      { deleteMany: { filter: { docId: 'doc_o' } } },
    ]);
    expect(plan.expected).to.deep.equal({ inserted: 1, matched: 1, deleted: 1 });
  });

  /** Applies a plan to in-memory collections, each filter evaluated by mingo. */
  function apply(docs: StoredDocument[], versions: VersionRecord[], writes: DocumentWrite[]) {
    const plan = planWrites(writes);
    const counts = { inserted: 0, matched: 0, deleted: 0 };
    for (const op of plan.documentOps) {
      if ('insertOne' in op) {
        const doc = op.insertOne.document as StoredDocument;
        if (docs.some((d) => d._id === doc._id)) throw new Error('E11000');
        docs.push(doc);
        counts.inserted++;
      } else if ('replaceOne' in op) {
        const at = docs.findIndex((d) => new Query(op.replaceOne.filter as Document).test(d));
        if (at >= 0) {
          docs[at] = op.replaceOne.replacement as StoredDocument;
          counts.matched++;
        }
      } else if ('deleteOne' in op) {
        const at = docs.findIndex((d) => new Query(op.deleteOne.filter as Document).test(d));
        if (at >= 0) {
          docs.splice(at, 1);
          counts.deleted++;
        }
      }
    }
    for (const op of plan.versionOps) {
      if ('insertOne' in op) versions.push(op.insertOne.document as VersionRecord);
      else if ('deleteMany' in op) {
        const q = new Query(op.deleteMany.filter as Document);
        versions.splice(0, versions.length, ...versions.filter((v) => !q.test({ ...v })));
      }
    }
    return { counts, expected: plan.expected };
  }

  it('conditions every write on the version it expects: a stale plan matches nothing', () => {
    const docs: StoredDocument[] = [];
    const versions: VersionRecord[] = [];
    apply(docs, versions, [putWrite(v1)]);
    apply(docs, versions, [putWrite(v2)]);
    // A writer that still believes the document is at version 1:
    const stale = apply(docs, versions, [putWrite({ ...v1, name: 'stale', $version: 2 })]);
    expect(stale.counts).not.to.deep.equal(stale.expected);
    expect(docs).to.deep.equal([toStored(v2)]);
    const staleDelete = apply(docs, versions, [{ kind: 'delete', id: 'doc_a', expectedVersion: 1 }]);
    expect(staleDelete.counts.deleted).to.equal(0);
  });

  it('keeps exactly keepVersions records and removes the whole history with the document', () => {
    const docs: StoredDocument[] = [];
    const versions: VersionRecord[] = [];
    let doc = v1;
    apply(docs, versions, [putWrite(doc, { keepVersions: 3 })]);
    for (let v = 2; v <= 6; v++) {
      doc = { ...doc, n: v, $version: v };
      const { counts, expected } = apply(docs, versions, [putWrite(doc, { keepVersions: 3 })]);
      expect(counts).to.deep.equal(expected);
    }
    expect(versions.map((r) => r.version)).to.deep.equal([4, 5, 6]);
    expect(fromStored(versions.at(-1)!.document)).to.deep.equal(doc);
    apply(docs, versions, [putWrite(other)]);
    apply(docs, versions, [{ kind: 'delete', id: 'doc_a', expectedVersion: 6 }]);
    expect(docs.map((d) => d._id)).to.deep.equal(['doc_o']);
    expect(versions.map((r) => r.docId)).to.deep.equal(['doc_o']);
  });

  it('starts a new document’s history afresh over records left by a collection dropped behind Folio', () => {
    const docs: StoredDocument[] = [];
    // The sidecar outlived its document collection: versions 1-3 of doc_a, no document.
    const versions: VersionRecord[] = [1, 2, 3].map((version) => ({
      docId: 'doc_a',
      version,
      operation: 'update',
      timestamp: v1.$updatedAt,
      apiKeyHint: 'folio_sk_test_...abcd',
      document: toStored({ ...v1, $version: version }),
    }));
    const { counts, expected } = apply(docs, versions, [putWrite(v1)]);
    expect(counts).to.deep.equal(expected);
    expect(versions.map((r) => [r.docId, r.version, r.operation])).to.deep.equal([['doc_a', 1, 'create']]);
  });
});

describe('MongoDB store: change events', () => {
  const uuid = new Binary(Buffer.alloc(16), 4);
  const scope: DataScope = { projectId: 'prj_01J0000000000000000000000A', env: 'live' };
  const ns = { db: projectDbName('folio', scope), coll: 'things' };
  const clusterTime = new Timestamp({ t: 1_717_000_000, i: 3 });
  const wallTime = new Date('2024-05-29T16:26:40.123Z');
  const v1 = folioDoc({ name: 'Ada' }, 1, 'doc_1');
  const v2 = { ...v1, name: 'Ada L.', $version: 2 };
  const common = { clusterTime, wallTime, ns, documentKey: { _id: 'doc_1' }, collectionUUID: uuid };

  it('maps inserts to created, replacements and updates to updated, deletes to deleted, with their scope', () => {
    const inserted: ChangeStreamDocument<StoredDocument> = {
      _id: { _data: '82AA01' },
      operationType: 'insert',
      fullDocument: throughBson(toStored(v1)) as StoredDocument,
      ...common,
    };
    expect(toChangeEvent(inserted, scope)).to.deep.equal({
      event: {
        token: '82AA01',
        scope,
        type: 'created',
        collection: 'things',
        documentId: 'doc_1',
        document: v1,
        timestamp: '2024-05-29T16:26:40.123Z',
      },
      clusterTime,
    });
    const replaced: ChangeStreamDocument<StoredDocument> = {
      _id: { _data: '82AA02' },
      operationType: 'replace',
      fullDocument: toStored(v2),
      clusterTime,
      wallTime,
      ns,
      documentKey: { _id: 'doc_1' },
    };
    expect(toChangeEvent(replaced, scope)?.event).to.include({ type: 'updated', token: '82AA02' });
    expect(toChangeEvent(replaced, scope)?.event.document).to.deep.equal(v2);
    const updated: ChangeStreamDocument<StoredDocument> = {
      _id: { _data: '82AA03' },
      operationType: 'update',
      fullDocument: toStored(v2),
      updateDescription: { updatedFields: { name: 'Ada L.' } },
      ...common,
    };
    expect(toChangeEvent(updated, scope)?.event.type).to.equal('updated');
    const deleted: ChangeStreamDocument<StoredDocument> = {
      _id: { _data: '82AA04' },
      operationType: 'delete',
      fullDocumentBeforeChange: toStored(v2),
      ...common,
    };
    // The document as it was just before the delete.
    expect(toChangeEvent(deleted, scope)?.event).to.deep.include({ type: 'deleted', document: v2 });
  });

  it('tells document changes from drops, renames, dropped databases and invalidations', () => {
    const base = { _id: { _data: '82AA05' }, clusterTime };
    expect(
      classifyChange({ ...base, operationType: 'insert', fullDocument: toStored(v1), ...common }),
    ).to.deep.equal({ kind: 'document', db: ns.db, collection: 'things' });
    expect(classifyChange({ ...base, operationType: 'drop', ns, collectionUUID: uuid })).to.deep.equal({
      kind: 'dropped',
      namespaces: [{ db: ns.db, collection: 'things' }],
    });
    expect(
      classifyChange({
        ...base,
        operationType: 'rename',
        ns,
        to: { db: ns.db, coll: 'other' },
        collectionUUID: uuid,
      }),
    ).to.deep.equal({
      kind: 'dropped',
      namespaces: [
        { db: ns.db, collection: 'things' },
        { db: ns.db, collection: 'other' },
      ],
    });
    expect(classifyChange({ ...base, operationType: 'dropDatabase', ns: { db: ns.db } })).to.deep.equal({
      kind: 'dropped',
      namespaces: [{ db: ns.db, collection: null }],
    });
    expect(classifyChange({ ...base, operationType: 'invalidate' })).to.deep.equal({ kind: 'invalidate' });
    expect(toChangeEvent({ ...base, operationType: 'drop', ns, collectionUUID: uuid }, scope)).to.equal(null);
  });

  it('skips, rather than half-tells, a change whose document image is missing', () => {
    const deleted: ChangeStreamDocument<StoredDocument> = {
      _id: { _data: '82AA06' },
      operationType: 'delete',
      ...common,
    };
    expect(toChangeEvent(deleted, scope)).to.equal(null);
    const updated: ChangeStreamDocument<StoredDocument> = {
      _id: { _data: '82AA07' },
      operationType: 'update',
      updateDescription: { updatedFields: { name: 'x' } },
      ...common,
    };
    expect(toChangeEvent(updated, scope)).to.equal(null);
  });

  it('refuses a resume token that is not a {_data} string', () => {
    const odd: ChangeStreamDocument<StoredDocument> = {
      _id: { other: 1 },
      operationType: 'insert',
      fullDocument: toStored(v1),
      ...common,
    };
    expect(() => toChangeEvent(odd, scope)).to.throw(/resume token/);
    expect(tokenFromString('82AB')).to.deep.equal({ _data: '82AB' });
  });

  it('falls back to the cluster time for the timestamp when the wall time is missing', () => {
    const inserted: ChangeStreamDocument<StoredDocument> = {
      _id: { _data: '82AA07' },
      operationType: 'insert',
      fullDocument: toStored(v1),
      ns,
      documentKey: { _id: 'doc_1' },
      collectionUUID: uuid,
      clusterTime,
    };
    expect(toChangeEvent(inserted, scope)?.event.timestamp).to.equal(
      new Date(1_717_000_000_000).toISOString(),
    );
  });

  it('asks for post-images and pre-images when available, so one imageless event cannot stop the stream', () => {
    expect(CHANGE_STREAM_OPTIONS).to.deep.equal({
      fullDocument: 'whenAvailable',
      fullDocumentBeforeChange: 'whenAvailable',
    });
  });

  describe('the pipeline, evaluated by mingo', () => {
    const prefix = 'folio';
    const other: DataScope = { projectId: 'prj_01J0000000000000000000000B', env: 'test' };
    const event = (fields: Document): Document => ({ _id: { _data: '82' }, clusterTime, ...fields });
    const run = (pipeline: Document[], docs: Document[]) => aggregate(docs, pipeline as PipelineStage[]);
    const all = changeStreamPipeline({ kind: 'all', prefix });

    it('selects document changes of Folio collections in this deployment’s project databases only', () => {
      const hashed = projectDbName(prefix, { projectId: 'legacy id', env: 'live' });
      const selected = [
        event({ operationType: 'insert', ns }),
        event({ operationType: 'delete', ns: { db: projectDbName(prefix, other), coll: 'a-b_c' } }),
        event({ operationType: 'replace', ns: { db: hashed, coll: 'x' } }),
        event({ operationType: 'update', ns }),
        event({ operationType: 'drop', ns }),
        event({ operationType: 'rename', ns: { db: ns.db, coll: 'tmp' }, to: { db: ns.db, coll: 'things' } }),
        event({ operationType: 'dropDatabase', ns: { db: ns.db } }),
      ];
      const refused = [
        event({ operationType: 'insert', ns: { db: systemDbName(prefix), coll: 'accounts' } }),
        event({ operationType: 'insert', ns: { db: ns.db, coll: versionsCollectionName('things') } }),
        event({ operationType: 'insert', ns: { db: projectDbName('folio_a', scope), coll: 'things' } }),
        event({ operationType: 'insert', ns: { db: 'shop', coll: 'orders' } }),
        event({ operationType: 'dropDatabase', ns: { db: 'shop' } }),
        event({ operationType: 'createIndexes', ns }),
      ];
      expect(run(all, [...selected, ...refused]).map((e) => e.operationType)).to.deep.equal(
        selected.map((e) => e.operationType),
      );
    });

    it('narrows a catch-up stream to its collection and the drops that end it', () => {
      const one = changeStreamPipeline({ kind: 'collection', db: ns.db, collection: 'things' });
      const docs = [
        event({ operationType: 'insert', ns }),
        event({ operationType: 'insert', ns: { db: ns.db, coll: 'others' } }),
        event({ operationType: 'insert', ns: { db: projectDbName(prefix, other), coll: 'things' } }),
        event({ operationType: 'drop', ns }),
        event({ operationType: 'dropDatabase', ns: { db: ns.db } }),
      ];
      expect(run(one, docs)).to.have.length(3);
    });

    it('keeps the pre-image on deletes only: a replacement carries its document once', () => {
      const [replaced, deleted] = run(all, [
        event({
          operationType: 'replace',
          ns,
          fullDocument: toStored(v2),
          fullDocumentBeforeChange: toStored(v1),
        }),
        event({ operationType: 'delete', ns, fullDocumentBeforeChange: toStored(v2) }),
      ]);
      expect(replaced).not.to.have.property('fullDocumentBeforeChange');
      expect(replaced!.fullDocument).to.deep.equal(toStored(v2));
      expect(deleted!.fullDocumentBeforeChange).to.deep.equal(toStored(v2));
      expect(deleted!._id).to.deep.equal({ _data: '82' });
    });
  });

  it('accepts only hex resume tokens, and orders tokens as the server does (byte order)', () => {
    expect(isWellFormedToken('8263A1B2C3000000012B022C0100296E5A1004')).to.equal(true);
    for (const bad of ['', 'evt_01J', '826', 'zz', '82 63'])
      expect(isWellFormedToken(bad), bad).to.equal(false);
    expect(normalizeToken('82ab')).to.equal('82AB');
    expect(compareTokens('8263A1', '8263A2')).to.be.lessThan(0);
    expect(compareTokens('8263A1', '8263A1')).to.equal(0);
    // A prefix sorts first, as in byte order.
    expect(compareTokens('8263A1', '8263A100')).to.be.lessThan(0);
    expect(compareTokens('8264', '8263FFFF')).to.be.greaterThan(0);
  });
});

describe('MongoDB store: change-stream failures', () => {
  const server = (code: number, message = 'x', codeName?: string) =>
    new MongoServerError({ message, code, codeName });
  const fresh = { clientToken: true, established: false };
  const running = { clientToken: false, established: true };

  it('reads lost history from code 286, and from 280 only when the token was not found', () => {
    expect(classifyStreamError(server(286), running)).to.equal('history_lost');
    expect(classifyStreamError(server(999, 'x', 'ChangeStreamHistoryLost'), running)).to.equal(
      'history_lost',
    );
    expect(
      classifyStreamError(
        server(280, 'cannot resume stream; the resume token was not found. {...}'),
        running,
      ),
    ).to.equal('history_lost');
    // Any other 280 cannot clear by reopening at the same place.
    expect(classifyStreamError(server(280, 'some other fatal condition'), running)).to.equal('fatal');
  });

  it('reads a refused token from 260 and 9, and from any non-transient error on a client token’s first batch', () => {
    expect(classifyStreamError(server(260), running)).to.equal('invalid_token');
    expect(classifyStreamError(server(9), fresh)).to.equal('invalid_token');
    expect(classifyStreamError(server(2, 'bad resume token'), fresh)).to.equal('invalid_token');
    // The same error later on, or on the source's own token, is not the client's token: the
    // stream itself is refused, and reopening at the same place is refused again.
    expect(classifyStreamError(server(2), { clientToken: true, established: true })).to.equal('fatal');
    expect(classifyStreamError(server(2), { clientToken: false, established: false })).to.equal('fatal');
  });

  it('retries network errors, elections and failures that are not the server’s, never ending subscriptions for them', () => {
    const transient = [
      new MongoNetworkError('connection reset'),
      new MongoServerSelectionError('no primary', { type: 'ReplicaSetNoPrimary' } as never),
      server(10107, 'not primary'),
      server(189, 'primary stepped down'),
      server(11602, 'interrupted due to repl state change'),
      server(43, 'cursor not found'),
    ];
    for (const error of transient) {
      expect(isTransient(error), error.message).to.equal(true);
      expect(classifyStreamError(error, fresh), error.message).to.equal('retry');
      expect(classifyStreamError(error, running), error.message).to.equal('retry');
    }
    const labelled = server(12345, 'resumable');
    labelled.addErrorLabel(MongoErrorLabel.ResumableChangeStreamError);
    expect(isTransient(labelled)).to.equal(true);
    expect(classifyStreamError(labelled, running)).to.equal('retry');
    expect(classifyStreamError(new Error('boom'), fresh)).to.equal('retry');
  });

  it('backs off from about 100 ms, doubling, to at most 30 s, with jitter', () => {
    expect(reopenDelayMs(1, () => 0)).to.equal(50);
    expect(reopenDelayMs(1, () => 1)).to.equal(100);
    expect(reopenDelayMs(2, () => 1)).to.equal(200);
    expect(reopenDelayMs(5, () => 1)).to.equal(1600);
    expect(reopenDelayMs(9, () => 1)).to.equal(25_600);
    expect(reopenDelayMs(10, () => 1)).to.equal(30_000);
    expect(reopenDelayMs(10_000, () => 0)).to.equal(15_000);
  });
});

describe('MongoDB store: naming the change stream’s databases', () => {
  it('reads the scope back from a canonical project database name, and only from one', () => {
    const scope: DataScope = { projectId: newId('prj'), env: 'test' };
    expect(scopeFromDbName('folio', projectDbName('folio', scope))).to.deep.equal(scope);
    expect(scopeFromDbName('folio', projectDbName('folio', { projectId: 'legacy', env: 'live' }))).to.equal(
      null,
    );
    expect(scopeFromDbName('folio', projectDbName('other', scope))).to.equal(null);
    expect(scopeFromDbName('folio', systemDbName('folio'))).to.equal(null);
    expect(new RegExp(projectDbPattern('folio')).test(projectDbName('folio', scope))).to.equal(true);
    expect(new RegExp(projectDbPattern('folio')).test(projectDbName('folio_a', scope))).to.equal(false);
    expect(new RegExp(projectDbPattern('folio')).test(systemDbName('folio'))).to.equal(false);
  });
});

describe('MongoDB store: cluster clock', () => {
  const ts = (t: number, i: number) => new Timestamp({ t, i });

  it('orders timestamps by seconds, then increment', () => {
    expect(compareTimestamps(ts(10, 5), ts(11, 0))).to.equal(-1);
    expect(compareTimestamps(ts(11, 2), ts(11, 1))).to.equal(1);
    expect(compareTimestamps(ts(11, 2), ts(11, 2))).to.equal(0);
  });

  it('keeps the newest time it is told, and knows how fresh it is', () => {
    let now = 1000;
    const clock = new ClusterClock(() => now);
    expect(clock.latest).to.equal(null);
    expect(clock.fresh(30_000)).to.equal(null);
    clock.observe(ts(100, 2));
    clock.observe(ts(99, 9));
    clock.observe(undefined);
    clock.observe('not a timestamp');
    expect(clock.latest?.toString()).to.equal(ts(100, 2).toString());
    now = 20_000;
    expect(clock.fresh(30_000)?.toString()).to.equal(ts(100, 2).toString());
    now = 40_000;
    expect(clock.fresh(30_000)).to.equal(null);
    // Seeing the same time again (an idle cluster's heartbeat) makes it fresh again.
    clock.observe(ts(100, 2));
    expect(clock.fresh(30_000)).not.to.equal(null);
  });

  it('reads the majority-commit time from a replica-set member’s hello reply', () => {
    const hello = {
      setName: 'rs0',
      lastWrite: {
        opTime: { ts: ts(200, 5), t: 1 },
        majorityOpTime: { ts: ts(200, 4), t: 1 },
        lastWriteDate: new Date(),
      },
    };
    expect(majorityOpTime(hello)?.toString()).to.equal(ts(200, 4).toString());
    expect(majorityOpTime(throughBson(hello))?.toString()).to.equal(ts(200, 4).toString());
    expect(majorityOpTime({ msg: 'isdbgrid' })).to.equal(null);
    const clock = new ClusterClock();
    clock.observeHello(hello);
    expect(clock.latest?.toString()).to.equal(ts(200, 4).toString());
    expect(asTimestamp({ _bsontype: 'Timestamp', t: 3, i: 4 })?.toString()).to.equal(ts(3, 4).toString());
  });

  it('starts a subscription strictly after the time it read', () => {
    expect(isAfterStart(ts(100, 2), ts(100, 2))).to.equal(false);
    expect(isAfterStart(ts(100, 2), ts(100, 1))).to.equal(false);
    expect(isAfterStart(ts(100, 2), ts(100, 3))).to.equal(true);
    expect(isAfterStart(null, ts(1, 1))).to.equal(true);
    expect(isAfterStart(ts(100, 2), undefined)).to.equal(true);
  });
});

describe('MongoDB store: rate-limit counter update', () => {
  /** findOneAndUpdate with upsert, per mingo, with the server's clock reading `serverNowMs`. */
  function hit(docs: Document[], key: string, windowMs: number, serverNowMs: number) {
    if (!docs.some((d) => d._id === key)) docs.push({ _id: key });
    const pipeline = counterUpdatePipeline(windowMs, new Date(serverNowMs)) as PipelineStage[];
    updateOne(docs, { _id: key }, pipeline);
    const doc = docs.find((d) => d._id === key)!;
    return {
      count: doc.count as number,
      resetAtMs: (doc.resetAt as Date).getTime(),
      doc: doc as CounterDoc,
    };
  }

  it('opens a window at the first hit, counts within it, and opens a new one at its end (server time)', () => {
    const docs: Document[] = [];
    const t0 = 1_700_000_000_000;
    for (let i = 1; i <= 5; i++) {
      expect(hit(docs, 'k', 1000, t0 + (i - 1) * 100)).to.deep.include({ count: i, resetAtMs: t0 + 1000 });
    }
    expect(hit(docs, 'k', 1000, t0 + 999)).to.deep.include({ count: 6, resetAtMs: t0 + 1000 });
    expect(hit(docs, 'k', 1000, t0 + 1000)).to.deep.include({ count: 1, resetAtMs: t0 + 2000 });
    expect(hit(docs, 'k', 1000, t0 + 5000)).to.deep.include({ count: 1, resetAtMs: t0 + 6000 });
    expect(hit(docs, 'other', 1000, t0)).to.deep.include({ count: 1 });
  });

  it('decides windows by the server clock alone: the pipeline holds no time from the caller', () => {
    const pipeline = counterUpdatePipeline(1000);
    expect(JSON.stringify(pipeline)).to.include('"$$NOW"');
    // Every constant in it: the window, the grace period, and the counting 0 and 1. No dates.
    const constants = new Set<unknown>();
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(walk);
      else if (value instanceof Date || typeof value === 'number') constants.add(value);
      else if (value && typeof value === 'object') Object.values(value).forEach(walk);
    };
    walk(pipeline);
    expect([...constants].sort()).to.deep.equal([0, 1, 1000, 1000 + COUNTER_TTL_GRACE_MS].sort());
  });

  it('reports the window end in the caller’s clock, whatever the skew to the server', () => {
    const docs: Document[] = [];
    const serverT0 = 1_700_000_000_000;
    hit(docs, 'k', 1000, serverT0);
    const { doc } = hit(docs, 'k', 1000, serverT0 + 300);
    // 700 ms are left on the server; a caller 5 s behind the server sees 700 ms left too.
    const callerNow = serverT0 + 300 - 5000;
    expect(resetInCallerClock(doc, callerNow)).to.equal(callerNow + 700);
  });

  it('opens a new window over a counter an older Folio left with a numeric resetAt', () => {
    const t0 = 1_700_000_000_000;
    const docs: Document[] = [{ _id: 'k', count: 7, resetAt: t0 + 10_000 }];
    expect(hit(docs, 'k', 1000, t0)).to.deep.include({ count: 1, resetAtMs: t0 + 1000 });
  });

  it('keeps a counter alive for the window plus a grace period after its last hit (server time)', () => {
    const t0 = 1_700_000_000_000;
    const { doc } = hit([], 'k', 5000, t0);
    expect(doc.expiresAt).to.be.instanceOf(Date);
    expect(doc.expiresAt.getTime()).to.equal(t0 + 5000 + COUNTER_TTL_GRACE_MS);
  });

  it('writes counters with w: 1', () => {
    expect(COUNTER_WRITE_CONCERN).to.deep.equal({ w: 1 });
  });
});

describe('MongoDB store: stream slot leases', () => {
  /** updateOne with upsert, per mingo: a missing holder starts as `{_id}`; a full one collides. */
  function acquire(docs: Document[], holder: string, slotId: string, max: number, ttlMs = 60_000): boolean {
    const exists = docs.some((d) => d._id === holder);
    const filter = acquireSlotFilter(holder, slotId, max) as Document;
    if (exists && !new Query(filter).test(docs.find((d) => d._id === holder)!)) return false; // E11000
    if (!exists) docs.push({ _id: holder });
    updateOne(docs, { _id: holder }, acquireSlotUpdate(slotId, ttlMs) as PipelineStage[]);
    return true;
  }
  const live = (docs: Document[], holder: string) =>
    (docs.find((d) => d._id === holder)!.slots as Array<{ id: string; expiresAt: Date }>).map((s) => s.id);

  it('hands out at most max live leases per holder, and the same slot twice without counting it twice', () => {
    const docs: Document[] = [];
    for (let i = 0; i < 3; i++) expect(acquire(docs, 'key_a', `s${i}`, 3), `s${i}`).to.equal(true);
    expect(acquire(docs, 'key_a', 's3', 3)).to.equal(false);
    expect(acquire(docs, 'key_a', 's1', 3)).to.equal(true);
    expect(live(docs, 'key_a')).to.have.members(['s0', 's1', 's2']);
    expect(acquire(docs, 'key_b', 's0', 3)).to.equal(true);
  });

  it('does not count expired leases (a crashed instance’s streams), and drops them on the next take', () => {
    const docs: Document[] = [];
    acquire(docs, 'key_a', 'old1', 2);
    acquire(docs, 'key_a', 'old2', 2);
    for (const slot of docs[0]!.slots as Array<{ expiresAt: Date }>)
      slot.expiresAt = new Date(Date.now() - 1);
    expect(acquire(docs, 'key_a', 'new', 2)).to.equal(true);
    expect(live(docs, 'key_a')).to.deep.equal(['new']);
    const expiresAt = docs[0]!.expiresAt as Date;
    expect(expiresAt.getTime()).to.be.greaterThan(Date.now() + 50_000);
  });

  it('renews a live lease only, pushing its expiry and the document’s', () => {
    const docs: Document[] = [];
    acquire(docs, 'key_a', 's1', 2, 1000);
    acquire(docs, 'key_a', 's2', 2, 1000);
    expect(new Query(renewSlotFilter('key_a', 's1') as Document).test(docs[0]!)).to.equal(true);
    updateOne(docs, { _id: 'key_a' }, renewSlotUpdate('s1', 60_000) as PipelineStage[]);
    const slots = docs[0]!.slots as Array<{ id: string; expiresAt: Date }>;
    expect(slots.find((s) => s.id === 's1')!.expiresAt.getTime()).to.be.greaterThan(Date.now() + 50_000);
    expect(slots.find((s) => s.id === 's2')!.expiresAt.getTime()).to.be.lessThan(Date.now() + 2000);
    expect((docs[0]!.expiresAt as Date).getTime()).to.be.greaterThan(Date.now() + 50_000);
    slots.find((s) => s.id === 's2')!.expiresAt = new Date(Date.now() - 1);
    expect(new Query(renewSlotFilter('key_a', 's2') as Document).test(docs[0]!)).to.equal(false);
    expect(new Query(renewSlotFilter('key_a', 'unknown') as Document).test(docs[0]!)).to.equal(false);
  });
});

describe('MongoDB store: server errors', () => {
  it('recognises duplicate keys and the unique field they are about', () => {
    const withPattern = new MongoServerError({
      message: 'E11000 duplicate key',
      code: 11000,
      keyPattern: { emailLower: 1 },
    });
    expect(isDuplicateKeyError(withPattern)).to.equal(true);
    expect(duplicateKeyFields(withPattern)).to.deep.equal(['emailLower']);
    const fromMessage = new MongoServerError({
      message:
        'E11000 duplicate key error collection: folio_system.keys index: keyHash_unique dup key: { keyHash: "x" }',
      code: 11000,
    });
    expect(duplicateKeyFields(fromMessage)).to.include('keyHash');
    expect(isDuplicateKeyError(new MongoServerError({ message: 'x', code: 112 }))).to.equal(false);
    expect(isDuplicateKeyError(new Error('E11000'))).to.equal(false);
  });

  it('turns them into the port’s DuplicateError with the port’s field names', () => {
    const dup = (keyPattern: Document) =>
      new MongoServerError({ message: 'E11000', code: 11000, keyPattern });
    expect(toDuplicateError(dup({ emailLower: 1 }), 'id')).to.deep.include({ field: 'email' });
    expect(toDuplicateError(dup({ accountId: 1, name: 1 }), 'id')).to.deep.include({ field: 'name' });
    expect(toDuplicateError(dup({ keyHash: 1 }), 'id')).to.deep.include({ field: 'keyHash' });
    expect(toDuplicateError(dup({ _id: 1 }), 'tokenHash')).to.deep.include({ field: 'tokenHash' });
    expect(toDuplicateError(dup({ _id: 1 }), 'id')).to.be.instanceOf(DuplicateError);
    expect(toDuplicateError(new Error('other'), 'id')).to.equal(null);
  });

  it('turns a refused query shape into the port’s QueryRejectedError naming the parameter', () => {
    const parallel = new MongoServerError({
      message: 'cannot sort with keys that are parallel arrays',
      code: 2,
    });
    const rejected = queryRejection(parallel);
    expect(rejected).to.be.instanceOf(QueryRejectedError);
    expect(rejected?.param).to.equal('sort');
    expect(rejected?.message).to.include('parallel arrays');
    expect(queryRejection(new MongoServerError({ message: 'bad $in', code: 2 }))?.param).to.equal('filter');
    expect(queryRejection(new MongoServerError({ message: 'sort', code: 11000 }))).to.equal(null);
    expect(queryRejection(new Error('cannot sort'))).to.equal(null);
  });
});

describe('MongoDB store: in-memory replica set', () => {
  it('says how to install mongodb-memory-server-core when it is missing', () => {
    expect(MISSING_PACKAGE_MESSAGE).to.include('npm install mongodb-memory-server-core');
  });
});

describe('MongoDB store: without a server', () => {
  // Nothing listens on port 1: every attempt to reach a server fails fast.
  const uri = 'mongodb://127.0.0.1:1/?replicaSet=rs0&serverSelectionTimeoutMS=300&connectTimeoutMS=300';

  it('connects only in init(), and says so when it cannot', async () => {
    const store = createMongoStore({ uri });
    try {
      expect(store.kind).to.equal('mongodb');
      expect(store.dbPrefix).to.equal('folio');
      const error = await store.init().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(Error);
      expect((error as Error).message).to.match(
        /^cannot connect to MongoDB: 127\.0\.0\.1:1 is unreachable \(ECONNREFUSED/,
      );
    } finally {
      await store.close();
    }
  });

  it('refuses a database prefix the configuration would refuse', () => {
    expect(() => createMongoStore({ uri, dbPrefix: 'bad-prefix' })).to.throw(/prefix/);
  });

  it('hands out one Agenda backend, on its own connection', async () => {
    const store = createMongoStore({ uri, dbPrefix: 'other' });
    try {
      const backend = store.agendaBackend();
      expect(backend).to.equal(store.agendaBackend());
      expect(backend.name).to.equal('MongoDB');
      expect((backend as { ownsConnection?: unknown }).ownsConnection).to.equal(false);
    } finally {
      await store.close();
    }
  });

  it('ends a subscription at once with invalid_token for a token it could never have issued', async () => {
    const store = createMongoStore({ uri });
    try {
      const sub = store.changes.watch({ projectId: newId('prj'), env: 'test' }, 'things', {
        after: 'evt_123',
      });
      expect(sub.endedBy).to.equal('invalid_token');
      const it = sub[Symbol.asyncIterator]();
      expect((await it.next()).done).to.equal(true);
      expect(store.changes.sourceCount).to.equal(0);
    } finally {
      await store.close();
    }
  });

  it('ends subscriptions made after close() with store_closed', async () => {
    const store = createMongoStore({ uri });
    await store.close();
    const sub = store.changes.watch({ projectId: newId('prj'), env: 'live' }, 'things');
    expect(sub.endedBy).to.equal('store_closed');
  });
});

describe('MongoDB store: a dropped collection is re-checked at its next write', () => {
  it('tells the collection registry of every dropped, renamed or database-dropped namespace', async () => {
    const { MongoClient } = await import('mongodb');
    const { MongoChangeFeed } = await import('../../src/store/mongodb/changes/changes.js');
    const { ClusterClock } = await import('../../src/store/mongodb/changes/clusterClock.js');
    // Never connected: dispatch() only classifies the change.
    const client = new MongoClient('mongodb://127.0.0.1:9/?directConnection=true');
    const dropped: Array<[string, string | null]> = [];
    const feed = new MongoChangeFeed(
      client,
      'folio',
      new ClusterClock(),
      () => {},
      (db, collection) => dropped.push([db, collection]),
    );
    const change = (c: object) => c as Parameters<typeof feed.dispatch>[0];
    feed.dispatch(change({ operationType: 'drop', ns: { db: 'folio_p_live', coll: 'notes' } }));
    feed.dispatch(
      change({
        operationType: 'rename',
        ns: { db: 'folio_p_live', coll: 'a' },
        to: { db: 'folio_p_live', coll: 'b' },
      }),
    );
    feed.dispatch(change({ operationType: 'dropDatabase', ns: { db: 'folio_p_test' } }));
    expect(dropped).to.deep.equal([
      ['folio_p_live', 'notes'],
      ['folio_p_live', 'a'],
      ['folio_p_live', 'b'],
      ['folio_p_test', null],
    ]);
    await client.close();
  });
});
