/**
 * The store seen through a timer: every repository method that returns a promise records its
 * duration in `folio_store_operation_duration_seconds` under `repository.method`. A Proxy rather
 * than a hand-written wrapper, so the port can grow methods without this file changing; methods
 * that return iterables (scans, change subscriptions) pass through untimed.
 */
import type { Store } from '../store/port.js';
import type { FolioMetrics } from './metrics.js';

const TIMED_REPOSITORIES = new Set([
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
]);

export function timedStore(store: Store, metrics: FolioMetrics): Store {
  const repositories = new Map<string | symbol, object>();
  return new Proxy(store, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof prop === 'string' && TIMED_REPOSITORIES.has(prop) && typeof value === 'object' && value) {
        let timed = repositories.get(prop);
        if (!timed) {
          timed = timedRepository(prop, value, metrics);
          repositories.set(prop, timed);
        }
        return timed;
      }
      // Methods run on the real store: its private fields are not reachable through a Proxy.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function timedRepository<T extends object>(name: string, repository: T, metrics: FolioMetrics): T {
  const methods = new Map<string | symbol, unknown>();
  return new Proxy(repository, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      let method = methods.get(prop);
      if (!method) {
        const operation = `${name}.${prop}`;
        method = (...args: unknown[]) => {
          const end = metrics.storeDuration.startTimer({ operation });
          let result: unknown;
          try {
            result = value.apply(target, args);
          } catch (error) {
            end({ outcome: 'error' });
            throw error;
          }
          if (!(result instanceof Promise)) return result;
          return result.then(
            (resolved) => {
              end({ outcome: 'ok' });
              return resolved;
            },
            (error: unknown) => {
              end({ outcome: 'error' });
              throw error;
            },
          );
        };
        methods.set(prop, method);
      }
      return method;
    },
  });
}
