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
import type { MongoChangeFeed } from './store/mongodb/changes.js';
import { openStore } from './store/open.js';

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
  // The MongoDB change feed says when it cannot read (an error reopening cannot clear): the
  // instance is then not ready, while /healthz (the store answers) stays up.
  const feed = opened.store.changes as Partial<Pick<MongoChangeFeed, 'failure' | 'stats'>>;
  const readiness = new Readiness({
    store: () => store.ping().then(() => !feed.failure),
    jobs: () => jobs.running,
    webhookDispatcher: () => dispatchers.every((d) => d.running),
  });
  if (metrics) {
    metrics.attach({
      openStreams: () => services.streams.openCount,
      deliveryJobs: () => jobs.deliveryJobs(),
      walCheckpoints: () => (opened.store instanceof EmbeddedStore ? opened.store.checkpointStats : null),
      commitGroups: () =>
        opened.store instanceof EmbeddedStore ? opened.store.documents.commitGroups : null,
      changeFeed: () => feed.stats ?? null,
      droppedLogBytes,
    });
    const outcomes = { succeeded: 'succeeded', pending: 'retrying', failed: 'failed' } as const;
    services.deliveries.onAttempt((status) => metrics.deliveryAttempts.inc({ outcome: outcomes[status] }));
    services.schemas.onViolation((mode) => metrics.schemaViolations.inc({ mode }));
  }
  // The dispatcher stops before Agenda (it enqueues), Agenda before the store closes, and the
  // delivery client after Agenda.
  const stopBackground = async () => {
    await services.trashSweeper.stop();
    await Promise.all(dispatchers.map((d) => d.stop()));
    await jobs.stop();
    await services.webhookSender.close();
  };
  try {
    await jobs.start();
    for (const d of dispatchers) d.start();
    services.trashSweeper.start();
    const app = createApp(
      services,
      logger,
      { readiness, metrics, metricsToken: config.metrics.token },
      stream,
    );
    const server = await listen(app.callback(), config.port, config.host, serverTimeouts(config.http));
    // The dev account is created only once the server listens: a start that fails before (a
    // taken port, a bad HOST) leaves the store empty, so the next start creates it and prints
    // its secrets, which are never stored to be shown later.
    let bootstrap: BootstrapResult | null = null;
    try {
      if (config.bootstrap && opened.store.kind === 'embedded') bootstrap = await bootstrapIfEmpty(services);
    } catch (err) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      throw err;
    }
    const { port } = server.address() as AddressInfo;
    readiness.markRunning();
    const host = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
    let closing: Promise<void> | null = null;
    return {
      url: `http://${host}:${port}`,
      port,
      services,
      dispatcher: dispatchers[0] as WebhookDispatcher,
      readiness,
      storeDescription: opened.description,
      bootstrap,
      httpServer: server,
      close() {
        closing ??= (async () => {
          // Load balancers see 503 on /readyz from here on, while in-flight requests finish.
          readiness.markStopping();
          // Stop accepting, let in-flight requests finish, then release the store. Open change
          // streams never finish by themselves: they get a final event and end now.
          const closed = new Promise<void>((resolve) => server.close(() => resolve()));
          server.closeIdleConnections();
          await services.streams.shutdown();
          await closed;
          await stopBackground();
          await opened.stop();
        })();
        return closing;
      },
    };
  } catch (err) {
    await stopBackground();
    await opened.stop();
    throw err;
  }
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
