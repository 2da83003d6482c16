/**
 * A Prometheus histogram for the per-request hot path: an observation is a bucket search over
 * the bounds and two additions into a series resolved once, where prom-client's `observe`
 * validates the labels, hashes them into a key, turns the bucket bound into a string and
 * allocates, about half a microsecond each. A request records one of these, and one more per
 * storage call, so prom-client's cost came to several microseconds a GET.
 *
 * The histogram is still scraped through prom-client: it registers in the server's `Registry`
 * as a metric whose `get()` returns prom-client's own value shape (`_bucket` per bound with
 * `le`, cumulative, then `+Inf`, `_sum`, `_count`), so the exposition text (escaping, label
 * order, OpenMetrics) stays the library's. `test/operations/latencyHistogram.test.ts` holds
 * the text to prom-client's `Histogram` fed the same observations.
 */
import type { Registry } from 'prom-client';

/** One label set's counts. */
export class LatencySeries {
  readonly labels: Readonly<Record<string, string>>;
  readonly #bounds: readonly number[];
  /** Per bound, then one past the last bound (+Inf): not cumulative. */
  readonly #counts: Float64Array;
  #sum = 0;

  constructor(labels: Readonly<Record<string, string>>, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.#counts = new Float64Array(bounds.length + 1);
  }

  /** Record one duration in seconds; a bound is inclusive (`le`). Non-finite values are ignored. */
  observe(seconds: number): void {
    if (!Number.isFinite(seconds)) return;
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    this.#counts[i]!++;
    this.#sum += seconds;
  }

  /** Observations so far: every bucket's, +Inf's included (read at scrape time only). */
  get count(): number {
    let count = 0;
    for (const n of this.#counts) count += n;
    return count;
  }

  get sum(): number {
    return this.#sum;
  }

  /** Cumulative counts per bound, as exposed (`le`), without +Inf (which is `count`). */
  cumulative(): number[] {
    const out: number[] = [];
    let running = 0;
    for (let i = 0; i < this.#bounds.length; i++) {
      running += this.#counts[i]!;
      out.push(running);
    }
    return out;
  }
}

/**
 * prom-client's shape for one exposed value: its `Histogram` puts `le` in `labels` and the
 * series' own labels in `sharedLabels`, which the registry renders after `le`.
 */
interface ExposedValue {
  labels: Record<string, string | number>;
  sharedLabels: Readonly<Record<string, string>>;
  value: number;
  metricName: string;
}

interface Exposed<V> {
  name: string;
  help: string;
  type: string;
  values: V[];
  aggregator: string;
}

export interface LatencyHistogramOptions<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  /** Upper bounds in seconds, ascending. */
  buckets: readonly number[];
  registry: Registry;
}

export class LatencyHistogram<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #labelNames: readonly L[];
  readonly #bounds: readonly number[];
  /** By the label values, each prefixed with its length so no two label sets share a key. */
  readonly #series = new Map<string, LatencySeries>();

  constructor(options: LatencyHistogramOptions<L>) {
    const { buckets } = options;
    for (let i = 1; i < buckets.length; i++)
      if (!(buckets[i]! > buckets[i - 1]!)) throw new RangeError('buckets must be strictly ascending');
    if (options.labelNames.includes('le' as L)) throw new RangeError('le is a reserved label');
    this.name = options.name;
    this.help = options.help;
    this.#labelNames = options.labelNames;
    this.#bounds = [...buckets];
    // The registry asks only for `name`, `getForPromString()` or `get()`, and `reset()` of what
    // it holds (prom-client's registry.js).
    options.registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /**
   * The series of one label set, made on first use: resolve it once where the labels are fixed
   * (a store method, an outcome), or per observation where they are not (a route and status).
   */
  series(labels: Readonly<Record<L, string>>): LatencySeries {
    let key = '';
    for (const name of this.#labelNames) {
      const value = labels[name];
      key += `${value.length}:${value}`;
    }
    let series = this.#series.get(key);
    if (!series) {
      const own: Record<string, string> = {};
      for (const name of this.#labelNames) own[name] = labels[name];
      series = new LatencySeries(own, this.#bounds);
      this.#series.set(key, series);
    }
    return series;
  }

  /** Every series made so far (for counters read from the same observations). */
  allSeries(): IterableIterator<LatencySeries> {
    return this.#series.values();
  }

  reset(): void {
    this.#series.clear();
  }

  /** What prom-client's registry renders as text, in the order its `Histogram` gives. */
  async getForPromString(): Promise<Exposed<ExposedValue>> {
    const values: ExposedValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const series of this.#series.values()) {
      const sharedLabels = series.labels;
      const cumulative = series.cumulative();
      for (let i = 0; i < this.#bounds.length; i++)
        values.push({
          labels: { le: this.#bounds[i]! },
          sharedLabels,
          value: cumulative[i]!,
          metricName: bucket,
        });
      values.push({ labels: { le: '+Inf' }, sharedLabels, value: series.count, metricName: bucket });
      values.push({ labels: {}, sharedLabels, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The same values with each series' labels merged in (the registry's JSON form). */
  async get(): Promise<Exposed<Omit<ExposedValue, 'sharedLabels'>>> {
    const exposed = await this.getForPromString();
    return {
      ...exposed,
      values: exposed.values.map(({ labels, sharedLabels, value, metricName }) => ({
        labels: { ...labels, ...sharedLabels },
        value,
        metricName,
      })),
    };
  }
}
