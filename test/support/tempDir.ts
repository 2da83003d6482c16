/** A temporary directory for the tests of a `describe`, made before and removed after them. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Call inside a `describe`: a directory named `prefix...` under the OS's temporary directory,
 * fresh for each test (`each`) or one for the whole suite (`suite`). Returns its current path.
 */
export function tempDir(prefix: string, per: 'each' | 'suite' = 'each'): () => string {
  let dir = '';
  const make = async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
  };
  const remove = () => rm(dir, { recursive: true, force: true });
  if (per === 'each') {
    beforeEach(make);
    afterEach(remove);
  } else {
    before(make);
    after(remove);
  }
  return () => dir;
}
