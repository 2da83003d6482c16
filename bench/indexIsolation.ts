/**
 * Declared indexes belong to their collection (embedded store): creates in one collection
 * while another collection of another project has 0, 3, 10 and 30 paths declared, straight on
 * the store (groups of 20 concurrent commits, as group commit forms them under load). Indexes
 * shared by path across collections once made the 30-path case 9 times slower; partial indexes
 * leave only SQLite's test of each index's condition. bench/indexes.ts runs it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '../src/ids.js';
import { createEmbeddedStore } from '../src/store/embedded/index.js';
import { firstVersion, putWrite } from '../test/store/fixtures.js';
import { sized } from './workloads/rows.js';

const SECONDS = sized(2, 0.5);
const PATHS_ELSEWHERE = [0, 3, 10, 30];

async function createsPerSecond(pathsElsewhere: number): Promise<number> {
  const dataDir = await mkdtemp(join(tmpdir(), 'folio-isolation-'));
  const store = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
  await store.init();
  try {
    const elsewhere = { projectId: newId('prj'), env: 'test' as const };
    for (let i = 0; i < pathsElsewhere; i++) {
      await store.indexes.create(
        elsewhere,
        'other',
        {
          name: `f${i}_1`,
          fields: [{ path: `f${i}`, order: 1 }],
          unique: false,
        },
        100,
      );
    }
    const scope = { projectId: newId('prj'), env: 'test' as const };
    const started = performance.now();
    let created = 0;
    while (performance.now() - started < SECONDS * 1000) {
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          store.documents.commit(scope, 'items', [
            putWrite(firstVersion({ title: 'bench document', n: i, price: 12.5, tags: ['a', 'b'] })),
          ]),
        ),
      );
      created += 20;
    }
    return created / ((performance.now() - started) / 1000);
  } finally {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

export async function runIndexIsolationBench(): Promise<void> {
  const rates: string[] = [];
  for (const paths of PATHS_ELSEWHERE) {
    rates.push(`${paths}: ${Math.round(await createsPerSecond(paths)).toLocaleString('en')}`);
  }
  process.stdout.write(
    `\nCreates per second in a collection, by paths declared in another project's collection (store level, ${SECONDS} s each): ${rates.join(', ')}.\n`,
  );
}
