/**
 * Automatic single-field indexes (configuration `autoIndexes`; `enabled` is the default of every
 * project, which its owner may override: `PATCH /api/projects/{id}` `{autoIndexes}`): when queries on
 * a collection of at least `minDocuments` documents filter or sort on the same unindexed
 * top-level field `minQueries` times within `windowMs`, an index `auto_<field>_1` is built in the
 * background; one no query used for `unusedAfterMs` is dropped. At most `maxPerCollection` per
 * collection, and never past the plan's `maxIndexes`. Usage is kept in memory (bounded), so a
 * restart starts the counts again; automatic indexes found in the store are adopted as used at
 * that moment.
 */
import { BoundedCache } from '../boundedCache.js';
import type { Config } from '../config/schema.js';
import type { DataScope, IndexRecord, Store, StoredFilter } from '../store/port.js';

export const AUTO_PREFIX = 'auto_';
/** Usage entries kept at most; past this the counts start again (a crafted query stream cannot grow it). */
const MAX_TRACKED = 10_000;
/** A sweep for unused automatic indexes runs at most this often. */
const SWEEP_EVERY_MS = 1000;

type Policy = Config['autoIndexes'];

interface Usage {
  count: number;
  windowStartMs: number;
}

interface AutoIndex {
  scope: DataScope;
  collection: string;
  name: string;
  lastUsedMs: number;
}

export function isAutoIndex(index: Pick<IndexRecord, 'name'>): boolean {
  return index.name.startsWith(AUTO_PREFIX);
}

/** The top-level user fields a canonical filter and sort touch (what an automatic index may serve). */
export function candidateFields(
  filter: StoredFilter,
  sort: ReadonlyArray<readonly [string, number]>,
): string[] {
  const fields = new Set<string>();
  const pending: StoredFilter[] = [filter];
  // Iterative, and bounded by the filter's size (itself capped by filterParams.ts).
  while (pending.length > 0) {
    const current = pending.pop()!;
    for (const [key, value] of Object.entries(current)) {
      if (key === '$and' && Array.isArray(value)) pending.push(...(value as StoredFilter[]));
      else if (!key.startsWith('$')) fields.add(key);
    }
  }
  for (const [path] of sort) fields.add(path);
  return [...fields].filter((f) => !f.includes('.') && f !== '_id' && f !== '_folio');
}

export class AutoIndexer {
  readonly #usage = new BoundedCache<Usage>(MAX_TRACKED);
  readonly #autos = new Map<string, AutoIndex>();
  /** Collections whose automatic indexes were looked up in the store (adopted after a restart). */
  readonly #adopted = new Set<string>();
  readonly #busy = new Set<string>();
  #lastSweepMs = 0;

  constructor(
    private readonly store: Store,
    private readonly policy: Policy,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Note one query on `fields` of the collection; builds or drops indexes in the background.
   * Never throws and never delays the query. `projectSetting` is the project's own choice
   * (null or absent: the configured default). A project switched off keeps the automatic
   * indexes it has until they go unused, as any other: the sweep is server-wide.
   */
  observe(
    scope: DataScope,
    collection: string,
    fields: string[],
    maxIndexes: number,
    projectSetting?: boolean | null,
  ): void {
    const now = this.now();
    this.#sweep(now);
    if (!(projectSetting ?? this.policy.enabled)) return;
    const base = `${scope.projectId}:${scope.env}\0${collection}`;
    if (!this.#adopted.has(base)) {
      this.#adopted.add(base);
      this.#background(base, () => this.#adopt(scope, collection, base));
    }
    for (const field of fields) {
      const key = `${base}\0${field}`;
      const auto = this.#autos.get(key);
      if (auto) {
        auto.lastUsedMs = now;
        continue;
      }
      const usage = this.#usage.get(key);
      if (!usage || now - usage.windowStartMs > this.policy.windowMs) {
        this.#usage.set(key, { count: 1, windowStartMs: now });
      } else {
        usage.count++;
      }
      if ((this.#usage.get(key)?.count ?? 0) >= this.policy.minQueries) {
        this.#usage.delete(key);
        this.#background(key, () => this.#build(scope, collection, field, key, maxIndexes));
      }
    }
  }

  /** Resolves when every background build or drop started so far has finished (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  readonly #running = new Set<Promise<void>>();

  #background(key: string, task: () => Promise<void>): void {
    if (this.#busy.has(key)) return;
    this.#busy.add(key);
    const run = task()
      .catch(() => {
        // An automatic index is an optimisation: a failed build or drop changes no answer.
      })
      .finally(() => {
        this.#busy.delete(key);
        this.#running.delete(run);
      });
    this.#running.add(run);
  }

  async #adopt(scope: DataScope, collection: string, base: string): Promise<void> {
    for (const index of await this.store.indexes.list(scope, collection)) {
      if (!isAutoIndex(index)) continue;
      const field = index.fields[0]!.path;
      this.#autos.set(`${base}\0${field}`, { scope, collection, name: index.name, lastUsedMs: this.now() });
    }
  }

  async #build(
    scope: DataScope,
    collection: string,
    field: string,
    key: string,
    maxIndexes: number,
  ): Promise<void> {
    const existing = await this.store.indexes.list(scope, collection);
    if (existing.some((i) => i.fields[0]!.path === field)) return;
    if (existing.length >= maxIndexes) return;
    if (existing.filter(isAutoIndex).length >= this.policy.maxPerCollection) return;
    const size = await this.store.documents.count(scope, collection, {}, this.policy.minDocuments);
    if (size < this.policy.minDocuments) return;
    const name = `${AUTO_PREFIX}${field}_1`.slice(0, 64);
    const built = await this.store.indexes.create(
      scope,
      collection,
      { name, fields: [{ path: field, order: 1 }], unique: false },
      maxIndexes,
    );
    if (built?.state === 'ready') this.#autos.set(key, { scope, collection, name, lastUsedMs: this.now() });
  }

  #sweep(now: number): void {
    if (now - this.#lastSweepMs < SWEEP_EVERY_MS) return;
    this.#lastSweepMs = now;
    for (const [key, auto] of this.#autos) {
      if (now - auto.lastUsedMs <= this.policy.unusedAfterMs) continue;
      this.#autos.delete(key);
      this.#background(key, async () => {
        await this.store.indexes.drop(auto.scope, auto.collection, auto.name);
      });
    }
  }
}
