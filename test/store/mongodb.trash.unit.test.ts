/**
 * The MongoDB store's trash and schema logic that needs no server: which steps a commit takes,
 * the stored entry, the page condition (evaluated by mingo), the TTL indexes, the schema
 * record's id, and the write plan of a document back from the trash. The live behaviour is the
 * conformance suite's (`@mongodb`).
 */
import { expect } from 'chai';
import { Query } from 'mingo';
import { isoNow } from '../../src/ids.js';
import { schemaRecordId } from '../../src/store/mongodb/documents/collectionSchemas.js';
import {
  afterPosition,
  TRASH_INDEXES,
  TRASH_VERSIONS_INDEXES,
  trashDocOf,
  trashSteps,
} from '../../src/store/mongodb/documents/trash.js';
import { planWrites } from '../../src/store/mongodb/documents/writePlan.js';
import { trashCollectionNames } from '../../src/store/mongodb/layout/naming.js';
import type { DocumentWrite, TrashStamp } from '../../src/store/port.js';
import { toStored } from '../../src/store/storedForm.js';
import { firstVersion, HINT, nextVersion, putWrite } from './fixtures.js';

const STAMP: TrashStamp = {
  deletedAt: '2030-01-01T00:00:00.000Z',
  apiKeyHint: HINT,
  expiresAt: '2030-01-02T00:00:00.000Z',
};

describe('MongoDB trash (unit)', () => {
  it('plans the trash steps of a commit: moves in, erasures, moves out; a plain delete has none', () => {
    const back = { ...nextVersion(firstVersion({}, 'c'), {}), $version: 4 };
    const writes: DocumentWrite[] = [
      { kind: 'delete', id: 'a', expectedVersion: 2, trash: STAMP },
      { kind: 'delete', id: 'b', expectedVersion: 1, erase: true },
      { kind: 'delete', id: 'e', expectedVersion: 1 },
      { ...putWrite(back), expectedVersion: 0, fromTrash: true },
      putWrite(firstVersion({}, 'd')),
    ];
    expect(trashSteps(writes)).to.deep.equal({
      moveIn: [{ id: 'a', stamp: STAMP }],
      erase: ['b'],
      moveOut: [{ id: 'c', trashedVersion: 3 }],
    });
  });

  it('stores an entry with its expiry as text (for readers) and as a Date (for the TTL index)', () => {
    const stored = toStored(firstVersion({ n: 1 }, 'x'));
    const entry = trashDocOf(stored, STAMP);
    expect(entry).to.deep.include({ _id: 'x', version: 1, ...STAMP, document: stored });
    expect(entry.expireAt.toISOString()).to.equal(STAMP.expiresAt);
  });

  it('erases by TTL indexes at expireAt, lists by the newest index', () => {
    expect(TRASH_INDEXES).to.deep.include({
      key: { expireAt: 1 },
      name: 'expiry_ttl',
      expireAfterSeconds: 0,
    });
    expect(TRASH_INDEXES).to.deep.include({ key: { deletedAt: -1, _id: -1 }, name: 'newest' });
    expect(TRASH_VERSIONS_INDEXES).to.deep.include({
      key: { expireAt: 1 },
      name: 'expiry_ttl',
      expireAfterSeconds: 0,
    });
  });

  it('pages strictly after a position, newest first, ties by id descending', () => {
    const rows = [
      { _id: 'a', deletedAt: isoNow(1) },
      { _id: 'b', deletedAt: isoNow(2) },
      { _id: 'c', deletedAt: isoNow(2) },
      { _id: 'd', deletedAt: isoNow(3) },
    ];
    const query = new Query(afterPosition({ deletedAt: isoNow(2), id: 'c' }));
    expect(rows.filter((r) => query.test(r)).map((r) => r._id)).to.deep.equal(['a', 'b']);
  });

  it('names sidecars that no Folio collection can take and that the catalogue skips', () => {
    expect(trashCollectionNames('orders')).to.deep.equal({
      entries: '_folio.trash.orders',
      versions: '_folio.trashVersions.orders',
    });
  });

  it('keys schema records by scope and collection without a forgeable separator', () => {
    const a = schemaRecordId({ projectId: 'p:live', env: 'test' }, 'c');
    const b = schemaRecordId({ projectId: 'p', env: 'live' }, 'test:c');
    expect(a).to.not.equal(b);
  });

  it('a document back from the trash keeps the history the commit moved back', () => {
    const back = { ...nextVersion(firstVersion({}, 'r'), {}), $version: 4 };
    const plan = planWrites([
      { ...putWrite(back), expectedVersion: 0, operation: 'restore', fromTrash: true },
    ]);
    expect(plan.versionOps.some((op) => 'deleteMany' in op && !('version' in op.deleteMany.filter))).to.equal(
      false,
    );
    expect(plan.documentOps).to.have.length(1);
    const fresh = planWrites([putWrite(firstVersion({}, 'n'))]);
    expect(fresh.versionOps.some((op) => 'deleteMany' in op)).to.equal(true);
  });
});
