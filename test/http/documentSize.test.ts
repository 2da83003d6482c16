/**
 * The stored-size rule: a document's BSON size as stored (`documents.maxBsonBytes`, 4 MiB by
 * default) is checked on every write on both stores, besides its JSON size, so a document that
 * is small as JSON but large as BSON (long arrays of small numbers) is refused with 413 before it
 * could make a MongoDB change event exceed 16 MiB.
 */
import { expect } from 'chai';
import { storedBsonSize } from '../../src/store/documentSize.js';
import type { FolioDocument, JsonObject } from '../../src/store/port.js';
import { forEachStore } from '../support/stores.js';

/** The document the server will store for `PUT /c/{id}` of `fields` (timestamps have a fixed length). */
function asStored(id: string, fields: JsonObject): FolioDocument {
  const at = '2024-01-01T00:00:00.000Z';
  return { _id: id, ...fields, $createdAt: at, $updatedAt: at, $version: 1 };
}

forEachStore('document size as stored (default limits)', (ctx) => {
  it('refuses a document under the 1 MiB JSON limit whose stored BSON exceeds 4 MiB, and stores nothing', async () => {
    const fields = { values: new Array<number>(500_000).fill(0) };
    const body = JSON.stringify(fields);
    expect(Buffer.byteLength(body)).to.be.below(1_048_576 - 200);
    const bson = storedBsonSize(asStored('big', fields));
    expect(bson).to.be.above(4 * 1024 * 1024);
    const path = `/${ctx.tenant.project}/sizes/big`;
    const res = await ctx.server.request('PUT', path, { key: ctx.tenant.key, rawBody: body });
    expect(res.status).to.equal(413);
    expect(res.body.error.code).to.equal('payload_too_large');
    expect(res.body.error.details).to.deep.equal({ bsonBytes: bson, maxBsonBytes: 4 * 1024 * 1024 });
    expect((await ctx.server.request('GET', path, { key: ctx.tenant.key })).status).to.equal(404);
  });
});

const fields = { name: 'exactly at the limit', values: [1, 2, 3] };
const LIMIT = storedBsonSize(asStored('edge', fields));

forEachStore(
  'document size as stored (a limit of exactly one document)',
  (ctx) => {
    const put = (id: string, body: JsonObject) =>
      ctx.server.request('PUT', `/${ctx.tenant.project}/sizes/${id}`, { key: ctx.tenant.key, body });

    it('accepts a document of exactly documents.maxBsonBytes and refuses one byte more', async () => {
      expect((await put('edge', fields)).status).to.equal(201);
      const over = await put('edgf', { ...fields, name: `${fields.name}!` });
      expect(over.status).to.equal(413);
      expect(over.body.error.details).to.deep.equal({ bsonBytes: LIMIT + 1, maxBsonBytes: LIMIT });
    });

    it('checks patches too: a merge patch that grows the document past the limit writes nothing', async () => {
      expect((await put('grow', { name: 'x', values: [1, 2, 3] })).status).to.equal(201);
      const res = await ctx.server.request('PATCH', `/${ctx.tenant.project}/sizes/grow`, {
        key: ctx.tenant.key,
        body: { more: 'y'.repeat(64) },
        contentType: 'application/merge-patch+json',
      });
      expect(res.status).to.equal(413);
      const now = await ctx.server.request('GET', `/${ctx.tenant.project}/sizes/grow`, {
        key: ctx.tenant.key,
      });
      expect(now.body.$version).to.equal(1);
    });
  },
  { config: { documents: { maxBsonBytes: LIMIT } } },
);

/** The JSON size rule (`documents.maxBytes`), at its edge: the document as stored, as JSON. */
const JSON_LIMIT = Buffer.byteLength(JSON.stringify(asStored('edge', fields)));

forEachStore(
  'document size as JSON (a limit of exactly one document)',
  (ctx) => {
    const path = (id: string) => `/${ctx.tenant.project}/sizes/${id}`;
    const put = (id: string, body: JsonObject) =>
      ctx.server.request('PUT', path(id), { key: ctx.tenant.key, body });

    it('accepts a document of exactly documents.maxBytes and refuses one byte more, storing nothing', async () => {
      expect((await put('edge', fields)).status).to.equal(201);
      const over = await put('edgf', { ...fields, name: `${fields.name}!` });
      expect(over.status).to.equal(413);
      expect(over.body.error.details).to.deep.equal({ bytes: JSON_LIMIT + 1, max: JSON_LIMIT });
      expect((await ctx.server.request('GET', path('edgf'), { key: ctx.tenant.key })).status).to.equal(404);
    });

    it('holds a JSON patch copy to the limit as it applies, even when a later operation undoes it', async () => {
      // A copy of `name` adds `,"<to>":"<name>"` to the document (the document as the client
      // sees it: the id and metadata of version 1). Sized so that a copy to a two-letter field
      // lands exactly on the limit, and to a three-letter one a byte past it.
      const copyAdds = (to: string) => Buffer.byteLength(`,${JSON.stringify(to)}:${JSON.stringify('n')}`);
      const base = { name: 'n' };
      const padding = JSON_LIMIT - Buffer.byteLength(JSON.stringify(asStored('copy', base))) - copyAdds('ab');
      const doc = { name: 'n', pad: 'p'.repeat(padding - Buffer.byteLength(',"pad":""')) };
      expect(Buffer.byteLength(JSON.stringify(asStored('copy', doc))) + copyAdds('ab')).to.equal(JSON_LIMIT);
      expect((await put('copy', doc)).status).to.equal(201);
      const patch = (to: string) =>
        ctx.server.request('PATCH', path('copy'), {
          key: ctx.tenant.key,
          body: [
            { op: 'copy', from: '/name', path: `/${to}` },
            { op: 'remove', path: `/${to}` },
          ],
          contentType: 'application/json-patch+json',
        });
      const at = await patch('ab');
      expect(at.status, JSON.stringify(at.body)).to.equal(200);
      const over = await patch('abc');
      expect(over.status).to.equal(413);
      expect(over.body.error.details).to.deep.equal({ index: 0, bytes: JSON_LIMIT + 1, max: JSON_LIMIT });
      const now = await ctx.server.request('GET', path('copy'), { key: ctx.tenant.key });
      expect(now.body.$version).to.equal(2);
    });
  },
  { config: { documents: { maxBytes: JSON_LIMIT } } },
);
