/**
 * The `changes` table: the embedded store's outbox and event history. `documents.ts` appends one
 * row per write inside the write's transaction; the change feed tails it and reads history from
 * it. Tokens are the row's `seq` in decimal: AUTOINCREMENT makes seq strictly increasing in
 * commit order (SQLite has one writer at a time) and, since a rolled-back insert also rolls back
 * the sequence, contiguous except where pruning removed a prefix.
 */
import type Database from 'better-sqlite3';
import type { ChangeEvent, ChangeType, FolioDocument } from '../../port.js';
import { ChunkedSweep, chunkWasFull } from '../database/chunkedSweep.js';
import { scopeFromKey } from '../layout/scopeKey.js';
import { BOUND_COUNT, boundCount } from '../query/sqlLimit.js';

export interface ChangeRow {
  seq: number;
  scope: string;
  collection: string;
  type: ChangeType;
  doc_id: string;
  document: string;
  timestamp: string;
}

const COLUMNS = 'seq, scope, collection, type, doc_id, document, timestamp';

/** The decimal seq a token stands for, or null when it is not one of ours. */
export function parseSeqToken(token: string): number | null {
  if (!/^(0|[1-9][0-9]{0,15})$/.test(token)) return null;
  const seq = Number(token);
  return Number.isSafeInteger(seq) ? seq : null;
}

/** Orders two tokens of this store. */
export function compareSeqTokens(a: string, b: string): number {
  return Number(a) - Number(b);
}

/** The fan-out key of a scope's collection. */
export function feedKey(scopeKey: string, collection: string): string {
  return `${scopeKey}/${collection}`;
}

export interface LoggedChange {
  seq: number;
  key: string;
  event: ChangeEvent;
}

function toLogged(row: ChangeRow): LoggedChange {
  const event = {
    token: String(row.seq),
    scope: scopeFromKey(row.scope),
    type: row.type,
    collection: row.collection,
    documentId: row.doc_id,
    document: undefined as unknown as FolioDocument,
    timestamp: row.timestamp,
  };
  // The tail reads back every row it publishes, and most events are looked at by no one who
  // needs the document (the webhook dispatcher skips collections without webhooks): parsing
  // them all was a third of an import's commit time. Parsed on first read, then kept; still an
  // own enumerable property, so spreading, JSON and deep equality see the document.
  const text = row.document;
  Object.defineProperty(event, 'document', {
    enumerable: true,
    configurable: true,
    get(): FolioDocument {
      const document = JSON.parse(text) as FolioDocument;
      Object.defineProperty(event, 'document', {
        value: document,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      return document;
    },
    set(value: FolioDocument) {
      Object.defineProperty(event, 'document', {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    },
  });
  return { seq: row.seq, key: feedKey(row.scope, row.collection), event };
}

/** One entry of the changes_timestamp index. */
export interface IndexEntry {
  timestamp: string;
  seq: number;
}

/**
 * Where a change-log prune stands: finding its boundary (the newest seq older than the cutoff,
 * walking the timestamp index after `after`), deleting the prefix up to it, or done.
 */
export type PruneState =
  | { phase: 'find'; after: IndexEntry; boundary: number | null }
  | { phase: 'delete'; boundary: number }
  | { phase: 'done' };

/** Before the first page: every timestamp sorts after the empty string. */
export const START_PRUNE: PruneState = { phase: 'find', after: { timestamp: '', seq: 0 }, boundary: null };

/** The state after a page of index entries older than the cutoff (at most `chunkRows`). */
export function afterFindPage(
  state: Extract<PruneState, { phase: 'find' }>,
  page: readonly IndexEntry[],
  chunkRows: number,
): PruneState {
  let boundary = state.boundary;
  for (const entry of page) boundary = boundary === null ? entry.seq : Math.max(boundary, entry.seq);
  const last = page.at(-1);
  if (last && chunkWasFull(page.length, chunkRows)) return { phase: 'find', after: last, boundary };
  return boundary === null ? { phase: 'done' } : { phase: 'delete', boundary };
}

/** The state after a chunk of the prefix removed `removed` rows (of at most `chunkRows`). */
export function afterDeleteChunk(
  state: Extract<PruneState, { phase: 'delete' }>,
  removed: number,
  chunkRows: number,
): PruneState {
  return chunkWasFull(removed, chunkRows) ? state : { phase: 'done' };
}

/** No row is held back (a seq no log reaches, and one SQLite binds as an integer). */
const NOT_HELD = Number.MAX_SAFE_INTEGER;

/**
 * The documents' text the rows this connection committed may hold while the tail has not taken
 * them (rows held back behind deferred commits); past it they are dropped and the tail reads
 * them back from the table, as it does every other connection's rows.
 */
export const OWN_ROWS_MAX_BYTES = 8 * 1024 * 1024;

/** What a kept row holds, about: its document's text and the row's own fields. */
export function ownRowBytes(row: ChangeRow): number {
  return 2 * row.document.length + 160;
}

export class ChangeLog {
  readonly #insert: Database.Statement<[string, string, ChangeType, string, string, string]>;
  readonly #after: Database.Statement<[number, number, number], ChangeRow>;
  readonly #afterIn: Database.Statement<[string, string, number, number, number], ChangeRow>;
  readonly #oldestSeq: Database.Statement<[], { seq: number | null }>;
  readonly #lastIssuedSeq: Database.Statement<[], { seq: number }>;
  readonly #pruneFind: Database.Statement<
    { before: string; afterTimestamp: string; afterSeq: number; rows: number },
    IndexEntry
  >;
  readonly #pruneChunk: Database.Statement<[number, number]>;
  readonly #scrub: Database.Statement<[string, string, string]>;
  readonly #pruning: ChunkedSweep;
  /**
   * The first seq written by a commit not yet on disk (groupCommit.ts, deferred commits), or
   * none: readers stop before it, so no event is published, or read back, for a write that a
   * power loss could still take away.
   */
  #heldFrom = NOT_HELD;
  /**
   * While the tail runs, the rows this connection appends are kept as appended, so the tail
   * publishes them without reading them back (a tenth of an import's commit work): `#group`
   * holds the current group's until it commits, `#own` the committed ones the tail has not taken.
   */
  #keepOwn = false;
  #group: ChangeRow[] = [];
  #own: ChangeRow[] = [];
  #ownFirst = 0;
  #ownBytes = 0;
  readonly #ownMaxBytes: number;

  constructor(
    db: Database.Database,
    options: { pruneChunkRows?: number | undefined; ownRowsMaxBytes?: number | undefined } = {},
  ) {
    this.#ownMaxBytes = options.ownRowsMaxBytes ?? OWN_ROWS_MAX_BYTES;
    this.#pruning = new ChunkedSweep(options.pruneChunkRows);
    this.#insert = db.prepare(
      'INSERT INTO changes (scope, collection, type, doc_id, document, timestamp) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.#after = db.prepare(
      `SELECT ${COLUMNS} FROM changes WHERE seq > ? AND seq < ? ORDER BY seq LIMIT ${BOUND_COUNT}`,
    );
    this.#afterIn = db.prepare(
      `SELECT ${COLUMNS} FROM changes WHERE scope = ? AND collection = ? AND seq > ? AND seq < ? ORDER BY seq LIMIT ${BOUND_COUNT}`,
    );
    this.#oldestSeq = db.prepare('SELECT min(seq) AS seq FROM changes');
    this.#lastIssuedSeq = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'changes'");
    // Delete a prefix of the log (by seq, not by timestamp alone) so the retained rows stay
    // contiguous even if the clock stepped backwards; `isLost` relies on that. The prefix ends
    // at the newest row older than the cutoff (a range of changes_timestamp), and goes in chunks
    // from its oldest row (a range of the primary key): after each chunk the log is still a
    // contiguous suffix, so a resume token meets the same history_lost rule mid-sweep.
    // The boundary is found by walking changes_timestamp in pages: `max(seq) WHERE timestamp <
    // ?` in one statement scans either every expired entry or, as SQLite plans it, the table
    // backwards from the newest row, so every retained row, even when nothing has expired.
    // Two ranges of the index, so that a page starts where the last one ended even among many
    // rows of one timestamp (an import writes hundreds per millisecond): the rest of the last
    // page's timestamp (timestamp = ? AND rowid > ?), then the timestamps after it.
    this.#pruneFind = db.prepare(
      `SELECT timestamp, seq FROM (
         SELECT timestamp, seq FROM changes INDEXED BY changes_timestamp
         WHERE timestamp = @afterTimestamp AND seq > @afterSeq AND timestamp < @before ORDER BY seq LIMIT ${boundCount('rows')})
       UNION ALL
       SELECT timestamp, seq FROM (
         SELECT timestamp, seq FROM changes INDEXED BY changes_timestamp
         WHERE timestamp > @afterTimestamp AND timestamp < @before ORDER BY timestamp, seq LIMIT ${boundCount('rows')})
       ORDER BY timestamp, seq LIMIT ${boundCount('rows')}`,
    );
    // Erasing an id scrubs its events: without an index on the id that walked every retained
    // event of the collection (30-45 ms an id with 250,000 of them, and a trash sweep erases up
    // to 500 ids in one transaction). One more index entry per change row: no measurable cost
    // on a create (~55 µs). Created here, idempotently, as deliveries.ts creates its own.
    db.exec('CREATE INDEX IF NOT EXISTS changes_doc ON changes (doc_id)');
    // What a consumer of an old event still needs (which document, which version), nothing more.
    this.#scrub = db.prepare(
      "UPDATE changes INDEXED BY changes_doc SET document = json_object('_id', doc_id, '$createdAt', document ->> '$.\"$createdAt\"', " +
        "'$updatedAt', document ->> '$.\"$updatedAt\"', '$version', document ->> '$.\"$version\"') " +
        'WHERE scope = ? AND collection = ? AND doc_id = ?',
    );
    this.#pruneChunk = db.prepare(
      `DELETE FROM changes WHERE seq IN (SELECT seq FROM changes WHERE seq <= ? ORDER BY seq LIMIT ${BOUND_COUNT})`,
    );
  }

  /** Record one change; call inside the write's transaction. */
  /** `documentJson` is the event's document already serialised (the writer has it at hand). */
  append(
    scopeKey: string,
    collection: string,
    type: ChangeType,
    documentId: string,
    documentJson: string,
    timestamp: string,
  ) {
    const { lastInsertRowid } = this.#insert.run(
      scopeKey,
      collection,
      type,
      documentId,
      documentJson,
      timestamp,
    );
    if (!this.#keepOwn) return;
    const seq = Number(lastInsertRowid);
    // A seq issued again: a savepoint rolled back the rows from it on (AUTOINCREMENT's counter
    // rolls back with them), so they were never written.
    const group = this.#group;
    while (group.length > 0 && group[group.length - 1]!.seq >= seq) group.pop();
    group.push({
      seq,
      scope: scopeKey,
      collection,
      type,
      doc_id: documentId,
      document: documentJson,
      timestamp,
    });
  }

  /** Keep this connection's rows for the tail (while it runs), or stop and forget them. */
  keepOwnRows(keep: boolean): void {
    this.#keepOwn = keep;
    this.#forgetOwnRows();
  }

  /**
   * An erased document's events keep its id and metadata only (trash.ts erases; call inside its
   * transaction). The rows kept for the tail are forgotten too, so the tail reads the scrubbed
   * rows from the table: no kept copy publishes what the table no longer holds.
   */
  scrub(scopeKey: string, collection: string, documentId: string): void {
    this.#scrub.run(scopeKey, collection, documentId);
    this.#forgetOwnRows();
  }

  #forgetOwnRows(): void {
    this.#group = [];
    this.#dropOwn();
  }

  /** A group's transaction begins (again, after a rollback): its rows so far were not written. */
  groupStarted(): void {
    if (this.#group.length > 0) this.#group = [];
  }

  /** The group's transaction committed: its rows are the tail's to take. */
  groupCommitted(): void {
    const group = this.#group;
    if (group.length === 0) return;
    this.#group = [];
    // Rows a savepoint rolled back at the end of the group were issued no seq that stayed.
    const lastIssued = this.lastIssued();
    for (const row of group) {
      if (row.seq > lastIssued) break;
      this.#own.push(row);
      this.#ownBytes += ownRowBytes(row);
    }
    // Past the bound the tail reads them back instead, as it reads every other connection's.
    if (this.#ownBytes > this.#ownMaxBytes) this.#dropOwn();
  }

  /**
   * The visible rows this connection committed right after `seq`, in order and without a gap,
   * taken out of the log's keeping; null when the kept rows do not start right after `seq` (none
   * kept, or another connection's rows, or rows dropped, come first): read them with `after`.
   */
  takeOwnAfter(seq: number): LoggedChange[] | null {
    const own = this.#own;
    let i = this.#ownFirst;
    // Rows the tail already read back from the table.
    for (; i < own.length && own[i]!.seq <= seq; i++) this.#ownBytes -= ownRowBytes(own[i]!);
    let taken: LoggedChange[] | null = null;
    if (i < own.length && own[i]!.seq === seq + 1) {
      taken = [];
      for (let next = seq + 1; i < own.length && own[i]!.seq === next && next < this.#heldFrom; i++, next++) {
        this.#ownBytes -= ownRowBytes(own[i]!);
        taken.push(toLogged(own[i]!));
      }
    }
    this.#ownFirst = i;
    if (i === own.length) this.#dropOwn();
    else if (2 * i >= own.length) {
      // What was taken goes with the array's front half, so the array never outgrows the bound.
      this.#own = own.slice(i);
      this.#ownFirst = 0;
    }
    return taken;
  }

  /** Whether kept rows remain that `takeOwnAfter` stopped before (a gap, or held back). */
  get ownRowsLeft(): boolean {
    return this.#ownFirst < this.#own.length;
  }

  #dropOwn(): void {
    this.#own = [];
    this.#ownFirst = 0;
    this.#ownBytes = 0;
  }

  /** Up to `max` changes after `seq`, of every scope and collection; only those on disk. */
  after(seq: number, max: number): LoggedChange[] {
    return this.#after.all(seq, this.#heldFrom, max).map(toLogged);
  }

  /**
   * A catch-up page: up to `max` changes after `seq` (of one scope's collection, or of all), on
   * disk, stopping once their documents' text reaches `maxBytes` (one row at least); `full` when
   * it stopped on either bound, so more rows may follow.
   */
  page(
    only: { scopeKey: string; collection: string } | null,
    seq: number,
    max: number,
    maxBytes: number,
  ): { changes: LoggedChange[]; full: boolean } {
    const rows = only
      ? this.#afterIn.iterate(only.scopeKey, only.collection, seq, this.#heldFrom, max)
      : this.#after.iterate(seq, this.#heldFrom, max);
    const changes: LoggedChange[] = [];
    let bytes = 0;
    for (const row of rows) {
      changes.push(toLogged(row));
      bytes += row.document.length;
      if (bytes >= maxBytes) break;
    }
    return { changes, full: changes.length >= max || bytes >= maxBytes };
  }

  /** The newest seq ever issued (0 before the first write), pruned or not. */
  lastIssued(): number {
    return this.#lastIssuedSeq.get()?.seq ?? 0;
  }

  /** The newest seq readers may see: the last issued, or the last before the held rows. */
  lastVisible(): number {
    return Math.min(this.lastIssued(), this.#heldFrom - 1);
  }

  /** Rows appended from now on are not on disk yet: hide them (until `release`). */
  hold(): void {
    if (this.#heldFrom === NOT_HELD) this.#heldFrom = this.lastIssued() + 1;
  }

  /** Whether rows are held back: a deferred commit landed and no durable one since. */
  get holding(): boolean {
    return this.#heldFrom !== NOT_HELD;
  }

  /** Everything appended so far is on disk. */
  release(): void {
    this.#heldFrom = NOT_HELD;
  }

  /** Whether some change after `seq` is no longer retained. */
  isLost(seq: number): boolean {
    const lastIssued = this.lastIssued();
    const oldest = this.#oldestSeq.get()?.seq ?? null;
    // Retained seqs are contiguous up to lastIssued, so anything missing lies below `oldest`.
    const firstRetained = oldest ?? lastIssued + 1;
    return seq < firstRetained - 1;
  }

  /**
   * Delete changes committed before `beforeIso`, in chunks (chunkedSweep.ts); how many went.
   * A prune asked for while one runs waits for it.
   */
  prune(beforeIso: string): Promise<number> {
    return this.#pruning.run(
      () => ({ current: START_PRUNE }),
      (state, chunkRows) => {
        const at = state.current;
        if (at.phase === 'find') {
          const page = this.#pruneFind.all({
            before: beforeIso,
            afterTimestamp: at.after.timestamp,
            afterSeq: at.after.seq,
            rows: chunkRows,
          });
          state.current = afterFindPage(at, page, chunkRows);
          return { removed: 0, more: state.current.phase !== 'done' };
        }
        if (at.phase === 'delete') {
          const removed = this.#pruneChunk.run(at.boundary, chunkRows).changes;
          state.current = afterDeleteChunk(at, removed, chunkRows);
          return { removed, more: state.current.phase !== 'done' };
        }
        return { removed: 0, more: false };
      },
    );
  }

  /** Whether a prune is under way. */
  get pruning(): boolean {
    return this.#pruning.running;
  }

  /** No prune chunk runs after this (the store is closing); waits for the one under way. */
  stopPruning(): Promise<void> {
    return this.#pruning.stop();
  }
}
