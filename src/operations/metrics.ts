/**
 * Folio's Prometheus metrics, one registry per server. Labels are bounded sets chosen by Folio
 * (route templates, status codes, operation names, outcomes): never a raw path, key, project,
 * collection or document id, so a tenant's identifiers never reach a scrape and the series
 * count stays fixed however many tenants there are.
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { LOG_MAX_WAITING_BYTES } from '../logDestination.js';
import type { FeedStats } from '../store/mongodb/changes/changes.js';
import { LatencyHistogram } from './latencyHistogram.js';

/** What the metrics read at scrape time from parts that already count themselves. */
export interface MetricSources {
  openStreams(): number;
  /** Webhook delivery jobs by state (`queued`, `scheduled`, `running`, ...). */
  deliveryJobs(): Promise<ReadonlyMap<string, number>>;
  /** The embedded store's background WAL checkpoints; null on MongoDB. */
  walCheckpoints(): WalCheckpointCounts | null;
  /** The embedded store's group commits; null on MongoDB. */
  commitGroups(): CommitGroupCounts | null;
  /** The MongoDB change feed's faults and resumes; null (or absent) on the embedded store. */
  changeFeed?(): ChangeFeedCounts | null;
  /** Bytes of log lines dropped because standard output was not taking them (logDestination.ts). */
  droppedLogBytes?(): number;
}

/** As the MongoDB change feed counts them. */
export type ChangeFeedCounts = FeedStats;

/** As the embedded store counts them (src/store/embedded/documents/groupCommit.ts). */
export interface CommitGroupCounts {
  groups: number;
  /** The groups committed with their sync (the others were deferred commits). */
  durable: number;
}

/** As the embedded store counts them (src/store/embedded/database/checkpoints.ts). */
export interface WalCheckpointCounts {
  runs: number;
  failures: number;
  totalMs: number;
  walFrames: number;
}

export type DeliveryOutcome = 'succeeded' | 'retrying' | 'failed';

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * A number read at scrape time from a part that already counts itself: a total (a counter) or
 * a level (a gauge). `read` answers undefined when that part is absent (the other store's).
 */
interface ScrapedMetric {
  kind: 'total' | 'level';
  name: string;
  help: string;
  read(sources: MetricSources): number | undefined;
}

/** The unlabelled scrape-time metrics, in the order a scrape lists them. */
const SCRAPED: readonly ScrapedMetric[] = [
  {
    kind: 'level',
    name: 'folio_sse_streams_open',
    help: 'Change streams (SSE) open in this instance.',
    read: (s) => s.openStreams(),
  },
  {
    kind: 'total',
    name: 'folio_sqlite_wal_checkpoints_total',
    help: 'Embedded store: WAL checkpoints the background worker ran that found new frames.',
    read: (s) => s.walCheckpoints()?.runs,
  },
  {
    kind: 'total',
    name: 'folio_sqlite_wal_checkpoint_failures_total',
    help: 'Embedded store: background WAL checkpoints that failed (the next one retries).',
    read: (s) => s.walCheckpoints()?.failures,
  },
  {
    kind: 'total',
    name: 'folio_sqlite_wal_checkpoint_seconds_total',
    help: 'Embedded store: time the background worker spent checkpointing.',
    read: (s) => {
      const counts = s.walCheckpoints();
      return counts ? counts.totalMs / 1000 : undefined;
    },
  },
  {
    kind: 'total',
    name: 'folio_log_dropped_bytes_total',
    help: `Log lines (the access log included) dropped because ${LOG_MAX_WAITING_BYTES / 2 ** 20} MiB were already waiting for standard output.`,
    read: (s) => s.droppedLogBytes?.(),
  },
  {
    kind: 'total',
    name: 'folio_sqlite_commit_groups_total',
    help: 'Embedded store: write transactions committed (each holds the commits that arrived together).',
    read: (s) => s.commitGroups()?.groups,
  },
  {
    kind: 'total',
    name: 'folio_sqlite_commit_syncs_total',
    help: 'Embedded store: of those, the ones that waited for the disk (a bulk request syncs once).',
    read: (s) => s.commitGroups()?.durable,
  },
  {
    kind: 'total',
    name: 'folio_mongodb_change_events_skipped_total',
    help: 'MongoDB: change events stepped over, over 16 MB on a server that cannot split them (each also logged).',
    read: (s) => s.changeFeed?.()?.skippedEvents,
  },
  {
    kind: 'total',
    name: 'folio_mongodb_change_events_joined_total',
    help: 'MongoDB: change events over 16 MB the server split and the feed joined again.',
    read: (s) => s.changeFeed?.()?.joinedEvents,
  },
  {
    kind: 'total',
    name: 'folio_mongodb_change_events_without_image_total',
    help: 'MongoDB: updates and deletes skipped because their document image was missing (pre-images expired).',
    read: (s) => s.changeFeed?.()?.eventsWithoutImage,
  },
  {
    kind: 'total',
    name: 'folio_mongodb_change_feed_failures_total',
    help: 'MongoDB: times the shared change stream stopped on an error reopening cannot clear (instance not ready meanwhile).',
    read: (s) => s.changeFeed?.()?.sourceFailures,
  },
  {
    kind: 'total',
    name: 'folio_mongodb_change_ready_timeouts_total',
    help: 'MongoDB: change subscriptions ended because they were not ready within mongodb.streamReadyTimeoutMs.',
    read: (s) => s.changeFeed?.()?.readyTimeouts,
  },
  {
    kind: 'level',
    name: 'folio_sqlite_wal_frames',
    help: 'Embedded store: frames in the WAL at the last background checkpoint.',
    read: (s) => s.walCheckpoints()?.walFrames,
  },
];

export class FolioMetrics {
  readonly registry = new Registry();
  /** Per request; `folio_http_requests_total` is read from its series at scrape time. */
  readonly httpDuration: LatencyHistogram<'method' | 'route' | 'status'>;
  readonly storeDuration: LatencyHistogram<'operation' | 'outcome'>;
  readonly deliveryAttempts: Counter<'outcome'>;
  readonly rateLimitRejections: Counter<'reason'>;
  readonly schemaViolations: Counter<'mode'>;
  #sources: MetricSources | null = null;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    // The two histograms are observed several times a request: latencyHistogram.ts says why
    // they are not prom-client's own.
    this.httpDuration = new LatencyHistogram({
      name: 'folio_http_request_duration_seconds',
      help: 'Time from request to response, by route template and status (a stream: its whole life).',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registry: this.registry,
    });
    this.#requestTotals();
    this.storeDuration = new LatencyHistogram({
      name: 'folio_store_operation_duration_seconds',
      help: 'Time of each storage operation, by repository method and outcome (ok or error).',
      labelNames: ['operation', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registry: this.registry,
    });
    this.deliveryAttempts = new Counter({
      name: 'folio_webhook_delivery_attempts_total',
      help: 'Webhook delivery attempts by outcome: succeeded, retrying (failed, retry owed), failed (no retry left).',
      labelNames: ['outcome'],
      registers,
    });
    this.rateLimitRejections = new Counter({
      name: 'folio_rate_limit_rejections_total',
      help: 'Requests refused with 429, by reason (rate_limited, too_many_streams).',
      labelNames: ['reason'],
      registers,
    });
    this.schemaViolations = new Counter({
      name: 'folio_schema_violations_total',
      help: 'Writes whose document failed its collection schema, by mode: enforce (refused, 422) or warn (let through).',
      labelNames: ['mode'],
      registers,
    });
    this.#deliveryJobs();
    for (const metric of SCRAPED) this.#scraped(metric);
    this.#changeResumes();
  }

  /** Connect the scrape-time sources once the services exist. */
  attach(sources: MetricSources): void {
    this.#sources = sources;
  }

  contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** `folio_http_requests_total`, read from the duration histogram's series. */
  #requestTotals(): void {
    const httpDuration = this.httpDuration;
    new Counter({
      name: 'folio_http_requests_total',
      help: 'HTTP requests answered, by route template and status.',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const series of httpDuration.allSeries()) this.inc(series.labels, series.count);
      },
    });
  }

  #deliveryJobs(): void {
    const sources = () => this.#sources;
    new Gauge({
      name: 'folio_webhook_jobs',
      help: 'Webhook delivery jobs in the job store, by state (queued: due and waiting; scheduled: retries owed).',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        const jobs = await sources()?.deliveryJobs();
        this.reset();
        for (const [state, count] of jobs ?? []) this.set({ state }, count);
      },
    });
  }

  #changeResumes(): void {
    const sources = () => this.#sources;
    new Counter({
      name: 'folio_mongodb_change_resumes_total',
      help: 'MongoDB: stream resumes by how they were served: ring (memory), catch_up (own stream), refused (no catch-up slot in time).',
      labelNames: ['source'],
      registers: [this.registry],
      collect() {
        this.reset();
        const counts = sources()?.changeFeed?.();
        if (!counts) return;
        this.inc({ source: 'ring' }, counts.ringResumes);
        this.inc({ source: 'catch_up' }, counts.catchUpResumes);
        this.inc({ source: 'refused' }, counts.catchUpRefused);
      },
    });
  }

  /** A total counts from 0 each scrape; a level reads 0 while its part is absent. */
  #scraped({ kind, name, help, read }: ScrapedMetric): void {
    const value = () => {
      const sources = this.#sources;
      return sources ? read(sources) : undefined;
    };
    if (kind === 'level') {
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(value() ?? 0);
        },
      });
      return;
    }
    new Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.reset();
        const counted = value();
        if (counted !== undefined) this.inc(counted);
      },
    });
  }
}
