/**
 * An import measures each record from its fields' JSON text (importRules.largestDocumentBytes)
 * instead of building and serialising the document: the figure must be exactly what
 * documentRules measures on the document itself, for any fields and id.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { buildDocument } from '../../src/services/documentWrites.js';
import { largestDocumentBytes } from '../../src/services/imports/importRules.js';
import type { JsonObject } from '../../src/store/port.js';

function measured(id: string, fields: JsonObject): number {
  const doc = { ...buildDocument(id, fields, null), $version: Number.MAX_SAFE_INTEGER };
  return Buffer.byteLength(JSON.stringify(doc));
}

describe('import: a record measured from its JSON text', () => {
  it('equals the size of the document built from it, for generated fields and ids', () => {
    const key = fc.string({ unit: 'binary', maxLength: 8 }).filter((k) => k !== '_id' && k !== '__proto__');
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }),
        fc.dictionary(key, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 8 }),
        (id, fields) => {
          const json = JSON.stringify(fields);
          expect(largestDocumentBytes(id, json)).to.equal(measured(id, JSON.parse(json) as JsonObject));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('counts the comma only when there are fields, and multi-byte text in bytes', () => {
    expect(largestDocumentBytes('a', '{}')).to.equal(measured('a', {}));
    expect(largestDocumentBytes('a', '{"x":1}')).to.equal(measured('a', { x: 1 }));
    expect(largestDocumentBytes('é', '{"ü":"€"}')).to.equal(measured('é', { ü: '€' }));
    // Integer-like keys come first in both: the order never changes the count.
    expect(largestDocumentBytes('a', JSON.stringify({ 2: 1, b: 2 }))).to.equal(measured('a', { 2: 1, b: 2 }));
  });
});
