/**
 * A job runner that runs webhook deliveries through the services, as the server wires it: for
 * the suites that drive the dispatcher and the runner without the HTTP API.
 */
import type { Logger } from 'pino';
import type { Config } from '../../src/config/schema.js';
import { JobRunner, type JobRunnerOptions } from '../../src/jobs/jobRunner.js';
import { createServices, type Services } from '../../src/services/index.js';
import type { Store } from '../../src/store/port.js';

/** Started on `store`; `options` override the suites' usual quick polling and retries. */
export async function startDeliveryRunner(
  store: Store,
  config: Config,
  logger: Logger,
  options: Partial<JobRunnerOptions> = {},
): Promise<{ jobs: JobRunner; services: Services }> {
  const services = createServices(store, config, logger);
  const jobs = new JobRunner(
    store,
    {
      pollMs: 40,
      concurrency: 10,
      attemptTimeoutMs: 2000,
      errorRetryMs: 200,
      keepFinishedMs: 60_000,
      ...options,
    },
    logger,
  );
  jobs.handleDeliveries((task, signal) => services.deliveries.run(task, signal));
  await jobs.start();
  return { jobs, services };
}
