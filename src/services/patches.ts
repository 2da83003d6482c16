/** RFC 7396 merge patches and RFC 6902 JSON patches (fast-json-patch) applied to documents. */
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { invalidPatch, patchFailed, payloadTooLarge } from '../errors.js';
import { defineField } from '../fieldNames.js';
import type { FolioDocument, JsonObject, JsonValue } from '../store/port.js';
import { isMetaField } from '../store/storedForm.js';
import { isJsonObject, MAX_DEPTH, nestsDeeperThan } from './documentRules.js';

const { applyOperation, validate, JsonPatchError } = fastJsonPatch;

/**
 * Operations in one JSON patch. Each `copy` may double a document, and each operation walks it,
 * so the count is capped well above what a client writes by hand.
 */
export const MAX_PATCH_OPERATIONS = 1000;

/**
 * RFC 7396: objects merge recursively, `null` removes, anything else replaces. The recursion
 * follows the patch, whose depth the body parser has already bounded.
 */
export function applyMergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return patch;
  const result: JsonObject = isJsonObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else
      defineField(result, key, applyMergePatch(Object.hasOwn(result, key) ? result[key] : undefined, value));
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
 * `patch_failed`; a `copy` that grows the document past `maxBytes` is 413. The input is never
 * mutated.
 */
export function applyJsonPatch(doc: FolioDocument, patch: unknown, maxBytes: number): JsonValue {
  if (!Array.isArray(patch)) throw invalidPatch('A JSON patch must be an array of operations.');
  if (patch.length > MAX_PATCH_OPERATIONS) {
    throw invalidPatch(`A JSON patch may hold at most ${MAX_PATCH_OPERATIONS} operations.`, {
      max: MAX_PATCH_OPERATIONS,
    });
  }
  patch.forEach((op: unknown, index) => {
    assertOperationAllowed(op, index);
  });
  const operations = patch as Operation[];
  const structural = validate(operations);
  if (structural)
    throw invalidPatch(structural.message.split('\n')[0] ?? 'Invalid JSON patch.', {
      index: structural.index ?? null,
    });
  // One operation at a time: a root replace or remove changes what the next one applies to.
  let current: JsonValue = structuredClone(doc);
  operations.forEach((operation, index) => {
    current = applyOne(current, operation, index);
    if (operation.op === 'copy') assertCopyBounded(current, index, maxBytes);
  });
  return current;
}

function assertOperationAllowed(op: unknown, index: number): void {
  if (!isJsonObject(op) || typeof op.op !== 'string' || !OPS.has(op.op) || typeof op.path !== 'string') {
    throw invalidPatch(`Operation ${index} needs "op" (add, remove, replace, move, copy, test) and "path".`, {
      index,
    });
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
      { index },
    );
  }
  if (op.value !== undefined && nestsDeeperThan(op.value, MAX_DEPTH)) {
    throw invalidPatch(`Operation ${index}: its value nests deeper than ${MAX_DEPTH} levels.`, { index });
  }
}

function applyOne(document: JsonValue, operation: Operation, index: number): JsonValue {
  assertPointersResolve(document, operation, index);
  try {
    return applyOperation(document, operation, true, true, true, index).newDocument as JsonValue;
  } catch (err) {
    // Structure was validated above, so what fails now depends on the document: a failed
    // `test`, a missing path, an index out of range.
    if (err instanceof JsonPatchError) {
      throw patchFailed(`Patch cannot be applied: ${err.message.split('\n')[0]}`, { index });
    }
    // The library's own guards (moving a value into itself, for one) throw TypeErrors.
    if (err instanceof TypeError || err instanceof RangeError) {
      throw invalidPatch(`Operation ${index} cannot be applied to this document.`, { index });
    }
    throw err;
  }
}

/**
 * The pointers an operation reads must name own members of the document: the patch library
 * looks members up with `obj[key]`, where `constructor` or `toString` would find
 * Object.prototype's functions and treat a missing field as present.
 */
function assertPointersResolve(document: JsonValue, operation: Operation, index: number): void {
  const mustExist: Array<{ pointer: string; container: boolean }> = [];
  if (operation.op === 'move' || operation.op === 'copy')
    mustExist.push({ pointer: operation.from, container: false });
  if (operation.op === 'remove' || operation.op === 'replace' || operation.op === 'test') {
    mustExist.push({ pointer: operation.path, container: false });
  } else if (operation.path !== '') {
    // add, move, copy: the target's parent must be an object or array to add into.
    mustExist.push({ pointer: parentPointer(operation.path), container: true });
  }
  for (const { pointer, container } of mustExist) {
    const found = valueAt(document, pointer);
    if (found === undefined || (container && (typeof found !== 'object' || found === null))) {
      throw patchFailed(`Patch cannot be applied: operation ${index}: path "${pointer}" does not exist.`, {
        index,
      });
    }
  }
}

function parentPointer(pointer: string): string {
  return pointer.slice(0, pointer.lastIndexOf('/'));
}

/** The value an RFC 6901 pointer names in `document`, through own members only; undefined if none. */
function valueAt(document: JsonValue, pointer: string): JsonValue | undefined {
  let node: JsonValue = document;
  for (const raw of pointer === '' ? [] : pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) {
      if (!/^(?:0|[1-9]\d*)$/.test(segment) || Number(segment) >= node.length) return undefined;
      node = node[Number(segment)]!;
    } else if (isJsonObject(node) && Object.hasOwn(node, segment)) {
      node = node[segment]!;
    } else {
      return undefined;
    }
  }
  return node;
}

/** A copy may double the document: hold the intermediate result to the final document's limits. */
function assertCopyBounded(document: JsonValue, index: number, maxBytes: number): void {
  if (nestsDeeperThan(document, MAX_DEPTH)) {
    throw invalidPatch(`Operation ${index} makes the document nest deeper than ${MAX_DEPTH} levels.`, {
      index,
    });
  }
  const bytes = Buffer.byteLength(JSON.stringify(document));
  if (bytes > maxBytes) {
    throw payloadTooLarge(
      `Operation ${index} makes the document ${bytes} bytes; the maximum is ${maxBytes}.`,
      {
        index,
        bytes,
        max: maxBytes,
      },
    );
  }
}
