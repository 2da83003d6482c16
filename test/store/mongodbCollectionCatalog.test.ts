/** The MongoDB store's choice of which collections of a project database are Folio's (no server). */
import { expect } from 'chai';
import { folioCollectionNames, nonEmpty } from '../../src/store/mongodb/layout/collectionCatalog.js';
import { versionsCollectionName } from '../../src/store/mongodb/layout/naming.js';

describe('MongoDB collection catalog', () => {
  it('keeps Folio collections, sorted by code unit; drops sidecars, views and system collections', () => {
    const names = folioCollectionNames([
      { name: 'notes', type: 'collection' },
      { name: versionsCollectionName('notes'), type: 'collection' },
      { name: 'system.views', type: 'collection' },
      { name: 'recent', type: 'view' },
      { name: 'Zed', type: 'collection' },
      { name: '_folio.webhooks', type: 'collection' },
      { name: 'a'.repeat(65), type: 'collection' },
      { name: 'a'.repeat(64) },
      { name: '1st', type: 'collection' },
    ]);
    expect(names).to.deep.equal(['1st', 'Zed', 'a'.repeat(64), 'notes']);
  });

  it('lists only collections that hold documents', () => {
    expect(
      nonEmpty([
        { name: 'a', documents: 0 },
        { name: 'b', documents: 1 },
      ]),
    ).to.deep.equal([{ name: 'b', documents: 1 }]);
  });
});
