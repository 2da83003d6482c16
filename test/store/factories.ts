/**
 * The stores the conformance suite runs against: the embedded store always, MongoDB when one is
 * available (see test/support/mongodb.ts, which prints the SKIPPED line otherwise).
 */
import type { Store } from '../../src/store/port.js';

export interface StoreFactory {
  /** Used in suite titles; MongoDB suites carry the `@mongodb` tag for `npm run test:mongodb`. */
  name: string;
  /** A fresh, initialised store with no data of any other test run. */
  create(): Promise<Store>;
  /** Remove what `create` made (temp dirs, databases). */
  destroy(store: Store): Promise<void>;
}
