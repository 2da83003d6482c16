/**
 * Folio's Prometheus metrics, one registry per server. Labels are bounded sets chosen by Folio
 * (route templates, status codes, operation names, outcomes): never a raw path, key, project,
 * collection or document id, so a tenant's identifiers never reach a scrape and the series
 * count stays fixed however many tenants there are.
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { LOG_MAX_WAITING_BYTES } from '../logDestination.js';
import type { FeedStats } from '../store/mongodb/changes.js';
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

/** As the embedded store counts them (src/store/embedded/groupCommit.ts). */
export interface CommitGroupCounts {
  groups: number;
  /** The groups committed with their sync (the others were deferred commits). */
  durable: number;
}

/** As the embedded store counts them (src/store/embedded/checkpoints.ts). */
export interface WalCheckpointCounts {
  runs: number;
  failures: number;
  totalMs: number;
  walFrames: number;
}

export type DeliveryOutcome = 'succeeded' | 'retrying' | 'failed';

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

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
    const httpDuration = this.httpDuration;
    new Counter({
      name: 'folio_http_requests_total',
      help: 'HTTP requests answered, by route template and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
      collect() {
        this.reset();
        for (const series of httpDuration.allSeries()) this.inc(series.labels, series.count);
      },
    });
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
    const sources = () => this.#sources;
    new Gauge({
      name: 'folio_sse_streams_open',
      help: 'Change streams (SSE) open in this instance.',
      registers,
      collect() {
        this.set(sources()?.openStreams() ?? 0);
      },
    });
    new Gauge({
      name: 'folio_webhook_jobs',
      help: 'Webhook delivery jobs in the job store, by state (queued: due and waiting; scheduled: retries owed).',
      labelNames: ['state'],
      registers,
      async collect() {
        const jobs = await sources()?.deliveryJobs();
        this.reset();
        for (const [state, count] of jobs ?? []) this.set({ state }, count);
      },
    });
    // A total the store keeps, read at scrape time.
    const total = <T>(source: () => T | null, name: string, help: string, read: (counts: T) => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          const counts = source();
          if (counts) this.inc(read(counts));
        },
      });
    const checkpoints = () => sources()?.walCheckpoints() ?? null;
    const counted = (name: string, help: string, read: (counts: WalCheckpointCounts) => number) =>
      total(checkpoints, name, help, read);
    counted(
      'folio_sqlite_wal_checkpoints_total',
      'Embedded store: WAL checkpoints the background worker ran that found new frames.',
      (c) => c.runs,
    );
    counted(
      'folio_sqlite_wal_checkpoint_failures_total',
      'Embedded store: background WAL checkpoints that failed (the next one retries).',
      (c) => c.failures,
    );
    counted(
      'folio_sqlite_wal_checkpoint_seconds_total',
      'Embedded store: time the background worker spent checkpointing.',
      (c) => c.totalMs / 1000,
    );
    total(
      () => sources()?.droppedLogBytes?.() ?? null,
      'folio_log_dropped_bytes_total',
      `Log lines (the access log included) dropped because ${LOG_MAX_WAITING_BYTES / 2 ** 20} MiB were already waiting for standard output.`,
      (bytes) => bytes,
    );
    const groups = () => sources()?.commitGroups() ?? null;
    total(
      groups,
      'folio_sqlite_commit_groups_total',
      'Embedded store: write transactions committed (each holds the commits that arrived together).',
      (c) => c.groups,
    );
    total(
      groups,
      'folio_sqlite_commit_syncs_total',
      'Embedded store: of those, the ones that waited for the disk (a bulk request syncs once).',
      (c) => c.durable,
    );
    const feed = () => sources()?.changeFeed?.() ?? null;
    const feedCounted = (name: string, help: string, read: (counts: ChangeFeedCounts) => number) =>
      total(feed, name, help, read);
    feedCounted(
      'folio_mongodb_change_events_skipped_total',
      'MongoDB: change events stepped over, over 16 MB on a server that cannot split them (each also logged).',
      (c) => c.skippedEvents,
    );
    feedCounted(
      'folio_mongodb_change_events_joined_total',
      'MongoDB: change events over 16 MB the server split and the feed joined again.',
      (c) => c.joinedEvents,
    );
    feedCounted(
      'folio_mongodb_change_events_without_image_total',
      'MongoDB: updates and deletes skipped because their document image was missing (pre-images expired).',
      (c) => c.eventsWithoutImage,
    );
    feedCounted(
      'folio_mongodb_change_feed_failures_total',
      'MongoDB: times the shared change stream stopped on an error reopening cannot clear (instance not ready meanwhile).',
      (c) => c.sourceFailures,
    );
    new Counter({
      name: 'folio_mongodb_change_resumes_total',
      help: 'MongoDB: stream resumes by how they were served: ring (memory), catch_up (own stream), refused (no catch-up slot in time).',
      labelNames: ['source'],
      registers,
      collect() {
        this.reset();
        const counts = feed();
        if (!counts) return;
        this.inc({ source: 'ring' }, counts.ringResumes);
        this.inc({ source: 'catch_up' }, counts.catchUpResumes);
        this.inc({ source: 'refused' }, counts.catchUpRefused);
      },
    });
    feedCounted(
      'folio_mongodb_change_ready_timeouts_total',
      'MongoDB: change subscriptions ended because they were not ready within mongodb.streamReadyTimeoutMs.',
      (c) => c.readyTimeouts,
    );
    new Gauge({
      name: 'folio_sqlite_wal_frames',
      help: 'Embedded store: frames in the WAL at the last background checkpoint.',
      registers,
      collect() {
        this.set(checkpoints()?.walFrames ?? 0);
      },
    });
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
}
