/** RFC 7396 merge patches and RFC 6902 JSON patches (fast-json-patch) applied to documents. */
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { invalidPatch, patchFailed } from '../errors.js';
import type { FolioDocument, JsonObject, JsonValue } from '../store/port.js';
import { isMetaField } from '../store/storedForm.js';
import { isJsonObject } from './documentRules.js';

const { applyPatch, validate, JsonPatchError } = fastJsonPatch;

/** RFC 7396: objects merge recursively, `null` removes, anything else replaces. */
export function applyMergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return patch;
  const result: JsonObject = isJsonObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);

/** The top-level member a JSON pointer names (`/a/b` → `a`), unescaped. */
function topMember(pointer: string): string {
  return (pointer.split('/')[1] ?? '').replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Pointers into `__proto__` or `constructor/prototype` (fast-json-patch would throw a TypeError). */
function touchesPrototype(pointer: unknown): boolean {
  if (typeof pointer !== 'string') return false;
  const parts = pointer.split('/');
  return parts.some(
    (part, i) => part === '__proto__' || (part === 'prototype' && parts[i - 1] === 'constructor'),
  );
}

/** Whether a pointer writes inside `_id` or a metadata field. The root (`""`) is allowed: the
 * whole user content is replaced and the server re-applies its own fields. */
function isManaged(pointer: unknown): boolean {
  if (typeof pointer !== 'string' || pointer === '') return false;
  const top = topMember(pointer);
  return top === '_id' || isMetaField(top);
}

/**
 * Apply a JSON patch to the document as the client sees it (so a `test` of `/$version` works as
 * an optimistic check). Operations may not write the managed fields. Malformed patches are
 * 400 `invalid_patch`; patches that cannot apply (failed test, missing path) are 409
 * `patch_failed`. The input is never mutated.
 */
export function applyJsonPatch(doc: FolioDocument, patch: unknown): JsonValue {
  if (!Array.isArray(patch)) throw invalidPatch('A JSON patch must be an array of operations.');
  patch.forEach((op: unknown, index) => {
    if (!isJsonObject(op) || typeof op.op !== 'string' || !OPS.has(op.op) || typeof op.path !== 'string') {
      throw invalidPatch(
        `Operation ${index} needs "op" (add, remove, replace, move, copy, test) and "path".`,
        {
          index,
        },
      );
    }
    if ([op.path, op.from].some(touchesPrototype)) {
      throw invalidPatch(
        `Operation ${index} addresses __proto__ or constructor/prototype, which is not allowed.`,
        {
          index,
        },
      );
    }
    const writes = op.op !== 'test';
    if (writes && (isManaged(op.path) || (op.op === 'move' && isManaged(op.from)))) {
      throw invalidPatch(
        `Operation ${index} would change a server-managed field (_id, $createdAt, $updatedAt, $version).`,
        {
          index,
        },
      );
    }
  });
  const operations = patch as Operation[];
  const structural = validate(operations);
  if (structural)
    throw invalidPatch(structural.message.split('\n')[0] ?? 'Invalid JSON patch.', {
      index: structural.index ?? null,
    });
  try {
    return applyPatch(structuredClone(doc), operations, true, true).newDocument as JsonValue;
  } catch (err) {
    // Structure was validated above, so what fails now depends on the document: a failed
    // `test`, a missing path, an index out of range.
    if (err instanceof JsonPatchError) {
      throw patchFailed(`Patch cannot be applied: ${err.message.split('\n')[0]}`, {
        index: err.index ?? null,
      });
    }
    throw err;
  }
}
