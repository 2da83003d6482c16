import { expect } from 'chai';
import fc from 'fast-check';
import { decodeCell, encodeCell, escapeFormula } from '../../src/formats/csvCells.js';
import {
  CsvHeaderError,
  forEachLeaf,
  MAX_CSV_COLUMNS,
  parseHeader,
  RowWriter,
  rowToDocument,
} from '../../src/formats/csvDocument.js';
import { readCsv, readLines } from '../../src/formats/records.js';
import type { JsonObject, JsonValue } from '../../src/store/port.js';
import { chunks, collect } from '../support/chunks.js';

/** JSON values as documents hold them (no -0: JSON has none). */
const jsonLeaf = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', '42', '-0', '1e3', 'true', 'FALSE', 'null', '{}', '[1]', '"x"', '08123', ' 5', '[x'),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
  fc.integer(),
  fc.constantFrom(2 ** 53, 2 ** 60, -(2 ** 70), 1e21, 2 ** 53 + 2),
  fc.boolean(),
  fc.constant(null),
  fc.constant({}),
  fc.array(fc.jsonValue(), { maxLength: 4 }),
);

describe('CSV cells', () => {
  it('every value reads back exactly as written (strings that look like numbers included)', () => {
    fc.assert(
      fc.property(jsonLeaf, (value) => {
        const read = decodeCell(encodeCell(value as JsonValue));
        expect(JSON.stringify(read)).to.equal(JSON.stringify(value));
      }),
      { numRuns: 2000 },
    );
  });

  it('with the formula escape on, no cell but a number starts with a character a spreadsheet runs', () => {
    const escaping = { formulaEscape: true };
    fc.assert(
      fc.property(jsonLeaf, fc.constantFrom('', '=', '+', '-', '@', '\t', '\r'), (value, start) => {
        const leaf = typeof value === 'string' ? `${start}${value}` : value;
        const cell = encodeCell(leaf as JsonValue, escaping);
        // A number is typed data (a spreadsheet reads -5 as minus five, never as a formula).
        if (typeof leaf === 'number') expect(cell).to.match(/^-?\d[\d.e+-]*$/);
        else expect(cell).not.to.match(/^[=+\-@\t\r]/);
        // Escaping only prepends: the rest is the cell the escape-off export writes.
        const plain = encodeCell(leaf as JsonValue);
        expect(cell === plain || cell === `'${plain}`).to.equal(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('escapes exactly the six OWASP starts, only on text, and numbers never', () => {
    for (const start of ['=', '+', '-', '@', '\t', '\r'])
      expect(escapeFormula(`${start}x`)).to.equal(`'${start}x`);
    for (const start of ["'", ' ', '*', '#', '"', '\n', '(', '%'])
      expect(escapeFormula(`${start}x`)).to.equal(`${start}x`);
    expect(escapeFormula('x=1')).to.equal('x=1');
    const escaping = { formulaEscape: true };
    expect(encodeCell(-5, escaping)).to.equal('-5');
    expect(encodeCell(-(2 ** 60), escaping)).to.equal('-1.152921504606847e+18');
    expect(encodeCell('-5', escaping)).to.equal('"-5"');
    expect(encodeCell('-x', escaping)).to.equal("'-x");
    expect(encodeCell(['=x'], escaping)).to.equal('["=x"]');
  });

  it('keeps the string "42" apart from the number 42', () => {
    expect(encodeCell(42)).to.equal('42');
    expect(encodeCell('42')).to.equal('"42"');
    expect(encodeCell('')).to.equal('""');
    expect(encodeCell(undefined)).to.equal('');
    expect(encodeCell('plain text')).to.equal('plain text');
    expect(encodeCell(2 ** 60)).to.equal('1.152921504606847e+18');
    // Unpaired surrogates have no UTF-8 form: the cell is the JSON literal that escapes them.
    expect(encodeCell('a\ud800')).to.equal('"a\\ud800"');
    expect(decodeCell(encodeCell('a\ud800'))).to.equal('a\ud800');
    expect(encodeCell('🎉')).to.equal('🎉');
  });

  it('reads hand-written cells by the documented rules', () => {
    const table: Array<[string, JsonValue | undefined]> = [
      ['', undefined],
      ['0', 0],
      ['-12.5', -12.5],
      ['1E-3', 0.001],
      ['007', '007'],
      ['9007199254740991', 9007199254740991],
      ['9007199254740992', '9007199254740992'],
      ['1e400', '1e400'],
      ['True', true],
      ['NULL', 'NULL'],
      ['[1, 2]', [1, 2]],
      ['{"a":1}', '{"a":1}'],
      ['"quoted"', 'quoted'],
      ['"unterminated', '"unterminated'],
    ];
    for (const [text, value] of table) expect(decodeCell(text), text).to.deep.equal(value);
  });
});

/** Every leaf of `doc` as `[column name, value]`, in the order forEachLeaf visits them. */
function flattenDocument(doc: JsonObject): Array<[string, JsonValue]> {
  const leaves: Array<[string, JsonValue]> = [];
  forEachLeaf(doc, (name, value) => leaves.push([name, value]));
  return leaves;
}

describe('CSV rows and documents', () => {
  it('flattens nested objects to dot columns; arrays and empty objects are leaves', () => {
    const doc: JsonObject = { _id: 'x', a: { b: { c: 1 }, d: [1, { e: 2 }] }, f: {}, g: 'h' };
    expect(flattenDocument(doc)).to.deep.equal([
      ['_id', 'x'],
      ['a.b.c', 1],
      ['a.d', [1, { e: 2 }]],
      ['f', {}],
      ['g', 'h'],
    ]);
  });

  it('flattens a 10,000-level document without recursion', () => {
    let deep: JsonObject = { leaf: true };
    for (let i = 0; i < 10_000; i++) deep = { n: deep };
    const [[name, value]] = flattenDocument(deep) as [[string, JsonValue]];
    expect(name.split('.')).to.have.length(10_001);
    expect(value).to.equal(true);
  });

  it('a row rebuilt from its columns is the document again', () => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string({ minLength: 1 }).filter((k) => !k.includes('.')),
          jsonLeaf,
          { maxKeys: 6 },
        ),
        (fields) => {
          const doc = { nested: fields, top: fields } as JsonObject;
          const names = flattenDocument(doc).map(([n]) => n);
          if (names.length === 0) return;
          const rebuilt = rowToDocument(parseHeader(names), new RowWriter(names).row(doc));
          expect(JSON.parse(JSON.stringify(rebuilt))).to.deep.equal(JSON.parse(JSON.stringify(doc)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it(`a header takes ${MAX_CSV_COLUMNS} columns, not one more`, () => {
    const names = (n: number) => Array.from({ length: n }, (_, i) => `c${i}`);
    expect(parseHeader(names(MAX_CSV_COLUMNS))).to.have.length(MAX_CSV_COLUMNS);
    expect(() => parseHeader(names(MAX_CSV_COLUMNS + 1))).to.throw(CsvHeaderError);
  });

  it('column names are data: constructor and toString build ordinary fields', () => {
    const doc = rowToDocument(parseHeader(['constructor.name', 'toString']), ['1', 'x']);
    expect(JSON.parse(JSON.stringify(doc))).to.deep.equal({ constructor: { name: 1 }, toString: 'x' });
  });
});

describe('record readers', () => {
  it('CSV records carry the line they start on, whatever the chunking and line ending', async () => {
    for (const newline of ['\n', '\r\n']) {
      const text = ['h1,h2', '1,"a', 'b"', '', '2,3', ',', '4,5'].join(newline) + newline;
      for (const size of [1, 2, 7, 1000]) {
        const records = await collect(readCsv(chunks(text, size)));
        expect(
          records.map((r) => r.line),
          `${JSON.stringify(newline)} ${size}`,
        ).to.deep.equal([1, 2, 5, 7]);
        expect(records[1]!.cells).to.deep.equal(['1', `a${newline}b`]);
      }
    }
  });

  it('NDJSON lines are numbered, blank ones skipped, and an over-long one is not held', async () => {
    const text = `{"a":1}\r\n\n${'x'.repeat(50)}\n{"b":2}`;
    const lines = await collect(readLines(chunks(text, 3), 20));
    expect(lines).to.deep.equal([
      { text: '{"a":1}', line: 1 },
      { text: null, line: 3 },
      { text: '{"b":2}', line: 4 },
    ]);
  });
});
