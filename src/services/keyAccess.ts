/**
 * What a key's rules let it reach (issue 45): per collection, no access, read or write, and the
 * documents it sees there as a canonical filter (the one lists use, so both stores answer it and
 * the collection's indexes serve it). Compiled once per key (ApiKeyService caches it with the
 * KeyContext); looking a collection up is a scan of a few patterns, no allocation.
 *
 * Rules are ordered: the first rule naming a collection (by exact name or by a `prefix*`
 * pattern) decides its access and filter; later rules do not widen or narrow it. So a narrow
 * rule goes before a broad one: `[{collections: ["public_drafts"], access: "read", filter}, {collections: ["public_*"], access: "write"}]`.
 * The key's scope is a ceiling: a read-only key's `write` rule would only read (validation
 * refuses such rules before they are stored; see apiKeys.ts).
 */
import { collectionAccess, invalidQuery, notFound } from '../errors.js';
import { matchesFilter } from '../query/documentMatcher.js';
import { parseFilterObject } from '../query/filterParams.js';
import type { JsonObject, KeyRule, KeyScope, StoredFilter } from '../store/port.js';
import { isMetaField } from '../store/storedForm.js';

export type AccessLevel = 'none' | 'read' | 'write';

/** A key's reach in one collection. `filter` null: every document; otherwise only those matching. */
export interface CollectionAccess {
  readonly level: AccessLevel;
  readonly filter: StoredFilter | null;
}

export interface KeyAccess {
  /** False for a key without rules: every collection, every document, up to its scope. */
  readonly restricted: boolean;
  collection(name: string): CollectionAccess;
}

const NONE: CollectionAccess = Object.freeze({ level: 'none', filter: null });
const ALL_READ: CollectionAccess = Object.freeze({ level: 'read', filter: null });
const ALL_WRITE: CollectionAccess = Object.freeze({ level: 'write', filter: null });

const UNRESTRICTED_READ: KeyAccess = Object.freeze({ restricted: false, collection: () => ALL_READ });
const UNRESTRICTED_WRITE: KeyAccess = Object.freeze({ restricted: false, collection: () => ALL_WRITE });

/** One collection entry of a rule: an exact name, or a prefix (`public_*` → `public_`). */
interface NamePattern {
  text: string;
  prefix: boolean;
}

interface CompiledRule {
  patterns: NamePattern[];
  access: CollectionAccess;
}

/**
 * The access `rules` give a key of `scope`; null rules: unrestricted. The rules were validated
 * when stored (keyRulesSchema).
 */
export function compileKeyAccess(rules: readonly KeyRule[] | null, scope: KeyScope): KeyAccess {
  if (rules === null) return scope === 'read-only' ? UNRESTRICTED_READ : UNRESTRICTED_WRITE;
  const compiled: CompiledRule[] = rules.map((rule, i) => ({
    patterns: rule.collections.map(namePattern),
    access: ruleAccess(rule, i, scope),
  }));
  return {
    restricted: true,
    collection(name) {
      for (const rule of compiled) {
        for (const p of rule.patterns) {
          if (p.prefix ? name.startsWith(p.text) : name === p.text) return rule.access;
        }
      }
      return NONE;
    },
  };
}

function ruleAccess(rule: KeyRule, i: number, scope: KeyScope): CollectionAccess {
  let filter: StoredFilter | null;
  try {
    filter = rule.filter ? compileRuleFilter(rule.filter, i) : null;
  } catch {
    // Stored rules were valid when written; one a later Folio no longer reads reaches nothing
    // (its collections answer as out of reach) rather than more than it said.
    return NONE;
  }
  return Object.freeze({ level: scope === 'read-only' ? 'read' : rule.access, filter });
}

function namePattern(entry: string): NamePattern {
  return entry.endsWith('*') ? { text: entry.slice(0, -1), prefix: true } : { text: entry, prefix: false };
}

/**
 * A rule's filter as a canonical filter, through the list's own parser, or null for an empty
 * object (which matches everything). Errors name the rule: `rules[0].filter[n][gte]`.
 */
export function compileRuleFilter(filter: JsonObject, ruleIndex: number): StoredFilter | null {
  // Metadata changes with every write, so a write could never be checked against it beforehand.
  const meta = Object.keys(filter).find(isMetaField);
  if (meta) throw invalidQuery(`rules[${ruleIndex}].filter[${meta}]`, 'a rule filter may not name metadata');
  const compiled = parseFilterObject(filter, `rules[${ruleIndex}].filter`);
  return Object.keys(compiled).length === 0 ? null : compiled;
}

/**
 * The key's access to `collection`, when it is at least `needed`. A collection out of reach is
 * 404 "Collection not found." whether or not it exists, so a key learns nothing of collections
 * beyond its rules; a collection in view but not writable (or, for `every document`, writable
 * only through a rule filter) is 403 `collection_access`.
 */
export function requireCollection(
  access: KeyAccess,
  collection: string,
  needed: 'read' | 'write' | 'every document',
): CollectionAccess {
  const reach = access.collection(collection);
  if (reach.level === 'none') throw notFound('Collection');
  if (needed !== 'read' && reach.level !== 'write') throw collectionAccess(collection, 'write');
  if (needed === 'every document' && reach.filter !== null) throw collectionAccess(collection, needed);
  return reach;
}

/**
 * Whether a document is in the key's view of its collection. Rule filters never name metadata
 * (`$version`...), so a document reads the same here in its API form and its stored form.
 */
export function inView(access: CollectionAccess, doc: JsonObject): boolean {
  return access.filter === null || matchesFilter(doc, access.filter);
}

/**
 * `filter` narrowed to what `access` sees: `$and` of the two, so the store plans the query over
 * both (an index on either's field serves it). The request's filter unchanged when unfiltered.
 */
export function withinView(access: CollectionAccess, filter: StoredFilter): StoredFilter {
  if (access.filter === null) return filter;
  if (Object.keys(filter).length === 0) return access.filter;
  return { $and: [access.filter, filter] };
}
