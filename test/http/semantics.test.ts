/**
 * HTTP semantics every route shares, checked over every declared operation (so a route added
 * later is checked too): 400 `invalid_query` naming each query parameter the route does not take,
 * 406 for an `Accept` none of its answers can satisfy; and a bulk request whose operations stand
 * alone, `__proto__` in one operation's body included.
 */
import { expect } from 'chai';
import { answerTypes, queryNames } from '../../src/http/openapi/declare.js';
import { declaredOperations } from '../../src/http/openapi/document.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';

describe('HTTP semantics on every route', () => {
  let server: TestServer;
  let tenant: Tenant;

  before(async () => {
    server = await startTestServer();
    tenant = await server.tenant({ plan: 'pro' });
  });
  after(() => server.close());

  /** The operation's path with values that pass authentication and the path checks. */
  function concrete(path: string): string {
    const values: Record<string, string> = {
      ns: tenant.project,
      collection: 'things',
      id: 'some-id',
      version: '1',
      name: 'idx',
      keyId: 'key_x',
      projectId: 'prj_x',
      file: 'swagger-ui.css',
    };
    return path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? 'x');
  }

  function credentials(auth: string): { key?: string; session?: string } {
    if (auth === 'key') return { key: tenant.key };
    if (auth === 'session') return { session: tenant.session };
    return {};
  }

  it('answers 400 naming every unknown query parameter, on every route', async () => {
    const checked: string[] = [];
    for (const op of declaredOperations()) {
      if (op.auth === 'metrics') continue; // answers 404 while metrics are off, before any check
      const url = `${concrete(op.path)}?zz_unknown=1&also_unknown=2`;
      const res = await server.request(op.method.toUpperCase(), url, credentials(op.auth));
      expect(res.status, `${op.operationId}: ${res.text}`).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_query');
      expect(res.body.error.details.params, op.operationId).to.deep.equal(['zz_unknown', 'also_unknown']);
      expect(res.body.error.message).to.include('zz_unknown').and.include('also_unknown');
      checked.push(op.operationId);
    }
    // Every operation but metrics (one), none skipped by accident.
    expect(checked.length).to.equal(declaredOperations().length - 1);
  });

  it('the dashboard’s session mirror of the data routes checks the same way', async () => {
    const base = `/api/data/test/${tenant.project}/things`;
    const unknown = await server.request('GET', `${base}?zz_unknown=1`, { session: tenant.session });
    expect(unknown.status).to.equal(400);
    expect(unknown.body.error.details.params).to.deep.equal(['zz_unknown']);
    const csv = await server.request('GET', `${base}/x`, {
      session: tenant.session,
      headers: { Accept: 'text/csv' },
    });
    expect(csv.status).to.equal(406);
  });

  it('takes every parameter a route declares (a declared name is never refused as unknown)', async () => {
    for (const op of declaredOperations()) {
      const { names, families } = queryNames(op);
      const given = [...names].map((n) => `${n}=`).concat([...families].map((f) => `${f}[zz]=1`));
      if (given.length === 0) continue;
      const res = await server.request(
        op.method.toUpperCase(),
        `${concrete(op.path)}?${given.join('&')}`,
        credentials(op.auth),
      );
      if (res.status === 400) {
        expect(res.body.error.message, op.operationId).not.to.match(/unknown query parameter/);
      }
    }
  });

  it('answers 406 to an Accept none of a route’s answers satisfies, on every route', async () => {
    let checked = 0;
    for (const op of declaredOperations()) {
      if (op.auth === 'metrics' || answerTypes(op).length === 0) continue;
      const res = await server.request(op.method.toUpperCase(), concrete(op.path), {
        ...credentials(op.auth),
        headers: { Accept: 'image/x-nothing' },
      });
      expect(res.status, `${op.operationId}: ${res.text}`).to.equal(406);
      expect(res.body.error.code).to.equal('not_acceptable');
      expect(res.body.error.details.accepted).to.deep.equal(answerTypes(op));
      checked += 1;
    }
    const withAnswers = declaredOperations().filter((op) => answerTypes(op).length > 0);
    expect(checked).to.equal(withAnswers.length - 1);
  });

  it('a document read with Accept: text/csv is 406; with */* or application/json it is JSON', async () => {
    const created = await server.request('POST', `/${tenant.project}/things`, {
      key: tenant.key,
      body: { a: 1 },
    });
    const path = `/${tenant.project}/things/${created.body._id}`;
    const csv = await server.request('GET', path, { key: tenant.key, headers: { Accept: 'text/csv' } });
    expect(csv.status).to.equal(406);
    // Only an exact `*/*` or declared type skips negotiation: a type refused by q=0 is still 406.
    for (const accept of ['application/json;q=0', '*/*;q=0', 'application/jsonx']) {
      const res = await server.request('GET', path, { key: tenant.key, headers: { Accept: accept } });
      expect(res.status, accept).to.equal(406);
    }
    for (const accept of ['*/*', 'application/json', 'text/html,application/json;q=0.9', 'application/*']) {
      const res = await server.request('GET', path, { key: tenant.key, headers: { Accept: accept } });
      expect(res.status, accept).to.equal(200);
    }
  });

  it('a list with known query names passes; one unknown name among them is a 400 naming it alone', async () => {
    const path = `/${tenant.project}/things`;
    const ok = await server.request('GET', `${path}?filter[a]=1&sort=a&limit=2&total=none`, {
      key: tenant.key,
    });
    expect(ok.status).to.equal(200);
    const bad = await server.request('GET', `${path}?filter[a]=1&sort=a&limitt=2`, { key: tenant.key });
    expect(bad.status).to.equal(400);
    expect(bad.body.error.details).to.deep.equal({ param: 'limitt', params: ['limitt'] });
  });

  it('a bulk operation whose body holds __proto__ fails alone; the others run', async () => {
    const rawBody = `{"operations":[
      {"method":"POST","id":"before","body":{"a":1}},
      {"method":"POST","id":"poisoned","body":{"__proto__":{"admin":true},"b":2}},
      {"method":"PUT","id":"nested","body":{"c":{"__proto__":{"x":1}}}},
      {"method":"POST","id":"after","body":{"d":4}}
    ]}`;
    const res = await server.request('POST', `/${tenant.project}/bulkproto/_bulk`, {
      key: tenant.key,
      rawBody,
    });
    expect(res.status, res.text).to.equal(207);
    const results = res.body.results;
    expect(results.map((r: { status: number }) => r.status)).to.deep.equal([201, 400, 400, 201]);
    expect(results[1].error.code).to.equal('invalid_body');
    expect(results[1].error.message).to.match(/__proto__/);
    expect(res.body.summary).to.deep.equal({ total: 4, succeeded: 2, failed: 2 });
    for (const [id, status] of [
      ['before', 200],
      ['poisoned', 404],
      ['nested', 404],
      ['after', 200],
    ] as const) {
      const read = await server.request('GET', `/${tenant.project}/bulkproto/${id}`, { key: tenant.key });
      expect(read.status, id).to.equal(status);
    }
    // Nothing reached a prototype.
    expect(({} as Record<string, unknown>).admin).to.equal(undefined);
  });

  it('a bulk operation whose body nests too deep fails alone; one at exactly 64 levels is written', async () => {
    // As text: JSON.stringify itself cannot nest 5000 levels deep.
    const nest = (levels: number) => `${'{"n":'.repeat(levels)}1${'}'.repeat(levels)}`;
    const res = await server.request('POST', `/${tenant.project}/bulkdepth/_bulk`, {
      key: tenant.key,
      rawBody: `{"operations":[
        {"method":"POST","id":"at-limit","body":${nest(64)}},
        {"method":"POST","id":"one-over","body":${nest(65)}},
        {"method":"POST","id":"far-over","body":${nest(5000)}},
        {"method":"POST","id":"plain","body":{"a":1}}
      ]}`,
    });
    expect(res.status, res.text).to.equal(207);
    expect(res.body.results.map((r: { status: number }) => r.status)).to.deep.equal([201, 400, 400, 201]);
    expect(res.body.results[1].error.message).to.match(/64 levels/);
    expect(res.body.results[2].error.message).to.match(/64 levels/);
  });

  it('a single write whose body holds __proto__ is still a 400 for the whole request', async () => {
    const res = await server.request('POST', `/${tenant.project}/bulkproto`, {
      key: tenant.key,
      rawBody: '{"__proto__":{"admin":true}}',
    });
    expect(res.status).to.equal(400);
    expect(res.body.error.message).to.match(/__proto__/);
  });
});
