/**
 * The MongoDB store against what a real deployment does (`@mongodb`; skipped with the one
 * SKIPPED line when there is no MongoDB): start-up on a standalone server and on an uninitiated
 * member, the start-up checks, the time limits each command carries, failures provoked with the
 * server's own fail points (when its test commands are on), two instances creating one
 * collection at once, a collection dropped behind Folio's back, rate-limit windows by the
 * server's clock, and the round trips of authenticating a request.
 */
import { expect } from 'chai';
import type { CommandStartedEvent, Db, Document } from 'mongodb';
import { ConnectionString } from 'mongodb-connection-string-url';
import { loadConfig } from '../../src/config/load.js';
import { newId } from '../../src/ids.js';
import { createServices } from '../../src/services/index.js';
import type { CounterDoc } from '../../src/store/mongodb/accounts/counters.js';
import { createMongoStore, type MongoStore, type MongoStoreOptions } from '../../src/store/mongodb/index.js';
import { collectionRepair } from '../../src/store/mongodb/layout/collections.js';
import { DOCUMENT_INDEXES, VERSIONS_INDEXES } from '../../src/store/mongodb/layout/indexes.js';
import {
  projectDbName,
  SYSTEM_COLLECTIONS,
  systemDbName,
  versionsCollectionName,
} from '../../src/store/mongodb/layout/naming.js';
import { IMAGES_PROBE_PREFIX } from '../../src/store/mongodb/startup/imagesProbe.js';
import { readOplogFacts } from '../../src/store/mongodb/startup/oplogWindow.js';
import { type DataScope, StoreStartError, StoreUnavailableError } from '../../src/store/port.js';
import { dropDatabases, loneMongod, mongoTestTarget, uniqueDbPrefix } from '../support/mongodb.js';
import { rejection } from '../support/timeout.js';
import { ChangeReader, firstVersion, nextVersion, putWrite } from './fixtures.js';

const target = await mongoTestTarget();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const newScope = (): DataScope => ({ projectId: newId('prj'), env: 'test' });

/** Turn the server's `failCommand` fail point on for one client; false when test commands are off. */
async function failCommand(admin: Db, mode: Document | string, data: Document): Promise<boolean> {
  try {
    await admin.command({ configureFailPoint: 'failCommand', mode, data });
    return true;
  } catch {
    return false;
  }
}

if (target) {
  describe(`MongoDB store on a real deployment @mongodb (${target.source})`, function () {
    this.timeout(60_000);
    const opened: MongoStore[] = [];
    const prefixes = new Set<string>();

    /** An initialised store on the test deployment; closed and its databases dropped at the end. */
    async function openStore(options: Partial<MongoStoreOptions> = {}): Promise<MongoStore> {
      const dbPrefix = options.dbPrefix ?? uniqueDbPrefix();
      prefixes.add(dbPrefix);
      const store = createMongoStore({
        uri: target!.uri,
        onWarning: () => {},
        ...options,
        dbPrefix,
        clientOptions: { serverSelectionTimeoutMS: 15_000, ...options.clientOptions },
      });
      opened.push(store);
      await store.init();
      return store;
    }

    const docsDb = (store: MongoStore, scope: DataScope) =>
      store.client.db(projectDbName(store.dbPrefix, scope));

    after(async function () {
      this.timeout(120_000);
      for (const store of opened) await store.close().catch(() => {});
      for (const prefix of prefixes) await dropDatabases(target!.uri, prefix);
    });

    describe('start-up', () => {
      it('says a standalone server is one when MONGODB_URI asks for a replica set, and without', async function () {
        const lone = await loneMongod('standalone');
        if ('skip' in lone) this.skip();
        try {
          const withSet = createMongoStore({
            uri: `${lone.uri}?replicaSet=rs0&serverSelectionTimeoutMS=2000`,
          });
          const error = await rejection(withSet.init());
          await withSet.close();
          expect(error).to.be.instanceOf(StoreStartError);
          expect((error as Error).message).to.match(/^cannot connect to MongoDB: /);
          expect((error as Error).message).to.include('is a standalone mongod');
          expect((error as Error).message).to.include('asks for replica set "rs0"');
          const plain = createMongoStore({ uri: `${lone.uri}?serverSelectionTimeoutMS=2000` });
          const refused = await rejection(plain.init());
          await plain.close();
          expect(refused).to.be.instanceOf(StoreStartError);
          expect((refused as Error).message).to.include('standalone');
        } finally {
          await lone.stop();
        }
      });

      it('says an uninitiated --replSet member needs rs.initiate(), with or without ?replicaSet=', async function () {
        const lone = await loneMongod('uninitiated');
        if ('skip' in lone) this.skip();
        try {
          for (const query of [
            '?replicaSet=rs0&serverSelectionTimeoutMS=2000',
            '?serverSelectionTimeoutMS=2000',
          ]) {
            const store = createMongoStore({ uri: `${lone.uri}${query}` });
            const error = await rejection(store.init());
            await store.close();
            expect(error, query).to.be.instanceOf(StoreStartError);
            expect((error as Error).message, query).to.include('never initiated');
            expect((error as Error).message, query).to.include('rs.initiate()');
          }
        } finally {
          await lone.stop();
        }
      });

      it('proves pre- and post-images with a probe collection and leaves none behind', async () => {
        const store = await openStore();
        const names = await store.client
          .db(systemDbName(store.dbPrefix))
          .listCollections({}, { nameOnly: true })
          .toArray();
        expect(names.filter((c) => c.name.startsWith(IMAGES_PROBE_PREFIX))).to.deep.equal([]);
      });

      it('reads the oplog window it compares with events.retentionMs', async function () {
        const store = await openStore();
        if (store.topology !== 'replicaSet') this.skip();
        const facts = await readOplogFacts(store.client, store.client.db('admin'));
        expect(facts.lastSeconds).to.be.at.least(facts.firstSeconds);
        expect(facts.maxSizeBytes).to.be.above(0);
        expect(facts.sizeBytes).to.be.above(0);
      });

      it('refuses a user who may not write, warns about one without collMod, accepts both roles', async function () {
        const admin = (await openStore()).client.db('admin');
        const user = `folio_${newId('acc').slice(-8).toLowerCase()}`;
        const password = 'probe-password-1';
        try {
          await admin.command({ createUser: user, pwd: password, roles: ['readAnyDatabase'] });
        } catch {
          this.skip(); // This deployment's user may not create users.
        }
        const uriFor = () => {
          const cs = new ConnectionString(target!.uri);
          cs.username = user;
          cs.password = password;
          cs.typedSearchParams<Record<string, string>>().set('authSource', 'admin');
          return cs.toString();
        };
        try {
          const readOnly = createMongoStore({ uri: uriFor(), dbPrefix: uniqueDbPrefix() });
          const error = await rejection(readOnly.init());
          await readOnly.close();
          expect(error).to.be.instanceOf(StoreStartError);
          expect((error as Error).message).to.include('insert on every database');
          await admin.command({ grantRolesToUser: user, roles: ['readWriteAnyDatabase'] });
          const warnings: string[] = [];
          await openStore({ uri: uriFor(), onWarning: (m) => warnings.push(m) });
          expect(warnings.filter((w) => w.includes('collMod'))).to.have.length(1);
          await admin.command({ grantRolesToUser: user, roles: ['dbAdminAnyDatabase'] });
          warnings.length = 0;
          await openStore({ uri: uriFor(), onWarning: (m) => warnings.push(m) });
          expect(warnings.filter((w) => w.includes('collMod'))).to.deep.equal([]);
        } finally {
          await admin.command({ dropUser: user }).catch(() => {});
        }
      });
    });

    describe('time limits and failures', () => {
      it('sends maxTimeMS with queries, maxCommitTimeMS and wtimeout with commits, w: 1 with counters', async () => {
        const store = await openStore({
          limits: { queryTimeoutMs: 4321, commitTimeoutMs: 5432, writeConcernTimeoutMs: 6543 },
          clientOptions: { monitorCommands: true },
        });
        const started: CommandStartedEvent[] = [];
        store.client.on('commandStarted', (event: CommandStartedEvent) => started.push(event));
        const scope = newScope();
        expect(
          await store.documents.commit(scope, 'limits', [putWrite(firstVersion({ a: 1 }))]),
        ).to.deep.equal({
          ok: true,
        });
        await store.documents.find(scope, 'limits', { filter: {}, sort: [['_id', 1]], skip: 0, limit: 7 });
        await store.documents.count(scope, 'limits', {});
        await store.counters.hit(`rate:${newId('key')}`, 1000, Date.now());
        const commands = (name: string) =>
          started.filter((e) => e.commandName === name).map((e) => e.command);
        expect(commands('find').find((c) => c.limit === 7)?.maxTimeMS).to.equal(4321);
        expect(commands('aggregate').at(-1)?.maxTimeMS).to.equal(4321);
        const [commit] = commands('commitTransaction');
        expect(commit?.maxTimeMS).to.equal(5432);
        expect(commit?.writeConcern).to.deep.equal({ w: 'majority', wtimeout: 6543 });
        expect(commands('findAndModify')[0]?.writeConcern).to.deep.equal({ w: 1 });
      });

      it('reports a query past its time limit as query_timeout', async function () {
        const appName = `folio-${newId('req').slice(-10)}`;
        const store = await openStore({ clientOptions: { appName } });
        const admin = store.client.db('admin');
        if (!(await failCommand(admin, { times: 1 }, { failCommands: ['find'], errorCode: 50, appName })))
          this.skip();
        const error = await rejection(
          store.documents.find(newScope(), 'slow', { filter: {}, sort: [['_id', 1]], skip: 0, limit: 1 }),
        );
        expect(error).to.be.instanceOf(StoreUnavailableError);
        expect((error as StoreUnavailableError).reason).to.equal('query_timeout');
      });

      it('gives up on a commit whose majority acknowledgement keeps timing out, within commitTimeoutMs', async function () {
        const appName = `folio-${newId('req').slice(-10)}`;
        const store = await openStore({ clientOptions: { appName }, limits: { commitTimeoutMs: 1000 } });
        const admin = store.client.db('admin');
        const scope = newScope();
        // Creates the collection first: the fail point is for the commit alone.
        await store.documents.commit(scope, 'unconfirmed', [putWrite(firstVersion({}))]);
        const writeConcernError = {
          code: 64,
          codeName: 'WriteConcernFailed',
          errmsg: 'waiting for replication timed out',
          errInfo: { wtimeout: true },
        };
        if (
          !(await failCommand(admin, 'alwaysOn', {
            failCommands: ['commitTransaction'],
            writeConcernError,
            appName,
          }))
        ) {
          this.skip();
        }
        const doc = firstVersion({ n: 1 });
        const started = Date.now();
        try {
          const error = await rejection(store.documents.commit(scope, 'unconfirmed', [putWrite(doc)]));
          expect(error).to.be.instanceOf(StoreUnavailableError);
          expect((error as StoreUnavailableError).reason).to.equal('write_unconfirmed');
          expect(Date.now() - started).to.be.below(5000);
        } finally {
          await admin.command({ configureFailPoint: 'failCommand', mode: 'off' });
        }
        // The fail point only hid the acknowledgement: the write was applied ("may or may not").
        expect((await store.documents.get(scope, 'unconfirmed', doc._id))?.$version).to.equal(1);
      });

      it('reports a primary that stepped away as store_unavailable', async function () {
        const appName = `folio-${newId('req').slice(-10)}`;
        const store = await openStore({ clientOptions: { appName } });
        const admin = store.client.db('admin');
        // Twice: the driver retries a read once.
        if (
          !(await failCommand(admin, { times: 2 }, { failCommands: ['find'], errorCode: 10107, appName }))
        ) {
          this.skip();
        }
        const error = await rejection(store.documents.get(newScope(), 'primary', 'doc_1'));
        expect(error).to.be.instanceOf(StoreUnavailableError);
        expect((error as StoreUnavailableError).reason).to.equal('store_unavailable');
      });
    });

    describe('collections', () => {
      async function expectReady(db: Db, name: string): Promise<void> {
        const [info] = await db.listCollections({ name }).toArray();
        expect(collectionRepair(info && 'options' in info ? info : undefined), name).to.equal('none');
        // A repaired collection gets its metadata indexes in the background: wait for them.
        let indexes: Document[] = [];
        for (let tries = 0; tries < 100; tries++) {
          indexes = await db.collection(name).listIndexes().toArray();
          if (DOCUMENT_INDEXES.every((index) => indexes.some((i) => i.name === index.name))) break;
          await sleep(50);
        }
        for (const index of DOCUMENT_INDEXES) {
          expect(indexes.find((i) => i.name === index.name)?.key, index.name).to.deep.equal(index.key);
        }
        const sidecar = await db.collection(versionsCollectionName(name)).listIndexes().toArray();
        expect(sidecar.find((i) => i.name === VERSIONS_INDEXES[0]!.name)?.unique).to.equal(true);
      }

      it('two instances creating one collection at once both succeed', async () => {
        const dbPrefix = uniqueDbPrefix();
        const [one, two] = await Promise.all([openStore({ dbPrefix }), openStore({ dbPrefix })]);
        const scope = newScope();
        const docs = Array.from({ length: 12 }, (_, i) => firstVersion({ i }));
        const results = await Promise.all(
          docs.map((doc, i) => (i % 2 ? one : two).documents.commit(scope, 'raced', [putWrite(doc)])),
        );
        expect(results.every((r) => r.ok)).to.equal(true);
        await expectReady(docsDb(one, scope), 'raced');
        expect(await two.documents.count(scope, 'raced', {})).to.equal(docs.length);
      });

      it('repairs a collection dropped behind its back within collectionRecheckMs, history and events included', async () => {
        const warnings: string[] = [];
        const recheckMs = 2000;
        const store = await openStore({
          limits: { collectionRecheckMs: recheckMs },
          onWarning: (message) => warnings.push(message),
        });
        const scope = newScope();
        const db = docsDb(store, scope);
        const first = firstVersion({ name: 'before the drop' }, 'doc_a');
        // The collection is checked during this commit, so not before this time.
        const checkedFrom = Date.now();
        expect((await store.documents.commit(scope, 'dropped', [putWrite(first)])).ok).to.equal(true);
        await db.collection('dropped').drop();
        // Within the re-check window the process still trusts the collection: this write's
        // transaction re-creates it implicitly, without pre- and post-images (or, where the
        // server refuses to create a collection inside the transaction, fails).
        const inWindow = await store.documents.commit(scope, 'dropped', [putWrite(firstVersion({}))]).then(
          (result) => result.ok,
          () => false,
        );
        // (On a machine so slow that the window had already passed, that write repaired instead.)
        if (inWindow && Date.now() - checkedFrom < recheckMs) {
          const [implicit] = await db.listCollections({ name: 'dropped' }).toArray();
          expect(collectionRepair(implicit && 'options' in implicit ? implicit : undefined)).to.equal(
            'enableImages',
          );
        }
        await sleep(recheckMs + 50);
        const again = firstVersion({ name: 'after the drop' }, 'doc_a');
        expect((await store.documents.commit(scope, 'dropped', [putWrite(again)])).ok).to.equal(true);
        await expectReady(db, 'dropped');
        expect(warnings.some((w) => w.includes('dropped'))).to.equal(true);
        // The history left in the sidecar by the dropped document does not survive into the new one.
        const history = await store.documents.listVersions(scope, 'dropped', 'doc_a');
        expect(history.map((v) => [v.version, v.operation])).to.deep.equal([[1, 'create']]);
        // Events carry their images again: a delete brings the document as it was.
        const reader = new ChangeReader(store.changes.watch(scope, 'dropped'));
        try {
          const updated = nextVersion(again, { name: 'updated' });
          await store.documents.commit(scope, 'dropped', [putWrite(updated)]);
          expect((await reader.next()).document).to.deep.equal(updated);
          await store.documents.commit(scope, 'dropped', [
            { kind: 'delete', id: 'doc_a', expectedVersion: 2 },
          ]);
          const deleted = await reader.next();
          expect(deleted.type).to.equal('deleted');
          expect(deleted.document).to.deep.equal(updated);
        } finally {
          reader.sub.close();
        }
      });

      it('repairs at the next write once told the collection was dropped (forget)', async () => {
        const store = await openStore({ limits: { collectionRecheckMs: 3_600_000 } });
        const scope = newScope();
        const db = docsDb(store, scope);
        await store.documents.commit(scope, 'forgotten', [putWrite(firstVersion({}))]);
        await db.collection('forgotten').drop();
        store.collections.forget(db.databaseName, 'forgotten');
        await store.documents.commit(scope, 'forgotten', [putWrite(firstVersion({}))]);
        await expectReady(db, 'forgotten');
      });
    });

    describe('requests', () => {
      it('opens rate-limit windows by the server’s clock: instances with skewed clocks share one', async () => {
        const store = await openStore();
        const key = `rate:${newId('key')}`;
        const ahead = Date.now() + 10 * 60_000;
        const first = await store.counters.hit(key, 60_000, Date.now());
        const second = await store.counters.hit(key, 60_000, ahead);
        expect([first.count, second.count]).to.deep.equal([1, 2]);
        // Reported in each caller's clock: what is left of the one window.
        expect(second.resetAtMs - ahead).to.be.within(1, 60_000);
        const raw = await store.client
          .db(systemDbName(store.dbPrefix))
          .collection<CounterDoc>(SYSTEM_COLLECTIONS.counters)
          .findOne({ _id: key });
        expect(raw?.resetAt).to.be.instanceOf(Date);
        expect(raw?.hitAt).to.be.instanceOf(Date);
      });

      /** Services over `store` with an account, project and key; command events are recorded. */
      async function keyedServices(store: MongoStore) {
        const services = createServices(store, loadConfig({}, { auth: { keyCacheMs: 60_000 } }));
        const { account } = await services.accounts.signup({
          email: `${newId('acc').toLowerCase()}@example.test`,
          password: 'correct horse battery',
        });
        const project = await services.accounts.createProject(account, 'app');
        const { rawKey } = await services.apiKeys.create(account, project, {
          name: 'k',
          env: 'test',
          scope: 'read-write',
          config: {},
        });
        return { services, rawKey };
      }

      it('lists a full last page with one find and no count', async () => {
        const store = await openStore({ clientOptions: { monitorCommands: true } });
        const { services, rawKey } = await keyedServices(store);
        const ctx = await services.apiKeys.authenticate(rawKey);
        for (let i = 0; i < 5; i++)
          await store.documents.commit(ctx.scope, 'pages', [putWrite(firstVersion({ i }))]);
        const started: string[] = [];
        store.client.on('commandStarted', (event: CommandStartedEvent) => {
          // Leave out the key's background lastUsedAt stamp.
          if (event.command.update !== SYSTEM_COLLECTIONS.keys) started.push(event.commandName);
        });
        const full = await services.listing.list(ctx, 'pages', { limit: '5' });
        expect(started).to.deep.equal(['find']);
        expect('meta' in full && full.meta).to.deep.include({ total: 5, hasMore: false });
        started.length = 0;
        const partial = await services.listing.list(ctx, 'pages', { limit: '4' });
        expect(started).to.deep.equal(['find', 'aggregate']);
        expect('meta' in partial && partial.meta).to.deep.include({ total: 5, hasMore: true });
      });

      it('authenticates a key in one round trip, then none while cached; counting is one more', async () => {
        const store = await openStore({ clientOptions: { monitorCommands: true } });
        const { services, rawKey } = await keyedServices(store);
        const started: CommandStartedEvent[] = [];
        store.client.on('commandStarted', (event: CommandStartedEvent) => started.push(event));
        const waitedFor = async (fn: () => Promise<unknown>) => {
          started.length = 0;
          await fn();
          // The lastUsedAt stamp is sent in the background: not a round trip the request waits for.
          return started.filter(
            (e) => !(e.commandName === 'update' && e.command.update === SYSTEM_COLLECTIONS.keys),
          );
        };
        const first = await waitedFor(() => services.apiKeys.authenticate(rawKey));
        expect(first.map((e) => e.commandName)).to.deep.equal(['aggregate']);
        expect(first[0]!.command.aggregate).to.equal(SYSTEM_COLLECTIONS.keys);
        const ctx = await services.apiKeys.authenticate(rawKey);
        expect(await waitedFor(() => services.apiKeys.authenticate(rawKey))).to.deep.equal([]);
        const counting = await waitedFor(() => services.rateLimiter.hit(ctx));
        expect(counting.map((e) => e.commandName)).to.deep.equal(['findAndModify']);
      });
    });
  });
}
