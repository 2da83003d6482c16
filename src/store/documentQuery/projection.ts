/**
 * MongoDB inclusion projection (`find(filter, {projection: {a: 1, 'b.c': 1}})`) on a stored
 * document, so both stores return the same shape for `select`:
 * - `_id` is always kept; fields keep the document's order, not the projection's;
 * - `a.b` keeps `a` as an object holding only `b` (an empty object if `a` lacks `b`), and drops
 *   `a` when it is a scalar;
 * - through an array, each element is projected: objects (even when they end up empty) and
 *   nested arrays stay, scalars go. Numeric segments are field names here, never positions, as
 *   in MongoDB's find projection.
 */
import { defineField } from '../../fieldNames.js';
import type { JsonObject, JsonValue } from '../port.js';
import { isPlainObject } from './pathValues.js';

/**
 * `true` keeps the whole value; a nested tree keeps only those fields of it. A Map, because the
 * field names are the client's: as keys of a plain object, `__proto__` or `constructor` would
 * reach into Object.prototype.
 */
type ProjectionTree = Map<string, ProjectionTree | true>;

export function projectStored(doc: JsonObject, paths: string[]): JsonObject {
  const tree: ProjectionTree = new Map([['_id', true]]);
  for (const path of paths) addPath(tree, path.split('.'));
  return projectObject(doc, tree);
}

function addPath(tree: ProjectionTree, segments: string[]): void {
  let node = tree;
  for (const [i, segment] of segments.entries()) {
    const existing = node.get(segment);
    if (existing === true) return; // a parent is already included whole
    if (i === segments.length - 1) {
      node.set(segment, true);
      return;
    }
    const child: ProjectionTree = existing ?? new Map();
    node.set(segment, child);
    node = child;
  }
}

function projectObject(obj: JsonObject, tree: ProjectionTree): JsonObject {
  const out: JsonObject = {};
  for (const [field, value] of Object.entries(obj)) {
    const sub = tree.get(field);
    if (sub === undefined) continue;
    const projected = sub === true ? value : projectValue(value, sub);
    if (projected !== undefined) defineField(out, field, projected);
  }
  return out;
}

/** A value under a partly selected field: undefined when nothing of it is kept. */
function projectValue(value: JsonValue, tree: ProjectionTree): JsonValue | undefined {
  if (isPlainObject(value)) return projectObject(value, tree);
  if (Array.isArray(value)) {
    const kept: JsonValue[] = [];
    for (const item of value) {
      const projected = projectValue(item, tree);
      if (projected !== undefined) kept.push(projected);
    }
    return kept;
  }
  return undefined;
}
