/**
 * Request ids: `req_` + 16 hex characters drawn once per source from crypto random bytes + `-` +
 * a counter in base 36. One source per process: ids are unique across instances and restarts
 * (64 random bits each) and cost a counter increment per request, where a ULID drew random
 * bytes and encoded the time for every request (about 5% of a GET's CPU under load).
 */
import { randomBytes } from 'node:crypto';

export class RequestIdSource {
  readonly prefix: string;
  #counter = 0;

  constructor(random: Buffer = randomBytes(8)) {
    this.prefix = `req_${random.toString('hex')}-`;
  }

  next(): string {
    this.#counter += 1;
    return this.prefix + this.#counter.toString(36);
  }
}

const processSource = new RequestIdSource();

/** The next id of this process's source. */
export function newRequestId(): string {
  return processSource.next();
}

/** What a generated id looks like (tests and log readers). */
export const REQUEST_ID_PATTERN = /^req_[0-9a-f]{16}-[0-9a-z]+$/;
