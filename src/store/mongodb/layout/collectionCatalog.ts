/**
 * Which MongoDB collections of a project database are Folio collections, and how many documents
 * each holds (`listCollections` of the port). A project database also holds version sidecars
 * (`_folio.versions.*`) and may hold views or `system.*` collections; only collections named as
 * Folio names them are listed.
 */
import type { Db } from 'mongodb';
import type { CollectionInfo } from '../../port.js';
import { COLLECTION_NAME_PATTERN } from './naming.js';

/** What `db.listCollections({}, {nameOnly: true})` yields for each entry. */
export interface ListedCollection {
  name: string;
  type?: string | undefined;
}

/** The Folio collections among a database's entries, sorted by name in code-unit order. */
export function folioCollectionNames(listed: readonly ListedCollection[]): string[] {
  return listed
    .filter(
      (entry) => (entry.type ?? 'collection') === 'collection' && COLLECTION_NAME_PATTERN.test(entry.name),
    )
    .map((entry) => entry.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The port's answer: collections that hold documents (emptied ones stay on MongoDB; not listed). */
export function nonEmpty(counted: readonly CollectionInfo[]): CollectionInfo[] {
  return counted.filter((entry) => entry.documents > 0);
}

/**
 * The counts come from collection metadata (`estimatedDocumentCount`): one cheap command per
 * collection instead of a scan of each.
 */
export async function listFolioCollections(db: Db): Promise<CollectionInfo[]> {
  const listed = await db.listCollections({}, { nameOnly: true, authorizedCollections: true }).toArray();
  const counted = await Promise.all(
    folioCollectionNames(listed).map(async (name) => ({
      name,
      documents: await db.collection(name).estimatedDocumentCount(),
    })),
  );
  return nonEmpty(counted);
}
