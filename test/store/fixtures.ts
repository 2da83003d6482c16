/** Building blocks the store suites share: documents, put writes, and a change-feed reader. */
import { expect } from 'chai';
import { isoNow, newId } from '../../src/ids.js';
import type {
  ChangeEvent,
  ChangeSubscription,
  DataScope,
  DocumentRepository,
  FolioDocument,
  JsonObject,
  PutWrite,
  WriteOperation,
} from '../../src/store/port.js';
import { withTimeout } from '../support/timeout.js';

export const HINT = 'folio_sk_test_...abcd';

/** Version 1 of a new document. */
export function firstVersion(fields: JsonObject = {}, id = newId('doc')): FolioDocument {
  const now = isoNow();
  return { _id: id, ...fields, $createdAt: now, $updatedAt: now, $version: 1 };
}

/** The version after `prev`, with `fields` as its whole content. */
export function nextVersion(prev: FolioDocument, fields: JsonObject): FolioDocument {
  return {
    _id: prev._id,
    ...fields,
    $createdAt: prev.$createdAt,
    $updatedAt: isoNow(),
    $version: prev.$version + 1,
  };
}

/** A put conditioned on the version before `document`'s. */
export function putWrite(
  document: FolioDocument,
  options: { operation?: WriteOperation; keepVersions?: number } = {},
): PutWrite {
  return {
    kind: 'put',
    expectedVersion: document.$version - 1,
    document,
    operation: options.operation ?? (document.$version === 1 ? 'create' : 'update'),
    apiKeyHint: HINT,
    keepVersions: options.keepVersions ?? 10,
  };
}

/** Commit a put of each of `docs` in one commit, which must take them all. */
export async function commitAll(
  documents: DocumentRepository,
  scope: DataScope,
  collection: string,
  docs: FolioDocument[],
): Promise<void> {
  const result = await documents.commit(
    scope,
    collection,
    docs.map((doc) => putWrite(doc)),
  );
  expect(result.ok).to.equal(true);
}

/** Reads one subscription through a single iterator, each step bounded by `waitMs`. */
export class ChangeReader {
  readonly #it: AsyncIterator<ChangeEvent>;

  constructor(
    readonly sub: ChangeSubscription,
    private readonly waitMs = 10_000,
  ) {
    this.#it = sub[Symbol.asyncIterator]();
  }

  async next(): Promise<ChangeEvent> {
    const result = await withTimeout(this.#it.next(), this.waitMs, 'a change event');
    if (result.done) throw new Error(`subscription ended (endedBy ${this.sub.endedBy}) instead of yielding`);
    return result.value;
  }

  async take(n: number): Promise<ChangeEvent[]> {
    const events: ChangeEvent[] = [];
    for (let i = 0; i < n; i++) events.push(await this.next());
    return events;
  }

  /** Resolves when the subscription finishes; fails if it yields an event instead. */
  async ended(): Promise<void> {
    const result = await withTimeout(this.#it.next(), this.waitMs, 'the subscription to end');
    if (!result.done) throw new Error(`expected the end, got event ${JSON.stringify(result.value)}`);
  }
}
