/** Taking a lease or a lock held in one document: the take is one upsert, atomic on its own. */
import type { Collection, Document, Filter, UpdateFilter } from 'mongodb';
import { isDuplicateKeyError } from './serverErrors.js';

/**
 * Whether the upsert took the document: `filter` matches it free or held by the taker (or
 * nothing: it is inserted). Another holder's live lease is missed by the filter, so the upsert's
 * insert collides with it (E11000): not taken.
 */
export async function takeByUpsert<T extends Document>(
  collection: Collection<T>,
  filter: Filter<T>,
  update: Document[] | UpdateFilter<T>,
): Promise<boolean> {
  try {
    const result = await collection.updateOne(filter, update, { upsert: true });
    return result.matchedCount + result.upsertedCount === 1;
  } catch (error) {
    if (isDuplicateKeyError(error)) return false;
    throw error;
  }
}
