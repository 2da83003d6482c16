/**
 * Webhook deliveries on the embedded store, into a local receiver over real HTTP:
 * - throughput: BENCH_WEBHOOK_EVENTS (2,000) documents committed at once through the port, one
 *   webhook on the collection; deliveries per second from the first commit to the last arrival;
 * - latency: BENCH_WEBHOOK_PACED (300) single POSTs over HTTP, 20 ms apart; event (commit time,
 *   `X-Service-Timestamp`) to arrival at the receiver, p50 and p99.
 *
 * Run alone with `npm run bench:webhooks`; `npm run bench` runs it after the query bench.
 */
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { startReceiver } from '../test/support/receiver.js';
import { tenantScope } from '../test/support/scope.js';
import { startTestServer } from '../test/support/server.js';
import { seedDocuments } from './seed.js';
import { percentile } from './stats.js';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 2000);
const PACED = Number(process.env.BENCH_WEBHOOK_PACED ?? 300);
/** Commits of this many events each: a burst of many small transactions. */
const BATCH = 100;

export async function runWebhookBench(): Promise<void> {
  const receiver = await startReceiver();
  const server = await startTestServer({ config: { webhooks: { allowPrivateTargets: true } } });
  try {
    const tenant = await server.tenant({ plan: 'team' });
    const { store } = server.running.services;
    const scope = await tenantScope(server, tenant);
    const hook = await server.request('POST', `/${tenant.project}/events/_webhooks`, {
      key: tenant.key,
      body: { url: `${receiver.url}/bench`, events: ['document.created'] },
    });
    if (hook.status !== 201) throw new Error(`register: ${hook.text}`);

    // Throughput: a burst of commits, then wait for every delivery.
    const started = performance.now();
    const startedAt = Date.now();
    await seedDocuments(store, scope, 'events', EVENTS, (i) => ({ i }), BATCH);
    const committedMs = performance.now() - started;
    await receiver.waitFor(EVENTS, () => true, 300_000);
    const burstMs = performance.now() - started;
    const burstLatencies = receiver.requests
      .map((r) => r.at - Date.parse(r.body.timestamp))
      .filter((ms) => ms >= 0)
      .sort((a, b) => a - b);
    const lastArrival = Math.max(...receiver.requests.map((r) => r.at)) - startedAt;

    // Latency: paced single writes over HTTP, each delivered before the system is loaded.
    receiver.requests.length = 0;
    for (let i = 0; i < PACED; i++) {
      const res = await server.request('POST', `/${tenant.project}/events`, {
        key: tenant.key,
        body: { paced: i },
      });
      if (res.status !== 201) throw new Error(`write: ${res.status}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    await receiver.waitFor(PACED, () => true, 60_000);
    const paced = receiver.requests.map((r) => r.at - Date.parse(r.body.timestamp)).sort((a, b) => a - b);

    const out = process.stdout;
    out.write(`\nWebhook deliveries: embedded store, one webhook, local receiver (HTTP/1.1 keep-alive)\n`);
    out.write(
      `burst of ${EVENTS} events: committed in ${(committedMs / 1000).toFixed(2)} s, all delivered in ${(burstMs / 1000).toFixed(2)} s ` +
        `(last arrival ${(lastArrival / 1000).toFixed(2)} s): ${Math.round(EVENTS / (burstMs / 1000))} deliveries/s; ` +
        `queueing latency p50 ${percentile(burstLatencies, 50)} ms, p99 ${percentile(burstLatencies, 99)} ms\n`,
    );
    out.write(
      `paced (${PACED} writes, 20 ms apart): event-to-delivery p50 ${percentile(paced, 50)} ms, ` +
        `p99 ${percentile(paced, 99)} ms, max ${paced.at(-1)} ms\n`,
    );
    if (process.env.BENCH_JSON) {
      out.write(
        `${JSON.stringify({
          webhooks: {
            events: EVENTS,
            deliveriesPerSecond: EVENTS / (burstMs / 1000),
            pacedP50: percentile(paced, 50),
            pacedP99: percentile(paced, 99),
          },
        })}\n`,
      );
    }
  } finally {
    await server.close();
    await receiver.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runWebhookBench();
