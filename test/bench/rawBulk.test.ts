/**
 * The bench's bulk ceiling does the same work as Folio's bulk request (bench/transfer.ts sends
 * both the same operations): raw better-sqlite3, in its own process, answers every operation
 * with Folio's status, and its Folio-shaped tables hold afterwards the rows Folio's rules make
 * of those operations (each write a change, and the version it replaces into the history; a
 * delete moves the document and its whole history to the trash), counted here by a model of the rules, not by the SQL under test.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { type Server, startRaw, stop } from '../../bench/processes.js';
import { type BulkOperation, bulkOperations } from '../../bench/workloads/rows.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** What Folio keeps after `operations` on an empty collection, by its rules. */
function expectedRows(operations: BulkOperation[], created: string[]) {
  const versions = new Map<string, number>();
  const rows = { documents: 0, versions: 0, changes: 0, trash: 0, trash_versions: 0 };
  let posted = 0;
  for (const op of operations) {
    rows.changes += 1;
    const id = op.id ?? created[posted++]!;
    if (op.method === 'DELETE') {
      rows.trash += 1;
      rows.trash_versions += versions.get(id)!;
      versions.delete(id);
    } else versions.set(id, (versions.get(id) ?? 0) + 1);
  }
  rows.documents = versions.size;
  // The current version is the document's row; the history table holds the ones before it.
  rows.versions = [...versions.values()].reduce((a, b) => a + b - 1, 0);
  return rows;
}

/** A bulk request's answer: Folio's is 207 (a status per operation), raw's a plain 200. */
async function post(url: string, body: string, key?: string) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(key ? { Authorization: `Bearer ${key}` } : {}) },
    body,
  });
  expect(res.status).to.equal(key ? 207 : 200);
  return (await res.json()) as { results: Array<{ status: number; _id: string }> };
}

describe('bench: raw better-sqlite3’s bulk does the operations Folio’s bulk does', function () {
  this.timeout(60_000);
  let dir: string;
  let raw: Server;
  let folio: TestServer;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'folio-raw-bulk-'));
    [raw, folio] = await Promise.all([
      startRaw(dir, { RAW_ITEMS: '1', RAW_BIG_DOCS: '1' }),
      startTestServer(),
    ]);
  });
  after(async () => {
    if (raw) await stop(raw);
    await folio?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the same statuses, and Folio’s rows by its rules', async () => {
    const { project, key } = await folio.tenant({ plan: 'team' });
    const operations = bulkOperations(0);
    const body = JSON.stringify({ operations });
    const folioAnswer = await post(`${folio.url}/${project}/bulk/_bulk`, body, key);
    const rows = await post(`${raw.url}/rows/bulk`, body);

    const statuses = (answer: typeof rows) => answer.results.map((r) => r.status);
    expect(statuses(rows)).to.deep.equal(statuses(folioAnswer));
    // The mix the bench claims: creates, merges of them and deletes, each answered as done.
    expect(new Set(statuses(folioAnswer))).to.deep.equal(new Set([201, 200, 204]));

    const db = new Database(join(dir, 'raw.db'), { readonly: true });
    try {
      const count = (table: string) =>
        db.prepare(`SELECT count(*) FROM ${table} WHERE collection = 'bulk'`).pluck().get();
      const posted = rows.results.filter((_, i) => operations[i]!.method === 'POST').map((r) => r._id);
      const expected = expectedRows(operations, posted);
      for (const table of Object.keys(expected)) {
        expect(count(table), table).to.equal(expected[table as keyof typeof expected]);
      }
    } finally {
      db.close();
    }
  });
});
