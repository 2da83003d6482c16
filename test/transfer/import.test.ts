import { connect } from 'node:net';
import { expect } from 'chai';
import { withChanges } from '../support/scope.js';
import { forEachStore } from '../support/stores.js';
import { CSV, JSON_TYPE, NDJSON, transferClient, userPart } from './client.js';

/** Small plan numbers so every boundary is cheap to reach; batches of 3 so batching is exercised. */
const MAX_DOCS = 20;
const MAX_BYTES = 4096;
const config = {
  plans: { free: { maxImportDocuments: MAX_DOCS, maxImportBytes: MAX_BYTES } },
  imports: { batchDocuments: 3 },
  documents: { maxBytes: 2048 },
};

function expectBalanced(body: { imported: number; skipped: number; errors: unknown[]; total: number }) {
  expect(body.imported + body.skipped + body.errors.length).to.equal(body.total);
}

forEachStore(
  'import',
  (ctx) => {
    const api = () => transferClient(ctx);

    it('imports a JSON array: every document gets its id, metadata and a create version', async () => {
      const docs = [
        { _id: 'a1', name: 'Ada', tags: ['x'] },
        { name: 'Bob', address: { city: 'Paris' } },
      ];
      const res = await api().importJson('people', docs);
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ imported: 2, skipped: 0, errors: [], total: 2 });
      const stored = await api().all('people');
      expect(stored.map(userPart)).to.deep.include({ _id: 'a1', name: 'Ada', tags: ['x'] });
      const bob = stored.find((d) => d.name === 'Bob');
      expect(bob._id).to.match(/^doc_/);
      expect(bob.$version).to.equal(1);
      const versions = await api().req('GET', '/people/a1/versions');
      expect(versions.body.versions.map((v: { operation: string }) => v.operation)).to.deep.equal(['create']);
    });

    it('imports NDJSON: blank lines are skipped, a bad line is reported with its line number, the rest is imported', async () => {
      const body = '{"n":1}\r\n\n{"n":2\n{"n":3}\n[1]\n';
      const res = await api().importRaw('nd', body, NDJSON);
      expect(res.status).to.equal(200);
      expect(res.body.imported).to.equal(2);
      expect(res.body.total).to.equal(4);
      expect(res.body.errors).to.have.length(2);
      expect(res.body.errors[0]).to.include({ index: 1, line: 3, code: 'invalid_json' });
      expect(res.body.errors[1]).to.include({ index: 3, line: 5, code: 'invalid_body' });
      expectBalanced(res.body);
      expect((await api().all('nd')).map((d) => d.n)).to.deep.equal([1, 3]);
    });

    it('reports records that break the document rules and imports the others', async () => {
      const records = [
        { ok: 1 },
        'not an object',
        { $bad: 1 },
        { 'a.b': 1 },
        { _folio: {} },
        { _id: '_leading' },
        { _id: 12.5 },
        { ok: 2 },
      ];
      const res = await api().importJson('rules', records);
      expect(res.status).to.equal(200);
      expect(res.body.imported).to.equal(2);
      expect(res.body.errors.map((e: { index: number }) => e.index)).to.deep.equal([1, 2, 3, 4, 5, 6]);
      for (const e of res.body.errors) expect(e.code).to.equal('invalid_body');
      expectBalanced(res.body);
    });

    it('refuses __proto__ as a field name in every format, without touching any prototype', async () => {
      const nd = await api().importRaw(
        'proto',
        '{"__proto__":{"polluted":1}}\n{"ok":{"__proto__":1}}\n',
        NDJSON,
      );
      expect(nd.body.errors.map((e: { code: string }) => e.code)).to.deep.equal([
        'invalid_body',
        'invalid_body',
      ]);
      const csv = await api().importRaw('proto', '__proto__.polluted,constructor\n1,2\n', CSV);
      expect(csv.body.imported).to.equal(0);
      expect(csv.body.errors[0].code).to.equal('invalid_body');
      const json = await api().importRaw('proto', '[{"__proto__":{"x":1}}]', JSON_TYPE);
      expect(json.body.errors[0].code).to.equal('invalid_body');
      expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
    });

    it('a record over the document size limit is reported as payload_too_large', async () => {
      const res = await api().importJson('big', [{ small: 1 }, { big: 'x'.repeat(3000) }]);
      expect(res.status).to.equal(200);
      expect(res.body.imported).to.equal(1);
      expect(res.body.errors[0]).to.include({ index: 1, code: 'payload_too_large' });
    });

    describe('onConflict', () => {
      it('fail (the default): taken ids give 409 conflict naming them, and nothing of the body is written', async () => {
        await api().importJson('conf', [
          { _id: 'c1', v: 1 },
          { _id: 'c2', v: 1 },
        ]);
        const res = await api().importJson('conf', [
          { _id: 'c3', v: 2 },
          { _id: 'c2', v: 2 },
          { _id: 'c1', v: 2 },
          { v: 2 },
        ]);
        expect(res.status).to.equal(409);
        expect(res.body.error.code).to.equal('conflict');
        expect(res.body.error.details.ids).to.have.members(['c1', 'c2']);
        expect(res.body.error.details.count).to.equal(2);
        const stored = await api().all('conf');
        expect(stored.map((d) => [d._id, d.v])).to.deep.equal([
          ['c1', 1],
          ['c2', 1],
        ]);
      });

      it('fail: an id repeated inside the body is a conflict too, and nothing is written', async () => {
        const res = await api().importRaw('conf2', '{"_id":"r1"}\n{"_id":"r2"}\n{"_id":"r1"}\n', NDJSON);
        expect(res.status).to.equal(409);
        expect(res.body.error.details.ids).to.deep.equal(['r1']);
        expect(await api().all('conf2')).to.deep.equal([]);
      });

      it('skip: taken ids are counted as skipped and left as they were', async () => {
        await api().importJson('skip', [{ _id: 's1', v: 1 }]);
        const res = await api().importJson(
          'skip',
          [
            { _id: 's1', v: 2 },
            { _id: 's2', v: 2 },
            { _id: 's2', v: 3 },
          ],
          '?onConflict=skip',
        );
        expect(res.body).to.deep.equal({ imported: 1, skipped: 2, errors: [], total: 3 });
        const stored = await api().all('skip');
        expect(stored.map((d) => [d._id, d.v, d.$version])).to.deep.equal([
          ['s1', 1, 1],
          ['s2', 2, 1],
        ]);
      });

      it('overwrite: taken ids are replaced as by PUT (new version, update record, $createdAt kept), in body order', async () => {
        const first = await api().importJson('over', [{ _id: 'o1', v: 1, gone: true }]);
        expect(first.body.imported).to.equal(1);
        const before = (await api().req('GET', '/over/o1')).body;
        const res = await api().importJson(
          'over',
          [
            { _id: 'o1', v: 2 },
            { _id: 'o2', v: 1 },
            { _id: 'o1', v: 3 },
          ],
          '?onConflict=overwrite',
        );
        expect(res.body).to.deep.equal({ imported: 3, skipped: 0, errors: [], total: 3 });
        const o1 = (await api().req('GET', '/over/o1')).body;
        expect(userPart(o1)).to.deep.equal({ _id: 'o1', v: 3 });
        expect(o1.$version).to.equal(3);
        expect(o1.$createdAt).to.equal(before.$createdAt);
        const versions = (await api().req('GET', '/over/o1/versions')).body.versions;
        expect(versions.map((v: { operation: string }) => v.operation)).to.deep.equal([
          'update',
          'update',
          'create',
        ]);
      });

      it('an unknown mode or parameter is 400 invalid_query', async () => {
        const bad = await api().importRaw('x', '[]', JSON_TYPE, '?onConflict=replace');
        expect(bad.status).to.equal(400);
        expect(bad.body.error.details.param).to.equal('onConflict');
        const typo = await api().importRaw('x', '[]', JSON_TYPE, '?onconflict=skip');
        expect(typo.status).to.equal(400);
      });
    });

    describe('idField', () => {
      it('takes the id from the named field, keeps the field, and reads CSV numbers as id text', async () => {
        const res = await api().importRaw(
          'skus',
          'sku,name\nA-1,apple\n1002,pear\n,none\n',
          CSV,
          '?idField=sku',
        );
        expect(res.body.imported).to.equal(2);
        expect(res.body.errors).to.have.length(1);
        expect(res.body.errors[0]).to.include({ index: 2, line: 4, code: 'missing_id' });
        const stored = await api().all('skus');
        expect(stored.map(userPart)).to.deep.equal([
          { _id: '1002', sku: 1002, name: 'pear' },
          { _id: 'A-1', sku: 'A-1', name: 'apple' },
        ]);
      });

      it('an _id that disagrees with the id field is the record error; a bad idField is 400', async () => {
        const res = await api().importRaw(
          'skus2',
          '{"sku":"a","_id":"b"}\n{"sku":"c","_id":"c"}\n',
          NDJSON,
          '?idField=sku',
        );
        expect(res.body.imported).to.equal(1);
        expect(res.body.errors[0]).to.include({ index: 0, code: 'invalid_body' });
        // Refused as document field names are: a path, an operator, a prototype key, a control
        // character, the metadata field, nothing.
        for (const name of ['a.b', '%24id', '__proto__', 'a%00b', 'a%1Fb', '_folio', '']) {
          const bad = await api().importRaw('skus2', '[]', JSON_TYPE, `?idField=${name}`);
          expect(bad.status, name).to.equal(400);
          expect(bad.body.error.details.param, name).to.equal('idField');
        }
        // Any name a document may hold is a valid id field, `constructor` and spaces included.
        for (const name of ['constructor', '%20sku', 'n'.repeat(300)]) {
          const ok = await api().importRaw('skus3', '[]', JSON_TYPE, `?idField=${name}`);
          expect(ok.status, name).to.equal(200);
        }
      });
    });

    describe('plan limits', () => {
      it(`documents: ${MAX_DOCS} are imported, ${MAX_DOCS + 1} are 403 plan_limit_exceeded and nothing is written`, async () => {
        const lines = (n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ i })).join('\n');
        const over = await api().importRaw('lim', lines(MAX_DOCS + 1), NDJSON);
        expect(over.status).to.equal(403);
        expect(over.body.error.code).to.equal('plan_limit_exceeded');
        expect(over.body.error.details).to.deep.equal({
          limit: 'importDocuments',
          max: MAX_DOCS,
          plan: 'free',
        });
        expect(await api().all('lim')).to.have.length(0);
        const at = await api().importRaw('lim', lines(MAX_DOCS), NDJSON);
        expect(at.status).to.equal(200);
        expect(at.body.imported).to.equal(MAX_DOCS);
        expect(at.headers.get('x-import-max-documents')).to.equal(String(MAX_DOCS));
        expect(at.headers.get('x-import-max-bytes')).to.equal(String(MAX_BYTES));
      });

      it(`bytes: a body of exactly ${MAX_BYTES} bytes is read, one more is 413 and nothing is written`, async () => {
        const record = (pad: number) => `{"p":"${'x'.repeat(pad)}"}\n`;
        // Records of 300 bytes (fewer than the document limit); the last one padded to the exact size.
        const body = (size: number) => {
          let text = '';
          while (size - text.length > 600) text += record(300 - 9);
          return text + record(size - text.length - 9);
        };
        expect(Buffer.byteLength(body(MAX_BYTES))).to.equal(MAX_BYTES);
        const at = await api().importRaw('bytes', body(MAX_BYTES), NDJSON);
        expect(at.status).to.equal(200);
        const over = await api().importRaw('bytes2', body(MAX_BYTES + 1), NDJSON);
        expect(over.status).to.equal(413);
        expect(over.body.error.code).to.equal('payload_too_large');
        expect(over.body.error.details).to.include({ limit: 'importBytes', max: MAX_BYTES, plan: 'free' });
        expect(await api().all('bytes2')).to.have.length(0);
      });

      it(`bytes, chunked (no Content-Length): exactly ${MAX_BYTES} bytes are read, one more is 413 and nothing is written`, async () => {
        const { request } = await import('node:http');
        const record = (pad: number) => `{"p":"${'x'.repeat(pad)}"}\n`;
        const body = (size: number) => {
          let text = '';
          while (size - text.length > 600) text += record(300 - 9);
          return text + record(size - text.length - 9);
        };
        // Written in pieces of 1,000 bytes, so the count runs over chunks as the body streams in.
        const send = (collection: string, text: string) =>
          new Promise<{ status: number; body: string }>((resolve, reject) => {
            const url = new URL(`${ctx.server.url}/${ctx.tenant.project}/${collection}/_import`);
            const req = request(
              url,
              {
                method: 'POST',
                headers: { Authorization: `Bearer ${ctx.tenant.key}`, 'Content-Type': NDJSON },
              },
              (response) => {
                let answer = '';
                response.on('data', (chunk: Buffer) => {
                  answer += chunk.toString();
                });
                response.on('end', () => resolve({ status: response.statusCode ?? 0, body: answer }));
              },
            );
            // The server may answer 413 and close before the last piece is written.
            req.on('error', reject);
            for (let i = 0; i < text.length; i += 1000) req.write(text.slice(i, i + 1000));
            req.end();
          });
        const at = await send('chunked', body(MAX_BYTES));
        expect(at.status, at.body).to.equal(200);
        expect(JSON.parse(at.body).imported).to.be.above(0);
        const over = await send('chunked2', body(MAX_BYTES + 1));
        expect(over.status).to.equal(413);
        expect(JSON.parse(over.body).error.details).to.include({ limit: 'importBytes', max: MAX_BYTES });
        expect(await api().all('chunked2')).to.have.length(0);
      });

      it('a Content-Length over the plan is refused before the body is sent', async () => {
        const url = new URL(`${ctx.server.url}/${ctx.tenant.project}/early/_import`);
        const { request } = await import('node:http');
        const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = request(
            url,
            {
              method: 'POST',
              headers: {
                Authorization: `Bearer ${ctx.tenant.key}`,
                'Content-Type': NDJSON,
                'Content-Length': String(MAX_BYTES + 1),
              },
            },
            (response) => {
              let body = '';
              response.on('data', (chunk: Buffer) => {
                body += chunk.toString();
              });
              response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
            },
          );
          req.on('error', reject);
          // Headers only: the server must answer without waiting for the promised bytes.
          req.flushHeaders();
        });
        expect(res.status).to.equal(413);
        expect(JSON.parse(res.body).error.details).to.include({ limit: 'importBytes', bytes: MAX_BYTES + 1 });
      });

      it('a Content-Length of 1 GiB, the client still writing 64 KiB chunks: it reads the 413 (20 of 20 connections)', async function () {
        this.timeout(60_000);
        const { hostname, port } = new URL(ctx.server.url);
        const head =
          `POST /${ctx.tenant.project}/early/_import HTTP/1.1\r\nHost: x\r\n` +
          `Authorization: Bearer ${ctx.tenant.key}\r\nContent-Type: ${NDJSON}\r\nContent-Length: ${2 ** 30}\r\n\r\n`;
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        /** The status line read, or what ended the connection before one came. */
        const attempt = () =>
          new Promise<string>((resolve) => {
            const socket = connect(Number(port), hostname);
            let received = '';
            let error = '';
            const started = Date.now();
            socket.on('data', (data: Buffer) => {
              received += data.toString('latin1');
            });
            socket.on('error', (e: NodeJS.ErrnoException) => {
              error ||= e.code ?? e.message;
            });
            socket.on('close', () => resolve(received.split('\r\n')[0] || `nothing read (${error})`));
            // Write for a second, as fast as the socket takes it, then stop.
            const write = () => {
              if (socket.destroyed) return;
              if (Date.now() - started > 1000) return void socket.destroy();
              if (socket.write(chunk)) setImmediate(write);
              else socket.once('drain', write);
            };
            socket.write(head);
            write();
          });
        const lines: string[] = [];
        for (let i = 0; i < 20; i++) lines.push(await attempt());
        const read = lines.filter((line) => line === 'HTTP/1.1 413 Payload Too Large').length;
        console.log(`      ${read} of 20 read the 413 (${[...new Set(lines)].join('; ')})`);
        expect(read).to.equal(20);
      });
    });

    describe('refusals that write nothing', () => {
      it('a body that is not a JSON array, or breaks off, is 400 invalid_body', async () => {
        for (const body of ['{"a":1}', '[{"a":1},{"a":', '', '[{"a":1}] trailing']) {
          const res = await api().importRaw('malformed', body, JSON_TYPE);
          expect(res.status, body).to.equal(400);
          expect(res.body.error.code).to.equal('invalid_body');
        }
        expect(await api().all('malformed')).to.have.length(0);
      });

      it('invalid UTF-8 is 400; an unknown Content-Type is 415; a read-only key is 403', async () => {
        const url = `${ctx.server.url}/${ctx.tenant.project}/enc/_import`;
        const bad = await fetch(url, {
          method: 'POST',
          headers: { Authorization: `Bearer ${ctx.tenant.key}`, 'Content-Type': CSV },
          body: Buffer.from([0x61, 0x0a, 0xff, 0xfe, 0x0a]),
        });
        expect(bad.status).to.equal(400);
        const type = await api().importRaw('enc', 'a\n1\n', 'text/plain');
        expect(type.status).to.equal(415);
        const readOnly = await ctx.tenant.newKey({ scope: 'read-only', name: 'ro' });
        const ro = await api().req('POST', '/enc/_import', {
          key: readOnly.rawKey,
          rawBody: '[]',
          contentType: JSON_TYPE,
        });
        expect(ro.status).to.equal(403);
        expect(ro.body.error.code).to.equal('read_only_key');
        expect(await api().all('enc')).to.have.length(0);
      });
    });

    it('every imported document emits exactly one event: created, or updated when overwritten', async () => {
      await withChanges(ctx.server, ctx.tenant, 'evented', async (reader) => {
        const first = await api().importJson('evented', [
          { _id: 'e1' },
          { _id: 'e2' },
          { _id: 'e3' },
          { _id: 'e4' },
        ]);
        expect(first.body.imported).to.equal(4);
        const second = await api().importRaw(
          'evented',
          '{"_id":"e2","v":2}\n{"_id":"e5"}\n',
          NDJSON,
          '?onConflict=overwrite',
        );
        expect(second.body.imported).to.equal(2);
        // A marker written afterwards must be the very next event: no duplicates in between.
        await api().req('POST', '/evented', { body: { _id: 'marker' } });
        const events = await reader.take(7);
        expect(events.map((e) => [e.type, e.documentId, e.collection])).to.deep.equal([
          ['created', 'e1', 'evented'],
          ['created', 'e2', 'evented'],
          ['created', 'e3', 'evented'],
          ['created', 'e4', 'evented'],
          ['updated', 'e2', 'evented'],
          ['created', 'e5', 'evented'],
          ['created', 'marker', 'evented'],
        ]);
      });
    });
  },
  { config },
);
