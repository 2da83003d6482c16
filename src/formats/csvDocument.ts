/**
 * Documents ↔ CSV rows. A column name is a dot path (`address.city`): export flattens nested
 * objects into such columns and import rebuilds them. Arrays and empty objects are leaves,
 * written as JSON in one cell (csvCells.ts). Field names cannot contain `.` (documentRules.ts),
 * so splitting a column name on dots is unambiguous.
 */
import type { JsonObject, JsonValue } from '../store/port.js';
import { type CellOptions, decodeCell, encodeCell } from './csvCells.js';

/** More columns than this in a header, or in an export's union of columns, is refused. */
export const MAX_CSV_COLUMNS = 5000;

/** A row that cannot become a document; the import reports it and goes on. */
export class CsvRowError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CsvRowError';
  }
}

/** A header that cannot be read at all; the import is refused before anything is written. */
export class CsvHeaderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CsvHeaderError';
  }
}

export interface CsvColumn {
  name: string;
  path: string[];
}

export function parseHeader(cells: readonly string[]): CsvColumn[] {
  if (cells.length > MAX_CSV_COLUMNS) {
    throw new CsvHeaderError(`The header has ${cells.length} columns; at most ${MAX_CSV_COLUMNS} are read.`);
  }
  const seen = new Set<string>();
  return cells.map((name, i) => {
    const path = name.split('.');
    if (path.some((segment) => segment === '')) {
      throw new CsvHeaderError(
        `Column ${i + 1} of the header ("${name}") has an empty name or path segment.`,
      );
    }
    if (seen.has(name)) throw new CsvHeaderError(`Column "${name}" appears twice in the header.`);
    seen.add(name);
    return { name, path };
  });
}

type Tree = { [key: string]: JsonValue };

function emptyTree(): Tree {
  // Column names are data: a name like `constructor` must never meet Object.prototype.
  return Object.create(null) as Tree;
}

/** The document a row describes; empty cells leave their fields out. */
export function rowToDocument(columns: readonly CsvColumn[], cells: readonly string[]): JsonObject {
  for (let i = columns.length; i < cells.length; i++) {
    if (cells[i] !== '') {
      throw new CsvRowError(`The row has ${cells.length} fields; the header has ${columns.length}.`);
    }
  }
  const doc = emptyTree();
  columns.forEach((column, i) => {
    const value = decodeCell(cells[i] ?? '');
    if (value !== undefined) setPath(doc, column, value);
  });
  return doc;
}

function setPath(doc: Tree, column: CsvColumn, value: JsonValue): void {
  let node = doc;
  const last = column.path.length - 1;
  for (let i = 0; i < last; i++) {
    const segment = column.path[i]!;
    if (!Object.hasOwn(node, segment)) node[segment] = emptyTree();
    const child = node[segment];
    if (!isTree(child)) throw pathConflict(column);
    node = child;
  }
  const leaf = column.path[last]!;
  if (Object.hasOwn(node, leaf)) throw pathConflict(column);
  node[leaf] = value;
}

function pathConflict(column: CsvColumn): CsvRowError {
  return new CsvRowError(
    `Column "${column.name}" conflicts with another column of the row (a field cannot be both a value and an object).`,
  );
}

function isTree(value: JsonValue | undefined): value is Tree {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Calls `visit` with every leaf of a document and its column name, in document order: nested
 * objects are walked (with an explicit stack, never recursion), arrays and empty objects are
 * leaves. Nothing is built per leaf beyond its name, so an export can walk each document twice
 * (its columns, then its row) without a list of pairs for each.
 */
export function forEachLeaf(doc: JsonObject, visit: (name: string, value: JsonValue) => void): void {
  const stack: Array<{ prefix: string; node: Tree; keys: string[]; next: number }> = [
    { prefix: '', node: doc as Tree, keys: Object.keys(doc), next: 0 },
  ];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.next >= frame.keys.length) {
      stack.pop();
      continue;
    }
    const key = frame.keys[frame.next++]!;
    const value = frame.node[key]!;
    const name = frame.prefix === '' ? key : `${frame.prefix}.${key}`;
    if (isTree(value)) {
      const keys = Object.keys(value);
      if (keys.length > 0) {
        stack.push({ prefix: name, node: value, keys, next: 0 });
        continue;
      }
    }
    visit(name, value);
  }
}

/**
 * Rows for many documents under the same columns: each leaf goes straight to its column's cell
 * (a column's place looked up once per leaf), no map of the document's leaves per row.
 */
export class RowWriter {
  readonly #places: Map<string, number>;
  readonly #width: number;

  constructor(
    columns: readonly string[],
    private readonly options?: CellOptions,
  ) {
    this.#places = new Map(columns.map((name, i) => [name, i]));
    this.#width = columns.length;
  }

  row(doc: JsonObject): string[] {
    const cells = new Array<string>(this.#width).fill('');
    forEachLeaf(doc, (name, value) => {
      const place = this.#places.get(name);
      if (place !== undefined) cells[place] = encodeCell(value, this.options);
    });
    return cells;
  }
}
