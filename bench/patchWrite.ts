/**
 * In-process cost of one PATCH merge on the embedded store, without HTTP: the service's
 * read-merge-commit (DocumentService.patch) and the store's commit alone, over 1,000 documents
 * patched in turn, `CONCURRENCY` writes in flight (they share a group's transaction and sync, as
 * under the peer bench's load). Prints, per round, CPU µs per write (process.cpuUsage, all
 * threads), writes per second, writes per group (a group shares one sync's CPU) and bytes
 * written per write (WAL frames and the checkpoint's copies: /proc/self/io); the
 * versions kept per document are the Team plan's.
 *
 * Env: PATCH_WRITES (20000 per round), PATCH_ROUNDS (3), PATCH_CONCURRENCY (8),
 * PATCH_KEEP (storedVersions, 100), PATCH_SYNC (full | normal).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config/load.js';
import type { KeyContext } from '../src/services/context.js';
import { DocumentService } from '../src/services/documents.js';
import { buildDocument, putWrite } from '../src/services/documentWrites.js';
import { createEmbeddedStore } from '../src/store/embedded/index.js';
import type { DataScope } from '../src/store/port.js';

const WRITES = Number(process.env.PATCH_WRITES ?? 20_000);
const ROUNDS = Number(process.env.PATCH_ROUNDS ?? 3);
const CONCURRENCY = Number(process.env.PATCH_CONCURRENCY ?? 8);
const KEEP = Number(process.env.PATCH_KEEP ?? 100);
const DOCS = 1000;

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'folio-patch-bench-'));
const store = createEmbeddedStore({
  dataDir,
  eventRetentionMs: 300_000,
  synchronous: process.env.PATCH_SYNC === 'normal' ? 'normal' : 'full',
});
await store.init();
const config = loadConfig({});
const scope: DataScope = { projectId: 'prj_bench', env: 'live' };
const ctx = {
  scope,
  key: { hint: 'fk_live_…bench' },
  limits: { ...config.plans.team, storedVersions: KEEP },
} as unknown as KeyContext;
const service = new DocumentService(store, config);
const body = { name: 'bench item', category: 'c1', price: 12.5, tags: ['a', 'b'], n: 0 };
await store.documents.commit(
  scope,
  'items',
  Array.from({ length: DOCS }, (_, i) =>
    putWrite(ctx, buildDocument(String(i + 1), { ...body, n: i }, null), 0, 'create'),
  ),
);

/** Bytes this process handed to write(2) and friends so far (/proc/self/io `wchar`). */
function bytesWritten(): number {
  return Number(/wchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? 0);
}

let next = 0;
const nextId = () => String((next++ % DOCS) + 1);

async function measure(label: string, write: (id: string, i: number) => Promise<unknown>): Promise<void> {
  for (let round = 1; round <= ROUNDS; round++) {
    const groups0 = store.documents.commitGroups.groups;
    const written0 = bytesWritten();
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    let issued = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (issued < WRITES) {
          const i = issued++;
          await write(nextId(), i);
        }
      }),
    );
    const cpu = process.cpuUsage(cpu0);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const us = (cpu.user + cpu.system) / WRITES;
    const perGroup = WRITES / (store.documents.commitGroups.groups - groups0);
    const kib = (bytesWritten() - written0) / 1024 / WRITES;
    console.log(
      `${label} round ${round}: ${us.toFixed(1)} µs CPU/write, ${Math.round(WRITES / seconds)} writes/s, ${perGroup.toFixed(1)} writes/group, ${kib.toFixed(1)} KiB written/write`,
    );
  }
}

const patch = { n: 2, price: 13.5 };
await measure('service patch', (id) => service.patch(ctx, 'items', id, 'merge', patch));
await measure('store commit ', async (id, i) => {
  const current = (await store.documents.get(scope, 'items', id))!;
  const doc = buildDocument(id, { ...body, n: i }, current);
  await store.documents.commit(scope, 'items', [putWrite(ctx, doc, current.$version, 'patch')]);
});
console.log(`groups ${store.documents.commitGroups.groups}`);
await store.close();
await rm(dataDir, { recursive: true, force: true });
