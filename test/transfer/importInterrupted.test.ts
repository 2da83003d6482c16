/**
 * What an import promises when it stops half-way, tested the hard way: the server process is
 * killed (SIGKILL) while an import is being written, then started again on the same data.
 * Promise: the records in are exactly a prefix of the body, a whole number of batches, each with
 * its version 1; re-sending the body with onConflict=skip imports exactly the rest.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { type FolioProcess, serveFolio, stopFolio } from '../support/folioProcess.js';
import { mongoConnection } from '../support/mongodb.js';
import { tenantScope } from '../support/scope.js';
import { forEachStore } from '../support/stores.js';

const RECORDS = 10_000;
const BATCH = 10;

interface Target {
  name: string;
  env(): Promise<Record<string, string>>;
}

const mongo = await mongoConnection();
const targets: Target[] = [
  {
    name: 'embedded',
    env: async () => ({ FOLIO_DATA_DIR: await mkdtemp(join(tmpdir(), 'folio-kill-')) }),
  },
  ...(mongo
    ? [
        {
          name: 'mongodb @mongodb',
          env: async () => ({ MONGODB_URI: mongo.uri, FOLIO_MONGODB_DB_PREFIX: mongo.dbPrefix }),
        },
      ]
    : []),
];

/** Small batches, and a plan that takes the whole body in one request. */
function folioEnv(env: Record<string, string>): Record<string, string> {
  return {
    ...env,
    FOLIO_BOOTSTRAP: 'false',
    FOLIO_IMPORTS_BATCH_DOCUMENTS: String(BATCH),
    FOLIO_PLANS_FREE_MAX_IMPORT_DOCUMENTS: String(RECORDS),
    FOLIO_PLANS_FREE_REQUESTS_PER_SECOND: '100000',
  };
}

const ids = Array.from({ length: RECORDS }, (_, i) => `k${String(i).padStart(6, '0')}`);
const body = ids.map((id, i) => JSON.stringify({ _id: id, i })).join('\n');

for (const target of targets) {
  describe(`an import cut off half-way [${target.name}]`, function () {
    this.timeout(120_000);
    let env: Record<string, string>;
    let server: FolioProcess | null = null;
    after(async () => {
      if (server) await stopFolio(server, 'SIGKILL');
      if (env?.FOLIO_DATA_DIR) await rm(env.FOLIO_DATA_DIR, { recursive: true, force: true });
    });

    it('leaves whole batches in input order, and a re-run with onConflict=skip imports exactly the rest', async () => {
      env = await target.env();
      server = await serveFolio(folioEnv(env));
      const first = server;
      const signup = await fetch(`${server.url}/api/auth/signup`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ email: 'kill@example.test', password: 'correct horse battery' }),
      });
      const { token } = (await signup.json()) as { token: string };
      const json = { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` };
      await fetch(`${server.url}/api/projects`, { method: 'POST', headers: json, body: '{"name":"p"}' });
      const created = await fetch(`${server.url}/api/keys`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ project: 'p', name: 'k', env: 'test', scope: 'read-write' }),
      });
      const { rawKey } = (await created.json()) as { rawKey: string };
      const auth = { Authorization: `Bearer ${rawKey}` };
      const count = async (url: string) =>
        ((await (await fetch(`${url}/p/cut?count=true`, { headers: auth })).json()) as { count: number })
          .count;
      const send = (url: string, query = '') =>
        fetch(`${url}/p/cut/_import${query}`, {
          method: 'POST',
          headers: { ...auth, 'Content-Type': 'application/x-ndjson' },
          body,
        });

      const cutOff = send(first.url).then(
        (res) => `answered ${res.status}`,
        () => 'connection lost',
      );
      // Kill the server as soon as the first batches are in.
      while ((await count(first.url)) === 0) await sleep(5);
      await stopFolio(first, 'SIGKILL');
      expect(await cutOff).to.equal('connection lost');

      server = await serveFolio(folioEnv(env));
      const settled = await count(server.url);
      expect(settled).to.be.greaterThan(0).and.lessThan(RECORDS);
      expect(settled % BATCH).to.equal(0);
      const page = await fetch(`${server.url}/p/cut?sort=-_id&limit=1&select=i`, { headers: auth });
      const last = ((await page.json()) as { data: Array<{ _id: string; i: number }> }).data[0]!;
      // The documents in are exactly the first `settled` records: the highest id is record settled-1.
      expect(last).to.deep.equal({ _id: ids[settled - 1], i: settled - 1 });
      const versions = await fetch(`${server.url}/p/cut?filter[$version][neq]=1&count=true`, {
        headers: auth,
      });
      expect(((await versions.json()) as { count: number }).count).to.equal(0);

      const resumed = await send(server.url, '?onConflict=skip');
      expect(resumed.status).to.equal(200);
      expect(await resumed.json()).to.deep.equal({
        imported: RECORDS - settled,
        skipped: settled,
        errors: [],
        total: RECORDS,
      });
      expect(await count(server.url)).to.equal(RECORDS);
    });
  });
}

/**
 * The same promise when the server lives but its store fails mid-import (here: closed under
 * it): the answer is 503 import_interrupted saying exactly which records are settled.
 */
forEachStore(
  'an import whose store fails half-way',
  (ctx) => {
    it('answers 503 import_interrupted with resumeAt: whole batches before it are in, with their events', async () => {
      const store = ctx.server.running.services.store;
      const scope = await tenantScope(ctx.server, ctx.tenant);
      const feed = store.changes.watch(scope, 'failing');
      const importing = fetch(`${ctx.server.url}/${ctx.tenant.project}/failing/_import`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${ctx.tenant.key}`, 'Content-Type': 'application/x-ndjson' },
        body: ids
          .slice(0, 5000)
          .map((id, i) => JSON.stringify({ _id: id, i }))
          .join('\n'),
      });
      const seen: string[] = [];
      for await (const event of feed) {
        seen.push(event.documentId);
        // The first batch is in: take the store away.
        if (seen.length === BATCH) break;
      }
      await store.close();
      const res = await importing;
      expect(res.status).to.equal(503);
      const { error } = (await res.json()) as { error: { code: string; details: Record<string, number> } };
      expect(error.code).to.equal('import_interrupted');
      const { resumeAt = -1, imported, skipped, total } = error.details;
      expect(resumeAt).to.be.greaterThan(0).and.lessThan(5000);
      expect(resumeAt % BATCH).to.equal(0);
      expect(imported).to.equal(resumeAt);
      expect(skipped).to.equal(0);
      expect(total).to.equal(5000);
      expect(seen).to.deep.equal(ids.slice(0, BATCH));
    });
  },
  { config: { imports: { batchDocuments: BATCH }, plans: { free: { maxImportDocuments: RECORDS } } } },
);
