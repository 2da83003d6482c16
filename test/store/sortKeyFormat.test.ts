/**
 * `folio_sort_key` results are stored in the embedded store's sort indexes, so its bytes are part
 * of the data file's format: a build that encoded a value differently would find nothing where
 * older builds wrote it. These vectors must never change; a new encoding needs a new function
 * name and a migration that rebuilds the indexes.
 */
import { expect } from 'chai';
import { sortKey } from '../../src/store/embedded/query/queryFunctions.js';
import type { JsonValue } from '../../src/store/port.js';

const VECTORS: ReadonlyArray<readonly [JsonValue | undefined, string[], 1 | -1, string]> = [
  [undefined, ['x'], 1, '02'],
  [null, ['x'], 1, '02'],
  [false, ['x'], 1, '0700'],
  [true, ['x'], 1, '0701'],
  [-1.5, ['x'], 1, '034007ffffffffffff'],
  [0, ['x'], 1, '038000000000000000'],
  [2, ['x'], 1, '03c000000000000000'],
  [10, ['x'], 1, '03c024000000000000'],
  ['a', ['x'], 1, '0461'],
  ['ab', ['x'], 1, '046162'],
  ['é', ['x'], 1, '04c3a9'],
  [{ a: 1 }, ['x'], 1, '050361000003bff000000000000000'],
  [[3, 1], ['x'], 1, '03bff0000000000000'],
  [[3, 1], ['x'], -1, '03c008000000000000'],
  [[], ['x'], 1, '01'],
  [{ y: 'b' }, ['x', 'y'], 1, '0462'],
];

describe('embedded store: the sort-key format on disk', () => {
  it('encodes each test vector to the bytes older data files hold', () => {
    for (const [value, segments, direction, hex] of VECTORS) {
      expect(
        sortKey(value, segments, direction).toString('hex'),
        `${JSON.stringify(value)} ${direction}`,
      ).to.equal(hex);
    }
  });
});
