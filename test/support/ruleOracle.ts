/**
 * The reference for key rules (issue 45): random rules and request filters in the list's filter
 * language, each with the MongoDB query mingo evaluates for it, and a model of one collection
 * (current documents with their histories, the trash, the change log) that says what a key under
 * a rule must get on every surface. Written apart from Folio's parser and services, so a test
 * compares two independent answers.
 *
 * Test documents keep each field to one type (`n` a number, `team` a string of a-c, `published`
 * a boolean or absent, `owner` a string or absent), so the filter language's URL coercion
 * (`true` also matches `"true"`) never separates the two sides.
 */
import fc from 'fast-check';
import { Query } from 'mingo';

export interface Fields {
  n: number;
  team: string;
  published?: boolean;
  owner?: string;
}

/** One clause: the rule's JSON, the URL parameters a request filter sends, the mingo query. */
export interface Clause {
  rule: Record<string, unknown>;
  params: string[];
  mingo: Record<string, unknown>;
  /** A value satisfying the clause, for a document that must be in view. */
  satisfy(fields: Fields): Fields;
}

const TEAMS = ['a', 'b', 'c'];

const publishedClause: fc.Arbitrary<Clause> = fc.oneof(
  fc.boolean().map((v) => ({
    rule: { published: v },
    params: [`filter[published]=${v}`],
    mingo: { published: v },
    satisfy: (f: Fields) => ({ ...f, published: v }),
  })),
  fc.boolean().map((v) => ({
    rule: { published: { exists: v } },
    params: [`filter[published][exists]=${v}`],
    mingo: { published: { $exists: v } },
    satisfy: (f: Fields) => {
      const { published: _p, ...rest } = f;
      return v ? { ...rest, published: true } : rest;
    },
  })),
);

const teamClause: fc.Arbitrary<Clause> = fc.oneof(
  fc.constantFrom(...TEAMS).map((v) => ({
    rule: { team: v },
    params: [`filter[team]=${v}`],
    mingo: { team: v },
    satisfy: (f: Fields) => ({ ...f, team: v }),
  })),
  fc.subarray(TEAMS, { minLength: 1 }).map((vs) => ({
    rule: { team: { in: vs } },
    params: [`filter[team][in]=${vs.join(',')}`],
    mingo: { team: { $in: vs } },
    satisfy: (f: Fields) => ({ ...f, team: vs[0]! }),
  })),
);

const nClause: fc.Arbitrary<Clause> = fc.oneof(
  fc.integer({ min: 0, max: 5 }).map((k) => ({
    rule: { n: { gte: k } },
    params: [`filter[n][gte]=${k}`],
    mingo: { n: { $gte: k } },
    satisfy: (f: Fields) => ({ ...f, n: k }),
  })),
  fc.integer({ min: 1, max: 5 }).map((k) => ({
    rule: { n: { lt: k } },
    params: [`filter[n][lt]=${k}`],
    mingo: { n: { $lt: k } },
    satisfy: (f: Fields) => ({ ...f, n: k - 1 }),
  })),
  fc.integer({ min: 0, max: 5 }).map((k) => ({
    rule: { n: k },
    params: [`filter[n]=${k}`],
    mingo: { n: k },
    satisfy: (f: Fields) => ({ ...f, n: k }),
  })),
);

/** A filter: clauses on distinct fields (so one document can always satisfy them all). */
export interface Filter {
  clauses: Clause[];
}

export const filterArb = (minClauses: number): fc.Arbitrary<Filter> =>
  fc
    .tuple(fc.option(publishedClause), fc.option(teamClause), fc.option(nClause))
    .map((parts) => ({ clauses: parts.filter((c): c is Clause => c !== null) }))
    .filter((f) => f.clauses.length >= minClauses);

/** `f` without clauses on the fields `other` names (so one document can satisfy both). */
export const apartFrom = (f: Filter, other: Filter): Filter => {
  const taken = new Set(other.clauses.flatMap((c) => Object.keys(c.rule)));
  return { clauses: f.clauses.filter((c) => !Object.keys(c.rule).some((k) => taken.has(k))) };
};

export const ruleJson = (f: Filter): Record<string, unknown> =>
  Object.assign({}, ...f.clauses.map((c) => c.rule));
export const filterParams = (f: Filter): string[] => f.clauses.flatMap((c) => c.params);

export function matches(f: Filter, doc: Fields): boolean {
  if (f.clauses.length === 0) return true;
  return new Query({ $and: f.clauses.map((c) => c.mingo) }).test({ ...doc });
}

/** A document the filter lets through. */
export const satisfying = (f: Filter, base: Fields): Fields =>
  f.clauses.reduce((doc, c) => c.satisfy(doc), base);

export const fieldsArb: fc.Arbitrary<Fields> = fc
  .record(
    {
      n: fc.integer({ min: 0, max: 5 }),
      team: fc.constantFrom(...TEAMS),
      published: fc.boolean(),
      owner: fc.constantFrom('u1', 'u2'),
    },
    { requiredKeys: ['n', 'team'] },
  )
  .map((f) => ({ ...f }));

/** A merge patch over the test fields: a value sets, null removes an optional field. */
export const patchArb: fc.Arbitrary<Record<string, unknown>> = fc.record(
  {
    n: fc.integer({ min: 0, max: 5 }),
    team: fc.constantFrom(...TEAMS),
    published: fc.oneof(fc.boolean(), fc.constant(null)),
  },
  { requiredKeys: [] },
);

export function mergePatch(current: Fields, patch: Record<string, unknown>): Fields {
  const next: Record<string, unknown> = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete next[k];
    else next[k] = v;
  }
  return next as unknown as Fields;
}

export type LogType = 'created' | 'updated' | 'deleted';

/** One collection as the oracle sees it. */
export class CollectionModel {
  /** Current documents: each one's content by version (index = version - 1). */
  readonly current = new Map<string, Fields[]>();
  /** Trashed documents with their histories. */
  readonly trash = new Map<string, Fields[]>();
  /** Every committed write, in order. */
  readonly log: Array<{
    type: LogType;
    id: string;
    prev: Fields | null;
    next: Fields | null;
    erased?: boolean;
  }> = [];

  last(id: string): Fields | null {
    return this.current.get(id)?.at(-1) ?? null;
  }

  put(id: string, fields: Fields): void {
    const versions = this.current.get(id);
    if (versions) {
      this.log.push({ type: 'updated', id, prev: versions.at(-1)!, next: fields });
      versions.push(fields);
    } else {
      this.current.set(id, [fields]);
      this.log.push({ type: 'created', id, prev: null, next: fields });
    }
  }

  delete(id: string): void {
    const versions = this.current.get(id)!;
    this.current.delete(id);
    this.trash.set(id, versions);
    this.log.push({ type: 'deleted', id, prev: versions.at(-1)!, next: null });
  }

  restoreFromTrash(id: string): void {
    const versions = this.trash.get(id)!;
    this.trash.delete(id);
    const last = versions.at(-1)!;
    this.current.set(id, [...versions, last]);
    this.log.push({ type: 'created', id, prev: null, next: last });
  }

  /** Erased for good: the store keeps only the id and metadata of the document's events. */
  erase(id: string): void {
    this.trash.delete(id);
    for (const entry of this.log) if (entry.id === id) entry.erased = true;
  }

  /**
   * The stream events (`type id`) a key under `rule` gets for the log from `from` on, on a
   * stream of `types` with its own `filter`: a document leaving the rule is `removed` when the
   * client could see the version before (inside both); the stream's filter alone never removes.
   */
  streamEvents(rule: Filter, from: number, filter: Filter, types: readonly string[]): string[] {
    const out: string[] = [];
    const both = (doc: Fields) => matches(rule, doc) && matches(filter, doc);
    const push = (type: string, id: string) => {
      if (types.includes(type)) out.push(`document.${type} ${id}`);
    };
    for (const { type, id, prev, next, erased } of this.log.slice(from)) {
      if (erased) continue;
      if (type === 'created' && next && both(next)) push('created', id);
      if (type === 'deleted' && prev && both(prev)) push('deleted', id);
      if (type === 'updated' && next && prev) {
        if (matches(rule, next)) {
          if (matches(filter, next)) push('updated', id);
        } else if (both(prev)) push('removed', id);
      }
    }
    return out;
  }
}

/** User fields of an API document (metadata and `_id` left out). */
export function userFieldsOf(doc: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(doc).filter(([k]) => k !== '_id' && !k.startsWith('$')));
}
