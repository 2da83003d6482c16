/**
 * The webhook bench's receiver in a process of its own, so that receiving (parsing 20,000
 * requests a minute, answering them) does not share the server's event loop and inflate what a
 * write costs beside deliveries. The child runs test/support/receiver.ts and reports each
 * answered request (path, delivery id, event timestamp, arrival time, status) to the bench in
 * batches over IPC; the bench tells it which paths to fail.
 *
 * Run as a child only: `startRemoteReceiver()` forks this file.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Arrivals } from '../test/support/receiver.js';

/** One answered request, as the bench needs it. */
export interface Arrival {
  path: string;
  deliveryId: string;
  /** The event's commit time (`X-Service-Timestamp`), ms since epoch. */
  eventAt: number;
  /** When the receiver read the request, ms since epoch (same machine clock as the server). */
  at: number;
  status: number;
}

type ToChild = { failPrefix: string | null } | { close: true };
type ToParent = { url: string } | { arrivals: Arrival[] } | { ack: true } | { closed: true };

/** How often the child sends what arrived: the bench's waits see arrivals this late at most. */
const REPORT_EVERY_MS = 20;

export interface RemoteReceiver {
  url: string;
  /** Everything answered so far, in arrival order; the bench may empty it. */
  arrivals: Arrival[];
  /** Called with each batch of arrivals as it comes. */
  onArrivals: ((batch: Arrival[]) => void) | null;
  /** Requests whose path starts with `prefix` are answered 500 from now on; null: all 200. */
  failPaths(prefix: string | null): Promise<void>;
  /** Resolves once `count` arrivals are in `arrivals`. */
  waitFor(count: number, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function startRemoteReceiver(): Promise<RemoteReceiver> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const arrivals = new Arrivals();
  let closed: (() => void) | null = null;
  let acked: (() => void) | null = null;
  const remote: RemoteReceiver = {
    url: '',
    arrivals: [],
    onArrivals: null,
    failPaths(prefix) {
      return new Promise<void>((resolve) => {
        acked = resolve;
        child.send({ failPrefix: prefix } satisfies ToChild);
      });
    },
    async waitFor(count, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (remote.arrivals.length < count) {
        if (Date.now() > deadline) {
          throw new Error(`receiver got ${remote.arrivals.length} requests, expected ${count}`);
        }
        await arrivals.next(100);
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        closed = resolve;
        child.send({ close: true } satisfies ToChild);
      }),
  };
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`receiver process exited (${code})`)));
    child.on('message', (message: ToParent) => {
      if ('url' in message) {
        remote.url = message.url;
        resolve();
      } else if ('arrivals' in message) {
        for (const arrival of message.arrivals) remote.arrivals.push(arrival);
        remote.onArrivals?.(message.arrivals);
        arrivals.wake();
      } else if ('ack' in message) {
        acked?.();
      } else if ('closed' in message) {
        child.disconnect();
        closed?.();
      }
    });
  });
  child.removeAllListeners('exit');
  return remote;
}

async function runChild(): Promise<void> {
  const { startReceiver } = await import('../test/support/receiver.js');
  const receiver = await startReceiver();
  let failPrefix: string | null = null;
  let batch: Arrival[] = [];
  receiver.respond = (r) => (failPrefix !== null && String(r.path).startsWith(failPrefix) ? 500 : 200);
  const report = setInterval(() => {
    // The receiver's own log is emptied as it goes: the child's memory stays flat.
    for (const r of receiver.requests) {
      batch.push({
        path: r.path,
        deliveryId: String(r.headers['x-service-delivery-id'] ?? ''),
        eventAt: Date.parse(String(r.headers['x-service-timestamp'] ?? '')),
        at: r.at,
        status: r.status,
      });
    }
    receiver.requests.length = 0;
    if (batch.length > 0) {
      process.send?.({ arrivals: batch } satisfies ToParent);
      batch = [];
    }
  }, REPORT_EVERY_MS);
  process.on('message', async (message: ToChild) => {
    if ('failPrefix' in message) {
      failPrefix = message.failPrefix;
      process.send?.({ ack: true } satisfies ToParent);
    } else if ('close' in message) {
      clearInterval(report);
      await receiver.close();
      process.send?.({ closed: true } satisfies ToParent);
    }
  });
  // The bench ended without closing it (killed, failed): nothing more to receive for.
  process.on('disconnect', () => process.exit(0));
  process.send?.({ url: receiver.url } satisfies ToParent);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runChild();
