/** A resource a `describe` opens before its tests and closes after them (a directory, a receiver). */

/**
 * Call inside a `describe`: `open` before each test (`each`) or once for the suite (`suite`), and
 * `close` after. Returns a getter for the open resource.
 */
export function fixture<T>(
  per: 'each' | 'suite',
  open: () => Promise<T>,
  close: (value: T) => Promise<unknown>,
): () => T {
  let value: T | undefined;
  const [setUp, tearDown] = per === 'each' ? [beforeEach, afterEach] : [before, after];
  setUp(async () => {
    value = await open();
  });
  tearDown(async () => {
    if (value !== undefined) await close(value);
  });
  return () => value as T;
}
