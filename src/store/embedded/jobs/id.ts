/**
 * Ids for Agenda jobs in the embedded store. Agenda 6's `JobId` is a branded string; the MongoDB
 * backend uses ObjectId hex strings, so the embedded store makes ids of the same shape (24 hex
 * digits laid out like an ObjectId: seconds, per-process random, counter). Code and tools that
 * handle job ids then see one format whichever store runs, and ids sort by creation time.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { type JobId, toJobId } from 'agenda';

const COUNTER_LIMIT = 0x1000000;

// Separates processes that share a database file and create ids in the same second.
const processUnique = randomBytes(5);
let counter = randomInt(COUNTER_LIMIT);

export function newJobId(nowMs: number = Date.now()): JobId {
  const bytes = Buffer.alloc(12);
  bytes.writeUInt32BE(Math.floor(nowMs / 1000) % 2 ** 32, 0);
  processUnique.copy(bytes, 4);
  counter = (counter + 1) % COUNTER_LIMIT;
  bytes.writeUIntBE(counter, 9, 3);
  return toJobId(bytes.toString('hex'));
}
