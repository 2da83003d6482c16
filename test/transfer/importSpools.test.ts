/**
 * What an import leaves behind and how many one key may run: its spool is gone however the
 * request ends (answered, refused mid-body, the client gone), a start-up removes the spools a
 * dead process left (and nothing else), and a key runs at most `imports.maxConcurrentPerKey`
 * imports at once (429 `too_many_imports` with Retry-After beyond).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import {
  isLeftoverSpool,
  LEGACY_SPOOL_MAX_AGE_MS,
  removeLeftoverSpools,
  SPOOL_INSTANCE,
} from '../../src/services/imports/spool.js';
import { startTestServer } from '../support/server.js';
import { forEachStore } from '../support/stores.js';
import { until } from '../support/timeout.js';
import { CSV } from './client.js';

const MAX_CONCURRENT = 2;

/** This process's spools now (any server of this process may have made them). */
async function ownSpools(): Promise<string[]> {
  const prefix = `folio-import-${process.pid}-${SPOOL_INSTANCE}-`;
  return (await readdir(tmpdir())).filter((name) => name.startsWith(prefix));
}

/** An import whose body is sent piece by piece and left open until the test ends it. */
function openImport(url: string, key: string, first: string) {
  const req: ClientRequest = httpRequest(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': CSV, 'Transfer-Encoding': 'chunked' },
  });
  const answer = new Promise<{ status: number; body: string; res: IncomingMessage }>((resolve, reject) => {
    req.once('response', (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body, res }));
      res.once('error', reject);
    });
    req.once('error', reject);
  });
  // A client that gives up makes `answer` reject; tests that abort do not await it.
  answer.catch(() => {});
  req.write(first);
  return { req, answer };
}

const rows = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => `r${from + i},${from + i}\n`).join('');

forEachStore(
  'import spools and concurrency',
  (ctx) => {
    const importUrl = (collection: string) => `${ctx.server.url}/${ctx.tenant.project}/${collection}/_import`;

    afterEach(async () => {
      // Every test leaves no spool behind, whatever it did.
      await until(async () => (await ownSpools()).length === 0, 'the spools to be removed');
    });

    it('an answered import and one refused mid-body leave no spool', async () => {
      const ok = openImport(importUrl('spoolOk'), ctx.tenant.key, `_id,n\n${rows(0, 50)}`);
      await until(async () => (await ownSpools()).length === 1, 'the spool to exist');
      ok.req.end(rows(50, 50));
      const done = await ok.answer;
      expect(done.status, done.body).to.equal(200);
      expect(JSON.parse(done.body).imported).to.equal(100);
      expect(await ownSpools()).to.deep.equal([]);
      // Over the Free plan's 1,000 documents: refused while reading, after the spool was made.
      const over = openImport(importUrl('spoolOver'), ctx.tenant.key, `_id,n\n${rows(0, 50)}`);
      await until(async () => (await ownSpools()).length === 1, 'the spool to exist');
      over.req.end(rows(50, 1000));
      expect((await over.answer).status).to.equal(403);
      expect(await ownSpools()).to.deep.equal([]);
    });

    it('a client that goes away mid-body leaves no spool, and frees its import slot', async () => {
      const gone = openImport(importUrl('spoolAbort'), ctx.tenant.key, `_id,n\n${rows(0, 50)}`);
      await until(async () => (await ownSpools()).length === 1, 'the spool to exist');
      gone.req.destroy();
      await until(async () => (await ownSpools()).length === 0, 'the aborted import to remove its spool');
      // Its slot is free again: as many imports as the cap allow can run.
      const open = Array.from({ length: MAX_CONCURRENT }, (_, i) =>
        openImport(importUrl(`after${i}`), ctx.tenant.key, `_id,n\n${rows(0, 5)}`),
      );
      for (const one of open) one.req.end();
      for (const one of open) expect((await one.answer).status).to.equal(200);
    });

    it(`a key runs ${MAX_CONCURRENT} imports at once; one more is 429 too_many_imports with Retry-After`, async () => {
      const running = Array.from({ length: MAX_CONCURRENT }, (_, i) =>
        openImport(importUrl(`busy${i}`), ctx.tenant.key, `_id,n\n${rows(0, 5)}`),
      );
      await until(async () => (await ownSpools()).length === MAX_CONCURRENT, 'every import to be reading');
      const refused = await fetch(importUrl('busyOneMore'), {
        method: 'POST',
        headers: { Authorization: `Bearer ${ctx.tenant.key}`, 'Content-Type': CSV },
        body: '_id,n\nx,1\n',
      });
      expect(refused.status).to.equal(429);
      expect(refused.headers.get('retry-after')).to.equal('2');
      const body = (await refused.json()) as { error: { code: string; details: unknown } };
      expect(body.error.code).to.equal('too_many_imports');
      expect(body.error.details).to.deep.equal({ max: MAX_CONCURRENT });
      // Per key: another key of the same project is not held back.
      const other = await ctx.tenant.newKey({ name: 'second importer' });
      const second = await fetch(importUrl('otherKey'), {
        method: 'POST',
        headers: { Authorization: `Bearer ${other.rawKey}`, 'Content-Type': CSV },
        body: '_id,n\nx,1\n',
      });
      expect(second.status).to.equal(200);
      // One finishes: its slot is free for the next.
      running[0]!.req.end();
      expect((await running[0]!.answer).status).to.equal(200);
      const next = await fetch(importUrl('busyNext'), {
        method: 'POST',
        headers: { Authorization: `Bearer ${ctx.tenant.key}`, 'Content-Type': CSV },
        body: '_id,n\nx,1\n',
      });
      expect(next.status).to.equal(200);
      running[1]!.req.end();
      expect((await running[1]!.answer).status).to.equal(200);
    });
  },
  // No memory budget: every import's records go to its spool file, which these tests watch.
  { config: { imports: { maxConcurrentPerKey: MAX_CONCURRENT, spoolMemoryBytes: 0 } } },
);

describe('import spools left by a stopped process', () => {
  const made: string[] = [];
  const dir = tmpdir();
  let deadPid = 0;

  before(async () => {
    // A pid that was a process and is no more.
    const child = spawn(process.execPath, ['-e', '']);
    await once(child, 'exit');
    deadPid = child.pid!;
  });

  after(async () => {
    for (const name of made) await rm(join(dir, name), { recursive: true, force: true });
  });

  async function spoolDir(name: string, ageMs = 0): Promise<string> {
    const path = join(dir, name);
    await mkdir(path);
    await writeFile(join(path, 'records.ndjson'), '[0,null,"a",{}]\n');
    if (ageMs > 0) {
      const then = new Date(Date.now() - ageMs);
      await utimes(path, then, then);
    }
    made.push(name);
    return name;
  }

  it('a start-up removes the spools of dead processes and of an earlier process with its pid, nothing else', async () => {
    const suffix = Math.random().toString(36).slice(2, 8).padEnd(6, 'x');
    const dead = await spoolDir(`folio-import-${deadPid}-0badcafe-${suffix}`);
    const samePidEarlier = await spoolDir(`folio-import-${process.pid}-0badcafe-${suffix}`);
    const sibling = await spoolDir(`folio-import-${process.pid}-${SPOOL_INSTANCE}-${suffix}`);
    const live = await spoolDir(`folio-import-${process.ppid}-0badcafe-${suffix}`);
    const legacyOld = await spoolDir(`folio-import-${suffix.slice(0, 5)}O`, LEGACY_SPOOL_MAX_AGE_MS + 60_000);
    const legacyNew = await spoolDir(`folio-import-${suffix.slice(0, 5)}N`, LEGACY_SPOOL_MAX_AGE_MS - 60_000);
    const notOurs = await spoolDir(`folio-import-${deadPid}-notours-${suffix}`);
    // A link with a leftover's name is not followed (and not removed): its target stays whole.
    const target = await mkdtemp(join(dir, 'spool-link-target-'));
    made.push(target.slice(dir.length + 1));
    await writeFile(join(target, 'keep'), 'x');
    // Upper case: the random suffixes are lower case, so the link never takes `dead`'s name
    // (with a lower-case `l` it did whenever the suffix began with one).
    const link = `folio-import-${deadPid}-0badcafe-L${suffix.slice(1)}`;
    await symlink(target, join(dir, link));
    made.push(link);

    const server = await startTestServer();
    try {
      const left = new Set(await readdir(dir));
      for (const gone of [dead, samePidEarlier, legacyOld]) expect(left.has(gone), gone).to.equal(false);
      for (const kept of [sibling, live, legacyNew, notOurs, link])
        expect(left.has(kept), kept).to.equal(true);
      expect(await readdir(target)).to.deep.equal(['keep']);
    } finally {
      await server.close();
    }
    // Removing twice is harmless (two instances starting at once).
    expect(await removeLeftoverSpools(dir)).to.not.include(dead);
  });

  it('which names count as leftovers, by the rule', () => {
    const owner = { pid: 100, instance: 'aaaaaaaa', alive: (pid: number) => pid === 200 };
    const day = LEGACY_SPOOL_MAX_AGE_MS;
    expect(isLeftoverSpool('folio-import-100-aaaaaaaa-abc123', 0, owner)).to.equal(false);
    expect(isLeftoverSpool('folio-import-100-bbbbbbbb-abc123', 0, owner)).to.equal(true);
    expect(isLeftoverSpool('folio-import-200-bbbbbbbb-abc123', day * 9, owner)).to.equal(false);
    expect(isLeftoverSpool('folio-import-300-bbbbbbbb-abc123', 0, owner)).to.equal(true);
    expect(isLeftoverSpool('folio-import-abc123', day, owner)).to.equal(false);
    expect(isLeftoverSpool('folio-import-abc123', day + 1, owner)).to.equal(true);
    for (const other of [
      'folio-import-300-bbbbbbbb-abc12',
      'folio-import-300-BBBBBBBB-abc123',
      'folio-imports-abc123',
      'folio-import-abc1234',
    ]) {
      expect(isLeftoverSpool(other, day * 9, owner), other).to.equal(false);
    }
  });
});
