/**
 * `folio backup` and `folio restore` end to end: a real server keeps writing while the CLI takes
 * the backup; the snapshot is consistent; a restore into an empty data directory brings back
 * every record, and a server on it answers byte for byte what the original answered. Damaged,
 * truncated and unknown files are refused with nothing written. A collection schema comes back
 * enforced, and trashed documents come back in the trash with their history, restorable.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { runFolio } from '../support/cli.js';
import { type Receiver, startReceiver, verifySignature } from '../support/receiver.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';

const LOCAL = { webhooks: { allowPrivateTargets: true, backoffBaseMs: 20, timeoutMs: 2000 } };

function folio(dataDir: string, ...args: string[]) {
  return runFolio(args, { FOLIO_DATA_DIR: dataDir, FOLIO_LOG_LEVEL: 'silent' });
}

// biome-ignore lint/suspicious/noExplicitAny: backup records are checked by assertions
type Line = any;

function parseLines(text: string): Line[] {
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l));
}

/** A valid backup holding exactly `lines` (header and trailer computed). */
function craftBackup(records: Line[]): string {
  const header = `${JSON.stringify({ format: 'folio-backup', version: 1, createdAt: new Date().toISOString(), folio: '0.1.0', source: 'embedded' })}\n`;
  const body = records.map((r) => `${JSON.stringify(r)}\n`).join('');
  const counts: Record<string, number> = {};
  for (const r of records) counts[r.type] = (counts[r.type] ?? 0) + 1;
  const sha256 = createHash('sha256')
    .update(header + body)
    .digest('hex');
  return `${header}${body}${JSON.stringify({ end: 'folio-backup', records: records.length, counts, sha256 })}\n`;
}

/** True when the directory holds no database (a refused restore wrote nothing). */
async function holdsNoData(dir: string): Promise<boolean> {
  if (!existsSync(dir)) return true;
  const entries = (await readdir(dir)).filter((e) => e !== 'folio.lock');
  return entries.length === 0;
}

describe('folio backup and restore (embedded store, real server writing meanwhile)', function () {
  this.timeout(180_000);
  let work: string;
  let sourceDir: string;
  let source: TestServer;
  let restored: TestServer | undefined;
  let tenant: Tenant;
  let receiver: Receiver;
  let webhook: { id: string; secret: string };
  let backupFile: string;
  let backupText: string;
  const readOnlyKey = { rawKey: '', id: '' };
  const ordersIds: string[] = [];
  /** The schema as sent: its text is kept byte for byte (key order, `$` keys). */
  const ORDERS_SCHEMA = {
    $comment: 'orders as the shop writes them',
    type: 'object',
    properties: { sku: { type: 'string' }, price: { type: 'number' } },
    required: ['sku'],
  };
  const TRASHED = ['note-0', 'note-1', 'note-2'];

  const req = (server: TestServer, method: string, path: string, body?: unknown) =>
    server.request(method, `/${tenant.project}${path}`, {
      key: tenant.key,
      body,
      ...(method === 'PATCH' ? { contentType: 'application/merge-patch+json' } : {}),
    });

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'folio-backup-'));
    sourceDir = join(work, 'source');
    receiver = await startReceiver();
    source = await startTestServer({ dataDir: sourceDir, config: LOCAL });
    tenant = await source.tenant({ plan: 'pro', project: 'shop' });
    Object.assign(readOnlyKey, await tenant.newKey({ scope: 'read-only', env: 'test', name: 'reader' }));
    const revoked = await tenant.newKey({ name: 'old' });
    expect(
      (await source.request('DELETE', `/api/keys/${revoked.id}`, { session: tenant.session })).status,
    ).to.equal(204);

    // Documents whose bytes are easy to get wrong: integer-like keys, unicode, floats, nesting.
    for (let i = 0; i < 40; i++) {
      const created = await req(source, 'POST', '/orders', {
        sku: `sku-${i}`,
        title: `Ünïcødé ✓ ${i} "quoted" \\ back`,
        price: i + 0.1,
        big: 1e21 + i,
        '10': 'integer-like key',
        nested: { b: [1, 2.5, { c: null }], a: true },
      });
      expect(created.status).to.equal(201);
      ordersIds.push(created.body._id);
      // A history of a few versions each: updates, a patch.
      for (let v = 0; v < i % 4; v++) {
        expect((await req(source, 'PATCH', `/orders/${created.body._id}`, { price: i + v })).status).to.equal(
          200,
        );
      }
    }
    expect(
      (await req(source, 'POST', '/orders/_indexes', { fields: [{ path: 'sku' }], unique: true })).status,
    ).to.equal(201);
    expect(
      (await req(source, 'POST', '/orders/_indexes', { fields: [{ path: 'price', order: -1 }] })).status,
    ).to.equal(201);
    const hook = await req(source, 'POST', '/orders/_webhooks', {
      url: `${receiver.url}/hook`,
      events: ['document.created'],
      description: 'orders hook',
    });
    expect(hook.status).to.equal(201);
    webhook = { id: hook.body.id, secret: hook.body.secret };
    expect((await req(source, 'PUT', '/orders/_schema', { schema: ORDERS_SCHEMA })).status).to.equal(200);
    expect((await req(source, 'PUT', '/notes/_schema', { schema: true, mode: 'warn' })).status).to.equal(200);
    // Trashed documents with a history of i + 1 versions; one note stays.
    for (const [i, id] of [...TRASHED, 'note-kept'].entries()) {
      for (let v = 0; v <= i; v++) {
        expect((await req(source, 'PUT', `/notes/${id}`, { text: `note ${i} v${v}`, v })).status).to.be.oneOf(
          [200, 201],
        );
      }
      if (TRASHED.includes(id)) expect((await req(source, 'DELETE', `/notes/${id}`)).status).to.equal(204);
    }
    // Enough documents that the snapshot's read takes a while.
    const seed = Array.from({ length: 1500 }, (_, i) => ({ _id: `seed-${i}`, n: i, text: 'x'.repeat(200) }));
    const imported = await req(source, 'POST', '/bulk/_import', seed);
    expect(imported.status, imported.text).to.equal(200);
    backupFile = join(work, 'folio.backup');
  });

  after(async () => {
    await restored?.close();
    await source.close();
    await receiver.close();
    await rm(work, { recursive: true, force: true });
  });

  it('takes a consistent backup while the server keeps writing', async () => {
    let writing = true;
    let writesDuring = 0;
    let backupRunning = false;
    const writer = async (worker: number) => {
      for (let n = 0; writing; n++) {
        const id = `live-${worker}-${n % 25}`;
        const current = await req(source, 'GET', `/live/${id}`);
        let res: { status: number };
        if (current.status === 404) res = await req(source, 'PUT', `/live/${id}`, { worker, n });
        else if (n % 7 === 0) res = await req(source, 'DELETE', `/live/${id}`);
        else res = await req(source, 'PATCH', `/live/${id}`, { n, [`f${n % 5}`]: n });
        expect(res.status).to.be.oneOf([200, 201, 204, 409, 412]);
        if (backupRunning) writesDuring++;
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    await new Promise((r) => setTimeout(r, 300));
    backupRunning = true;
    const result = await folio(sourceDir, 'backup', '--out', backupFile);
    backupRunning = false;
    writing = false;
    await Promise.all(writers);
    expect(result.code, result.err).to.equal(0);
    expect(writesDuring).to.be.greaterThan(0);
    const summary = JSON.parse(result.out);
    expect(summary.records).to.be.greaterThan(1500);

    backupText = await readFile(backupFile, 'utf8');
    const lines = parseLines(backupText);
    expect(lines[0]).to.include({ format: 'folio-backup', version: 1, source: 'embedded' });
    expect(lines.at(-1)).to.include({ end: 'folio-backup', records: lines.length - 2 });
    const records = lines.slice(1, -1);
    // Consistency: each document's history is complete up to its $version (Pro keeps 50, no
    // document here has more), its newest version is the document itself, and no history
    // belongs to a document the snapshot does not hold.
    // The same holds for the trash: each entry with its whole history, each trashed version
    // after its entry (the live writers delete into the trash while the backup reads).
    const checkHistories = (documentType: string, versionType: string) => {
      const docs = new Map<string, Line>();
      const histories = new Map<string, Line[]>();
      for (const r of records) {
        if (r.type !== documentType && r.type !== versionType) continue;
        const id = r.type === versionType ? r.id : (r.document ?? r.entry.document)._id;
        const key = `${r.scope.projectId}/${r.scope.env}/${r.collection}/${id}`;
        if (r.type === documentType) docs.set(key, r.document ?? r.entry.document);
        else {
          expect(docs.has(key), `${versionType} ${key} before its ${documentType}`).to.equal(true);
          histories.set(key, [...(histories.get(key) ?? []), r]);
        }
      }
      for (const [key, doc] of docs) {
        const history = histories.get(key) ?? [];
        expect(
          history.map((v) => v.version.version),
          key,
        ).to.deep.equal(Array.from({ length: doc.$version }, (_, i) => i + 1));
        expect(history.at(-1).document, key).to.deep.equal(doc);
      }
      for (const key of histories.keys()) expect(docs.has(key), key).to.equal(true);
      return docs;
    };
    expect(checkHistories('document', 'version').size).to.be.greaterThan(1540);
    const trashed = checkHistories('trashedDocument', 'trashedVersion');
    const trashedIds = [...trashed.keys()]
      .filter((k) => k.includes('/notes/'))
      .map((k) => k.split('/').at(-1));
    expect(trashedIds.sort()).to.deep.equal(TRASHED);
    expect(records.filter((r: Line) => r.type === 'schema').map((r: Line) => r.collection)).to.deep.equal([
      'notes',
      'orders',
    ]);
    const types = new Set(records.map((r: Line) => r.type));
    for (const type of ['setting', 'account', 'project', 'key', 'webhook', 'document', 'version', 'index']) {
      expect(types.has(type), type).to.equal(true);
    }
    const keys = records.filter((r: Line) => r.type === 'key');
    expect(keys.map((k: Line) => k.key.status).sort()).to.deep.equal(['active', 'active', 'revoked']);
    expect(backupText).to.not.include(webhook.secret);
    expect(backupText).to.not.include(tenant.key);
  });

  it('restores into an empty data directory: every record equal, the API answers byte for byte', async () => {
    const targetDir = join(work, 'restored');
    const result = await folio(targetDir, 'restore', backupFile);
    expect(result.code, result.err).to.equal(0);
    expect(JSON.parse(result.out)).to.include({ restored: parseLines(backupText).length - 2 });

    // Every record: a backup of the restored store holds the same records, in the same order.
    const again = join(work, 'again.backup');
    const second = await folio(targetDir, 'backup', '--out', again);
    expect(second.code, second.err).to.equal(0);
    expect(parseLines(await readFile(again, 'utf8')).slice(1, -1)).to.deep.equal(
      parseLines(backupText).slice(1, -1),
    );

    restored = await startTestServer({ dataDir: targetDir, config: LOCAL });
    // The orders collection was not written during the backup: both servers answer alike.
    for (const id of ordersIds) {
      const a = await req(source, 'GET', `/orders/${id}`);
      const b = await req(restored, 'GET', `/orders/${id}`);
      expect(b.status).to.equal(200);
      expect(b.text).to.equal(a.text);
      expect(b.headers.get('etag')).to.equal(a.headers.get('etag'));
      const va = await req(source, 'GET', `/orders/${id}/versions`);
      const vb = await req(restored, 'GET', `/orders/${id}/versions`);
      expect(vb.text).to.equal(va.text);
      const first = await req(restored, 'GET', `/orders/${id}/versions/1`);
      expect(first.text).to.equal((await req(source, 'GET', `/orders/${id}/versions/1`)).text);
    }
    // Documents written during the backup: as the snapshot holds them, byte for byte.
    for (const r of parseLines(backupText).filter(
      (l: Line) => l.type === 'document' && l.collection === 'live',
    )) {
      const b = await req(restored, 'GET', `/live/${r.document._id}`);
      expect(b.text).to.equal(JSON.stringify(r.document));
      expect(b.headers.get('etag')).to.equal(`"${r.document.$version}"`);
    }
    expect((await req(restored, 'GET', '/orders/_indexes')).text).to.equal(
      (await req(source, 'GET', '/orders/_indexes')).text,
    );
    // The unique index is built, not only listed.
    const clash = await req(restored, 'POST', '/orders', { sku: 'sku-3' });
    expect(clash.status).to.equal(409);
    // The schemas: the same text and mode, and enforced (a violating write is a 422 there too).
    for (const collection of ['orders', 'notes']) {
      const a = await req(source, 'GET', `/${collection}/_schema`);
      expect(a.status).to.equal(200);
      expect((await req(restored, 'GET', `/${collection}/_schema`)).text).to.equal(a.text);
    }
    const violating = { sku: 42, price: 'free' };
    expect((await req(source, 'POST', '/orders', violating)).status).to.equal(422);
    const refused = await req(restored, 'POST', '/orders', violating);
    expect(refused.status, refused.text).to.equal(422);
    expect(refused.body.error.code).to.equal('schema_violation');
    expect((await req(restored, 'POST', '/orders', { sku: 'sku-new', price: 1 })).status).to.equal(201);
    // The trash: the same entries, each with its history; restored from the trash, a document
    // continues its history, as it would have in the original store.
    expect((await req(restored, 'GET', '/notes/_trash')).text).to.equal(
      (await req(source, 'GET', '/notes/_trash')).text,
    );
    for (const [i, id] of TRASHED.entries()) {
      const a = await req(source, 'GET', `/notes/_trash/${id}`);
      expect(a.body.versions).to.have.length(i + 1);
      expect((await req(restored, 'GET', `/notes/_trash/${id}`)).text).to.equal(a.text);
    }
    const back = await req(restored, 'POST', '/notes/_trash/note-2/restore');
    expect(back.status, back.text).to.equal(201);
    expect(back.body).to.include({ _id: 'note-2', text: 'note 2 v2', $version: 4 });
    const history = await req(restored, 'GET', '/notes/note-2/versions');
    expect(history.body.versions.map((v: Line) => [v.version, v.operation])).to.deep.equal([
      [4, 'restore'],
      [3, 'update'],
      [2, 'update'],
      [1, 'create'],
    ]);
    expect((await req(restored, 'GET', '/notes/note-2/versions/1')).body).to.include({ text: 'note 2 v0' });
    expect((await req(restored, 'GET', '/notes/_trash/note-2')).status).to.equal(404);
    // Keys authenticate (hashes kept), the read-only one stays read-only, sign-in works.
    expect(
      (await restored.request('GET', `/${tenant.project}/orders?limit=1`, { key: readOnlyKey.rawKey }))
        .status,
    ).to.equal(200);
    expect(
      (await restored.request('POST', `/${tenant.project}/orders`, { key: readOnlyKey.rawKey, body: {} }))
        .status,
    ).to.equal(403);
    const login = await restored.request('POST', '/api/auth/login', {
      body: { email: tenant.email, password: 'correct horse battery' },
    });
    expect(login.status).to.equal(200);
    // The webhook signs with the secret it was registered with.
    const tested = await req(restored, 'POST', `/orders/_webhooks/${webhook.id}/test`);
    expect(tested.status, tested.text).to.equal(200);
    const [got] = receiver.requests.filter((r) => r.headers['x-service-delivery-id'] === tested.body.id);
    expect(got).to.not.equal(undefined);
    expect(verifySignature(got!.rawBody, got!.headers['x-service-signature'], webhook.secret)).to.equal(true);
  });

  it('refuses to restore into a store that holds data, or that a server is using, writing nothing', async () => {
    const targetDir = join(work, 'restored');
    const inUse = await folio(targetDir, 'restore', backupFile);
    expect(inUse.code).to.equal(1);
    expect(inUse.err).to.match(/FOLIO_DATA_DIR/);
    await restored?.close();
    restored = undefined;
    const before = await readFile(join(targetDir, 'folio.db'));
    const result = await folio(targetDir, 'restore', backupFile);
    expect(result.code).to.equal(1);
    expect(result.err).to.match(/is not empty: a restore or migrate writes only into an empty store/);
    expect((await readFile(join(targetDir, 'folio.db'))).equals(before)).to.equal(true);
  });

  it('refuses a truncated file, naming it, and writes nothing', async () => {
    const bytes = Buffer.from(backupText);
    for (const cut of [bytes.length - 1, Math.floor(bytes.length / 2), 10]) {
      const file = join(work, `truncated-${cut}`);
      await writeFile(file, bytes.subarray(0, cut));
      const target = join(work, `t-${cut}`);
      const result = await folio(target, 'restore', file);
      expect(result.code, `cut at ${cut}`).to.equal(1);
      expect(result.err).to.match(/cannot restore .*(truncated|not a Folio backup).*nothing was written/);
      expect(await holdsNoData(target)).to.equal(true);
    }
  });

  it('refuses a corrupted file (one byte changed), writing nothing', async () => {
    const bytes = Buffer.from(backupText);
    // A digit inside a document, far from the header and the trailer.
    let at = backupText.indexOf('"n":750');
    expect(at).to.be.greaterThan(0);
    at += 5;
    const changed = Buffer.from(bytes);
    changed[at] = changed[at] === 0x37 ? 0x38 : 0x37;
    const file = join(work, 'corrupted');
    await writeFile(file, changed);
    const target = join(work, 'c-target');
    const result = await folio(target, 'restore', file);
    expect(result.code).to.equal(1);
    expect(result.err).to.match(/the file is corrupted: its SHA-256 does not match.*nothing was written/);
    expect(await holdsNoData(target)).to.equal(true);
  });

  it('reads gzip backups, and refuses a damaged gzip file', async () => {
    const gz = join(work, 'folio.backup.gz');
    const made = await folio(sourceDir, 'backup', '--out', gz);
    expect(made.code, made.err).to.equal(0);
    const packed = await readFile(gz);
    expect(gunzipSync(packed).toString().startsWith('{"format":"folio-backup"')).to.equal(true);
    const cut = join(work, 'cut.gz');
    await writeFile(cut, packed.subarray(0, Math.floor(packed.length * 0.6)));
    const target = join(work, 'gz-target');
    const refused = await folio(target, 'restore', cut);
    expect(refused.code).to.equal(1);
    expect(refused.err).to.match(/cannot restore .*nothing was written/);
    expect(await holdsNoData(target)).to.equal(true);
    // The intact file restores (checked above for plain files; here, that gzip is read).
    const ok = await folio(join(work, 'gz-ok'), 'restore', gz);
    expect(ok.code, ok.err).to.equal(0);
  });

  it('refuses a record type it does not know, even with a valid checksum (a newer Folio wrote it)', async () => {
    const records = parseLines(backupText).slice(1, 4);
    const file = join(work, 'newer.backup');
    await writeFile(file, craftBackup([...records, { type: 'futureRecord', document: { _id: 'x' } }]));
    const target = join(work, 'newer-target');
    const result = await folio(target, 'restore', file);
    expect(result.code).to.equal(1);
    expect(result.err).to.match(/type "futureRecord", which this Folio does not know/);
    expect(await holdsNoData(target)).to.equal(true);
    // A version this Folio does not read is refused by name too.
    const v2 = craftBackup(records).replace('"version":1', '"version":2');
    await writeFile(file, gzipSync(v2));
    const second = await folio(target, 'restore', file);
    expect(second.err).to.match(/backup format version 2 is not supported/);
    expect(await holdsNoData(target)).to.equal(true);
  });

  it('a restore killed half-way leaves the data directory without data; the next one cleans up and completes', async () => {
    const target = join(work, 'killed');
    const child = spawn(process.execPath, ['bin/folio.js', 'restore', backupFile, '--batch-size', '1'], {
      env: { ...process.env, FOLIO_DATA_DIR: target, FOLIO_LOG_LEVEL: 'silent' },
      stdio: 'ignore',
    });
    const deadline = Date.now() + 60_000;
    const staging = async () =>
      existsSync(target) ? (await readdir(target)).filter((e) => e.startsWith('.restore-')) : [];
    while ((await staging()).length === 0) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error('the restore never started writing');
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGKILL');
    await once(child, 'close');
    expect(child.exitCode).to.equal(null);
    expect(existsSync(join(target, 'folio.db'))).to.equal(false);
    expect(await staging()).to.have.length(1);
    const again = await folio(target, 'restore', backupFile);
    expect(again.code, again.err).to.equal(0);
    expect(await staging()).to.deep.equal([]);
    expect(existsSync(join(target, 'folio.db'))).to.equal(true);
  });

  it('never overwrites an existing file', async () => {
    const result = await folio(sourceDir, 'backup', '--out', backupFile);
    expect(result.code).to.equal(2);
    expect(result.err).to.match(/exists: choose another name/);
    expect(await readFile(backupFile, 'utf8')).to.equal(backupText);
  });
});
