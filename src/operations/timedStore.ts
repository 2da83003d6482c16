/**
 * The store seen through a timer: every repository method that returns a promise records its
 * duration in `folio_store_operation_duration_seconds` under `repository.method`; methods that
 * return anything else (scans, change subscriptions) pass through untimed.
 *
 * The wrappers are made once per repository object, from the methods it has (its own and its
 * classes'), so the port can grow methods without this file changing. They were a Proxy until
 * it showed in a GET's profile: two traps, a property lookup and two map lookups on every
 * storage call, where a wrapper made in advance costs one call.
 */
import type { Store } from '../store/port.js';
import type { LatencySeries } from './latencyHistogram.js';
import type { FolioMetrics } from './metrics.js';

const TIMED_REPOSITORIES = [
  'documents',
  'accounts',
  'counters',
  'webhooks',
  'deliveries',
  'consumers',
  'streamSlots',
  'schemas',
  'trash',
  'attemptLocks',
  'deliveryBodies',
] as const satisfies ReadonlyArray<keyof Store>;

export function timedStore(store: Store, metrics: FolioMetrics): Store {
  const timed = forwarding(store, (method) => method.bind(store));
  for (const name of TIMED_REPOSITORIES) {
    // Read from the store on each access, as the store's own getter is (a repository exists
    // from `init` to `close`), and wrapped again only when it is another object.
    let repository: object | null = null;
    let wrapped: object | null = null;
    Object.defineProperty(timed, name, {
      get() {
        const current: object = store[name];
        if (current !== repository || !wrapped) {
          repository = current;
          // No new properties: a write of one the repository did not have when it was wrapped
          // throws (strict mode) instead of staying on the wrapper, unseen by the repository.
          wrapped = Object.preventExtensions(
            forwarding(current, (method, prop) => timedMethod(current, method, `${name}.${prop}`, metrics)),
          );
        }
        return wrapped;
      },
      enumerable: true,
      configurable: true,
    });
  }
  // The store's wrapper takes no new properties either, once its repositories are defined.
  return Object.preventExtensions(timed) as Store;
}

type Method = (...args: unknown[]) => unknown;

/**
 * An object that reads through to `target` (its prototype), with every method of `target` (its
 * own, and its classes') replaced by `wrap`'s and every other property forwarded: a class's
 * methods and getters read private fields, which only `target` itself holds, and a property
 * written through the wrapper must land on `target`, not on the wrapper in front of it (where
 * `target`'s own methods would never see it). A method `target` gains after it was wrapped
 * reads through, untimed.
 */
function forwarding(target: object, wrap: (method: Method, prop: string) => Method): object {
  const out: object = Object.create(target);
  const seen = new Set<string>(['constructor']);
  for (
    let level: object | null = target;
    level && level !== Object.prototype;
    level = Object.getPrototypeOf(level)
  ) {
    for (const prop of Object.getOwnPropertyNames(level)) {
      if (seen.has(prop)) continue;
      seen.add(prop);
      const descriptor = Object.getOwnPropertyDescriptor(level, prop)!;
      if (descriptor.get || descriptor.set || typeof descriptor.value !== 'function') {
        Object.defineProperty(out, prop, {
          get: () => Reflect.get(target, prop),
          set: (value: unknown) => Reflect.set(target, prop, value),
          configurable: true,
        });
      } else {
        Object.defineProperty(out, prop, {
          value: wrap(descriptor.value as Method, prop),
          configurable: true,
        });
      }
    }
  }
  return out;
}

function timedMethod(target: object, method: Method, operation: string, metrics: FolioMetrics): Method {
  // Made on the first outcome of each kind, so a method that never returns a promise (or never
  // fails) shows no series.
  let ok: LatencySeries | null = null;
  let failed: LatencySeries | null = null;
  const seconds = (started: number) => (performance.now() - started) / 1000;
  const fail = (started: number) => {
    failed ??= metrics.storeDuration.series({ operation, outcome: 'error' });
    failed.observe(seconds(started));
  };
  return (...args: unknown[]) => {
    const started = performance.now();
    let result: unknown;
    try {
      result = method.apply(target, args);
    } catch (error) {
      fail(started);
      throw error;
    }
    if (!(result instanceof Promise)) return result;
    return result.then(
      (resolved) => {
        ok ??= metrics.storeDuration.series({ operation, outcome: 'ok' });
        ok.observe(seconds(started));
        return resolved;
      },
      (error: unknown) => {
        fail(started);
        throw error;
      },
    );
  };
}
