/**
 * Crash: `folio serve` killed with SIGKILL under concurrent write load (single writes and bulk
 * requests, whose operations share one sync), restarted on the same
 * data directory, must hold every write it answered 2xx, at its version and with its content;
 * every document's versions are contiguous from 1; the change log holds every version once,
 * its sequence without a gap; every acknowledged write's webhook delivery arrives (at least
 * once) at a receiver that outlives the server's restarts; the SQLite file passes its integrity
 * check. Tagged @slow, so not in `npm test`: `npm run test:slow` makes 2 kills,
 * `npm run test:reliability` 20, beside the webhook kill -9 case of test/cli/webhookRecovery.test.ts.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { registerQueryFunctions } from '../../src/store/embedded/query/queryFunctions.js';
import { type FolioProcess, serveFolio, stopFolio } from '../support/folioProcess.js';
import { type Receiver, startReceiver } from '../support/receiver.js';
import type { Json } from '../support/server.js';
import { StreamClient } from '../support/sse.js';
import { eventually } from '../support/timeout.js';
import { call, processTenant } from './processTenant.js';

const KILLS = process.env.RELIABILITY_LONG === '1' ? 20 : 2;
const WRITERS = 8;

interface Acked {
  version: number;
  fields: Record<string, unknown>;
}

function userFields(document: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(document).filter(([name]) => name !== '_id' && !name.startsWith('$')),
  );
}

describe('reliability: crash under write load (kill -9, restart) @slow', () => {
  let dataDir: string;
  let server: FolioProcess | null = null;
  let receiver: Receiver;
  const env = () => ({
    FOLIO_DATA_DIR: dataDir,
    FOLIO_BOOTSTRAP: 'false',
    FOLIO_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    FOLIO_WEBHOOKS_POLL_MS: '50',
    FOLIO_WEBHOOKS_BACKOFF_BASE_MS: '200',
    FOLIO_PLANS_TEAM_STORED_VERSIONS: '100000',
    FOLIO_PLANS_TEAM_REQUESTS_PER_SECOND: '1000000',
  });

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'folio-crash-'));
    receiver = await startReceiver();
  });
  after(async () => {
    if (server) await stopFolio(server, 'SIGKILL');
    await receiver.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it(`keeps every acknowledged write across ${KILLS} kills at random moments`, async function () {
    this.timeout(60_000 + KILLS * 15_000);
    server = await serveFolio(env());
    const { key } = await processTenant(server.url, 'crash@example.test', 'crash');
    // The receiver runs in this process: it outlives every kill, so deliveries owed at a kill
    // must still reach it after the restart.
    const hook = await call(server.url, 'POST', '/crash/items/_webhooks', key, {
      url: `${receiver.url}/crash`,
      events: ['document.created', 'document.updated'],
    });
    expect(hook.status, JSON.stringify(hook.body)).to.equal(201);
    // A declared index is written with every commit, so the integrity check below covers it too.
    const index = await call(server.url, 'POST', '/crash/items/_indexes', key, { fields: [{ path: 'n' }] });
    expect(index.status, JSON.stringify(index.body)).to.equal(201);

    /** Every acknowledged write: document id → its acknowledged versions. */
    const acked = new Map<string, Acked[]>();
    const ack = (document: Record<string, unknown>) => {
      const id = String(document._id);
      const list = acked.get(id) ?? [];
      list.push({ version: Number(document.$version), fields: userFields(document) });
      acked.set(id, list);
    };
    let ackedWrites = 0;
    let bulkAcked = 0;
    let firstChangeId = '';
    // Event ids are opaque: the id of the log's first change is read from a stream opened
    // before any write, and replayed from at the end.
    const firstStream = new StreamClient(`${server.url}/crash/items/_stream`, key);
    await firstStream.opened;
    const firstChange = firstStream.next(
      ['document.created', 'document.updated', 'document.deleted'],
      30_000,
    );
    firstChange.catch(() => {});

    for (let round = 0; round < KILLS; round++) {
      const running = server as FolioProcess;
      let stop = false;
      const writesBefore = ackedWrites;
      const bulkBefore = bulkAcked;
      const writer = async (w: number) => {
        let current: string | null = null;
        for (let n = 0; !stop; n++) {
          try {
            const res: { status: number; body: Json } =
              current && n % 4 !== 0
                ? await call(
                    running.url,
                    'PATCH',
                    `/crash/items/${current}`,
                    key,
                    { [`r${round}w${w}n${n}`]: n },
                    'application/merge-patch+json',
                  )
                : await call(running.url, 'POST', '/crash/items', key, { round, writer: w, n });
            if (res.status >= 200 && res.status < 300) {
              ack(res.body);
              ackedWrites += 1;
              current = res.body._id;
            }
          } catch {
            return; // the server died under this request: its outcome is unknown, not acknowledged
          }
        }
      };
      // One more writer sends bulk requests: their operations commit without a sync each, and
      // the request's one sync must still cover every operation it answers 2xx for.
      const bulkWriter = async () => {
        for (let n = 0; !stop; n++) {
          const bodies = Array.from({ length: 5 }, (_, i) => ({ round, bulk: n, i }));
          try {
            const res = await call(running.url, 'POST', '/crash/items/_bulk', key, {
              operations: bodies.map((body) => ({ method: 'POST', body })),
            });
            if (res.status !== 207) continue;
            res.body.results.forEach((result: { ok: boolean; _id: string }, i: number) => {
              if (!result.ok) return;
              ack({ _id: result._id, $version: 1, ...bodies[i] });
              ackedWrites += 1;
              bulkAcked += 1;
            });
          } catch {
            return; // the server died under this request
          }
        }
      };
      const writers = [...Array.from({ length: WRITERS }, (_, w) => writer(w)), bulkWriter()];
      if (round === 0) {
        firstChangeId = (await firstChange).id;
        firstStream.close();
      }
      // Each round does its share of the acknowledged writes counted after the loop before the
      // random delay starts: on a loaded machine the first answers can take longer than the
      // delay, and a kill before them would leave too few writes to check.
      try {
        await eventually(async () => {
          expect(ackedWrites - writesBefore, `round ${round}: writes acknowledged`).to.be.greaterThan(10);
          expect(bulkAcked - bulkBefore, `round ${round}: bulk operations acknowledged`).to.be.greaterThan(5);
        }, 15_000);
      } catch (error) {
        stop = true;
        throw error;
      }
      await new Promise((r) => setTimeout(r, 300 + Math.floor(Math.random() * 700)));
      await stopFolio(running, 'SIGKILL');
      stop = true;
      await Promise.all(writers);
      server = await serveFolio(env());
    }
    expect(ackedWrites).to.be.greaterThan(KILLS * 10);
    expect(bulkAcked, 'bulk operations acknowledged').to.be.greaterThan(KILLS * 5);

    const url = (server as FolioProcess).url;
    const serving = server as FolioProcess;
    /** A read-back; a transport failure says whether the server was still running, and when. */
    const read = async (path: string) => {
      const started = Date.now();
      try {
        return await call(url, 'GET', path, key);
      } catch (error) {
        const cause = (error as { cause?: { code?: string } }).cause?.code ?? String(error);
        const alive = serving.child.exitCode === null && serving.child.signalCode === null;
        throw new Error(
          `GET ${path}: ${cause} after ${Date.now() - started} ms; server ${alive ? 'still running' : `gone (${serving.child.exitCode ?? serving.child.signalCode})`}`,
        );
      }
    };
    /** Every document's stored versions, 1..n. */
    const stored = new Map<string, number>();
    for (const [id, versions] of acked) {
      const history = await read(`/crash/items/${id}/versions`);
      expect(history.status, id).to.equal(200);
      const numbers = history.body.versions.map((v: { version: number }) => v.version).reverse();
      expect(numbers, `${id} versions contiguous`).to.deep.equal(
        Array.from({ length: numbers.length }, (_, i) => i + 1),
      );
      stored.set(id, numbers.length);
      for (const { version, fields } of versions) {
        const stored = await read(`/crash/items/${id}/versions/${version}`);
        expect(stored.status, `${id} v${version}`).to.equal(200);
        expect(userFields(stored.body), `${id} v${version}`).to.deep.equal(fields);
      }
    }

    // The change log holds every stored version once: replay it after its first change (the
    // first document's version 1), until it is quiet.
    const stream = new StreamClient(`${url}/crash/items/_stream`, key, { lastEventId: firstChangeId });
    const seen = new Map<string, number>();
    try {
      await stream.opened;
      for (;;) {
        let event: { data: Json };
        try {
          event = await stream.next(['document.created', 'document.updated', 'document.deleted'], 1500);
        } catch {
          break;
        }
        const change = `${event.data.document._id}@${event.data.document.$version}`;
        seen.set(change, (seen.get(change) ?? 0) + 1);
      }
    } finally {
      stream.close();
    }
    expect(
      [...seen.values()].every((n) => n === 1),
      'each change once',
    ).to.equal(true);
    const absent: string[] = [];
    for (const [id, count] of stored) {
      for (let v = 1; v <= count; v++) if (!seen.has(`${id}@${v}`)) absent.push(`${id}@${v}`);
    }
    expect(absent.length, `changes absent from the log: ${absent.join(', ')}`).to.be.at.most(1);
    if (absent[0]) expect(absent[0]).to.match(/@1$/);

    // Webhooks owed: every acknowledged write delivered at least once (a delivery cut by a kill
    // is sent again after the restart, so duplicates are allowed; absences are not).
    const owed = [...acked].flatMap(([id, versions]) => versions.map(({ version }) => `${id}@${version}`));
    let undelivered: string[] = [];
    await eventually(async () => {
      const delivered = new Set(
        receiver.requests.map((r) => `${r.body.documentId}@${r.body.document.$version}`),
      );
      undelivered = owed.filter((change) => !delivered.has(change));
      expect(undelivered.length, `undelivered: ${undelivered.slice(0, 10).join(', ')}`).to.equal(0);
    }, 120_000);
    const deliveryIds = new Set(receiver.requests.map((r) => r.headers['x-service-delivery-id']));

    await stopFolio(server as FolioProcess, 'SIGTERM');
    server = null;
    if (process.env.RELIABILITY_LONG === '1') {
      process.stdout.write(
        `      crash: ${KILLS} kills, ${ackedWrites} acknowledged writes on ${acked.size} documents, ${seen.size} changes replayed, all present; ` +
          `${receiver.requests.length} webhook requests (${deliveryIds.size} distinct deliveries) covering all ${owed.length} acknowledged writes\n`,
      );
    }
    const db = new Database(join(dataDir, 'folio.db'), { readonly: true });
    // The sort-key indexes are expressions over Folio's own SQL functions: checking them needs
    // the functions (another SQLite tool has `quick_check`, which skips index contents).
    registerQueryFunctions(db);
    try {
      expect(db.pragma('integrity_check', { simple: true })).to.equal('ok');
      // The change log's sequence has no gap (a torn or half-applied commit would leave one or
      // a duplicate), and it holds exactly the versions the versions table holds.
      const range = db.prepare('SELECT min(seq) AS lo, max(seq) AS hi, count(*) AS n FROM changes').get() as {
        lo: number;
        hi: number;
        n: number;
      };
      expect(range.hi - range.lo + 1, 'change log sequence contiguous').to.equal(range.n);
      const logged = db
        .prepare("SELECT doc_id || '@' || json_extract(document, '$.\"$version\"') AS change FROM changes")
        .pluck()
        .all() as string[];
      // The history: `versions` holds the versions before each document's current one, which is
      // its row's (src/store/embedded/documents/documents.ts).
      const versions = db
        .prepare(
          "SELECT doc_id || '@' || version FROM versions WHERE collection = 'items' UNION ALL " +
            "SELECT id || '@' || version FROM documents WHERE collection = 'items' AND operation IS NOT NULL",
        )
        .pluck()
        .all() as string[];
      expect(new Set(logged).size, 'each change logged once').to.equal(logged.length);
      expect([...logged].sort(), 'change log = version history').to.deep.equal([...versions].sort());
    } finally {
      db.close();
    }
  });
});
