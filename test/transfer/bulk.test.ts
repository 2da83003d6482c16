import { expect } from 'chai';
import { withChanges } from '../support/scope.js';
import { forEachStore } from '../support/stores.js';
import { transferClient } from './client.js';

const MAX_OPS = 12;

forEachStore(
  'bulk',
  (ctx) => {
    const api = () => transferClient(ctx);
    const bulk = (collection: string, body: unknown) => api().req('POST', `/${collection}/_bulk`, { body });

    it('207 with one result per operation, in order, each with the status its endpoint would give', async () => {
      await api().req('PUT', '/mixed/existing', { body: { v: 1 } });
      const res = await bulk('mixed', {
        operations: [
          { method: 'POST', body: { a: 1 } },
          { method: 'POST', id: 'chosen', body: { a: 2 } },
          { method: 'PUT', id: 'existing', body: { v: 2 } },
          { method: 'PUT', id: 'fresh', body: { v: 1 } },
          { method: 'PATCH', id: 'existing', body: { w: 3 } },
          { method: 'DELETE', id: 'fresh' },
          { method: 'DELETE', id: 'missing' },
          { method: 'POST', id: 'chosen', body: { a: 3 } },
          { method: 'PATCH', id: 'existing', body: [1] },
          { method: 'PUT', body: { v: 1 } },
          { method: 'POST', body: { $bad: 1 } },
        ],
      });
      expect(res.status).to.equal(207);
      const r = res.body.results;
      expect(r.map((x: { status: number }) => x.status)).to.deep.equal([
        201, 201, 200, 201, 200, 204, 404, 409, 400, 400, 400,
      ]);
      expect(r[0]).to.have.keys('status', '_id', 'ok');
      expect(r[0]._id).to.match(/^doc_/);
      expect(r[1]).to.deep.equal({ status: 201, _id: 'chosen', ok: true });
      expect(r[6]).to.deep.equal({
        status: 404,
        ok: false,
        _id: 'missing',
        error: { code: 'not_found', message: 'Document not found.' },
      });
      expect(r[7].error.code).to.equal('conflict');
      expect(r[9]).to.not.have.property('_id');
      expect(res.body.summary).to.deep.equal({ total: 11, succeeded: 6, failed: 5 });
      const existing = (await api().req('GET', '/mixed/existing')).body;
      expect(existing).to.include({ v: 2, w: 3, $version: 3 });
      const versions = (await api().req('GET', '/mixed/existing/versions')).body.versions;
      expect(versions.map((v: { operation: string }) => v.operation)).to.deep.equal([
        'patch',
        'update',
        'create',
      ]);
      expect((await api().req('GET', '/mixed/fresh')).status).to.equal(404);
    });

    it('operations on the same id apply in request order', async () => {
      const res = await bulk('ordered', {
        operations: [
          { method: 'PUT', id: 'x', body: { step: 1 } },
          { method: 'PATCH', id: 'x', body: { step: 2, a: true } },
          { method: 'DELETE', id: 'x' },
          { method: 'POST', id: 'x', body: { step: 4 } },
          { method: 'PATCH', id: 'x', body: { b: true } },
        ],
      });
      expect(res.body.results.map((x: { status: number }) => x.status)).to.deep.equal([
        201, 200, 204, 201, 200,
      ]);
      const doc = (await api().req('GET', '/ordered/x')).body;
      expect(doc).to.include({ step: 4, b: true, $version: 2 });
      expect(doc).to.not.have.property('a');
    });

    it(`plan maximum: ${MAX_OPS} operations run, ${MAX_OPS + 1} are 403 and nothing runs`, async () => {
      const ops = (n: number) =>
        Array.from({ length: n }, (_, i) => ({ method: 'PUT', id: `m${i}`, body: { i } }));
      const over = await bulk('maxed', { operations: ops(MAX_OPS + 1) });
      expect(over.status).to.equal(403);
      expect(over.body.error.details).to.deep.equal({ limit: 'bulkOperations', max: MAX_OPS, plan: 'free' });
      expect(await api().all('maxed')).to.have.length(0);
      const at = await bulk('maxed', { operations: ops(MAX_OPS) });
      expect(at.status).to.equal(207);
      expect(at.body.summary.succeeded).to.equal(MAX_OPS);
    });

    it('a malformed envelope is 400 invalid_body and nothing runs', async () => {
      const bodies: unknown[] = [
        [],
        {},
        { operations: [] },
        { operations: {} },
        { operations: [{ method: 'GET', id: 'a' }] },
        {
          operations: [
            { method: 'PUT', id: 'a', body: {} },
            { method: 'PUT', id: 'b', bdy: {} },
          ],
        },
        { operations: [{ method: 'PUT', id: 7, body: {} }] },
        { operations: [{ method: 'PUT', id: 'a', body: {} }], extra: true },
      ];
      for (const body of bodies) {
        const res = await bulk('envelope', body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.body.error.code).to.equal('invalid_body');
      }
      const notJson = await api().req('POST', '/envelope/_bulk', {
        rawBody: '{"operations":',
        contentType: 'application/json',
      });
      expect(notJson.status).to.equal(400);
      expect(await api().all('envelope')).to.have.length(0);
    });

    it('each successful operation emits exactly one event; failed ones emit none', async () => {
      await withChanges(ctx.server, ctx.tenant, 'bulkev', async (reader) => {
        const res = await bulk('bulkev', {
          operations: [
            { method: 'POST', id: 'b1', body: {} },
            { method: 'PUT', id: 'b1', body: { v: 2 } },
            { method: 'DELETE', id: 'nope' },
            { method: 'PATCH', id: 'b1', body: { v: 3 } },
            { method: 'DELETE', id: 'b1' },
          ],
        });
        expect(res.body.summary).to.deep.equal({ total: 5, succeeded: 4, failed: 1 });
        await api().req('POST', '/bulkev', { body: { _id: 'marker' } });
        const events = await reader.take(5);
        expect(events.map((e) => [e.type, e.documentId, e.collection])).to.deep.equal([
          ['created', 'b1', 'bulkev'],
          ['updated', 'b1', 'bulkev'],
          ['updated', 'b1', 'bulkev'],
          ['deleted', 'b1', 'bulkev'],
          ['created', 'marker', 'bulkev'],
        ]);
      });
    });

    it('its operations are on disk and their events published when it answers, even if the last one fails', async () => {
      await withChanges(ctx.server, ctx.tenant, 'bulkdurable', async (reader) => {
        const res = await bulk('bulkdurable', {
          operations: [
            { method: 'POST', id: 'd1', body: {} },
            { method: 'POST', id: 'd2', body: {} },
            // Refused before it reaches the store: the request's one sync must still happen.
            { method: 'PATCH', body: { v: 1 } },
          ],
        });
        expect(res.body.summary).to.deep.equal({ total: 3, succeeded: 2, failed: 1 });
        // No other write follows: nothing else could carry the bulk's commits to the disk.
        const events = await reader.take(2);
        expect(events.map((e) => [e.type, e.documentId])).to.deep.equal([
          ['created', 'd1'],
          ['created', 'd2'],
        ]);
      });
    });

    it('a read-only key is refused (403) before anything runs', async () => {
      const ro = await ctx.tenant.newKey({ scope: 'read-only', name: 'ro-bulk' });
      const res = await api().req('POST', '/rob/_bulk', {
        key: ro.rawKey,
        body: { operations: [{ method: 'POST', body: {} }] },
      });
      expect(res.status).to.equal(403);
      expect(await api().all('rob')).to.have.length(0);
    });
  },
  { config: { plans: { free: { maxBulkOperations: MAX_OPS } } } },
);
