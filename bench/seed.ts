/**
 * Benchmark data written straight through the store port, in batches of first versions: far
 * faster than HTTP, and the same rows the API would write.
 */
import { isoNow, newId } from '../src/ids.js';
import type { DataScope, DocumentWrite, JsonObject, Store } from '../src/store/port.js';
import { startTestServer, type TestServer } from '../test/support/server.js';

/**
 * `count` new documents with the user fields `fieldsOf(i)` gives, `batch` to a commit; answers
 * their ids in order.
 */
export async function seedDocuments(
  store: Store,
  scope: DataScope,
  collection: string,
  count: number,
  fieldsOf: (i: number) => JsonObject,
  batch = 1000,
): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += batch) {
    const writes: DocumentWrite[] = [];
    for (let i = start; i < Math.min(count, start + batch); i++) {
      const now = isoNow();
      const id = newId('doc');
      ids.push(id);
      writes.push({
        kind: 'put',
        expectedVersion: 0,
        operation: 'create',
        apiKeyHint: 'bench',
        keepVersions: 1,
        document: { _id: id, ...fieldsOf(i), $createdAt: now, $updatedAt: now, $version: 1 },
      });
    }
    const result = await store.documents.commit(scope, collection, writes);
    if (!result.ok) throw new Error(`seeding ${collection} conflicted`);
  }
  return ids;
}

/**
 * The in-process server the query benches measure: offsets deep enough for any page, and no
 * automatic indexes, so none is built half-way through a "without index" measurement.
 */
export function startQueryBenchServer(): Promise<TestServer> {
  return startTestServer({
    contract: false,
    config: { plans: { team: { maxOffset: 1_000_000 } }, autoIndexes: { enabled: false } },
  });
}
