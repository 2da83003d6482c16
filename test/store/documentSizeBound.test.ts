/**
 * `storedBsonSizeBound`: the services skip measuring a document as BSON when this bound, taken
 * from its JSON size, is already within the stored limit. It must never fall below the real
 * size, or a document over `documents.maxBsonBytes` would be stored: checked here on BSON's worst
 * cases and on generated documents.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { storedBsonSize, storedBsonSizeBound } from '../../src/store/documentSize.js';
import type { FolioDocument, JsonObject, JsonValue } from '../../src/store/port.js';

function document(fields: JsonObject): FolioDocument {
  const at = '2026-11-25T00:00:00.000Z';
  const doc: JsonObject = { _id: 'doc_01M89PETTSAGJNEWM4XT1DT2K0' };
  for (const [name, value] of Object.entries(fields)) doc[name] = value;
  doc.$createdAt = at;
  doc.$updatedAt = at;
  doc.$version = 1;
  return doc as FolioDocument;
}

/** Real and bounded size of `fields` as a stored document. */
function sizes(fields: JsonObject): { real: number; bound: number } {
  const doc = document(fields);
  return { real: storedBsonSize(doc), bound: storedBsonSizeBound(Buffer.byteLength(JSON.stringify(doc))) };
}

function nested(depth: number): JsonValue {
  let value: JsonValue = [];
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe('storedBsonSizeBound', () => {
  // BSON's worst growth over JSON: small values in long arrays (index as key, type byte, 4-8 bytes).
  const worst: Array<[string, (n: number) => JsonValue]> = [
    ['one-digit numbers', (n) => new Array<number>(n).fill(0)],
    ['doubles', (n) => new Array<number>(n).fill(0.5)],
    ['empty strings', (n) => new Array<string>(n).fill('')],
    ['empty arrays', (n) => Array.from({ length: n }, () => [])],
    ['empty objects', (n) => Array.from({ length: n }, () => ({}))],
    ['booleans and nulls', (n) => Array.from({ length: n }, (_, i) => (i % 2 ? null : true))],
    ['large integers', (n) => new Array<number>(n).fill(2 ** 40)],
  ];
  for (const [name, values] of worst) {
    it(`holds for arrays of ${name}, from 1 to 300,000 elements`, () => {
      for (const n of [1, 9, 10, 11, 99, 100, 1_000, 10_000, 100_000, 300_000]) {
        const { real, bound } = sizes({ values: values(n) });
        expect(bound, `${n} elements`).to.be.at.least(real);
      }
    });
  }

  it('stays within a small multiple of the worst case it covers (the fast path stays useful)', () => {
    const { real, bound } = sizes({ values: new Array<number>(100_000).fill(0) });
    expect(bound / real).to.be.below(2);
  });

  it('holds for deeply nested empty arrays and for the empty document', () => {
    for (const depth of [1, 10, 100]) {
      const { real, bound } = sizes({ deep: nested(depth) });
      expect(bound, `depth ${depth}`).to.be.at.least(real);
    }
    const { real, bound } = sizes({});
    expect(bound).to.be.at.least(real);
  });

  it('holds for generated documents', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 6 })), (fields) => {
        const { real, bound } = sizes(fields as JsonObject);
        return bound >= real;
      }),
      { numRuns: 500 },
    );
  });
});
