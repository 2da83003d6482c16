import { expect } from 'chai';
import { projectStored } from '../../src/store/documentQuery/projection.js';
import type { JsonObject } from '../../src/store/port.js';

describe('select projects stored documents like a MongoDB inclusion projection', () => {
  const doc: JsonObject = {
    _id: 'doc_1',
    z: 1,
    name: 'Ann',
    address: { city: 'Oslo', zip: '0150', geo: { lat: 59.9, lng: 10.7 } },
    items: [{ k: 1, v: 'x' }, 5, { v: 'y' }, [{ k: 2, v: 'z' }], null],
    scalar: 7,
    _folio: { version: 3, createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-01-02T00:00:00.000Z' },
  };

  it('always keeps _id, even when nothing else is selected', () => {
    expect(projectStored(doc, [])).to.deep.equal({ _id: 'doc_1' });
    expect(projectStored(doc, ['missing'])).to.deep.equal({ _id: 'doc_1' });
  });

  it('keeps whole fields and nested fields by dot path', () => {
    expect(projectStored(doc, ['name', 'address.city', 'address.geo.lat'])).to.deep.equal({
      _id: 'doc_1',
      name: 'Ann',
      address: { city: 'Oslo', geo: { lat: 59.9 } },
    });
  });

  it('a sub-path of a scalar drops the field; of an object lacking it, leaves an empty object', () => {
    expect(projectStored(doc, ['scalar.x'])).to.deep.equal({ _id: 'doc_1' });
    expect(projectStored(doc, ['address.nope'])).to.deep.equal({ _id: 'doc_1', address: {} });
  });

  it('projects each element of an array: subdocuments (even emptied) and nested arrays stay, scalars go', () => {
    expect(projectStored(doc, ['items.k'])).to.deep.equal({
      _id: 'doc_1',
      items: [{ k: 1 }, {}, [{ k: 2 }]],
    });
  });

  it('a selected parent includes the whole subtree, whatever the order of paths', () => {
    const whole = { _id: 'doc_1', address: doc.address };
    expect(projectStored(doc, ['address', 'address.city'])).to.deep.equal(whole);
    expect(projectStored(doc, ['address.city', 'address'])).to.deep.equal(whole);
  });

  it('keeps metadata under _folio when selected', () => {
    expect(projectStored(doc, ['_folio.version'])).to.deep.equal({ _id: 'doc_1', _folio: { version: 3 } });
  });

  it("keeps the document's field order and leaves the input untouched", () => {
    const before = JSON.stringify(doc);
    expect(Object.keys(projectStored(doc, ['name', 'z']))).to.deep.equal(['_id', 'z', 'name']);
    expect(JSON.stringify(doc)).to.equal(before);
  });
});
