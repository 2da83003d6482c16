/**
 * Index builds have a time bound and a commit quorum, through the real driver against a
 * scripted server (test/support/mongoWire.ts): every `createIndexes` Folio sends (a declared
 * index, and a new collection's own indexes) carries `maxTimeMS` under the reservation and
 * `commitQuorum: "majority"`; a build the server stops at its time limit (MaxTimeMSExpired, as a
 * set with members down answers) ends as a failed index with its reason, and is dropped; a
 * restore whose index cannot be built says so (MongoDB keeps no failed index to list).
 */
import { expect } from 'chai';
import { type Document, Long } from 'mongodb';
import { createMongoStore, type MongoStore } from '../../src/store/mongodb/index.js';
import { RESERVATION_TTL_MS } from '../../src/store/mongodb/indexes/declaredIndexes.js';
import { INDEX_BUILD_TIMEOUT_MS } from '../../src/store/mongodb/layout/indexes.js';
import type { DataScope } from '../../src/store/port.js';
import { errorReply, helloReply, startWireServer, type WireServer } from '../support/mongoWire.js';

const scope: DataScope = { projectId: 'prj_builds', env: 'test' };
const SLOW = 'by_slow';

function emptyCursor(command: Document, name: string): Document {
  const ns = `db.${String(command[name])}`;
  return { cursor: { id: Long.ZERO, ns, firstBatch: [] }, ok: 1 };
}

/** A primary that accepts every write, knows no index, and times out building `SLOW`. */
function answer(command: Document, name: string): Document | undefined {
  switch (name) {
    case 'find':
    case 'listIndexes':
    case 'listCollections':
      return emptyCursor(command, name);
    case 'update':
    case 'delete':
    case 'insert':
      return { n: 1, nModified: 1, ok: 1 };
    case 'create':
    case 'commitTransaction':
    case 'abortTransaction':
    case 'dropIndexes':
      return { ok: 1 };
    case 'createIndexes': {
      const names = (command.indexes as Document[]).map((i) => i.name);
      if (names.includes(SLOW)) return errorReply(50, 'MaxTimeMSExpired', 'operation exceeded time limit');
      return { numIndexesBefore: 1, numIndexesAfter: 1 + names.length, ok: 1 };
    }
    default:
      return undefined;
  }
}

describe('MongoDB index builds: time bound and commit quorum (scripted server)', function () {
  this.timeout(20_000);
  let server: WireServer;
  let store: MongoStore;
  const warnings: string[] = [];

  before(async () => {
    // Sessions (and so transactions) need the server to announce a session timeout.
    server = await startWireServer(answer, {
      hello: (port) => ({ ...helloReply(port), logicalSessionTimeoutMinutes: 30 }),
    });
    store = createMongoStore({ uri: server.uri, onWarning: (message) => warnings.push(message) });
  });

  after(async () => {
    await store?.close();
    await server?.close();
  });

  const builds = () => server.commands.filter((c) => 'createIndexes' in c);

  it('bounds every build below the reservation, with a majority commit quorum', async () => {
    expect(INDEX_BUILD_TIMEOUT_MS).to.be.below(RESERVATION_TTL_MS);
    const built = await store.indexes.create(
      scope,
      'things',
      { name: 'by_name', fields: [{ path: 'name', order: 1 }], unique: false },
      10,
    );
    expect(built).to.include({ name: 'by_name', state: 'ready' });
    // The declared index, and the collection's own (documents, versions, trash) made first.
    expect(builds().map((c) => c.createIndexes)).to.include.members(['things', '_folio.versions.things']);
    expect(builds().length).to.be.at.least(4);
    for (const command of builds()) {
      expect(command, String(command.createIndexes)).to.include({
        maxTimeMS: INDEX_BUILD_TIMEOUT_MS,
        commitQuorum: 'majority',
      });
    }
  });

  it('reports a build stopped at its time limit as failed, with the reason, and drops it', async () => {
    const before = server.commands.length;
    const built = await store.indexes.create(
      scope,
      'things',
      { name: SLOW, fields: [{ path: 'slow', order: 1 }], unique: false },
      10,
    );
    expect(built).to.include({ name: SLOW, state: 'failed' });
    expect(built?.failure?.message).to.match(/did not finish within 10 minutes/);
    const after = server.commands.slice(before);
    expect(after.find((c) => 'createIndexes' in c)).to.include({ maxTimeMS: INDEX_BUILD_TIMEOUT_MS });
    expect(after.some((c) => c.dropIndexes === 'things' && c.index === SLOW)).to.equal(true);
    // The reservation is released either way.
    expect(after.some((c) => 'delete' in c)).to.equal(true);
  });

  it('a restore says which index it could not build, and why', async () => {
    const index = { name: SLOW, fields: [{ path: 'slow', order: 1 as const }], unique: false };
    await store.snapshots.write([
      { type: 'index', scope, collection: 'restored', index: { ...index, state: 'ready', createdAt: '' } },
    ]);
    const said = warnings.filter((w) => w.includes(SLOW));
    expect(said).to.have.length(1);
    expect(said[0])
      .to.include('prj_builds/test/restored')
      .and.match(/did not finish within 10 minutes/);
  });
});
