/**
 * The embedded change feed. The `changes` table is the outbox: `documents.ts` appends one row per
 * write inside the write's transaction (`append`), then hands the committed events to `publish`.
 * The embedded store is single-process, so that in-process notification is the live source; one
 * per scope/collection, fanned out to every subscription by `FanOut`.
 *
 * Tokens are the row's `seq` in decimal. AUTOINCREMENT makes seq strictly increasing and, since a
 * rolled-back insert also rolls back the sequence, contiguous except where pruning removed rows.
 */
import type Database from 'better-sqlite3';
import { FanOut, QueueSubscription } from '../fanOut.js';
import type {
  ChangeEvent,
  ChangeFeed,
  ChangeFeedEnd,
  ChangeSubscription,
  ChangeType,
  DataScope,
  FolioDocument,
} from '../port.js';
import { scopeKeyOf } from './scopeKey.js';

interface ChangeRow {
  seq: number;
  collection: string;
  type: ChangeType;
  doc_id: string;
  document: string;
  timestamp: string;
}

/**
 * Drops events it has already seen, so the replay→live hand-over can never deliver one twice
 * even if a live event overlaps the replayed range.
 */
class SeqSubscription extends QueueSubscription {
  lastSeq = 0;

  override push(event: ChangeEvent): void {
    const seq = Number(event.token);
    if (seq <= this.lastSeq) return;
    this.lastSeq = seq;
    super.push(event);
  }
}

/** The decimal seq a token stands for, or null when it is not one of ours. */
function parseToken(token: string): number | null {
  if (!/^(0|[1-9][0-9]{0,15})$/.test(token)) return null;
  const seq = Number(token);
  return Number.isSafeInteger(seq) ? seq : null;
}

function toEvent(row: ChangeRow): ChangeEvent {
  return {
    token: String(row.seq),
    type: row.type,
    collection: row.collection,
    documentId: row.doc_id,
    document: JSON.parse(row.document) as FolioDocument,
    timestamp: row.timestamp,
  };
}

export class EmbeddedChangeFeed implements ChangeFeed {
  readonly #retentionMs: number;
  readonly #fanOut: FanOut;
  /** The live source of each open fan-out key: called by `publish` after a commit. */
  readonly #live = new Map<string, (event: ChangeEvent) => void>();
  #closed = false;

  readonly #insert: Database.Statement<[string, string, ChangeType, string, string, string]>;
  readonly #replay: Database.Statement<[string, string, number], ChangeRow>;
  readonly #oldestSeq: Database.Statement<[], { seq: number | null }>;
  readonly #lastIssuedSeq: Database.Statement<[], { seq: number }>;
  readonly #prune: Database.Statement<[string]>;

  constructor(db: Database.Database, retentionMs: number) {
    this.#retentionMs = retentionMs;
    this.#fanOut = new FanOut((key, emit) => {
      this.#live.set(key, emit);
      return () => this.#live.delete(key);
    });
    this.#insert = db.prepare<[string, string, ChangeType, string, string, string]>(
      'INSERT INTO changes (scope, collection, type, doc_id, document, timestamp) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.#replay = db.prepare<[string, string, number], ChangeRow>(
      'SELECT seq, collection, type, doc_id, document, timestamp FROM changes ' +
        'WHERE scope = ? AND collection = ? AND seq > ? ORDER BY seq',
    );
    this.#oldestSeq = db.prepare<[], { seq: number | null }>('SELECT min(seq) AS seq FROM changes');
    this.#lastIssuedSeq = db.prepare<[], { seq: number }>(
      "SELECT seq FROM sqlite_sequence WHERE name = 'changes'",
    );
    // Delete a prefix of the log (by seq, not by timestamp alone) so the retained rows stay
    // contiguous even if the clock stepped backwards; `watch` relies on that.
    this.#prune = db.prepare<[string]>(
      'DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes WHERE timestamp < ?)',
    );
  }

  /** Open live sources: one per watched scope/collection, never one per subscription. */
  get sourceCount(): number {
    return this.#fanOut.sourceCount;
  }

  /** Record one change; call inside the write's transaction. */
  append(
    scopeKey: string,
    collection: string,
    type: ChangeType,
    document: FolioDocument,
    timestamp: string,
  ): ChangeEvent {
    const json = JSON.stringify(document);
    const result = this.#insert.run(scopeKey, collection, type, document._id, json, timestamp);
    return {
      token: String(result.lastInsertRowid),
      type,
      collection,
      documentId: document._id,
      // A copy of exactly what was logged: live and replayed events are alike, and the writer
      // mutating its object afterwards cannot change what subscribers see.
      document: JSON.parse(json) as FolioDocument,
      timestamp,
    };
  }

  /** Deliver events of a committed transaction to the live subscriptions of that collection. */
  publish(scopeKey: string, collection: string, events: readonly ChangeEvent[]): void {
    const emit = this.#live.get(feedKey(scopeKey, collection));
    if (!emit) return;
    for (const event of events) emit(event);
  }

  watch(scope: DataScope, collection: string, options?: { after?: string | undefined }): ChangeSubscription {
    const key = feedKey(scopeKeyOf(scope), collection);
    const sub = new SeqSubscription((s) => this.#fanOut.unsubscribe(key, s));
    if (this.#closed) {
      sub.end('store_closed');
      return sub;
    }
    // Replay and attach happen in one synchronous stretch, and commits publish synchronously
    // after their transaction, so no commit can fall between the two: no gap, no duplicate.
    if (options?.after !== undefined) {
      const after = parseToken(options.after);
      if (after === null || this.#historyLost(after)) {
        sub.end('history_lost');
        return sub;
      }
      sub.lastSeq = after;
      for (const row of this.#replay.iterate(scopeKeyOf(scope), collection, after)) sub.push(toEvent(row));
    } else {
      sub.lastSeq = this.#lastIssued();
    }
    this.#fanOut.subscribe(key, sub);
    return sub;
  }

  /** Delete events older than the retention period; returns how many went. */
  prune(nowMs: number = Date.now()): number {
    return this.#prune.run(new Date(nowMs - this.#retentionMs).toISOString()).changes;
  }

  /** End every subscription with `store_closed`; later `watch` calls end at once. */
  close(reason: ChangeFeedEnd = 'store_closed'): void {
    this.#closed = true;
    this.#fanOut.closeAll(reason);
  }

  /** Whether some event after `after` is no longer retained (or `after` was never issued). */
  #historyLost(after: number): boolean {
    const lastIssued = this.#lastIssued();
    if (after > lastIssued) return true;
    const oldest = this.#oldestSeq.get()?.seq ?? null;
    // Retained seqs are contiguous up to lastIssued, so anything missing lies below `oldest`.
    const firstRetained = oldest ?? lastIssued + 1;
    return after < firstRetained - 1;
  }

  #lastIssued(): number {
    return this.#lastIssuedSeq.get()?.seq ?? 0;
  }
}

function feedKey(scopeKey: string, collection: string): string {
  return `${scopeKey}/${collection}`;
}
