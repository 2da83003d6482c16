/**
 * Webhook deliveries on the embedded store, into a local keep-alive receiver over real HTTP,
 * each figure beside the import rate of the same run (the machine is shared and noisy; ratios
 * hold where absolute rates move):
 * - import burst, 1 webhook: BENCH_WEBHOOK_IMPORT (10,000) documents imported in one NDJSON
 *   request; deliveries per second from the import's start to the last arrival, and that rate
 *   over the import's own documents per second (target: >= 2,000/s and >= 0.15 x);
 * - import burst, 10 webhooks: BENCH_WEBHOOK_IMPORT_10 (2,000) documents, 10 deliveries each;
 *   total deliveries per second (target: no lower than with one webhook);
 * - paced: BENCH_WEBHOOK_PACED (1,000) single POSTs at 200 writes/s; event (commit time,
 *   `X-Service-Timestamp`) to arrival, p50 and p99 (target p99 <= 100 ms);
 * - receiver down: BENCH_WEBHOOK_DOWN (20,000) deliveries answered 500, so all wait for their
 *   retry; RSS added (target < 200 MiB, a metrics scrape and a job sweep included), then the
 *   receiver answers 200 again and every delivery arrives once;
 * - writes beside webhooks: a 10,000-document import into a collection without webhooks, before
 *   any delivery exists and again once every one of those deliveries has failed its first
 *   attempt and waits for its retries (target: within 1.2 × the time).
 *
 * The receiver runs in a process of its own (bench/receiverProcess.ts): in the server's process
 * its parsing and answering of every request was counted as Folio's cost.
 *
 * `npm run bench:webhooks` runs all of it; `npm run bench` all but the receiver-down part
 * (BENCH_WEBHOOKS_BACKLOG=0), whose retries take minutes.
 */
import { performance } from 'node:perf_hooks';
import { startTestServer, type TestServer } from '../test/support/server.js';
import { type RemoteReceiver, startRemoteReceiver } from './receiverProcess.js';
import { percentile } from './stats.js';
import { sized } from './workloads/rows.js';

const IMPORT = sized(10_000, 500);
const IMPORT_10 = sized(2_000, 100);
const PACED = sized(1_000, 50);
const PACED_PER_SECOND = 200;
const DOWN = sized(20_000, 500);
const BACKLOG = process.env.BENCH_WEBHOOKS_BACKLOG !== '0';

const MiB = 2 ** 20;
/** Progress on standard error (the figures go to standard output). */
const progress = (text: string) => process.stderr.write(`[webhooks bench] ${text}\n`);

type Tenant = { project: string; key: string };

interface BurstResult {
  docs: number;
  webhooks: number;
  importDocsPerSecond: number;
  deliveriesPerSecond: number;
  ratio: number;
}

async function registerHooks(
  server: TestServer,
  project: string,
  key: string,
  collection: string,
  url: string,
  n: number,
) {
  for (let i = 0; i < n; i++) {
    const hook = await server.request('POST', `/${project}/${collection}/_webhooks`, {
      key,
      body: { url: `${url}/${collection}/${i}`, events: ['document.created'] },
    });
    if (hook.status !== 201) throw new Error(`register: ${hook.text}`);
  }
}

/** One NDJSON import of `docs` documents into `collection`; its documents per second. */
async function timedImport(
  server: TestServer,
  tenant: Tenant,
  collection: string,
  docs: number,
): Promise<number> {
  let body = '';
  for (let i = 0; i < docs; i++) body += `${JSON.stringify({ tag: collection, i, name: `item ${i}` })}\n`;
  const started = performance.now();
  const res = await fetch(`${server.url}/${tenant.project}/${collection}/_import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/x-ndjson' },
    body,
  });
  const answer = await res.text();
  if (res.status !== 200) throw new Error(`import: ${res.status} ${answer.slice(0, 200)}`);
  return docs / ((performance.now() - started) / 1000);
}

/** An import into a collection with `webhooks` webhooks; deliveries/s from its start to the last arrival. */
async function importBurst(
  server: TestServer,
  receiver: RemoteReceiver,
  tenant: Tenant,
  collection: string,
  docs: number,
  webhooks: number,
): Promise<BurstResult> {
  await registerHooks(server, tenant.project, tenant.key, collection, receiver.url, webhooks);
  receiver.arrivals.length = 0;
  const startedAt = Date.now();
  const importDocsPerSecond = await timedImport(server, tenant, collection, docs);
  await receiver.waitFor(docs * webhooks, 600_000);
  const lastArrival = receiver.arrivals.reduce((last, r) => Math.max(last, r.at), 0) - startedAt;
  const deliveriesPerSecond = (docs * webhooks) / (lastArrival / 1000);
  return {
    docs,
    webhooks,
    importDocsPerSecond,
    deliveriesPerSecond,
    ratio: deliveriesPerSecond / importDocsPerSecond,
  };
}

/**
 * Receiver down: every delivery fails its first attempt and waits for a retry; the RSS that adds,
 * an import elsewhere beside that backlog, and every delivery arriving once when it is back.
 */
async function receiverDown(
  server: TestServer,
  receiver: RemoteReceiver,
  tenant: Tenant,
  quietImport: number,
): Promise<void> {
  // Receiver down: every delivery fails its first attempt and waits for a retry. Answers are
  // counted as they come and the log of arrivals is emptied as it goes.
  await registerHooks(server, tenant.project, tenant.key, 'down', receiver.url, 1);
  await receiver.failPaths('/down/');
  let failedAnswers = 0;
  let okAnswers = 0;
  /** Deliveries answered 500 at least once: their first attempt was made. */
  const failedIds = new Set<string>();
  const okIds = new Set<string>();
  receiver.onArrivals = (batch) => {
    for (const r of batch) {
      if (!r.path.startsWith('/down/')) continue;
      if (r.status === 500) {
        failedAnswers += 1;
        failedIds.add(r.deliveryId);
      } else {
        okAnswers += 1;
        okIds.add(r.deliveryId);
      }
    }
  };
  const until = async (done: () => boolean, what: string, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  receiver.arrivals.length = 0;
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  let samples = 0;
  const sampler = setInterval(() => {
    receiver.arrivals.length = 0;
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
    if (++samples % 50 === 0)
      progress(`receiver down: ${failedAnswers} failed, ${okAnswers} ok answers so far`);
  }, 100);
  const downStarted = performance.now();
  for (let sent = 0; sent < DOWN; sent += 5_000)
    await timedImport(server, tenant, 'down', Math.min(5_000, DOWN - sent));
  // Every delivery's first attempt failed (retries of the first ones, failing too, come on
  // top: counting answers rather than deliveries stopped while first attempts were still
  // being made, and timed the import below beside those instead of beside a backlog).
  await until(() => failedIds.size >= DOWN, 'the failed first attempts', 600_000);
  const failedMs = performance.now() - downStarted;
  progress(`receiver down: ${failedAnswers - failedIds.size} retries answered 500 before the timed import`);
  // With every one of those deliveries waiting for its retries: an import elsewhere, no webhooks.
  const backlogImport = await timedImport(server, tenant, 'plain-backlog', IMPORT);
  progress(`import beside ${DOWN} deliveries pending retry: ${Math.round(backlogImport)} docs/s`);
  const metrics = await fetch(`${server.url}/metrics`, {
    headers: { authorization: 'Bearer bench-metrics-token' },
  });
  await metrics.text();
  await server.running.services.store
    .agendaBackend()
    .repository.removeCompletedBefore('webhook-delivery', Date.now());
  rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  const added = (rssPeak - rssBefore) / MiB;
  progress(
    `receiver down: ${DOWN} failed first attempts in ${(failedMs / 1000).toFixed(1)} s, ${added.toFixed(0)} MiB added`,
  );
  const backStarted = performance.now();
  await receiver.failPaths(null);
  await until(() => okIds.size >= DOWN, 'every delivery once the receiver is back', 600_000);
  const recoveredMs = performance.now() - backStarted;
  // A little longer: a second success of any delivery would show here.
  await new Promise((r) => setTimeout(r, 1_000));
  clearInterval(sampler);
  // The same import once more, the backlog gone: a baseline as warm as the backlog import (the
  // first one runs before the process has warmed up, which favours the later imports).
  const drainedImport = await timedImport(server, tenant, 'plain-drained', IMPORT);
  progress(`import after the backlog drained: ${Math.round(drainedImport)} docs/s`);
  process.stdout.write(
    `- receiver down: ${DOWN.toLocaleString('en')} deliveries pending retry added ${added.toFixed(0)} MiB RSS (peak, scrape and sweep included); ` +
      `back up: all ${okIds.size === DOWN ? 'arrived once' : `NOT arrived once (${okIds.size} distinct of ${okAnswers})`} in ${(recoveredMs / 1000).toFixed(1)} s\n` +
      `- an import of ${IMPORT.toLocaleString('en')} beside them: ${Math.round(backlogImport).toLocaleString('en')} docs/s (${(quietImport / backlogImport).toFixed(2)} × the time without webhooks); ` +
      `again once they were delivered ${Math.round(drainedImport).toLocaleString('en')} (the backlog import took ${(drainedImport / backlogImport).toFixed(2)} × its time)\n`,
  );
}

export async function runWebhookBench(): Promise<void> {
  const receiver = await startRemoteReceiver();
  const server = await startTestServer({
    contract: false,
    config: {
      webhooks: { allowPrivateTargets: true },
      metrics: { enabled: true, token: 'bench-metrics-token' },
    },
  });
  try {
    const tenant = await server.tenant({ plan: 'team' });
    // The same import into a collection without webhooks, before any delivery exists: what a
    // write costs when webhooks cost it nothing (the issue: within 1.2 × of it, whatever backlog).
    await timedImport(server, tenant, 'warm', 1_000);
    const quietImport = await timedImport(server, tenant, 'plain-quiet', IMPORT);
    const one = await importBurst(server, receiver, tenant, 'burst1', IMPORT, 1);
    const ten = await importBurst(server, receiver, tenant, 'burst10', IMPORT_10, 10);

    // Paced single writes over HTTP, on a schedule (not one after the other's answer).
    await registerHooks(server, tenant.project, tenant.key, 'paced', receiver.url, 1);
    receiver.arrivals.length = 0;
    const t0 = performance.now();
    const writes: Array<Promise<void>> = [];
    for (let i = 0; i < PACED; i++) {
      const wait = t0 + (i * 1000) / PACED_PER_SECOND - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      // Sent on schedule, not after the previous answer: the rate holds whatever one write takes.
      writes.push(
        server
          .request('POST', `/${tenant.project}/paced`, { key: tenant.key, body: { paced: i } })
          .then((res) => {
            if (res.status !== 201) throw new Error(`write: ${res.status}`);
          }),
      );
    }
    await Promise.all(writes);
    const pacedRate = PACED / ((performance.now() - t0) / 1000);
    await receiver.waitFor(PACED, 60_000);
    const paced = receiver.arrivals.map((r) => r.at - r.eventAt).sort((a, b) => a - b);
    progress(`paced: p99 ${percentile(paced, 99)} ms`);

    const out = process.stdout;
    for (const r of [one, ten]) {
      out.write(
        `- import of ${r.docs.toLocaleString('en')} docs (one NDJSON request), ${r.webhooks} webhook(s): import ${Math.round(r.importDocsPerSecond).toLocaleString('en')} docs/s; ` +
          `${Math.round(r.deliveriesPerSecond).toLocaleString('en')} deliveries/s from import start to last arrival; ` +
          `${r.ratio.toFixed(2)} × the import's docs/s\n`,
      );
    }
    out.write(
      `- the same import without webhooks: ${Math.round(quietImport).toLocaleString('en')} docs/s (1 webhook: ${(quietImport / one.importDocsPerSecond).toFixed(2)} × its time, 10 webhooks: ${(quietImport / ten.importDocsPerSecond).toFixed(2)} ×)\n` +
        `- paced (${PACED} writes at ${Math.round(pacedRate)}/s): event-to-arrival p50 ${percentile(paced, 50)} ms, ` +
        `p99 ${percentile(paced, 99)} ms, max ${paced.at(-1)} ms\n`,
    );
    if (BACKLOG) await receiverDown(server, receiver, tenant, quietImport);
    if (process.env.BENCH_JSON) {
      const figures = { deliveriesPerSecond: one.deliveriesPerSecond, pacedP99: percentile(paced, 99) };
      out.write(`${JSON.stringify(figures)}\n`);
    }
  } finally {
    await server.close();
    await receiver.close();
  }
}

if (process.argv[1]?.endsWith('webhooks.ts')) await runWebhookBench();
