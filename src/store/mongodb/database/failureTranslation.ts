/**
 * Every repository method of the MongoDB store reports the deployment's state (a timeout, no
 * reachable primary) as the port's StoreUnavailableError, so the client gets a 503 with
 * `Retry-After` instead of a 500. One wrapper at the store's edge rather than a try/catch in
 * each method: methods added later are covered too. Errors of other kinds pass unchanged, and so
 * does anything a method returns that is not a promise (e.g. an async iterable).
 */
export function translatingFailures<T extends object>(
  target: T,
  translate: (error: unknown) => Error | null,
): T {
  const rethrow = (error: unknown): never => {
    throw translate(error) ?? error;
  };
  const wrapped = new Map<PropertyKey, (...args: unknown[]) => unknown>();
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof value !== 'function') return value;
      let method = wrapped.get(property);
      if (!method) {
        method = (...args: unknown[]) => {
          try {
            // Called on the real object, so private fields keep working.
            const result: unknown = value.apply(object, args);
            return result instanceof Promise ? result.catch(rethrow) : result;
          } catch (error) {
            return rethrow(error);
          }
        };
        wrapped.set(property, method);
      }
      return method;
    },
  });
}
