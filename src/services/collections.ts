/** The collections of a project environment, as the dashboard lists them. */
import type { CollectionInfo, Store } from '../store/port.js';
import type { KeyContext } from './context.js';

export class CollectionService {
  constructor(private readonly store: Store) {}

  /** Collections holding documents, by name, with their document counts. */
  list(ctx: KeyContext): Promise<CollectionInfo[]> {
    return this.store.documents.listCollections(ctx.scope);
  }
}
