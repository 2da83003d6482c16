/**
 * The conditions of a commit (port.ts `DocumentRepository.commit`), shared by both stores so
 * they decide conflicts identically: writes are checked in order, each against the state the
 * earlier writes of the batch leave behind (a batch may create a document and then update it).
 */
import type { DocumentWrite, WriteConflict } from './port.js';

export function writeId(write: DocumentWrite): string {
  return write.kind === 'put' ? write.document._id : write.id;
}

/** A caller bug rather than a conflict: versions must stay contiguous. */
export function assertContiguous(writes: readonly DocumentWrite[]): void {
  for (const write of writes) {
    // A document back from the trash continues its history (port.ts PutWrite.fromTrash).
    if (write.kind === 'put' && write.fromTrash) {
      if (write.expectedVersion !== 0 || write.document.$version < 2)
        throw new TypeError(`put of ${write.document._id} from the trash: expectedVersion 0, $version > 1`);
      continue;
    }
    if (write.kind === 'put' && write.document.$version !== write.expectedVersion + 1) {
      throw new TypeError(
        `put of ${write.document._id}: $version ${write.document.$version} must be expectedVersion + 1 ` +
          `(${write.expectedVersion + 1})`,
      );
    }
  }
}

/**
 * Every write whose condition fails, given each stored document's current `$version` (null =
 * no document): `expectedVersion` 0 means "must not exist", n means "is at version n"; a
 * delete needs the document to exist.
 */
export function findConflicts(
  writes: readonly DocumentWrite[],
  storedVersion: (id: string) => number | null,
): WriteConflict[] {
  const state = new Map<string, number | null>();
  const versionOf = (id: string): number | null =>
    state.has(id) ? (state.get(id) ?? null) : storedVersion(id);
  const conflicts: WriteConflict[] = [];
  for (const write of writes) {
    const id = writeId(write);
    const found = versionOf(id);
    if ((found ?? 0) !== write.expectedVersion || (write.kind === 'delete' && found === null)) {
      conflicts.push({ id, currentVersion: found });
      continue;
    }
    state.set(id, write.kind === 'put' ? write.document.$version : null);
  }
  return conflicts;
}
