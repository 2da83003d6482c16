/**
 * A key's document rule as one stream applies it (issue 45). An event whose document is inside
 * the rule goes on to the stream's own filters. An update whose new content is outside it is
 * `document.removed` (the id alone) when the client could see the version before it, and
 * nothing otherwise; a create or delete outside it is nothing. A document that enters the rule
 * arrives as the `document.updated` that brought it in.
 *
 * Whether the client could see the version before: the stream remembers, per document, whether
 * the last version it read was visible (inside the rule and the stream's filter); for a document
 * it has not read since it started, or has forgotten, the store's history answers (the version
 * before, of the same life of the document: same `$createdAt`). When neither knows (that version
 * is pruned, or the document was deleted since), nothing is sent: a stream never names a
 * document the key may never have seen.
 *
 * An erased document's events keep only its id and metadata (DeleteWrite.erase), which a rule
 * cannot judge: they are skipped, and so, under a rule, are the events of a document without a
 * single field, which read the same.
 */
import { matchesFilter } from '../../query/documentMatcher.js';
import type { ChangeEvent, FolioDocument, StoredFilter } from '../../store/port.js';
import { type StoredDocument, toStored } from '../../store/storedForm.js';

/** Documents a stream remembers (a boolean each): past that, the store is asked. */
const REMEMBERED = 1024;

/** What becomes of an event under the rule. */
export type RuleVerdict = 'inside' | 'skip' | 'removed' | 'ask';

export class StreamRule {
  /**
   * Per document: whether its last version this stream read was visible to the client, the
   * latest written last. A Map, grown as events come, so an idle stream holds nothing.
   */
  readonly #visible = new Map<string, boolean>();

  constructor(
    readonly filter: StoredFilter,
    /** The stream's own filter, or null: a client only had what matched it too. */
    private readonly clientFilter: StoredFilter | null,
    /** The document as it was at `version` (null when not stored). */
    private readonly versionOf: (id: string, version: number) => Promise<FolioDocument | null>,
  ) {}

  /** Judge `event` (its document in stored form), and remember what the client now sees of it. */
  judge(event: ChangeEvent, stored: StoredDocument, removedWanted: boolean): RuleVerdict {
    if (!hasUserFields(event.document)) {
      this.#visible.delete(event.documentId);
      return 'skip';
    }
    const inside = matchesFilter(stored, this.filter);
    const before = this.#visible.get(event.documentId);
    if (event.type === 'deleted') this.#visible.delete(event.documentId);
    else this.#remember(event.documentId, inside && this.#clientMatches(stored));
    if (inside) return 'inside';
    if (event.type !== 'updated' || !removedWanted || before === false) return 'skip';
    return before === true ? 'removed' : 'ask';
  }

  /** For an `ask`: whether the client could see the version before this update. */
  async sawBefore(event: ChangeEvent): Promise<boolean> {
    const { $version, $createdAt } = event.document;
    if ($version <= 1) return false;
    const before = await this.versionOf(event.documentId, $version - 1).catch(() => null);
    if (before?.$createdAt !== $createdAt) return false;
    const stored = toStored(before);
    return matchesFilter(stored, this.filter) && this.#clientMatches(stored);
  }

  #remember(id: string, visible: boolean): void {
    this.#visible.delete(id);
    this.#visible.set(id, visible);
    if (this.#visible.size > REMEMBERED) {
      for (const oldest of this.#visible.keys()) {
        this.#visible.delete(oldest);
        break;
      }
    }
  }

  #clientMatches(stored: StoredDocument): boolean {
    return this.clientFilter === null || matchesFilter(stored, this.clientFilter);
  }
}

function hasUserFields(doc: FolioDocument): boolean {
  for (const field in doc) if (field !== '_id' && !field.startsWith('$')) return true;
  return false;
}
