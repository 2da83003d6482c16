/**
 * SIGTERM with a webhook backlog: `folio serve` as a child process, 2,000 documents imported
 * into a collection whose webhook's receiver hangs, then SIGTERM. The server exits 0 within its
 * documented shutdown time (docs/webhooks.md: about 11 s whatever the backlog), and the next
 * start on the same data directory delivers every document. Tagged @slow (npm run test:slow):
 * `npm test` keeps SIGTERM during a retry schedule (webhookRecovery.test.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { devAccount, serveFolio } from '../support/folioProcess.js';
import { type Receiver, startReceiver } from '../support/receiver.js';

const DOCS = Number(process.env.DEBUG_DOCS ?? 2_000);
/** docs/webhooks.md, "Shutdown": 2 s + 3 s + 5 s of grace, and the store's close. */
const DOCUMENTED_SHUTDOWN_MS = 11_000;

/** `folio serve` on `dataDir`, logs included when DEBUG_FOLIO is set. */
function start(dataDir: string) {
  return serveFolio({
    FOLIO_DATA_DIR: dataDir,
    FOLIO_LOG_LEVEL: process.env.DEBUG_FOLIO ? 'info' : 'silent',
    FOLIO_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    // The bootstrap account is on Free: let one import carry the backlog.
    FOLIO_PLANS_FREE_MAX_IMPORT_DOCUMENTS: String(DOCS),
  });
}

describe('SIGTERM with a webhook backlog (folio serve) @slow', function () {
  this.timeout(120_000);
  let dataDir: string;
  let receiver: Receiver;
  let child: ChildProcess | null = null;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'folio-backlog-'));
    receiver = await startReceiver();
  });
  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }
    await receiver.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('exits within the documented time whatever the backlog, and the next start delivers everything', async () => {
    let folio = await start(dataDir);
    child = folio.child;
    const { key, project } = devAccount(folio);
    const auth = { Authorization: `Bearer ${key}` };
    const hook = await fetch(`${folio.url}/${project}/orders/_webhooks`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: `${receiver.url}/hook`, events: ['document.created'] }),
    });
    expect(hook.status).to.equal(201);

    // The receiver takes every request and answers only long after the attempt time limit.
    receiver.delayMs = 60_000;
    let body = '';
    for (let i = 0; i < DOCS; i++) body += `${JSON.stringify({ i })}\n`;
    const imported = await fetch(`${folio.url}/${project}/orders/_import`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/x-ndjson' },
      body,
    });
    expect(imported.status).to.equal(200);

    const started = Date.now();
    const exited = once(folio.child, 'exit');
    folio.child.kill('SIGTERM');
    const [code] = await exited;
    expect(code).to.equal(0);
    expect(Date.now() - started).to.be.below(DOCUMENTED_SHUTDOWN_MS);

    receiver.delayMs = 0;
    folio = await start(dataDir);
    child = folio.child;
    const all = await receiver
      .waitFor(DOCS, () => true, 90_000)
      .catch((e) => {
        if (process.env.DEBUG_FOLIO)
          console.log(
            folio
              .output()
              .split('\n')
              .filter((l) => !l.includes('"req"'))
              .slice(-30)
              .join('\n'),
          );
        throw e;
      });
    const docs = new Set(all.map((r) => r.body.documentId));
    expect(docs.size).to.equal(DOCS);
    const stopped = once(folio.child, 'exit');
    folio.child.kill('SIGTERM');
    expect((await stopped)[0]).to.equal(0);
  });
});
