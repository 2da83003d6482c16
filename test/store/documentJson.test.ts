/**
 * The embedded store keeps a document's body as the API form's text, byte for byte what
 * `JSON.stringify` gives of the written document (key order, number and string spellings,
 * metadata last), and `get` reads it back as that document. Rows an older version stored
 * (metadata under `_folio`, as toStored gives) read the same, and convert to the API form
 * without a byte of any answer changing.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { fieldNameProblem } from '../../src/fieldNames.js';
import { newId } from '../../src/ids.js';
import type { EmbeddedStore } from '../../src/store/embedded/index.js';
import type { DataScope, FindQuery, JsonObject } from '../../src/store/port.js';
import { toStored } from '../../src/store/storedForm.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from './embeddedFactory.js';
import { commitAll, firstVersion, nextVersion, putWrite } from './fixtures.js';

const scope: DataScope = { projectId: 'prj_json', env: 'test' };

/** Field names the service lets through (no `$`, `.`, `__proto__`, `_id`, `_folio`). */
const fieldName = fc
  .oneof(fc.string({ maxLength: 8 }), fc.constantFrom('0', '7', '10', '01', '-1', 'a b', 'é', '\u{1F600}'))
  .filter((name) => fieldNameProblem(name) === null && name !== '_id' && name !== '_folio');

const leaf = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.constantFrom(0, -0, 1e21, 1e-7, 2 ** 53 + 2, 123456789.125, '\u0000\u001f"\\\n', '\ud800x'),
  fc.boolean(),
  fc.constant(null),
);

const value = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(fieldName, tie('value'), { maxKeys: 4 }),
})).value;

const fields = fc.dictionary(fieldName, value, { maxKeys: 8 }) as fc.Arbitrary<JsonObject>;

describe('embedded store: documents as JSON text', () => {
  let store: EmbeddedStore;

  before(async () => {
    store = await createTempEmbeddedStore();
  });

  /** The body of a row as text, with its form asserted: `_folio` (0) or the API form (1). */
  function bodyOf(of: EmbeddedStore, collection: string, id: string): string {
    const row = of.db
      .prepare<[string, string], { body: string; form: number }>(
        'SELECT json(body) AS body, api_form AS form FROM documents WHERE collection = ? AND id = ?',
      )
      .get(collection, id);
    expect(row?.form).to.equal(row?.body.includes('"_folio"') ? 0 : 1);
    return row?.body ?? '';
  }

  function storedText(id: string): string | undefined {
    const row = store.db
      .prepare<[string], { body: string }>(
        "SELECT json(body) AS body FROM documents WHERE scope = 'prj_json:test' AND collection = 'things' AND id = ?",
      )
      .get(id);
    return row?.body;
  }

  after(async () => {
    await destroyTempEmbeddedStore(store);
  });

  it('stores the API form byte for byte, and get reads back the written document, for any document', async () => {
    await fc.assert(
      fc.asyncProperty(fields, fields, async (first, second) => {
        const v1 = firstVersion(first, newId('doc'));
        expect((await store.documents.commit(scope, 'things', [putWrite(v1)])).ok).to.equal(true);
        const read1 = await store.documents.get(scope, 'things', v1._id);
        expect(JSON.stringify(read1)).to.equal(JSON.stringify(v1));
        // The body too is the API form, byte for byte (version an integer, the metadata last).
        expect(storedText(v1._id)).to.equal(JSON.stringify(v1));

        const v2 = nextVersion(v1, second);
        expect((await store.documents.commit(scope, 'things', [putWrite(v2)])).ok).to.equal(true);
        const read2 = await store.documents.get(scope, 'things', v1._id);
        expect(JSON.stringify(read2)).to.equal(JSON.stringify(v2));
        expect(storedText(v1._id)).to.equal(JSON.stringify(v2));
      }),
      { numRuns: 150 },
    );
  });

  it('stores a document whose metadata does not come last in the API form’s order all the same', async () => {
    const v1 = firstVersion({ a: 1, b: { c: [2] } }, newId('doc'));
    const { $createdAt, $updatedAt, $version, ...rest } = v1;
    const metadataFirst = { $version, $updatedAt, $createdAt, ...rest };
    expect((await store.documents.commit(scope, 'things', [putWrite(metadataFirst)])).ok).to.equal(true);
    expect(storedText(v1._id)).to.equal(JSON.stringify(v1));
    const v2 = nextVersion(v1, { a: 2 });
    const { $version: version2, ...rest2 } = v2;
    expect(
      (await store.documents.commit(scope, 'things', [putWrite({ $version: version2, ...rest2 })])).ok,
    ).to.equal(true);
    expect(storedText(v1._id)).to.equal(JSON.stringify(v2));
  });

  it('reads rows an older version stored as it reads its own, and converts them to the same texts', async () => {
    const chunked = await createTempEmbeddedStore(300_000, { sweepChunkRows: 2 });
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(fields, { minLength: 1, maxLength: 7 }), async (all) => {
          const collection = `old_${newId('doc')}`;
          const docs = all.map((fields) => firstVersion(fields, newId('doc')));
          await commitAll(chunked.documents, scope, collection, docs);
          // Back into the form older versions wrote (their upsert's expression).
          chunked.db
            .prepare(
              'UPDATE documents SET api_form = 0, body = jsonb(json_set(' +
                "json_remove(json(body), '$.\"$createdAt\"', '$.\"$updatedAt\"', '$.\"$version\"'), '$._folio', " +
                "json_object('version', version, 'createdAt', created_at, 'updatedAt', updated_at))) " +
                'WHERE collection = ?',
            )
            .run(collection);
          for (const doc of docs)
            expect(bodyOf(chunked, collection, doc._id)).to.equal(JSON.stringify(toStored(doc)));
          const everything: FindQuery = { filter: {}, sort: [['_id', 1]], skip: 0, limit: 0 };
          const answers = async () => ({
            byId: JSON.stringify(
              await Promise.all(docs.map((d) => chunked.documents.get(scope, collection, d._id))),
            ),
            found: await chunked.documents.find(scope, collection, everything),
            projected: await chunked.documents.find(scope, collection, {
              ...everything,
              projection: ['_id', '_folio.version'],
            }),
          });
          const before = await answers();
          expect(before.byId).to.equal(JSON.stringify(docs));
          // As text: a -0 the generator gave reads back as 0, which deep equality tells apart.
          expect(JSON.stringify(before.found)).to.equal(JSON.stringify(docs));
          expect(before.projected).to.deep.equal(docs.map((d) => ({ _id: d._id, $version: 1 })));
          // Chunks of 2 rows: an odd count ends on a short chunk, an even one on an empty one.
          expect(await chunked.convertStoredForms()).to.equal(docs.length);
          expect(await chunked.convertStoredForms()).to.equal(0);
          for (const doc of docs) expect(bodyOf(chunked, collection, doc._id)).to.equal(JSON.stringify(doc));
          expect(await answers()).to.deep.equal(before);
        }),
        { numRuns: 40 },
      );
    } finally {
      await destroyTempEmbeddedStore(chunked);
    }
  });
});
