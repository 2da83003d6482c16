/** A temporary directory for the tests of a `describe`, made before and removed after them. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixture } from './fixture.js';

/**
 * Call inside a `describe`: a directory named `prefix...` under the OS's temporary directory,
 * fresh for each test (`each`) or one for the whole suite (`suite`). Returns its current path.
 */
export function tempDir(prefix: string, per: 'each' | 'suite' = 'each'): () => string {
  return fixture(
    per,
    () => mkdtemp(join(tmpdir(), prefix)),
    (dir) => rm(dir, { recursive: true, force: true }),
  );
}
