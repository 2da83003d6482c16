/**
 * A commit moving documents to the trash sends the same number of commands whatever their
 * number, and an erasing delete reduces the document before deleting it (erasure.ts): through
 * the real driver against a scripted server (test/support/mongoWire.ts) that answers reads from
 * rows held in the stored form (filters evaluated by mingo) and acknowledges every write; what
 * moves (entries, their histories) is in the commands themselves.
 */
import { expect } from 'chai';
import { find } from 'mingo';
import { type Document, Long } from 'mongodb';
import { createMongoStore, type MongoStore } from '../../src/store/mongodb/index.js';
import type { DataScope, DocumentWrite, TrashStamp } from '../../src/store/port.js';
import { toStored } from '../../src/store/storedForm.js';
import { helloReply, startWireServer, type WireServer } from '../support/mongoWire.js';
import { firstVersion, HINT } from './fixtures.js';

const scope: DataScope = { projectId: 'prj_trash', env: 'test' };
const STAMP: TrashStamp = {
  deletedAt: '2030-01-01T00:00:00.000Z',
  apiKeyHint: HINT,
  expiresAt: '2030-01-02T00:00:00.000Z',
};

const docs = Array.from(
  { length: 60 },
  (_, i) => toStored(firstVersion({ i }, `d${i}`)) as unknown as Document,
);
const history = docs.map((d) => ({
  _id: `h${String(d._id)}`,
  docId: d._id,
  version: 1,
  operation: 'create',
  timestamp: d._folio.updatedAt,
  apiKeyHint: HINT,
  document: d,
}));

/** Reads from the held rows; every write acknowledged for as many documents as it names. */
function answer(command: Document, name: string): Document | undefined {
  const rowsOf = (collection: string) =>
    collection === 'things' ? docs : collection === '_folio.versions.things' ? history : [];
  switch (name) {
    case 'find': {
      const found = find(rowsOf(String(command.find)), command.filter as Document).all();
      return { cursor: { id: Long.ZERO, ns: `db.${command.find}`, firstBatch: found }, ok: 1 };
    }
    case 'listIndexes':
    case 'listCollections':
      return { cursor: { id: Long.ZERO, ns: 'db.x', firstBatch: [] }, ok: 1 };
    case 'delete':
      return { n: (command.deletes as unknown[]).length, ok: 1 };
    case 'insert':
      return { n: (command.documents as unknown[]).length, ok: 1 };
    case 'update':
      return { n: (command.updates as unknown[]).length, nModified: 0, ok: 1 };
    case 'create':
    case 'createIndexes':
    case 'commitTransaction':
    case 'abortTransaction':
      return { ok: 1 };
    default:
      return undefined;
  }
}

describe('MongoDB trash moves: commands per commit (scripted server)', function () {
  this.timeout(20_000);
  let server: WireServer;
  let store: MongoStore;

  before(async () => {
    // Sessions (and so transactions) need the server to announce a session timeout.
    server = await startWireServer(answer, {
      hello: (port) => ({ ...helloReply(port), logicalSessionTimeoutMinutes: 30 }),
    });
    store = createMongoStore({ uri: server.uri });
  });

  after(async () => {
    await store?.close();
    await server?.close();
  });

  /** The commands one commit deleting `ids` into the trash sends. */
  async function trashMove(ids: string[]): Promise<Document[]> {
    const before = server.commands.length;
    const writes: DocumentWrite[] = ids.map((id) => ({
      kind: 'delete',
      id,
      expectedVersion: 1,
      trash: STAMP,
    }));
    expect(await store.documents.commit(scope, 'things', writes)).to.deep.equal({ ok: true });
    return server.commands.slice(before);
  }

  it('moving 50 documents sends as many commands as moving one, each naming them all', async () => {
    await trashMove(['d0']); // creates the collection and its sidecars
    const one = await trashMove(['d1']);
    const ids = docs.slice(2, 52).map((d) => String(d._id));
    const fifty = await trashMove(ids);
    expect(fifty.map((c) => Object.keys(c)[0])).to.deep.equal(one.map((c) => Object.keys(c)[0]));
    expect(fifty.length).to.be.at.most(12);
    const inserted = (into: string) => (fifty.find((c) => c.insert === into)?.documents ?? []) as Document[];
    expect(inserted('_folio.trash.things').map((e) => e._id)).to.have.members(ids);
    const moved = inserted('_folio.trashVersions.things');
    expect(moved.map((r) => r.docId)).to.have.members(ids);
    for (const record of moved) {
      expect((record.expireAt as Date).toISOString()).to.equal(STAMP.expiresAt);
    }
  });

  it('an erasing delete reduces the document to its id and metadata before deleting it, in its transaction', async () => {
    const before = server.commands.length;
    const writes: DocumentWrite[] = [{ kind: 'delete', id: 'd55', expectedVersion: 1, erase: true }];
    expect(await store.documents.commit(scope, 'things', writes)).to.deep.equal({ ok: true });
    const sent = server.commands.slice(before).filter((c) => c.update === 'things' || c.delete === 'things');
    expect(sent.map((c) => Object.keys(c)[0])).to.deep.equal(['update', 'delete']);
    const [reduce] = sent[0]!.updates as Document[];
    expect(reduce!.q).to.deep.equal({ _id: 'd55', '_folio.version': 1 });
    expect(reduce!.u).to.be.an('array');
    expect(JSON.stringify(reduce!.u)).to.include('$replaceWith');
    // Both in the commit's transaction.
    expect(sent[0]!.txnNumber).to.deep.equal(sent[1]!.txnNumber);
    expect(sent[0]!.txnNumber).to.not.equal(undefined);
  });
});
