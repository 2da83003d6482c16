/**
 * Folio's hot-path histogram (src/operations/latencyHistogram.ts) against prom-client's own
 * `Histogram`: fed the same observations, the scrape text is the same, byte for byte, bucket
 * bounds included (a value equal to a bound counts in it), whatever the values and labels.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { LatencyHistogram } from '../../src/operations/latencyHistogram.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.1, 1, 10];
const LABELS = ['method', 'route'] as const;
type Labels = Record<(typeof LABELS)[number], string>;

/** Both histograms, each alone in a registry, fed `observations`; their scrape texts. */
async function bothTexts(observations: ReadonlyArray<[Labels, number]>): Promise<[string, string]> {
  const ours = new Registry();
  const theirs = new Registry();
  const config = { name: 'h_seconds', help: 'A "help" text\\ with\nescapes.', buckets: BUCKETS };
  const fast = new LatencyHistogram({ ...config, labelNames: LABELS, registry: ours });
  const reference = new Histogram({ ...config, labelNames: [...LABELS], registers: [theirs] });
  for (const [labels, seconds] of observations) {
    fast.series(labels).observe(seconds);
    reference.observe(labels, seconds);
  }
  return [await ours.metrics(), await theirs.metrics()];
}

describe('LatencyHistogram: the same scrape as prom-client’s Histogram', () => {
  it('counts a value equal to a bound in that bucket, and one just above it in the next', async () => {
    const labels = { method: 'GET', route: '/:ns/:collection/:id' };
    const observations: Array<[Labels, number]> = [];
    for (const bound of BUCKETS) observations.push([labels, bound], [labels, bound + 1e-9]);
    observations.push([labels, 0], [labels, 11]);
    const [ours, theirs] = await bothTexts(observations);
    expect(ours).to.equal(theirs);
    // And not trivially: the text holds each bound's cumulative count.
    expect(ours).to.include('h_seconds_bucket{le="0.0005",method="GET",route="/:ns/:collection/:id"} 2\n');
    expect(ours).to.include('h_seconds_bucket{le="0.001",method="GET",route="/:ns/:collection/:id"} 4\n');
    expect(ours).to.include('h_seconds_bucket{le="10",method="GET",route="/:ns/:collection/:id"} 16\n');
    expect(ours).to.include('h_seconds_bucket{le="+Inf",method="GET",route="/:ns/:collection/:id"} 18\n');
    expect(ours).to.include('h_seconds_count{method="GET",route="/:ns/:collection/:id"} 18\n');
  });

  it('matches for any observations over any label values (escaping included)', async () => {
    const label = fc.oneof(fc.constantFrom('GET', 'POST', '/:ns'), fc.string({ maxLength: 6 }));
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.tuple(
            fc.record({ method: label, route: label }),
            fc.oneof(fc.constantFrom(...BUCKETS), fc.double({ min: 0, max: 20, noNaN: true })),
          ),
          { maxLength: 40 },
        ),
        async (observations) => {
          const [ours, theirs] = await bothTexts(observations);
          expect(ours).to.equal(theirs);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('matches in the registry’s JSON form too', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const fast = new LatencyHistogram({
      name: 'j',
      help: 'j',
      labelNames: ['op'],
      buckets: BUCKETS,
      registry: ours,
    });
    const histogram = new Histogram({
      name: 'j',
      help: 'j',
      labelNames: ['op'],
      buckets: BUCKETS,
      registers: [theirs],
    });
    for (const seconds of [0.0002, 0.003, 0.5]) {
      fast.series({ op: 'documents.get' }).observe(seconds);
      histogram.observe({ op: 'documents.get' }, seconds);
    }
    // prom-client adds an empty `exemplar` to each value (exemplars are off): nothing to match.
    const reference = (await theirs.getMetricsAsJSON()).map((metric) => ({
      ...metric,
      values: metric.values.map((value) => {
        const { exemplar: _none, ...rest } = value as typeof value & { exemplar?: unknown };
        return rest;
      }),
    }));
    expect(await ours.getMetricsAsJSON()).to.deep.equal(reference);
  });

  it('keeps one series per label set, made once', () => {
    const fast = new LatencyHistogram({
      name: 's',
      help: 's',
      labelNames: LABELS,
      buckets: BUCKETS,
      registry: new Registry(),
    });
    const a = fast.series({ method: 'GET', route: '/a' });
    expect(fast.series({ method: 'GET', route: '/a' })).to.equal(a);
    // Values that would join to the same text with a plain separator stay apart.
    expect(fast.series({ method: 'GET/', route: 'a' })).not.to.equal(a);
    expect([...fast.allSeries()]).to.have.length(2);
  });

  it('ignores a value that is not a finite number instead of throwing on the request’s path', async () => {
    const registry = new Registry();
    const fast = new LatencyHistogram({ name: 'n', help: 'n', labelNames: [], buckets: BUCKETS, registry });
    const series = fast.series({});
    series.observe(Number.NaN);
    series.observe(Number.POSITIVE_INFINITY);
    series.observe(0.002);
    expect(series.count).to.equal(1);
    expect(series.sum).to.equal(0.002);
  });

  it('refuses buckets out of order and the reserved label le', () => {
    const registry = new Registry();
    expect(
      () => new LatencyHistogram({ name: 'a', help: 'a', labelNames: [], buckets: [0.1, 0.1], registry }),
    ).to.throw(RangeError);
    expect(
      () => new LatencyHistogram({ name: 'b', help: 'b', labelNames: ['le'], buckets: [0.1], registry }),
    ).to.throw(RangeError);
  });
});
