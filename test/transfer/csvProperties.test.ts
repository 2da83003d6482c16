/**
 * CSV through the real endpoints on generated input: documents exported as CSV (formula escape
 * off) and imported again are the same documents, and no CSV body, however hostile, gets a 5xx
 * or breaks the result's arithmetic.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { fieldNameProblem } from '../../src/fieldNames.js';
import { forEachStore } from '../support/stores.js';
import { CSV, NDJSON, transferClient, userPart } from './client.js';

const RUNS = Number(process.env.CSV_PROPERTY_RUNS ?? 40);

/** Field names a document may hold (the document rule itself), any characters otherwise. */
const fieldName = fc
  .oneof(
    fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }),
    fc.constantFrom('=cmd', '-x', '+1', '@a', 'a,b', 'q"uote', 'constructor', 'toString', ' sp '),
  )
  // A column name is written as it is: one with an unpaired surrogate has no UTF-8 form (documented).
  .filter(
    (name) =>
      fieldNameProblem(name) === null && name !== '_id' && name !== '_folio' && !/\p{Surrogate}/u.test(name),
  );

/** Strings a spreadsheet or a CSV reader could trip on, and any others. */
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom(
    '=1+2',
    '-5',
    '+x',
    '@SUM(A1)',
    '\tx',
    '\rx',
    '"',
    '""',
    'a,b',
    'l1\r\nl2',
    '\n',
    '42',
    'true',
  ),
  fc.constantFrom('null', '[1]', '{}', ' 5', '007', '9007199254740992', "'=x", '\ufeffbom', '\ud800', 'é🎉'),
);

const leaf = fc.oneof(
  text,
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant({}),
  // Arrays hold any JSON, objects inside them included (under the document's field-name rule).
  fc.array(
    fc.oneof(
      text,
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.dictionary(fieldName, text, { maxKeys: 2 }),
    ),
    { maxLength: 3 },
  ),
);

const value = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('object')),
  object: fc.dictionary(fieldName, tie('value'), { minKeys: 1, maxKeys: 3 }),
})).value;

const documents = fc.array(fc.dictionary(fieldName, value, { maxKeys: 5 }), { minLength: 1, maxLength: 6 });

/** What the store gives back for `doc`: JSON has no -0, and Folio stores JSON. */
const stored = (doc: unknown) => JSON.parse(JSON.stringify(doc));

forEachStore('CSV properties', (ctx) => {
  const api = () => transferClient(ctx);
  let run = 0;

  it('generated documents exported as CSV with formulaEscape=false import back as the same documents', async () => {
    await fc.assert(
      fc.asyncProperty(documents, async (docs) => {
        run += 1;
        const source = `rtSource${run}`;
        const withIds = docs.map((doc, i) => ({ _id: `d${i}`, ...doc }));
        // Seeded as NDJSON: each line is JSON.parse'd, so the stored documents are exactly these.
        const lines = withIds.map((doc) => JSON.stringify(doc)).join('\n');
        const created = await api().importRaw(source, lines, NDJSON);
        expect(created.status, created.text).to.equal(200);
        expect(created.body.errors).to.deep.equal([]);
        const res = await fetch(
          `${ctx.server.url}/${ctx.tenant.project}/${source}/_export?formulaEscape=false`,
          {
            headers: { Authorization: `Bearer ${ctx.tenant.key}`, Accept: CSV },
          },
        );
        const csv = await res.text();
        expect(res.status, csv).to.equal(200);
        const copy = `rtCopy${run}`;
        const imported = await api().importRaw(copy, csv, CSV);
        expect(imported.status, imported.text).to.equal(200);
        expect(imported.body.errors, csv).to.deep.equal([]);
        const original = (await api().all(source)).map(userPart);
        expect(original).to.deep.equal(withIds.map(stored));
        expect((await api().all(copy)).map(userPart), csv).to.deep.equal(original);
      }),
      { numRuns: RUNS },
    );
  });

  /** CSV-shaped text made to break readers: quotes anywhere, ragged rows, odd headers. */
  const hostileCsv = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc
      .array(
        fc.constantFrom(
          '"',
          '""',
          ',',
          '\n',
          '\r',
          '\r\n',
          'a',
          '.',
          '$x',
          '__proto__',
          '_folio',
          'x.y',
          '1',
          ' ',
          '{}',
          '[',
          '\u0000',
          '\ufeff',
        ),
        { maxLength: 80 },
      )
      .map((parts) => parts.join('')),
    fc
      .array(fc.array(text, { maxLength: 6 }), { maxLength: 8 })
      .map((rows) => rows.map((r) => r.join(',')).join('\n')),
  );

  it('a hostile CSV body never gets a 5xx; an answer keeps imported + skipped + errors = total', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          hostileCsv.map((body) => Buffer.from(body)),
          fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
        ),
        fc.constantFrom('', '?onConflict=skip', '?idField=a', '?onConflict=overwrite&idField=_id'),
        async (body, query) => {
          run += 1;
          const res = await fetch(
            `${ctx.server.url}/${ctx.tenant.project}/hostile${run % 5}/_import${query}`,
            {
              method: 'POST',
              headers: { Authorization: `Bearer ${ctx.tenant.key}`, 'Content-Type': CSV },
              body,
            },
          );
          const answer = (await res.json()) as {
            imported: number;
            skipped: number;
            errors: unknown[];
            total: number;
            error?: { code: string; message: string };
          };
          expect(res.status, JSON.stringify(answer)).to.be.oneOf([200, 400, 409]);
          if (res.status === 200) {
            expect(answer.imported + answer.skipped + answer.errors.length).to.equal(answer.total);
          } else {
            expect(answer.error?.code).to.be.a('string');
            expect(answer.error?.message).to.be.a('string');
          }
        },
      ),
      { numRuns: RUNS * 5 },
    );
  });
});
