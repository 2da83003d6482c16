/**
 * Erasure on MongoDB (erasure.ts): an erasing delete first reduces the document to its id and
 * metadata (the update evaluated by mingo), so the delete's pre-image, and with it the `deleted`
 * event, carries exactly what the embedded store's change log keeps for an erased document; the
 * reducing update itself is no event of Folio's.
 */
import { expect } from 'chai';
import { Query, updateOne } from 'mingo';
import type { PipelineStage } from 'mingo/updater';
import { Binary, type ChangeStreamDocument, Timestamp } from 'mongodb';
import { classifyChange, toChangeEvent } from '../../src/store/mongodb/changes/changeEvents.js';
import { planWrites } from '../../src/store/mongodb/documents/writePlan.js';
import { projectDbName } from '../../src/store/mongodb/layout/naming.js';
import type { DataScope, FolioDocument } from '../../src/store/port.js';
import { type StoredDocument, toStored } from '../../src/store/storedForm.js';
import { firstVersion, nextVersion } from './fixtures.js';

const scope: DataScope = { projectId: 'prj_01J0000000000000000000000E', env: 'live' };
const ns = { db: projectDbName('folio', scope), coll: 'people' };
const common = {
  clusterTime: new Timestamp({ t: 1_717_000_000, i: 1 }),
  wallTime: new Date('2024-05-29T16:26:40.123Z'),
  ns,
  documentKey: { _id: 'doc_e' },
  collectionUUID: new Binary(Buffer.alloc(16), 4),
};

/** The document as the embedded store's change log keeps it once erased (changeLog.ts scrub). */
function metadataOnly(doc: FolioDocument): Record<string, unknown> {
  return { _id: doc._id, $createdAt: doc.$createdAt, $updatedAt: doc.$updatedAt, $version: doc.$version };
}

describe('MongoDB erasure (unit)', () => {
  const v2 = nextVersion(firstVersion({ name: 'Ada', email: 'ada@example.com' }, 'doc_e'), {
    name: 'Ada L.',
  });

  it('an erasing delete reduces the document to its id and metadata, then deletes it', () => {
    const plan = planWrites([{ kind: 'delete', id: 'doc_e', expectedVersion: 2, erase: true }]);
    expect(plan.expected).to.deep.equal({ inserted: 0, matched: 1, deleted: 1 });
    const [reduce, remove] = plan.documentOps;
    expect(remove).to.deep.equal({ deleteOne: { filter: { _id: 'doc_e', '_folio.version': 2 } } });
    const update = (reduce as { updateOne: { filter: object; update: PipelineStage[] } }).updateOne;
    const docs = [toStored(v2) as StoredDocument & Record<string, unknown>];
    // Conditioned on the version like the delete after it.
    expect(new Query(update.filter).test(docs[0]!)).to.equal(true);
    expect(
      new Query(update.filter).test({ ...docs[0]!, _folio: { ...docs[0]!._folio, version: 3 } }),
    ).to.equal(false);
    updateOne(docs, update.filter, update.update);
    expect(docs[0]).to.deep.equal({ _id: 'doc_e', _folio: { ...toStored(v2)._folio, erased: true } });
    // A delete without erase plans no reduction.
    expect(planWrites([{ kind: 'delete', id: 'doc_e', expectedVersion: 2 }]).documentOps).to.have.length(1);
  });

  it('the deleted event of an erased document carries its id and metadata only, as on the embedded store', () => {
    const stub = { _id: 'doc_e', _folio: { ...toStored(v2)._folio, erased: true } };
    const erased = {
      _id: { _data: '82EE01' },
      operationType: 'delete',
      fullDocumentBeforeChange: stub,
      ...common,
    } as ChangeStreamDocument<StoredDocument>;
    const event = toChangeEvent(erased, scope)!.event;
    expect(event.type).to.equal('deleted');
    expect(event.document).to.deep.equal(metadataOnly(v2));
    expect(Object.keys(event.document)).to.deep.equal(['_id', '$createdAt', '$updatedAt', '$version']);
    // Whatever else a marked image held stays out too.
    const fuller = { ...erased, fullDocumentBeforeChange: { ...stub, email: 'ada@example.com' } };
    expect(
      toChangeEvent(fuller as ChangeStreamDocument<StoredDocument>, scope)!.event.document,
    ).to.deep.equal(metadataOnly(v2));
    // An ordinary delete keeps the document as it was.
    const plain = {
      ...erased,
      fullDocumentBeforeChange: toStored(v2),
    } as ChangeStreamDocument<StoredDocument>;
    expect(toChangeEvent(plain, scope)!.event.document).to.deep.equal(v2);
  });

  it('the reducing update is no event of Folio (as a delta or as a replacement); other updates are', () => {
    const stub = { _id: 'doc_e', _folio: { ...toStored(v2)._folio, erased: true } };
    const delta = {
      _id: { _data: '82EE00' },
      operationType: 'update',
      fullDocument: null,
      updateDescription: { updatedFields: { '_folio.erased': true }, removedFields: ['name', 'email'] },
      ...common,
    } as unknown as ChangeStreamDocument<StoredDocument>;
    expect(classifyChange(delta)).to.deep.equal({ kind: 'other' });
    const nested = {
      ...delta,
      updateDescription: { updatedFields: { _folio: stub._folio }, removedFields: [] },
    } as unknown as ChangeStreamDocument<StoredDocument>;
    expect(classifyChange(nested)).to.deep.equal({ kind: 'other' });
    const replaced = {
      _id: { _data: '82EE00' },
      operationType: 'replace',
      fullDocument: stub,
      ...common,
    } as ChangeStreamDocument<StoredDocument>;
    expect(classifyChange(replaced)).to.deep.equal({ kind: 'other' });
    const ordinary = {
      ...delta,
      fullDocument: toStored(v2),
      updateDescription: { updatedFields: { name: 'Ada L.' }, removedFields: [] },
    } as unknown as ChangeStreamDocument<StoredDocument>;
    expect(classifyChange(ordinary)).to.deep.equal({ kind: 'document', db: ns.db, collection: 'people' });
  });
});
