/**
 * The streaming CSV reader against papaparse's whole-text parser (the dialect Folio has always
 * read), under every way of cutting the text into chunks; and what it reports instead of
 * silently merging: a quoted field never closed, a record over the size limit.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import Papa from 'papaparse';
import { type CsvRecord, CsvTokenizer } from '../../src/formats/csvTokenizer.js';
import { CSV_CHARS_PER_TURN, readCsv } from '../../src/formats/records.js';
import { chunks, collect } from '../support/chunks.js';

function tokenize(
  text: string,
  cuts: number[],
  max?: number,
): { records: CsvRecord[]; tokenizer: CsvTokenizer } {
  const tokenizer = new CsvTokenizer(max);
  const records: CsvRecord[] = [];
  let from = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    records.push(...tokenizer.push(text.slice(from, cut)));
    from = cut;
  }
  records.push(...tokenizer.push(text.slice(from)), ...tokenizer.end());
  return { records, tokenizer };
}

/** CSV-ish text: every character the dialect gives a meaning to, and some it does not. */
const csvText = fc
  .array(fc.constantFrom('a', 'b', ',', '"', '""', '\n', '\r', '\r\n', ' ', '\t', 'é', '🎉'), {
    maxLength: 40,
  })
  .map((parts) => parts.join(''));

const cutsOf = (text: string) => fc.array(fc.integer({ min: 0, max: text.length }), { maxLength: 6 });

describe('CSV tokenizer', () => {
  it('reads every text as papaparse reads it whole, however it is cut into chunks', () => {
    fc.assert(
      fc.property(
        csvText.chain((text) => fc.tuple(fc.constant(text), cutsOf(text))),
        ([text, cuts]) => {
          // papaparse calls a closing quote followed by whitespace and then the end unterminated.
          fc.pre(!/"\s+$/.test(text));
          const { records, tokenizer } = tokenize(text, cuts);
          const whole = tokenize(text, []).records;
          expect(records, 'chunking changes nothing').to.deep.equal(whole);
          const newline = tokenizer.newline ?? '\n';
          const papa = Papa.parse<string[]>(text, { delimiter: ',', newline, quoteChar: '"' });
          if (papa.errors.some((e) => e.code === 'MissingQuotes')) {
            // papaparse merges the rest into one field; the tokenizer reports it instead.
            expect(records.at(-1)?.problem).to.equal('unterminated_quote');
            return;
          }
          expect(records.every((r) => r.problem === undefined)).to.equal(true);
          const ours = records.map((r) => r.cells);
          // papaparse ends with an empty row after a final line ending; the tokenizer does not.
          const theirs = papa.data.length > 0 && text.endsWith(newline) ? papa.data.slice(0, -1) : papa.data;
          expect(ours, JSON.stringify(text)).to.deep.equal(theirs);
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('looks at each character once, whatever the chunking: a long field costs its length', () => {
    const field = 'x'.repeat(300_000);
    for (const body of [`a\n"${field}"\n`, `a\n${field}\n`, `a\n"${field}`]) {
      for (const size of [1, 7, 4096, body.length]) {
        const cuts = Array.from({ length: Math.ceil(body.length / size) }, (_, i) => i * size);
        const { tokenizer, records } = tokenize(body, cuts);
        expect(tokenizer.charsExamined, `${size}`).to.equal(body.length);
        expect(records).to.have.length(2);
      }
    }
  });

  it('an unterminated quote is the last record, a problem naming its line; records before it stand', () => {
    const { records } = tokenize('a,b\n1,2\n"open,3\n4,5\n', []);
    expect(records.slice(0, 2)).to.deep.equal([
      { line: 1, cells: ['a', 'b'] },
      { line: 2, cells: ['1', '2'] },
    ]);
    expect(records[2]).to.include({ line: 3, problem: 'unterminated_quote' });
    const problem = records[2]!;
    expect(problem.problem && problem.message)
      .to.include('opened on line 3')
      .and.include('to line 5');
    expect(records).to.have.length(3);
    // Opened in a later field of the row: the row's line, the quote's line in the message.
    const later = tokenize('a,b\r\nx,"y\r\nz', []).records[1]!;
    expect(later).to.include({ line: 2, problem: 'unterminated_quote' });
    // A closing quote at the very end of the text closes, as does one followed by whitespace.
    expect(tokenize('a\n"x"', []).records[1]).to.deep.equal({ line: 2, cells: ['x'] });
    expect(tokenize('a\n"x" ', []).records[1]).to.deep.equal({ line: 2, cells: ['x'] });
  });

  it('a record over the limit is a problem, not kept; one at the limit is read', () => {
    // Characters of a record: its cells' text plus one per comma.
    const at = tokenize('ab,cde\n', [], 6).records;
    expect(at).to.deep.equal([{ line: 1, cells: ['ab', 'cde'] }]);
    expect(tokenize('ab,cd,', [], 6).records).to.deep.equal([{ line: 1, cells: ['ab', 'cd', ''] }]);
    expect(tokenize('ab,cd,,', [], 6).records[0]).to.include({ problem: 'too_large' });
    const over = tokenize('ab,cdef\nx\n', [], 6).records;
    expect(over[0]).to.include({ line: 1, problem: 'too_large' });
    expect(over[1]).to.deep.equal({ line: 2, cells: ['x'] });
    const quoted = tokenize(`"${'y'.repeat(20)}",z\n"a\nb"\n`, [3, 9], 10).records;
    expect(quoted[0]).to.include({ line: 1, problem: 'too_large' });
    expect(quoted[1]).to.deep.equal({ line: 2, cells: ['a\nb'] });
  });

  it('the line ending is the first one outside quotes; other line breaks are text', () => {
    const { records, tokenizer } = tokenize('"h\n1",h2\r\na\nb,c\r\n', []);
    expect(tokenizer.newline).to.equal('\r\n');
    expect(records).to.deep.equal([
      { line: 1, cells: ['h\n1', 'h2'] },
      { line: 3, cells: ['a\nb', 'c'] },
    ]);
    expect(tokenize('a\rb\r', [1]).records.map((r) => r.cells)).to.deep.equal([['a'], ['b']]);
  });

  it('readCsv gives the event loop a turn every CSV_CHARS_PER_TURN characters of a large body', async () => {
    // A chain of setImmediate callbacks runs once per turn of the event loop: without the turns,
    // a body already in memory would be read in one go of promise callbacks, and it would run once.
    let turns = 0;
    let reading = true;
    const tick = () => {
      turns += 1;
      if (reading) setImmediate(tick);
    };
    setImmediate(tick);
    const size = 8 << 20;
    try {
      const records = await collect(readCsv(chunks(`a\n"${'x'.repeat(size)}"\n`, 1 << 16)));
      expect(records).to.have.length(2);
    } finally {
      reading = false;
    }
    expect(turns).to.be.at.least(Math.floor(size / CSV_CHARS_PER_TURN));
  });
});
