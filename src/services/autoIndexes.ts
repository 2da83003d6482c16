/**
 * Automatic single-field indexes (configuration `autoIndexes`; `enabled` is the default of every
 * project, which its owner may override: `PATCH /api/projects/{id}` `{autoIndexes}`): when queries on
 * a collection of at least `minDocuments` documents filter or sort on the same unindexed
 * top-level field `minQueries` times within `windowMs`, an index `auto_<field>_1` is built in the
 * background; one no query used for `unusedAfterMs` is dropped. At most `maxPerCollection` per
 * collection, and never past the plan's `maxIndexes`. Usage is kept in memory (bounded), so a
 * restart starts the counts again; automatic indexes found in the store are adopted as used at
 * that moment. A store shared by several instances (MongoDB, `indexes.recordUsage`) keeps the
 * counts instead: each instance adds what it saw about once a second, the threshold is reached
 * by all instances' queries together, and an index is dropped only when no instance used it.
 */
import { LRUCache } from 'lru-cache';
import type { Config } from '../config/schema.js';
import type { DataScope, IndexRecord, IndexUsage, Store, StoredFilter } from '../store/port.js';

export const AUTO_PREFIX = 'auto_';
/** Usage entries kept at most, least recently used out first (a crafted query stream cannot grow it). */
const MAX_TRACKED = 10_000;
/** The background task key of a flush of the shared counts (no field key starts with NUL). */
const FLUSH_TASK = '\0flush';
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
  field: string;
  name: string;
  lastUsedMs: number;
}

/** Whether an automatic index went unused long enough to drop (last use by any instance). */
export function isUnused(lastUsedMs: number, nowMs: number, unusedAfterMs: number): boolean {
  return nowMs - lastUsedMs > unusedAfterMs;
}

/**
 * Shared mode: whether the queries seen here make the shared count reach the threshold, by
 * the last total this instance read: then they are added at once (a build should not wait for
 * the next second's flush), otherwise with the others about once a second.
 */
export function isFlushDue(knownTotal: number, pendingQueries: number, minQueries: number): boolean {
  return knownTotal + pendingQueries >= minQueries;
}

/** Queries seen here since the last flush to the store's shared usage. */
interface PendingUsage {
  usage: IndexUsage;
  maxIndexes: number;
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
  readonly #usage = new LRUCache<string, Usage>({ max: MAX_TRACKED });
  readonly #autos = new Map<string, AutoIndex>();
  /** Collections whose automatic indexes were looked up in the store (adopted after a restart). */
  readonly #adopted = new Set<string>();
  readonly #busy = new Set<string>();
  /** Shared mode only: queries per field not yet added to the store's counts. */
  readonly #pending = new Map<string, PendingUsage>();
  /** Shared mode: the last total read per field (what `isFlushDue` compares with). */
  readonly #known = new LRUCache<string, number>({ max: MAX_TRACKED });
  #flushDue = false;
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
    const shared = this.#shared();
    for (const field of fields) {
      const key = `${base}\0${field}`;
      const auto = this.#autos.get(key);
      if (auto) auto.lastUsedMs = now;
      if (shared) {
        // Counted in the store with every instance's queries (an automatic index's too, so the
        // others know it is used).
        if (!auto) this.#note(key, { scope, collection, field, queries: 1 }, maxIndexes);
        else this.#note(key, { scope, collection, field, queries: 1 }, maxIndexes, false);
        continue;
      }
      if (auto) continue;
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
    if (this.#flushDue) this.#background(FLUSH_TASK, () => this.#flush());
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
      this.#autos.set(`${base}\0${field}`, {
        scope,
        collection,
        field,
        name: index.name,
        lastUsedMs: this.now(),
      });
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
    if (built?.state === 'ready')
      this.#autos.set(key, { scope, collection, field, name, lastUsedMs: this.now() });
  }

  #shared(): boolean {
    return typeof this.store.indexes.recordUsage === 'function';
  }

  /** Count one query here; `candidate` false for a field already indexed (no threshold to reach). */
  #note(key: string, usage: IndexUsage, maxIndexes: number, candidate = true): void {
    let pending = this.#pending.get(key);
    if (pending) {
      pending.usage.queries += usage.queries;
      pending.maxIndexes = maxIndexes;
    } else if (this.#pending.size < MAX_TRACKED) {
      pending = { usage, maxIndexes };
      this.#pending.set(key, pending);
    }
    if (
      candidate &&
      pending &&
      isFlushDue(this.#known.get(key) ?? 0, pending.usage.queries, this.policy.minQueries)
    ) {
      this.#flushDue = true;
    }
  }

  /** Add the queries seen here to the shared counts; build where all instances reached the threshold. */
  async #flush(): Promise<void> {
    // Queries noted while a flush runs are added by another round (this task is not restarted
    // while it runs).
    while (this.#pending.size > 0) {
      this.#flushDue = false;
      await this.#flushOnce();
      if (!this.#flushDue) break;
    }
  }

  async #flushOnce(): Promise<void> {
    const batch = [...this.#pending.entries()];
    this.#pending.clear();
    const totals = await this.store.indexes.recordUsage!(
      batch.map(([, p]) => p.usage),
      this.policy.windowMs,
    );
    totals.forEach((total, i) => {
      const [key, pending] = batch[i]!;
      this.#known.set(key, total.queries);
      const auto = this.#autos.get(key);
      if (auto) {
        auto.lastUsedMs = Math.max(auto.lastUsedMs, total.lastUsedMs);
        return;
      }
      if (total.queries < this.policy.minQueries) return;
      const { scope, collection, field } = pending.usage;
      this.#background(key, () => this.#build(scope, collection, field, key, pending.maxIndexes));
    });
  }

  #sweep(now: number): void {
    if (now - this.#lastSweepMs < SWEEP_EVERY_MS) return;
    this.#lastSweepMs = now;
    const shared = this.#shared();
    if (shared && this.#pending.size > 0) this.#background(FLUSH_TASK, () => this.#flush());
    for (const [key, auto] of this.#autos) {
      if (!isUnused(auto.lastUsedMs, now, this.policy.unusedAfterMs)) continue;
      this.#background(key, async () => {
        if (shared) {
          // Unused here; another instance may rely on it.
          const [total] = await this.store.indexes.recordUsage!(
            [
              {
                scope: auto.scope,
                collection: auto.collection,
                field: auto.field,
                queries: 0,
              },
            ],
            this.policy.windowMs,
          );
          if (total && !isUnused(total.lastUsedMs, this.now(), this.policy.unusedAfterMs)) {
            auto.lastUsedMs = total.lastUsedMs;
            return;
          }
        }
        this.#autos.delete(key);
        await this.store.indexes.drop(auto.scope, auto.collection, auto.name);
      });
    }
  }
}
