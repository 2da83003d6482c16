import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import type { Json } from '../support/server.js';
import { forEachStore, readOnlyKey, tenantCalls } from '../support/stores.js';

/** Refuses exactly one field type: `n` must be a number, everything else is free. */
const NUMBER_N = { type: 'object', properties: { n: { type: 'number' } } };

/** The suite sets many schemas in one project; the per-minute plan bound has a test of its own. */
const MANY_CHANGES = { plans: { free: { schemaChangesPerMinute: 10_000 } } };

/** A schema of `n` patterns: half `pattern`s, the rest `patternProperties` keys. */
function patterns(n: number): Json {
  const properties: Json = {};
  const patternProperties: Json = {};
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) properties[`p${i}`] = { type: 'string', pattern: `^a${i}$` };
    else patternProperties[`^b${i}$`] = {};
  }
  return { properties, patternProperties };
}

/** A schema of exactly `n` objects: the root, its `properties` map and n - 2 empty subschemas. */
function objects(n: number): Json {
  const properties: Json = {};
  for (let i = 0; i < n - 2; i++) properties[`f${i}`] = {};
  return { properties };
}

forEachStore(
  'collection schemas (/{ns}/{collection}/_schema)',
  (ctx) => {
    const { at, call } = tenantCalls(ctx);
    const setSchema = async (collection: string, schema: Json, mode?: string) => {
      const res = await call('PUT', at(collection, '/_schema'), { schema, ...(mode ? { mode } : {}) });
      expect(res.status, res.text).to.equal(200);
      return res.body;
    };
    const readOnly = readOnlyKey(ctx);

    it('is set, read and removed by read-write keys; read-only keys may only read it', async () => {
      expect((await call('GET', at('owned', '/_schema'))).status).to.equal(404);
      const set = await setSchema('owned', NUMBER_N);
      expect(set).to.include({ mode: 'enforce' });
      expect(set.schema).to.deep.equal(NUMBER_N);
      const read = await call('GET', at('owned', '/_schema'), undefined, readOnly());
      expect(read.status).to.equal(200);
      expect(read.body.schema).to.deep.equal(NUMBER_N);
      expect((await call('PUT', at('owned', '/_schema'), { schema: NUMBER_N }, readOnly())).status).to.equal(
        403,
      );
      expect((await call('DELETE', at('owned', '/_schema'), undefined, readOnly())).status).to.equal(403);
      expect((await call('DELETE', at('owned', '/_schema'))).status).to.equal(204);
      expect((await call('DELETE', at('owned', '/_schema'))).status).to.equal(404);
      expect((await call('POST', at('owned'), { n: 'text' })).status).to.equal(201);
    });

    it('refuses exactly the one field type on every write path, with 422 schema_violation and nothing written', async () => {
      await setSchema('typed', NUMBER_N);
      const good = await call('POST', at('typed'), { n: 1, other: 'anything' });
      expect(good.status).to.equal(201);
      const id = good.body._id;

      const refused = await call('POST', at('typed'), { n: '1' });
      expect(refused.status).to.equal(422);
      expect(refused.body.error.code).to.equal('schema_violation');
      expect(refused.body.error.details.errors[0]).to.deep.equal({
        instancePath: '/n',
        keyword: 'type',
        message: 'must be number',
      });
      // A field of another type elsewhere is fine; only `n` is typed.
      expect((await call('POST', at('typed'), { m: '1', n: 2 })).status).to.equal(201);

      expect((await call('PUT', at('typed', `/${id}`), { n: 'x' })).status).to.equal(422);
      expect((await call('PUT', at('typed', '/fresh-id'), { n: 'x' })).status).to.equal(422);
      expect((await call('GET', at('typed', '/fresh-id'))).status).to.equal(404);
      expect(
        (await call('PATCH', at('typed', `/${id}`), { n: 'x' }, undefined, 'application/merge-patch+json'))
          .status,
      ).to.equal(422);
      expect(
        (
          await call(
            'PATCH',
            at('typed', `/${id}`),
            [{ op: 'replace', path: '/n', value: true }],
            undefined,
            'application/json-patch+json',
          )
        ).status,
      ).to.equal(422);
      // The patched result is what counts: removing the field leaves a valid document.
      const removed = await call(
        'PATCH',
        at('typed', `/${id}`),
        [{ op: 'remove', path: '/n' }],
        undefined,
        'application/json-patch+json',
      );
      expect(removed.status).to.equal(200);
      const current = await call('GET', at('typed', `/${id}`));
      expect(current.body.$version).to.equal(2);
      expect((await call('GET', at('typed', `/${id}/versions`))).body.versions).to.have.length(2);
    });

    it('checks a restored version against the schema of now', async () => {
      const created = await call('POST', at('restores'), { n: 'old text' });
      const id = created.body._id;
      await call('PUT', at('restores', `/${id}`), { n: 5 });
      await setSchema('restores', NUMBER_N);
      const restored = await call('POST', at('restores', `/${id}/versions/1/restore`));
      expect(restored.status).to.equal(422);
      expect(restored.body.error.code).to.equal('schema_violation');
      expect((await call('GET', at('restores', `/${id}`))).body.$version).to.equal(2);
    });

    it('bulk answers 422 for the violating operation only', async () => {
      await setSchema('bulked', NUMBER_N);
      const res = await call('POST', at('bulked', '/_bulk'), {
        operations: [
          { method: 'POST', body: { n: 1 } },
          { method: 'POST', body: { n: 'no' } },
          { method: 'PUT', id: 'b1', body: { n: 3 } },
        ],
      });
      expect(res.status).to.equal(207);
      expect(res.body.results.map((r: Json) => r.status)).to.deep.equal([201, 422, 201]);
      expect(res.body.results[1].error.code).to.equal('schema_violation');
      expect(res.body.summary).to.deep.equal({ total: 3, succeeded: 2, failed: 1 });
    });

    it('import reports each violating record in errors and imports the rest', async () => {
      await setSchema('imported', NUMBER_N);
      const res = await call('POST', at('imported', '/_import'), [
        { _id: 'i1', n: 1 },
        { _id: 'i2', n: 'bad' },
        { _id: 'i3', n: 3 },
        { _id: 'i4', n: false },
      ]);
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.include({ imported: 2, skipped: 0, total: 4 });
      expect(res.body.errors.map((e: Json) => [e.index, e.code])).to.deep.equal([
        [1, 'schema_violation'],
        [3, 'schema_violation'],
      ]);
      expect((await call('GET', at('imported', '/i2'))).status).to.equal(404);
      expect((await call('GET', at('imported', '/i3'))).status).to.equal(200);
    });

    it('warn mode lets violating writes through', async () => {
      await setSchema('warned', NUMBER_N, 'warn');
      const res = await call('POST', at('warned'), { n: 'text' });
      expect(res.status).to.equal(201);
    });

    it('does not rewrite existing documents; violations pages through the ones that fail', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await call('POST', at('legacy'), { n: i % 2 === 0 ? 'text' : i });
        ids.push(res.body._id);
      }
      await setSchema('legacy', NUMBER_N);
      expect((await call('GET', at('legacy', `/${ids[0]}`))).body.n).to.equal('text');
      const first = await call('GET', at('legacy', '/_schema/violations?limit=2'), undefined, readOnly());
      expect(first.status, first.text).to.equal(200);
      expect(first.body.data.map((d: Json) => d._id)).to.deep.equal([ids[0], ids[2]]);
      expect(first.body.data[0].errors[0]).to.include({ instancePath: '/n', keyword: 'type' });
      expect(first.body.meta.hasMore).to.equal(true);
      const second = await call(
        'GET',
        at('legacy', `/_schema/violations?limit=2&after=${first.body.meta.next}`),
      );
      expect(second.body.data.map((d: Json) => d._id)).to.deep.equal([ids[4]]);
      expect(second.body.meta).to.include({ hasMore: false, next: null });
      expect((await call('GET', at('legacy', '/_schema/violations?limit=0'))).status).to.equal(400);
      expect((await call('GET', at('legacy', '/_schema/violations?bogus=1'))).status).to.equal(400);
    });

    it('refuses hostile schemas with a clear 400 or 413 and keeps the old one', async () => {
      await setSchema('hostile', NUMBER_N);
      const refused: Array<[Json, number, string]> = [
        [{ $ref: 'https://example.com/schema.json' }, 400, 'not a local reference'],
        [{ properties: { a: { $ref: 'other.json#/x' } } }, 400, 'not a local reference'],
        [{ $schema: 'http://json-schema.org/draft-07/schema#' }, 400, '2020-12'],
        [{ enum: Array.from({ length: 1001 }, (_, i) => i) }, 400, 'enum lists 1001'],
        [{ type: 'string', pattern: '(a)\\1' }, 400, 'cannot be compiled'],
        [{ type: 'string', format: 'hostname' }, 400, 'not supported'],
        [{ type: 'array', uniqueItems: true }, 400, 'maxItems'],
        [{ type: 'array', uniqueItems: true, maxItems: 1001 }, 400, 'maxItems'],
        [{ type: 'string', pattern: 'a'.repeat(1025) }, 400, 'maximum is 1024'],
        [nest(33), 400, 'deeper than 32'],
        [objects(501), 400, 'more than 500 objects'],
        [patterns(21), 400, 'more than 20 patterns'],
        [{ description: 'x'.repeat(70_000) }, 413, 'maximum is 65536'],
        [{ type: 'nonsense' }, 400, 'not valid JSON Schema'],
      ];
      for (const [schema, status, words] of refused) {
        const res = await call('PUT', at('hostile', '/_schema'), { schema });
        expect(res.status, `${JSON.stringify(schema).slice(0, 80)}: ${res.text}`).to.equal(status);
        expect(res.body.error.message).to.contain(words);
      }
      // The boundaries themselves are accepted.
      await setSchema('bounds', { enum: Array.from({ length: 1000 }, (_, i) => i) });
      await setSchema('bounds', { type: 'array', uniqueItems: true, maxItems: 1000 });
      await setSchema('bounds', nest(32));
      await setSchema('bounds', objects(500));
      await setSchema('bounds', patterns(20));
      expect((await call('GET', at('hostile', '/_schema'))).body.schema).to.deep.equal(NUMBER_N);
    });

    it('runs catastrophic-backtracking patterns in linear time, and other tenants keep working', async () => {
      await setSchema('redos', {
        type: 'object',
        properties: {
          s: { type: 'string', pattern: '^(a+)+$' },
          t: { type: 'string', pattern: '^(a|aa)+$' },
        },
      });
      const evil = `${'a'.repeat(100_000)}!`;
      const other = await ctx.server.tenant();
      const [refused, otherWrite] = await Promise.all([
        call('POST', at('redos'), { s: evil, t: evil }),
        ctx.server.request('POST', `/${other.project}/notes`, { key: other.key, body: { a: 1 } }),
      ]);
      expect(refused.status).to.equal(422);
      expect(refused.body.error.details.errors.map((e: Json) => e.instancePath)).to.deep.equal(['/s', '/t']);
      expect(otherWrite.status).to.equal(201);
      expect((await call('POST', at('redos'), { s: 'aaaa', t: 'aaa' })).status).to.equal(201);
    });

    it('describes the collection in the OpenAPI document on request', async () => {
      await setSchema('described', NUMBER_N);
      const res = await call('GET', at('described', '/_openapi'), undefined, readOnly());
      expect(res.status, res.text).to.equal(200);
      const schemas = res.body.components.schemas;
      expect(schemas.DescribedDocumentBody).to.deep.include(NUMBER_N);
      const doc = schemas.DescribedDocument;
      expect(doc.allOf[0]).to.deep.equal({ $ref: '#/components/schemas/DescribedDocumentBody' });
      expect(doc.allOf[1].properties).to.have.keys('_id', '$createdAt', '$updatedAt', '$version');
      const path = `/${ctx.tenant.project}/described/{id}`;
      const read = res.body.paths[path].get.responses['200'];
      expect(JSON.stringify(read)).to.contain('#/components/schemas/DescribedDocument');
      const post = res.body.paths[`/${ctx.tenant.project}/described`].post;
      expect(JSON.stringify(post.requestBody)).to.contain('DescribedDocumentBody');
      // Only this collection's operations.
      expect(
        Object.keys(res.body.paths).every((p) => p.startsWith(`/${ctx.tenant.project}/described`)),
      ).to.equal(true);
      const checked = await new Validator().validate(res.body);
      expect(checked.errors ?? [], String(JSON.stringify(checked.errors)).slice(0, 500)).to.deep.equal([]);
      // Without a schema, the generic document schema stays.
      const plain = await call('GET', at('plain', '/_openapi'));
      expect(plain.body.components.schemas).to.not.have.property('PlainDocument');
    });
  },
  { config: MANY_CHANGES },
);

forEachStore('collection schemas: changes per minute', (ctx) => {
  it('a project sets at most its plan’s schemaChangesPerMinute schemas a minute; 429 with Retry-After past it', async () => {
    const put = (key: string, project: string, n: number) =>
      ctx.server.request('PUT', `/${project}/c${n}/_schema`, { key, body: { schema: { type: 'object' } } });
    for (let i = 0; i < 10; i++)
      expect((await put(ctx.tenant.key, ctx.tenant.project, i)).status).to.equal(200);
    const refused = await put(ctx.tenant.key, ctx.tenant.project, 10);
    expect(refused.status).to.equal(429);
    expect(refused.body.error).to.include({ code: 'rate_limited' });
    expect(refused.body.error.details).to.deep.equal({
      limit: 'schemaChangesPerMinute',
      max: 10,
      plan: 'free',
    });
    expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
    // Refused by the rules before compiling: not counted, still answered 400.
    expect(
      (
        await ctx.server.request('PUT', `/${ctx.tenant.project}/c/_schema`, {
          key: ctx.tenant.key,
          body: { schema: 1 },
        })
      ).status,
    ).to.equal(400);
    // Another project is not affected.
    const other = await ctx.server.tenant();
    expect((await put(other.key, other.project, 0)).status).to.equal(200);
  });
});

/** A schema exactly `depth` JSON levels deep (`{"type":"number"}` is one level). */
function nest(depth: number): Json {
  let schema: Json = depth % 2 === 1 ? { type: 'number' } : { items: { type: 'number' } };
  // Each wrapping adds two levels (the schema object and its `properties`).
  for (let level = depth % 2 === 1 ? 1 : 2; level < depth; level += 2) schema = { properties: { a: schema } };
  return schema;
}
