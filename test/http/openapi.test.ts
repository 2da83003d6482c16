/**
 * The API describes itself: the OpenAPI document validates, names every route the routers serve
 * (and nothing else), every error code Folio can answer, and the rate-limit headers; the typed
 * client generated from it is current and works against a real server.
 */

import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import { clientTypes } from '../../client/generate.js';
import { createFolioClient } from '../../client/index.js';
import { createRouters } from '../../src/http/app.js';
import { ERROR_CATALOG } from '../../src/http/openapi/components.js';
import { RESERVED_PROJECT_NAMES } from '../../src/services/accounts.js';
import { ContractChecker, contractChecker, violations } from '../support/contract.js';
import { startTestServer, type TestServer } from '../support/server.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** `METHOD /path/{param}` for every route of the app's routers (HEAD and OPTIONS left out). */
function servedRoutes(server: TestServer): Set<string> {
  const { own, data } = createRouters(server.running.services);
  const routes = new Set<string>();
  for (const router of [...own, data]) {
    for (const layer of router.stack) {
      const path = String(layer.path).replace(/:(\w+)/g, '{$1}');
      for (const method of layer.methods) {
        if (method !== 'HEAD' && method !== 'OPTIONS') routes.add(`${method} ${path}`);
      }
    }
  }
  return routes;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? sourceFiles(full) : full.endsWith('.ts') ? [full] : [];
  });
}

describe('OpenAPI document and typed client', () => {
  let server: TestServer;
  // biome-ignore lint/suspicious/noExplicitAny: the document is checked by the validator and assertions
  let document: any;

  before(async () => {
    server = await startTestServer();
    const res = await server.request('GET', '/openapi.json');
    expect(res.status).to.equal(200);
    document = res.body;
  });
  after(() => server.close());

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).to.equal('3.1.0');
    const result = await new Validator().validate(document);
    expect(result.errors ?? [], String(JSON.stringify(result.errors)).slice(0, 1000)).to.deep.equal([]);
    expect(result.valid).to.equal(true);
  });

  it('passes swagger-parser’s validation', async () => {
    // The parser dereferences in place: it gets a copy.
    await SwaggerParser.validate(JSON.parse(JSON.stringify(document)));
  });

  it('passes Redocly’s recommended rules with 0 errors', async function () {
    this.timeout(60_000);
    const dir = mkdtempSync(join(tmpdir(), 'folio-redocly-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(document));
      const redocly = join(ROOT, 'node_modules/.bin/redocly');
      const { stdout } = await promisify(execFile)(
        redocly,
        ['lint', '--extends=recommended', '--format=json', file],
        { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } },
      ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
      const report = JSON.parse(stdout.slice(stdout.indexOf('{')));
      const errors = report.problems.filter((p: { severity: string }) => p.severity === 'error');
      expect(
        errors.map((p: { ruleId: string; message: string }) => `${p.ruleId}: ${p.message}`),
      ).to.deep.equal([]);
      expect(report.totals.errors).to.equal(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives every operation a unique, stable operationId, and public ones `security: []`', () => {
    const ids: string[] = [];
    for (const item of Object.values<Record<string, { operationId?: string; security?: unknown[] }>>(
      document.paths,
    )) {
      for (const op of Object.values(item)) {
        expect(op.operationId).to.match(/^[a-z][A-Za-z]+$/);
        ids.push(op.operationId as string);
        expect(op.security, op.operationId).to.be.an('array');
      }
    }
    expect(new Set(ids).size).to.equal(ids.length);
    // Names clients were generated with: renaming one breaks them.
    for (const id of ['listDocuments', 'readDocument', 'createDocument', 'patchDocument', 'health']) {
      expect(ids).to.include(id);
    }
    expect(document.paths['/healthz'].get.security).to.deep.equal([]);
    expect(document.servers).to.have.length.greaterThan(0);
  });

  it('types limit, offset and version numbers as integers, and documents the headers Folio sends', () => {
    const list = document.paths['/{ns}/{collection}'].get;
    const param = (name: string) => list.parameters.find((p: { name: string }) => p.name === name);
    expect(param('limit').schema.type).to.equal('integer');
    expect(param('offset').schema.type).to.equal('integer');
    const version = document.paths['/{ns}/{collection}/{id}/versions/{version}'].get.parameters.find(
      (p: { name: string }) => p.name === 'version',
    );
    expect(version.schema.type).to.equal('integer');
    const headers = Object.keys(document.components.headers);
    for (const id of ['RequestId', 'Location', 'ETag', 'WWWAuthenticate', 'RetryAfter', 'RateLimitLimit']) {
      expect(headers).to.include(id);
    }
    const created = document.paths['/{ns}/{collection}'].post.responses['201'];
    expect(created.headers).to.include.keys('Location', 'ETag', 'X-Request-Id');
  });

  it('says truthfully what `select` returns: listed documents require only `_id`', () => {
    const listed = document.components.schemas.ListedDocument;
    expect(listed.required).to.deep.equal(['_id']);
    expect(document.components.schemas.Document.required).to.include.members(['$version', '$createdAt']);
  });

  it('the suite’s contract check fails a response whose status, header or body the document lacks', async () => {
    // A document that lacks the 404 of readDocument, and whose ETag is an integer: the real
    // server's answers to a test then break it, and the check must say so.
    const changed = JSON.parse(JSON.stringify(document));
    const read = changed.paths['/{ns}/{collection}/{id}'].get;
    delete read.responses['404'];
    read.responses['200'].headers.ETag = { required: true, schema: { type: 'integer' } };
    const own = await startTestServer();
    try {
      new ContractChecker(changed).watch(own.running.httpServer);
      const tenant = await own.tenant();
      const created = await own.request('POST', `/${tenant.project}/notes`, { key: tenant.key, body: {} });
      await own.request('GET', `/${tenant.project}/notes/${created.body._id}`, { key: tenant.key });
      await own.request('GET', `/${tenant.project}/notes/missing`, { key: tenant.key });
    } finally {
      await own.close();
    }
    const found = violations.splice(0);
    expect(
      found.some((v) => /GET \/.+\/notes\/missing → 404: status 404 is not among/.test(v)),
      found.join('\n'),
    ).to.equal(true);
    expect(
      found.some((v) => /→ 200: header ETag: '"1"' .*integer/.test(v)),
      found.join('\n'),
    ).to.equal(true);
    // The document itself: the same answers conform.
    const ok = contractChecker().check({
      method: 'GET',
      url: '/app/notes/missing',
      status: 404,
      headers: {
        'content-type': 'application/json',
        'x-request-id': 'r',
        'x-ratelimit-limit': '1',
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': '1',
      },
      body: '{"error":{"code":"not_found","message":"Document not found."}}',
    });
    expect(ok).to.deep.equal([]);
  });

  it('reserves as project names the first segment of every route that is not a project’s', () => {
    // A project named like a system route would be hidden by it on `GET /{name}`.
    const firsts = new Set(
      [...servedRoutes(server)]
        .map((route) => route.split(' ')[1]!.split('/')[1]!)
        // `GET /` has no first segment, which no project name can be.
        .filter((s) => s !== '{ns}' && s !== ''),
    );
    expect([...firsts].filter((segment) => !RESERVED_PROJECT_NAMES.has(segment))).to.deep.equal([]);
  });

  it('documents every route the routers serve, and no route they do not', () => {
    const documented = new Set<string>();
    for (const [path, item] of Object.entries<Record<string, unknown>>(document.paths)) {
      for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    const served = servedRoutes(server);
    expect(
      [...served].filter((r) => !documented.has(r)),
      'served but undocumented',
    ).to.deep.equal([]);
    expect(
      [...documented].filter((r) => !served.has(r)),
      'documented but not served',
    ).to.deep.equal([]);
  });

  it('registers every route from its declaration: each layer is named by a documented operationId', () => {
    const { own, data } = createRouters(server.running.services);
    const ids = new Set<string>();
    for (const item of Object.values<Record<string, { operationId: string }>>(document.paths)) {
      for (const op of Object.values(item)) ids.add(op.operationId);
    }
    const undeclared: string[] = [];
    for (const router of [...own, data]) {
      for (const layer of router.stack) {
        if (layer.methods.length === 0) continue; // router.param / use layers
        if (!layer.name || !ids.has(layer.name)) undeclared.push(`${layer.methods.join(',')} ${layer.path}`);
      }
    }
    expect(
      undeclared,
      'register with route(router, declaration, ...): see docs/api.md, "Adding a route"',
    ).to.deep.equal([]);
  });

  it('names every error code the code can answer with', () => {
    const text = JSON.stringify(document);
    const codes = new Set<string>();
    for (const file of sourceFiles(join(ROOT, 'src'))) {
      for (const match of readFileSync(file, 'utf8').matchAll(/new AppError\(\s*\d{3},\s*'([a-z_]+)'/g)) {
        codes.add(match[1]!);
      }
    }
    expect(codes.size).to.be.greaterThan(15);
    expect([...codes].filter((code) => !text.includes(`\`${code}\``))).to.deep.equal([]);
  });

  it('docs/api.md’s error table names every code of the catalogue too', () => {
    const docs = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');
    expect(
      ERROR_CATALOG.map(([, code]) => code).filter((code) => !docs.includes(`\`${code}\``)),
    ).to.deep.equal([]);
  });

  it('shows the rate-limit headers on every keyed operation’s responses but the 401 (no key, no limit)', () => {
    const data = document.paths['/{ns}/{collection}/{id}'];
    for (const method of ['get', 'put', 'patch', 'delete']) {
      for (const [status, given] of Object.entries<{ headers?: object; $ref?: string }>(
        data[method].responses,
      )) {
        if (status === '401') continue;
        // Error responses are shared components, referred to by `$ref`.
        const response = given.$ref
          ? document.components.responses[given.$ref.replace('#/components/responses/', '')]
          : given;
        expect(response.headers, `${method} ${status}`).to.include.keys(
          'X-RateLimit-Limit',
          'X-RateLimit-Remaining',
          'X-RateLimit-Reset',
        );
      }
    }
  });

  it('serves an API reference page at /docs from the installed package, and only its files', async () => {
    const page = await server.request('GET', '/docs');
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.match(/text\/html/);
    expect(page.text).to.include('/openapi.json');
    const script = await server.request('GET', '/docs/assets/swagger-ui-bundle.js');
    expect(script.status).to.equal(200);
    expect(script.headers.get('content-type')).to.match(/javascript/);
    for (const path of [
      '/docs/assets/package.json',
      '/docs/assets/..%2F..%2Fpackage.json',
      '/docs/assets/index.html',
    ]) {
      expect((await server.request('GET', path)).status, path).to.equal(404);
    }
  });

  it('the committed client types are what the generator makes of the current document', async () => {
    const committed = readFileSync(join(ROOT, 'client/folioApi.d.ts'), 'utf8');
    expect(
      committed === (await clientTypes()),
      'run `npm run client:generate` and commit the result',
    ).to.equal(true);
  });

  it('the typed client creates, reads and lists documents against a real server', async () => {
    const tenant = await server.tenant();
    const folio = createFolioClient(server.url, tenant.key);
    const path = { ns: tenant.project, collection: 'notes' };
    const created = await folio.POST('/{ns}/{collection}', { params: { path }, body: { title: 'typed' } });
    expect(created.response.status).to.equal(201);
    const id = created.data?._id as string;
    const read = await folio.GET('/{ns}/{collection}/{id}', { params: { path: { ...path, id } } });
    expect(read.data?.title).to.equal('typed');
    expect(read.response.headers.get('x-ratelimit-limit')).to.be.a('string');
    const list = await folio.GET('/{ns}/{collection}', {
      params: { path, query: { limit: 10, filter: { title: 'typed' } } },
      querySerializer: { object: { style: 'deepObject', explode: true } },
    });
    expect(list.data && 'data' in list.data ? list.data.data.map((d) => d._id) : []).to.deep.equal([id]);
    const missing = await folio.GET('/{ns}/{collection}/{id}', { params: { path: { ...path, id: 'nope' } } });
    expect(missing.error?.error.code).to.equal('not_found');
  });
});
