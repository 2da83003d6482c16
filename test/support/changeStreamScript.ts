/**
 * A change stream as a replica set answers it, for the scripted wire server (mongoWire.ts): an
 * oplog of change events, and the `aggregate` of a `$changeStream` answered from it by the
 * server's rules: `startAtOperationTime` starts at that time inclusive (ChangeStreamHistoryLost
 * before the oldest entry); `startAfter`/`resumeAfter` an event token requires that event to
 * pass the stream's own `$match`, else ChangeStreamFatalError 280 "the resume token was not
 * found" (SERVER-107889); a high-water-mark token resumes from its time. Tokens are KeyStrings
 * as the server writes them (`eventToken`, `highWaterMark`), so their hex order is their order.
 */
import { type Document, Timestamp } from 'mongodb';
import { cursorReply, errorReply } from './mongoWire.js';

const hex8 = (n: number) => n.toString(16).toUpperCase().padStart(8, '0');
/** KeyString of a small non-negative integer (kNumericZero, or kNumericPositive1ByteInt n<<1). */
const smallInt = (n: number) => (n === 0 ? '29' : `2B${(n * 2).toString(16).toUpperCase().padStart(2, '0')}`);

/**
 * An event's resume token (version 1): cluster time (t, 1), version 1, tokenType 128 (event),
 * txnOpIndex `op`, fromInvalidate false, a collection UUID, the document key.
 */
export function eventToken(t: number, op = 0): string {
  return `82${hex8(t)}000000012B022C0100${smallInt(op)}6E5A1004${'AB'.repeat(16)}46645F696400${'3C'}6B0004`;
}

/** A post-batch (high-water-mark) token at cluster time (t, 1): tokenType 0, sorts before events. */
export function highWaterMark(t: number): string {
  return `82${hex8(t)}000000012B0229296E04`;
}

export interface OplogEvent {
  /** The change event as the server sends it (`_id: {_data}` is set from `token`). */
  change: Document;
  token: string;
  clusterTime: Timestamp;
}

/** A change event of `db.coll` at cluster time (t, 1), transaction operation `op`. */
export function oplogInsert(db: string, coll: string, id: string, t: number, op = 0): OplogEvent {
  const token = eventToken(t, op);
  const clusterTime = new Timestamp({ t, i: 1 });
  return {
    token,
    clusterTime,
    change: {
      _id: { _data: token },
      operationType: 'insert',
      clusterTime,
      wallTime: new Date(t * 1000),
      ns: { db, coll },
      documentKey: { _id: id },
      fullDocument: {
        _id: id,
        title: `note ${id}`,
        _folio: { version: 1, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' },
      },
    },
  };
}

function valueAt(doc: Document, path: string): unknown {
  let value: unknown = doc;
  for (const part of path.split('.')) value = (value as Document | undefined)?.[part];
  return value;
}

/** `$match` as far as Folio's change-stream pipelines use it: equality, `$in`, `$regex`, `$or`. */
export function matches(doc: Document, filter: Document): boolean {
  return Object.entries(filter).every(([key, condition]) => {
    if (key === '$or') return (condition as Document[]).some((part) => matches(doc, part));
    const value = valueAt(doc, key);
    if (typeof condition !== 'object' || condition === null) return value === condition;
    if ('$in' in condition) return (condition.$in as unknown[]).includes(value);
    if ('$regex' in condition) return typeof value === 'string' && new RegExp(condition.$regex).test(value);
    return false;
  });
}

/** The `$changeStream` stage's options of an aggregate command. */
export function changeStreamOf(command: Document): Document {
  return (command.pipeline as Document[])[0]!.$changeStream as Document;
}

const isEventToken = (token: string) => token.slice(22, 28) === '2C0100';

/**
 * The first batch of a `$changeStream` aggregate over `oplog` (in order), with its cursor id,
 * or the error the server sends. Later getMores of an idle deployment answer an empty batch
 * with the same post-batch token (`idleReply`).
 */
export function answerChangeStream(command: Document, oplog: OplogEvent[], cursorId: number): Document {
  const spec = changeStreamOf(command);
  const match = ((command.pipeline as Document[]).find((stage) => '$match' in stage)?.$match ??
    {}) as Document;
  const visible = oplog.filter((event) => matches(event.change, match));
  const latest = oplog.at(-1)?.clusterTime.t ?? 1;
  const end = highWaterMark(latest + 1);
  const resume = (spec.startAfter ?? spec.resumeAfter)?._data as string | undefined;
  let batch: OplogEvent[];
  if (resume !== undefined) {
    if (isEventToken(resume) && !visible.some((event) => event.token === resume)) {
      return {
        ...errorReply(
          280,
          'ChangeStreamFatalError',
          `PlanExecutor error during aggregation :: caused by :: cannot resume stream; the resume token was not found. {_data: "${resume}"}`,
        ),
        errorLabels: ['NonResumableChangeStreamError'],
      };
    }
    batch = visible.filter((event) => event.token > resume);
  } else if (spec.startAtOperationTime) {
    const from = spec.startAtOperationTime as Timestamp;
    if (oplog.length > 0 && from.lessThan(oplog[0]!.clusterTime)) {
      return errorReply(
        286,
        'ChangeStreamHistoryLost',
        'Resume of change stream was not possible, as the resume point may no longer be in the oplog.',
      );
    }
    batch = visible.filter((event) => event.clusterTime.greaterThanOrEqual(from));
  } else {
    batch = [];
  }
  return cursorReply(
    cursorId,
    batch.map((event) => event.change),
    end,
    true,
  );
}

/** getMore on an idle cursor: an empty batch after a pause (a real server waits maxAwaitTimeMS). */
export async function idleReply(cursorId: number, token: string): Promise<Document> {
  await new Promise((resolve) => setTimeout(resolve, 30));
  return cursorReply(cursorId, [], token, false);
}
