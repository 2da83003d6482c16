/**
 * The MongoDB store's `getMany` (a bulk request's read ahead) through the real driver against a
 * scripted server (test/support/mongoWire.ts), which answers `find` from rows held in the
 * stored form as mingo evaluates its filter: one `find` naming each id once, and each document
 * back in the API form, as `get` gives it. The port's conformance suite checks the same
 * behaviour against a real MongoDB where one can start.
 */
import { expect } from 'chai';
import { find } from 'mingo';
import { type Document, Long } from 'mongodb';
import { createMongoStore, type MongoStore } from '../../src/store/mongodb/index.js';
import type { DataScope, FolioDocument } from '../../src/store/port.js';
import { toStored } from '../../src/store/storedForm.js';
import { startWireServer, type WireServer } from '../support/mongoWire.js';

const scope: DataScope = { projectId: 'prj_many', env: 'test' };

function document(id: string, fields: Record<string, unknown>): FolioDocument {
  const at = '2026-01-01T00:00:00.000Z';
  return { _id: id, ...fields, $createdAt: at, $updatedAt: at, $version: 2 } as FolioDocument;
}

describe('MongoDB getMany through the real driver (scripted server)', function () {
  this.timeout(20_000);
  const held = [document('a', { n: 1, nested: { x: [1, 'two'] } }), document('b', { n: 2 })];
  let server: WireServer;
  let store: MongoStore;

  before(async () => {
    const rows = held.map((doc) => toStored(doc) as unknown as Document);
    server = await startWireServer((command, name) => {
      if (name !== 'find') return undefined;
      const found = find(rows, command.filter as Document).all();
      return { cursor: { id: Long.ZERO, ns: `db.${command.find}`, firstBatch: found }, ok: 1 };
    });
    store = createMongoStore({ uri: server.uri });
  });

  after(async () => {
    await store?.close();
    await server?.close();
  });

  it('one find naming each id once; each document as get gives it, absent ids missing', async () => {
    const before = server.commands.length;
    const found = await store.documents.getMany!(scope, 'things', ['a', 'zz', 'b', 'a']);
    const finds = server.commands.slice(before).filter((command) => 'find' in command);
    expect(finds).to.have.length(1);
    expect(finds[0]!.find).to.equal('things');
    expect(finds[0]!.filter).to.deep.equal({ _id: { $in: ['a', 'zz', 'b'] } });
    expect([...found.keys()].sort()).to.deep.equal(['a', 'b']);
    for (const doc of held) {
      expect(found.get(doc._id)).to.deep.equal(doc);
      expect(found.get(doc._id)).to.deep.equal(await store.documents.get(scope, 'things', doc._id));
    }
  });

  it('no ids: no round trip', async () => {
    const before = server.commands.length;
    expect((await store.documents.getMany!(scope, 'things', [])).size).to.equal(0);
    expect(server.commands.length).to.equal(before);
  });
});
