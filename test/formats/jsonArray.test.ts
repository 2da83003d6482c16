/** The streaming JSON array reader gives exactly what JSON.parse gives, however the text is cut. */
import { expect } from 'chai';
import fc from 'fast-check';
import { readJsonArray } from '../../src/formats/records.js';

async function collect(text: string, cuts: number[]): Promise<unknown[]> {
  async function* pieces(): AsyncGenerator<string> {
    let from = 0;
    for (const cut of [...cuts].sort((a, b) => a - b)) {
      yield text.slice(from, cut);
      from = cut;
    }
    yield text.slice(from);
  }
  const out: unknown[] = [];
  for await (const value of readJsonArray(pieces())) out.push(value);
  return out;
}

describe('JSON array reader', () => {
  it('keeps U+FEFF wherever it is in a string or a key (raw or escaped)', async () => {
    for (const body of [
      '[{"x":"\ufeffa"}]',
      '[{"x":"\\ufeffa"}]',
      '[{"x":"a\ufeffb"}]',
      '[{"x":"\\n\ufeff"}]',
      '[{"\ufeffk":1}]',
    ]) {
      expect(await collect(body, []), JSON.stringify(body)).to.deep.equal(JSON.parse(body));
    }
  });

  it('reads every array of JSON values as JSON.parse does, under any chunking', async () => {
    const values = fc.array(
      fc.jsonValue({
        maxDepth: 3,
        stringUnit: fc.constantFrom('a', '\ufeff', 'é', '🎉', '"', '\\', '\n', '\u0000', '\ud800'),
      }),
      { maxLength: 5 },
    );
    await fc.assert(
      fc.asyncProperty(
        values.chain((array) => {
          const text = JSON.stringify(array);
          return fc.tuple(
            fc.constant(text),
            fc.array(fc.integer({ min: 0, max: text.length }), { maxLength: 5 }),
          );
        }),
        async ([text, cuts]) => {
          expect(await collect(text, cuts)).to.deep.equal(JSON.parse(text));
        },
      ),
      { numRuns: 1000 },
    );
  });
});
