/**
 * CSV through the import endpoint: our own edge cases, then every case of the public
 * csv-spectrum suite (an npm dev dependency), read under Folio's documented cell rules.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import type { Json } from '../support/server.js';
import { forEachStore } from '../support/stores.js';
import { CSV, transferClient, userPart } from './client.js';

let collectionCounter = 0;
const fresh = () => `csv${++collectionCounter}`;

/**
 * How the documented rules read a cell, written independently of the code under test: empty is
 * absent, true/false are booleans, JSON integers and decimals without leading zeros are numbers.
 */
function expectedCell(text: string): unknown {
  if (text === '') return undefined;
  if (text === 'true' || text === 'false') return text === 'true';
  if (/^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/.test(text) && Math.abs(Number(text)) <= Number.MAX_SAFE_INTEGER) {
    return Number(text);
  }
  return text;
}

function expectedDoc(row: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    const cell = expectedCell(value);
    if (cell !== undefined) out[key] = cell;
  }
  return out;
}

const spectrumDir = dirname(createRequire(import.meta.url).resolve('csv-spectrum/package.json'));
/** Its fixture disagrees with its own CSV (a different phone number), and is not an array. */
const SPECTRUM_BROKEN = new Set(['location_coordinates']);

forEachStore('CSV import', (ctx) => {
  const api = () => transferClient(ctx);
  const importCsv = async (body: string | Buffer) => {
    const collection = fresh();
    const res = await fetch(`${ctx.server.url}/${ctx.tenant.project}/${collection}/_import`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ctx.tenant.key}`, 'Content-Type': CSV },
      body,
    });
    const result: Json = await res.json();
    expect(res.status, JSON.stringify(result)).to.equal(200);
    const docs = (await api().all(collection)).map(userPart).map(({ _id, ...rest }: { _id: string }) => rest);
    return { result, docs };
  };

  it('quoted commas, line breaks and doubled quotes survive; CRLF ends rows', async () => {
    const { docs, result } = await importCsv(
      'name,note\r\n"Doe, John","line one\r\nline two"\r\nplain,"she said ""hi"""\r\n',
    );
    expect(result.total).to.equal(2);
    expect(docs).to.deep.equal([
      { name: 'Doe, John', note: 'line one\r\nline two' },
      { name: 'plain', note: 'she said "hi"' },
    ]);
  });

  it('a UTF-8 BOM is not part of the first column name; UTF-8 text is kept', async () => {
    const { docs } = await importCsv(
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('city,word\nZürich,日本語 ✓\n')]),
    );
    expect(docs).to.deep.equal([{ city: 'Zürich', word: '日本語 ✓' }]);
  });

  it('an empty file and a header alone import nothing', async () => {
    expect((await importCsv('')).result).to.deep.equal({ imported: 0, skipped: 0, errors: [], total: 0 });
    expect((await importCsv('a,b\r\n')).result).to.deep.equal({
      imported: 0,
      skipped: 0,
      errors: [],
      total: 0,
    });
  });

  it('ragged rows: missing cells leave fields out; extra cells are the row error, with its line', async () => {
    const { result, docs } = await importCsv('a,b,c\n1\n2,3,4,5\n6,7,8,\n\n"x\ny",9\n');
    expect(result.total).to.equal(4);
    expect(result.errors).to.have.length(1);
    expect(result.errors[0]).to.include({ index: 1, line: 3, code: 'invalid_row' });
    expect(docs).to.deep.equal([{ a: 1 }, { a: 6, b: 7, c: 8 }, { a: 'x\ny', b: 9 }]);
  });

  it("an unterminated quote is that record's error naming its line, never a silent merge", async () => {
    const { result, docs } = await importCsv('a,b\n1,2\n"open,3\n4,5\n');
    expect(result.imported).to.equal(1);
    expect(result.total).to.equal(2);
    expect(result.errors).to.have.length(1);
    expect(result.errors[0]).to.include({ index: 1, line: 3, code: 'invalid_row' });
    expect(result.errors[0].message).to.include('line 3').and.include('never closed');
    expect(docs).to.deep.equal([{ a: 1, b: 2 }]);
    // In the header, nothing can be read: 400 naming the line.
    const header = await api().importRaw(fresh(), '"a,b\n1,2\n', CSV);
    expect(header.status).to.equal(400);
    expect(header.body.error.message).to.include('line 1');
  });

  it("a row over twice the document size limit is that row's error, not held; the rows after it import", async () => {
    // documents.maxBytes is 1 MiB in tests as by default: a row may have 2 MiB of characters.
    const long = 'x'.repeat(2 * 1024 * 1024);
    const { result, docs } = await importCsv(`a,b\n1,2\n"${long}",3\n4,5\n`);
    expect(result.errors).to.have.length(1);
    expect(result.errors[0]).to.include({ index: 1, line: 3, code: 'payload_too_large' });
    expect(docs).to.deep.equal([
      { a: 1, b: 2 },
      { a: 4, b: 5 },
    ]);
  });

  it('numbers and booleans are coerced; leading zeros, big integers and other text stay strings', async () => {
    const { docs } = await importCsv(
      'i,f,e,neg,t,F,n,zip,big,plus,hex,space,arr,obj,str,quoted\n' +
        '42,3.5,1e3,-7,true,FALSE,null,08123,12345678901234567890,+1,0x1F, 5,"[1,""a""]",{},"[not json","""42"""\n',
    );
    expect(docs).to.deep.equal([
      {
        i: 42,
        f: 3.5,
        e: 1000,
        neg: -7,
        t: true,
        F: false,
        n: null,
        zip: '08123',
        big: '12345678901234567890',
        plus: '+1',
        hex: '0x1F',
        space: ' 5',
        arr: [1, 'a'],
        obj: {},
        str: '[not json',
        quoted: '42',
      },
    ]);
  });

  /**
   * Each rule of docs/import-export.md's table, with cells just inside and just outside it. Only
   * numbers and booleans are coerced from what a person would type; null, arrays, `{}` and JSON
   * string literals are the rules that give every JSON value a cell, so an export reads back.
   */
  const RULES: Array<[rule: string, cells: Array<[string, unknown]>]> = [
    [
      'empty cell: absent field',
      [
        ['', undefined],
        [' ', ' '],
      ],
    ],
    [
      'true / false in any letter case: boolean',
      [
        ['true', true],
        ['FALSE', false],
        ['tRuE', true],
        ['true ', 'true '],
        ['yes', 'yes'],
        ['t', 't'],
      ],
    ],
    [
      'null (lower case only): null',
      [
        ['null', null],
        ['NULL', 'NULL'],
        ['Null', 'Null'],
        ['nil', 'nil'],
      ],
    ],
    [
      'a JSON number: number',
      [
        ['42', 42],
        ['-7', -7],
        ['3.5', 3.5],
        ['1e3', 1000],
        ['1E-2', 0.01],
        ['9007199254740991', 9007199254740991],
        ['9007199254740992', '9007199254740992'],
        ['1e400', '1e400'],
        ['007', '007'],
        ['+1', '+1'],
        ['.5', '.5'],
        ['5.', '5.'],
        ['0x1F', '0x1F'],
        [' 5', ' 5'],
        ['1_000', '1_000'],
        ['Infinity', 'Infinity'],
        ['NaN', 'NaN'],
      ],
    ],
    [
      '[...] that is valid JSON: array',
      [
        ['[1,"a"]', [1, 'a']],
        ['[]', []],
        ['[1,', '[1,'],
        ['[x]', '[x]'],
      ],
    ],
    [
      '{} only: empty object',
      [
        ['{}', {}],
        ['{"a":1}', '{"a":1}'],
        ['{ }', '{ }'],
      ],
    ],
    [
      'a JSON string literal: that string',
      [
        ['"42"', '42'],
        ['""', ''],
        ['"\\u0041"', 'A'],
        ['"a', '"a'],
        ['"a"b"', '"a"b"'],
      ],
    ],
    [
      'anything else: the text itself',
      [
        ['hello', 'hello'],
        ["'=1", "'=1"],
        ['=1+2', '=1+2'],
      ],
    ],
  ];

  for (const [rule, cells] of RULES) {
    it(`cell rule: ${rule}, and its near misses stay what they are`, async () => {
      const header = cells.map((_, i) => `c${i}`).join(',');
      const row = cells
        .map(([text]) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text))
        .join(',');
      const { docs } = await importCsv(`${header},marker\n${row},m\n`);
      const expected: Record<string, unknown> = { marker: 'm' };
      cells.forEach(([, value], i) => {
        if (value !== undefined) expected[`c${i}`] = value;
      });
      expect(docs).to.deep.equal([expected]);
    });
  }

  it('dot-notation headers rebuild nested objects; a value and an object at one path is the row error', async () => {
    const { docs, result } = await importCsv(
      'name,address.city,address.geo.lat,constructor.x\nAda,Paris,48.8,1\nBob,,,\nEve,Rome,,\n',
    );
    expect(result.errors).to.deep.equal([]);
    expect(docs).to.deep.equal([
      { name: 'Ada', address: { city: 'Paris', geo: { lat: 48.8 } }, constructor: { x: 1 } },
      { name: 'Bob' },
      { name: 'Eve', address: { city: 'Rome' } },
    ]);
    const clash = await importCsv('a,a.b\n1,2\n3,\n');
    expect(clash.result.errors[0]).to.include({ index: 0, code: 'invalid_row' });
    expect(clash.docs).to.deep.equal([{ a: 3 }]);
  });

  it('a header with an empty or repeated column name is refused whole (400)', async () => {
    for (const header of ['a,,b', 'a,a', 'a..b', '.a']) {
      const res = await api().importRaw(fresh(), `${header}\n1,2,3\n`, CSV);
      expect(res.status, header).to.equal(400);
    }
  });

  it('a header refused before the rest of a large body: the rest is read, and the connection kept', async () => {
    // 200 KB after the refused header: too much to sit in socket buffers, within the drain bound.
    const rows = Array.from({ length: 20_000 }, (_, i) => `${i},row ${i}`).join('\n');
    const res = await api().importRaw(fresh(), `a,,b\n${rows}\n`, CSV);
    expect(res.status).to.equal(400);
    // `Connection: close` is the answer when the body could not be read to its end in time.
    expect(res.headers.get('connection')).to.not.equal('close');
  });

  describe('csv-spectrum', () => {
    const names = readdirSync(join(spectrumDir, 'csvs'))
      .map((file) => file.replace(/\.csv$/, ''))
      .filter((name) => !SPECTRUM_BROKEN.has(name));

    it('has the cases we expect to run', () => {
      expect(names.length).to.be.greaterThanOrEqual(11);
    });

    for (const name of names) {
      it(`imports ${name}.csv as its fixture says, under Folio's cell rules`, async () => {
        const csv = readFileSync(join(spectrumDir, 'csvs', `${name}.csv`));
        const rows = JSON.parse(readFileSync(join(spectrumDir, 'json', `${name}.json`), 'utf8')) as Array<
          Record<string, string>
        >;
        const { docs, result } = await importCsv(csv);
        expect(result.errors).to.deep.equal([]);
        expect(docs).to.deep.equal(rows.map(expectedDoc));
      });
    }
  });
});
