/**
 * The import spool's memory budget (`imports.spoolMemoryBytes`): records stay in memory while
 * their spooled text fits, all of them go to the file once one more would not, and either way
 * the write pass reads back the same records, in order, with the same sizes (batches are cut
 * by them).
 */
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { expect } from 'chai';
import fc from 'fast-check';
import { SPOOL_INSTANCE, Spool, type SpooledRecord } from '../../src/services/imports/spool.js';
import type { JsonObject } from '../../src/store/port.js';

interface Input {
  index: number;
  line: number | undefined;
  id: string;
  given: boolean;
  fields: JsonObject;
}

async function ownSpools(): Promise<string[]> {
  const prefix = `folio-import-${process.pid}-${SPOOL_INSTANCE}-`;
  return (await readdir(tmpdir())).filter((name) => name.startsWith(prefix));
}

/** Spools `inputs` under `memoryBytes`; returns what the write pass reads and where it was kept. */
async function roundTrip(
  inputs: Input[],
  memoryBytes: number,
): Promise<{ records: SpooledRecord[]; onDisk: boolean; dirs: number }> {
  const spool = new Spool(memoryBytes);
  try {
    for (const r of inputs)
      await spool.append(r.index, r.line, r.id, r.given, r.fields, JSON.stringify(r.fields));
    const dirs = (await ownSpools()).length;
    const records: SpooledRecord[] = [];
    for await (const record of spool.records()) records.push(record);
    return { records, onDisk: spool.onDisk, dirs };
  } finally {
    await spool.dispose();
  }
}

/** The UTF-8 bytes of a record's spooled line: what the budget counts. */
function lineBytes(r: Input): number {
  return Buffer.byteLength(JSON.stringify([r.index, r.line ?? null, r.id, r.fields, r.given ? 1 : 0]));
}

const inputs = (n: number): Input[] =>
  Array.from({ length: n }, (_, i) => ({
    index: i * 2,
    line: i % 3 === 0 ? undefined : i + 1,
    id: `id-${i}-é`,
    given: i % 2 === 0,
    fields: { n: i, s: 'x'.repeat(i), nested: { a: [i, null, true] } },
  }));

describe('import spool memory budget', () => {
  afterEach(async () => {
    expect(await ownSpools()).to.deep.equal([]);
  });

  it('keeps the records in memory while they fit exactly, spills all of them at one byte less', async () => {
    const records = inputs(20);
    const total = records.reduce((sum, r) => sum + lineBytes(r), 0);
    const fits = await roundTrip(records, total);
    expect(fits.onDisk).to.equal(false);
    expect(fits.dirs).to.equal(0);
    const spills = await roundTrip(records, total - 1);
    expect(spills.onDisk).to.equal(true);
    expect(spills.dirs).to.equal(1);
    const none = await roundTrip(records, 0);
    expect(none.onDisk).to.equal(true);
    for (const run of [fits, spills, none]) {
      expect(run.records).to.deep.equal(records.map((r) => ({ ...r, bytes: lineBytes(r) })));
    }
  });

  it('an empty import makes no file', async () => {
    const run = await roundTrip([], 0);
    expect(run.records).to.deep.equal([]);
    expect(run.dirs).to.equal(0);
  });

  it('reads back the same records, in order, from memory, from the file or spilled part-way', async () => {
    const record = fc.record({
      line: fc.option(fc.nat(), { nil: undefined }),
      id: fc.string({ unit: 'binary', minLength: 1, maxLength: 10 }),
      given: fc.boolean(),
      fields: fc.dictionary(
        fc.string({ unit: 'binary', maxLength: 6 }).filter((k) => k !== '__proto__'),
        fc.jsonValue({ maxDepth: 2 }),
        { maxKeys: 4 },
      ),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(record, { maxLength: 12 }), fc.nat(), async (generated, cut) => {
        // Values as JSON gives them back (-0 is 0 in JSON text).
        const records: Input[] = generated.map((r, i) => ({
          ...r,
          index: i,
          fields: JSON.parse(JSON.stringify(r.fields)) as JsonObject,
        }));
        const total = records.reduce((sum, r) => sum + lineBytes(r), 0);
        const expected = records.map((r) => ({ ...r, bytes: lineBytes(r) }));
        for (const budget of [0, total === 0 ? 0 : cut % (total + 1), total, total + 1]) {
          const run = await roundTrip(records, budget);
          expect(run.records).to.deep.equal(expected);
          expect(run.onDisk).to.equal(budget < total);
        }
      }),
      { numRuns: 60 },
    );
  });
});
