/** Start and stop the whole service: store, services, HTTP server. */
import { createServer, type RequestListener, type Server, type ServerOptions } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type DestinationStream, type Logger, pino } from 'pino';
import type { Config } from './config/schema.js';
import { createApp } from './http/app.js';
import { answerClientError } from './http/clientErrors.js';
import { serverTimeouts } from './http/serverTimeouts.js';
import { JobRunner } from './jobs/jobRunner.js';
import { logDestination } from './logDestination.js';
import { FolioMetrics } from './operations/metrics.js';
import { Readiness } from './operations/readiness.js';
import { timedStore } from './operations/timedStore.js';
import { type BootstrapResult, bootstrapIfEmpty } from './services/bootstrap.js';
import { createServices, type Services } from './services/index.js';
import { WebhookDispatcher } from './services/webhooks/dispatcher.js';
import { partitions } from './services/webhooks/partitions.js';
import type { HostLookup } from './services/webhooks/targets.js';
import { EmbeddedStore } from './store/embedded/index.js';
import type { MongoChangeFeed } from './store/mongodb/changes/changes.js';
import { type OpenedStore, openStore } from './store/open.js';
import type { Store } from './store/port.js';

export interface RunningServer {
  url: string;
  port: number;
  services: Services;
  /** Reads the change feed for webhooks (tests look at its lease): the first partition's. */
  dispatcher: WebhookDispatcher;
  storeDescription: string;
  /** What `GET /readyz` reports (tests read its phase). */
  readiness: Readiness;
  /** Set when this start created the dev account and key. */
  bootstrap: BootstrapResult | null;
  /** The HTTP server (tests watch its responses against the OpenAPI document). */
  httpServer: Server;
  close(): Promise<void>;
}

/**
 * `logStream` receives every log line, the access log's included (default: standard output,
 * written asynchronously); tests pass their own to read them.
 */
export async function startServer(
  config: Config,
  logStream?: DestinationStream,
  /** Tests only: how webhook host names resolve (default: the system resolver). */
  options: { lookup?: HostLookup } = {},
): Promise<RunningServer> {
  const { logger, stream, droppedLogBytes } = serverLogging(config.logLevel, logStream);
  const opened = await openStore(config, { warn: (message) => logger.warn(message) });
  const metrics = config.metrics.enabled ? new FolioMetrics() : null;
  const store = metrics ? timedStore(opened.store, metrics) : opened.store;
  const services = createServices(store, config, logger, Date.now, options.lookup);
  const spools = await services.imports.removeLeftoverSpools();
  if (spools.length > 0) logger.info({ spools }, 'removed import spools left by a stopped process');
  const background = backgroundWork(config, opened, store, services, logger);
  const readiness = readinessOf(opened, store, background);
  if (metrics) attachMetrics(metrics, opened, services, background.jobs, droppedLogBytes);
  try {
    await background.start();
    const app = createApp(
      services,
      logger,
      { readiness, metrics, metricsToken: config.metrics.token },
      stream,
    );
    const server = await listen(app.callback(), config.port, config.host, serverTimeouts(config.http));
    const bootstrap = await bootstrapOrClose(config, opened, services, server);
    readiness.markRunning();
    const { port } = server.address() as AddressInfo;
    const host = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
    return {
      url: `http://${host}:${port}`,
      port,
      services,
      dispatcher: background.dispatchers[0] as WebhookDispatcher,
      readiness,
      storeDescription: opened.description,
      bootstrap,
      httpServer: server,
      close: closer(server, readiness, services, background, opened),
    };
  } catch (err) {
    await background.stop();
    await opened.stop();
    throw err;
  }
}

/** What runs beside the HTTP server: Agenda's delivery jobs, the webhook dispatchers, the trash sweeper. */
interface BackgroundWork {
  jobs: JobRunner;
  dispatchers: WebhookDispatcher[];
  start(): Promise<void>;
  /** The dispatchers stop before Agenda (they enqueue), Agenda before the delivery client. */
  stop(): Promise<void>;
}

function backgroundWork(
  config: Config,
  opened: OpenedStore,
  store: Store,
  services: Services,
  logger: Logger,
): BackgroundWork {
  const jobs = new JobRunner(
    store,
    {
      pollMs: config.webhooks.pollMs,
      concurrency: config.webhooks.concurrency,
      attemptTimeoutMs: config.webhooks.timeoutMs,
      errorRetryMs: Math.max(1_000, config.webhooks.backoffBaseMs),
      keepFinishedMs: config.events.retentionMs,
      // Retries wait for a pause in document writes (src/jobs/writeGate.ts).
      writeActivity: embeddedDocumentsWritten(opened.store),
    },
    logger,
  );
  jobs.handleDeliveries((task, signal) => services.deliveries.run(task, signal));
  // One dispatcher per partition of the feed; each takes its partition's lease when free
  // (partitions.ts), at once while this instance holds fewer than its share.
  const held = { count: 0, share: config.webhooks.partitionsPerInstance };
  const dispatchers = partitions(config.webhooks.dispatchPartitions).map(
    (partition) =>
      new WebhookDispatcher(
        store,
        services.deliveries,
        jobs,
        {
          leaseMs: config.webhooks.dispatcherLeaseMs,
          saveEveryMs: 200,
          concurrency: config.webhooks.dispatchConcurrency,
          partition,
          held,
        },
        logger,
      ),
  );
  return {
    jobs,
    dispatchers,
    async start() {
      await jobs.start();
      for (const d of dispatchers) d.start();
      services.trashSweeper.start();
    },
    async stop() {
      await services.trashSweeper.stop();
      await Promise.all(dispatchers.map((d) => d.stop()));
      await jobs.stop();
      await services.webhookSender.close();
    },
  };
}

/**
 * What `GET /readyz` checks. The MongoDB change feed says when it cannot read (an error
 * reopening cannot clear): the instance is then not ready, while /healthz (the store answers)
 * stays up.
 */
function readinessOf(opened: OpenedStore, store: Store, background: BackgroundWork): Readiness {
  const feed = changeFeedOf(opened);
  return new Readiness({
    store: () => store.ping().then(() => !feed.failure),
    jobs: () => background.jobs.running,
    webhookDispatcher: () => background.dispatchers.every((d) => d.running),
  });
}

function changeFeedOf(opened: OpenedStore): Partial<Pick<MongoChangeFeed, 'failure' | 'stats'>> {
  return opened.store.changes as Partial<Pick<MongoChangeFeed, 'failure' | 'stats'>>;
}

/** The gauges `GET /metrics` reads from the running parts, and the counters they feed. */
function attachMetrics(
  metrics: FolioMetrics,
  opened: OpenedStore,
  services: Services,
  jobs: JobRunner,
  droppedLogBytes: () => number,
): void {
  const embedded = opened.store instanceof EmbeddedStore ? opened.store : null;
  metrics.attach({
    openStreams: () => services.streams.openCount,
    deliveryJobs: () => jobs.deliveryJobs(),
    walCheckpoints: () => embedded?.checkpointStats ?? null,
    commitGroups: () => embedded?.documents.commitGroups ?? null,
    changeFeed: () => changeFeedOf(opened).stats ?? null,
    droppedLogBytes,
  });
  const outcomes = { succeeded: 'succeeded', pending: 'retrying', failed: 'failed' } as const;
  services.deliveries.onAttempt((status) => metrics.deliveryAttempts.inc({ outcome: outcomes[status] }));
  services.schemas.onViolation((mode) => metrics.schemaViolations.inc({ mode }));
}

/**
 * The dev account, created only once the server listens: a start that fails before (a taken
 * port, a bad HOST) leaves the store empty, so the next start creates it and prints its secrets,
 * which are never stored to be shown later. If creating it fails, the server closes.
 */
async function bootstrapOrClose(
  config: Config,
  opened: OpenedStore,
  services: Services,
  server: Server,
): Promise<BootstrapResult | null> {
  if (!config.bootstrap || opened.store.kind !== 'embedded') return null;
  try {
    return await bootstrapIfEmpty(services);
  } catch (err) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw err;
  }
}

/** `close()` of a running server: once, however often called. */
function closer(
  server: Server,
  readiness: Readiness,
  services: Services,
  background: BackgroundWork,
  opened: OpenedStore,
): () => Promise<void> {
  let closing: Promise<void> | null = null;
  return () => {
    closing ??= (async () => {
      // Load balancers see 503 on /readyz from here on, while in-flight requests finish.
      readiness.markStopping();
      // Stop accepting, let in-flight requests finish, then release the store. Open change
      // streams never finish by themselves: they get a final event and end now.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await services.streams.shutdown();
      // The streams' connections, kept alive once their responses ended: close them now
      // rather than after the keep-alive timeout.
      server.closeIdleConnections();
      await closed;
      await background.stop();
      await opened.stop();
    })();
    return closing;
  };
}

/**
 * The logger and the stream it writes to, which the access log shares: standard output in
 * batches (src/logDestination.ts) unless `logStream` is given.
 */
function serverLogging(
  level: Config['logLevel'],
  logStream: DestinationStream | undefined,
): { logger: Logger; stream: DestinationStream | null; droppedLogBytes: () => number } {
  if (level === 'silent') return { logger: pino({ level }), stream: null, droppedLogBytes: () => 0 };
  if (logStream) return { logger: pino({ level }, logStream), stream: logStream, droppedLogBytes: () => 0 };
  const { stream, droppedBytes } = logDestination();
  return { logger: pino({ level }, stream), stream, droppedLogBytes: droppedBytes };
}

function listen(
  handler: RequestListener,
  port: number,
  host: string,
  options: ServerOptions,
): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const server = createServer(options, handler);
    // Node's parser and timeout errors answered as JSON like every other error.
    server.on('clientError', answerClientError);
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** Documents written on the embedded store (the retries' write gate); none elsewhere. */
function embeddedDocumentsWritten(store: unknown): (() => number) | undefined {
  if (!(store instanceof EmbeddedStore)) return undefined;
  return () => store.documents.documentsWritten;
}
