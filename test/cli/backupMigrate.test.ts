/**
 * `folio migrate` from the embedded store to another embedded store (the same port as MongoDB):
 * a whole deployment copied record for record, a run killed half-way resumed by running the
 * same command again, a SIGINT stopping cleanly after a batch, and the targets it refuses. The
 * collection schema and the trash (entries with their history) are copied too.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { runFolio } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';

function folio(dataDir: string, ...args: string[]) {
  return runFolio(args, { FOLIO_DATA_DIR: dataDir, FOLIO_LOG_LEVEL: 'silent' });
}

function spawnMigrate(sourceDir: string, args: string[]): { child: ChildProcess; err: () => string } {
  const child = spawn(process.execPath, ['bin/folio.js', 'migrate', ...args], {
    env: { ...process.env, FOLIO_DATA_DIR: sourceDir, FOLIO_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  child.stdout?.resume();
  return { child, err: () => err };
}

async function progressOf(work: string): Promise<{ written: number; total: number } | null> {
  try {
    return JSON.parse(await readFile(join(work, 'progress.json'), 'utf8'));
  } catch {
    return null;
  }
}

/** Wait until the migration recorded at least `records` copied records. */
async function waitForProgress(work: string, records: number): Promise<{ written: number; total: number }> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const progress = await progressOf(work);
    if (progress && progress.written >= records) return progress;
    if (Date.now() > deadline) throw new Error(`no progress past ${records} records in ${work}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The records of a backup of `dataDir` (header and trailer dropped). */
async function recordsOf(dataDir: string, file: string): Promise<unknown[]> {
  const made = await folio(dataDir, 'backup', '--out', file);
  expect(made.code, made.err).to.equal(0);
  const lines = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
  return lines.slice(1, -1).map((l) => JSON.parse(l));
}

describe('folio migrate (embedded to embedded)', function () {
  this.timeout(180_000);
  let work: string;
  let sourceDir: string;
  let source: TestServer;
  let sourceRecords: unknown[];

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'folio-migrate-'));
    sourceDir = join(work, 'source');
    source = await startTestServer({ dataDir: sourceDir });
    const tenant = await source.tenant({ plan: 'pro', project: 'shop' });
    const docs = Array.from({ length: 400 }, (_, i) => ({ _id: `d${i}`, n: i, tags: ['a', i] }));
    const imported = await source.request('POST', '/shop/items/_import', { key: tenant.key, body: docs });
    expect(imported.status, imported.text).to.equal(200);
    const again = await source.request('POST', '/shop/items/_import?onConflict=overwrite', {
      key: tenant.key,
      body: docs.map((d) => ({ ...d, n: d.n + 1 })),
    });
    expect(again.status, again.text).to.equal(200);
    expect(
      (
        await source.request('POST', '/shop/items/_indexes', {
          key: tenant.key,
          body: { fields: [{ path: 'n' }] },
        })
      ).status,
    ).to.equal(201);
    const schema = await source.request('PUT', '/shop/items/_schema', {
      key: tenant.key,
      body: { schema: { type: 'object', properties: { n: { type: 'integer' } } } },
    });
    expect(schema.status, schema.text).to.equal(200);
    for (const id of ['d3', 'd7', 'd11']) {
      expect((await source.request('DELETE', `/shop/items/${id}`, { key: tenant.key })).status).to.equal(204);
    }
    sourceRecords = await recordsOf(sourceDir, join(work, 'source.backup'));
    expect(sourceRecords.length).to.be.greaterThan(1200);
    const count = (type: string) => sourceRecords.filter((r) => (r as { type: string }).type === type).length;
    expect([count('schema'), count('trashedDocument'), count('trashedVersion')]).to.deep.equal([1, 3, 6]);
  });

  after(async () => {
    await source.close();
    await rm(work, { recursive: true, force: true });
  });

  it('copies every record; a run killed half-way resumes where it stopped and completes', async () => {
    const target = join(work, 'target');
    const state = join(work, 'state');
    const args = ['--to', target, '--work', state, '--batch-size', '1'];
    const first = spawnMigrate(sourceDir, args);
    const reached = await waitForProgress(state, 100);
    first.child.kill('SIGKILL');
    await once(first.child, 'close');
    const left = (await progressOf(state))!;
    expect(left.written).to.be.at.least(reached.written);
    expect(left.written).to.be.lessThan(left.total);
    expect(left.total).to.equal(sourceRecords.length);

    const second = await folio(sourceDir, 'migrate', ...args);
    expect(second.code, second.err).to.equal(0);
    expect(second.err).to.match(
      new RegExp(`Resuming the migration into .*: ${left.written} of ${left.total} records`),
    );
    expect(JSON.parse(second.out)).to.include({ migrated: sourceRecords.length });
    // Nothing left behind: the snapshot holds secrets.
    expect(existsSync(state)).to.equal(false);
    expect(await recordsOf(target, join(work, 'target.backup'))).to.deep.equal(sourceRecords);
  });

  it('a SIGINT stops after the batch in hand, saying how to resume; the same command finishes', async () => {
    const target = join(work, 'target-int');
    const state = join(work, 'state-int');
    const args = ['--to', target, '--work', state, '--batch-size', '1'];
    const first = spawnMigrate(sourceDir, args);
    await waitForProgress(state, 50);
    first.child.kill('SIGINT');
    const [code] = await once(first.child, 'close');
    expect(code).to.equal(130);
    expect(first.err()).to.match(
      /Interrupted after \d+ of \d+ records; run the same command again to resume/,
    );
    const left = (await progressOf(state))!;
    expect(left.written).to.be.lessThan(left.total);
    const second = await folio(sourceDir, 'migrate', ...args);
    expect(second.code, second.err).to.equal(0);
    expect(await recordsOf(target, join(work, 'target-int.backup'))).to.deep.equal(sourceRecords);
  });

  it('refuses a target that holds data, the source itself, and another target in the same work directory', async () => {
    const full = await folio(sourceDir, 'migrate', '--to', join(work, 'target'), '--work', join(work, 's1'));
    expect(full.code).to.equal(1);
    expect(full.err).to.match(/is not empty: a restore or migrate writes only into an empty store/);

    const self = await folio(sourceDir, 'migrate', '--to', sourceDir, '--work', join(work, 's2'));
    expect(self.code).to.equal(2);
    expect(self.err).to.match(/--to names the store being copied/);

    const state = join(work, 's3');
    const first = spawnMigrate(sourceDir, [
      '--to',
      join(work, 'other-a'),
      '--work',
      state,
      '--batch-size',
      '1',
    ]);
    await waitForProgress(state, 1);
    first.child.kill('SIGKILL');
    await once(first.child, 'close');
    const other = await folio(sourceDir, 'migrate', '--to', join(work, 'other-b'), '--work', state);
    expect(other.code).to.equal(1);
    expect(other.err).to.match(/holds an unfinished migration to another store/);
    expect(existsSync(join(work, 'other-b', 'folio.db'))).to.equal(false);
  });
});
