/**
 * A sweep of the whole API as an integrator meets it: every operation of the OpenAPI document,
 * and the errors each documents, called with the typed client where its types allow the call and
 * with plain fetch where they deliberately do not (wrong Content-Type, Accept, parameters,
 * credentials). Each step says the status it expects and the sweep fails on another one. Run
 * directly against a test server (test/http/client.test.ts, where the suite's contract check
 * validates every answer) and through Prism's validating proxy (test/contract/prism.test.ts).
 */
import { expect } from 'chai';
import { createFolioClient } from '../../client/index.js';
import { startTestServer, type TestServer } from './server.js';

/** The Free plan's rate on the swept server: the sweep's Free key exceeds it. */
const FREE_RATE = 3;
const METRICS_TOKEN = 'sweep-metrics-token';

/** A test server as the sweep needs it: metrics on, a low Free rate, private webhook targets. */
export function startSweptServer(): Promise<TestServer> {
  return startTestServer({
    config: {
      metrics: { enabled: true, token: METRICS_TOKEN },
      plans: { free: { requestsPerSecond: FREE_RATE } },
      webhooks: { allowPrivateTargets: true, timeoutMs: 2000 },
    },
  });
}

export interface SweepStep {
  /** The operation called (the document's operationId), or a description for undocumented paths. */
  operation: string;
  status: number;
  /** Response headers, lower-cased (Prism reports violations in `sl-violations`). */
  headers: Headers;
}

export interface SweepOptions {
  /**
   * Through a proxy (Prism): the event stream's 200 is skipped (a proxy that buffers it would
   * wait for its end), and a redirect is seen followed (Prism's upstream client follows it).
   */
  viaProxy?: boolean;
}

/** The sweep against `baseUrl`: a server `startSweptServer` started, or a proxy in front of it. */
export async function sweepApi(baseUrl: string, options: SweepOptions = {}): Promise<SweepStep[]> {
  const steps: SweepStep[] = [];
  const record = (operation: string, expected: number, response: Response) => {
    steps.push({ operation, status: response.status, headers: response.headers });
    expect(response.status, `${operation}: ${response.status}`).to.equal(expected);
  };
  /** `record` of the answer `call` resolves with (a typed client call). */
  const called = async (operation: string, expected: number, call: Promise<{ response: Response }>) =>
    record(operation, expected, (await call).response);
  const raw = async (
    operation: string,
    expected: number,
    method: string,
    path: string,
    init: { headers?: Record<string, string>; body?: string } = {},
  ) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: init.headers,
      body: init.body,
      redirect: 'manual',
    });
    const text = await response.text();
    record(operation, expected, response);
    return text ? (response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text) : null;
  };

  // --- system
  const anon = createFolioClient(baseUrl);
  await called('serviceIndex', 200, anon.GET('/'));
  await called('health', 200, anon.GET('/healthz'));
  await called('ready', 200, anon.GET('/readyz'));
  await called('metrics', 401, anon.GET('/metrics'));
  await called(
    'metrics',
    200,
    anon.GET('/metrics', {
      headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
      parseAs: 'text',
    }),
  );
  await called('openApiDocument', 200, anon.GET('/openapi.json'));
  await raw('openApiDocument', 406, 'GET', '/openapi.json', { headers: { Accept: 'text/csv' } });
  await raw('openApiDocument', 400, 'GET', '/openapi.json?format=yaml');
  await called('referencePage', 200, anon.GET('/docs', { parseAs: 'text' }));
  const asset = { params: { path: { file: 'swagger-ui.css' } }, parseAs: 'text' as const };
  await called('referenceAsset', 200, anon.GET('/docs/assets/{file}', asset));
  const missingAsset = { params: { path: { file: 'nope.js' } } };
  await called('referenceAsset', 404, anon.GET('/docs/assets/{file}', missingAsset));
  await called('listPlans', 200, anon.GET('/api/plans'));
  if (options.viaProxy) await raw('dashboardPage', 200, 'GET', '/dashboard');
  else await raw('dashboardPage', 308, 'GET', '/dashboard');
  await raw('dashboardFile', 404, 'GET', '/dashboard/nope.txt');
  await raw('unknown route', 404, 'GET', '/api/nothing-here');
  await raw('method not allowed', 405, 'PUT', '/api/plans', {
    headers: { 'Content-Type': 'application/json' },
    body: '{}',
  });

  // --- accounts and keys
  const email = `sweep-${Date.now()}-${Math.random().toString(36).slice(2)}@example.test`;
  const password = 'correct horse battery';
  const signedUp = await anon.POST('/api/auth/signup', { body: { email, password } });
  record('signup', 201, signedUp.response);
  await called('signup', 409, anon.POST('/api/auth/signup', { body: { email, password } }));
  await called('signup', 400, anon.POST('/api/auth/signup', { body: { email: 'nope', password } }));
  await raw('signup', 415, 'POST', '/api/auth/signup', {
    headers: { 'Content-Type': 'text/plain' },
    body: 'x',
  });
  const loggedIn = await anon.POST('/api/auth/login', { body: { email, password } });
  record('login', 200, loggedIn.response);
  await called(
    'login',
    401,
    anon.POST('/api/auth/login', { body: { email, password: 'wrong wrong wrong' } }),
  );
  const session = loggedIn.data?.token as string;
  const account = createFolioClient(baseUrl, session);
  await called('readSession', 200, account.GET('/api/auth/session'));
  await called('readSession', 401, anon.GET('/api/auth/session'));
  await called('readAccount', 200, account.GET('/api/account'));
  await called('changePlan', 200, account.PATCH('/api/account', { body: { plan: 'pro' } }));
  await raw('changePlan', 400, 'PATCH', '/api/account', {
    headers: { Authorization: `Bearer ${session}`, 'Content-Type': 'application/json' },
    body: '{"plan":"gold"}',
  });
  const project = await account.POST('/api/projects', { body: { name: 'sweep' } });
  record('createProject', 201, project.response);
  await called('createProject', 409, account.POST('/api/projects', { body: { name: 'sweep' } }));
  await called('listProjects', 200, account.GET('/api/projects'));
  const projectId = project.data?.id as string;
  const settings = { params: { path: { projectId } }, body: { autoIndexes: true } };
  await called('updateProject', 200, account.PATCH('/api/projects/{projectId}', settings));
  const noProject = { params: { path: { projectId: 'prj_missing' } }, body: { autoIndexes: true } };
  await called('updateProject', 404, account.PATCH('/api/projects/{projectId}', noProject));
  const collections = { params: { path: { projectId }, query: { env: 'test' as const } } };
  await called('listCollections', 200, account.GET('/api/projects/{projectId}/collections', collections));
  const keyBody = { project: 'sweep', name: 'sweep', env: 'test' as const, scope: 'read-write' as const };
  const created = await account.POST('/api/keys', { body: keyBody });
  record('createKey', 201, created.response);
  await called('createKey', 400, account.POST('/api/keys', { body: { ...keyBody, env: 'prod' as never } }));
  await called('listKeys', 200, account.GET('/api/keys', { params: { query: { project: 'sweep' } } }));
  await called('listKeys', 404, account.GET('/api/keys', { params: { query: { project: 'other' } } }));
  const spare = await account.POST('/api/keys', { body: { ...keyBody, name: 'spare' } });
  const spareId = { params: { path: { keyId: spare.data?.apiKey.id as string } } };
  const rules = [{ collections: ['public_*'], access: 'read' as const, filter: { published: true } }];
  await called('updateKey', 200, account.PATCH('/api/keys/{keyId}', { ...spareId, body: { rules } }));
  await called(
    'updateKey',
    400,
    account.PATCH('/api/keys/{keyId}', {
      ...spareId,
      body: { rules: [{ collections: [], access: 'read' }] },
    }),
  );
  const rotated = await account.POST('/api/keys/{keyId}/rotate', spareId);
  record('rotateKey', 201, rotated.response);
  await called(
    'revokeKey',
    204,
    account.DELETE('/api/keys/{keyId}', {
      params: { path: { keyId: rotated.data?.apiKey.id as string } },
    }),
  );
  await called(
    'revokeKey',
    404,
    account.DELETE('/api/keys/{keyId}', { params: { path: { keyId: 'key_missing' } } }),
  );
  await called(
    'rotateKey',
    404,
    account.POST('/api/keys/{keyId}/rotate', { params: { path: { keyId: 'key_missing' } } }),
  );

  // --- documents
  const key = created.data?.rawKey as string;
  const folio = createFolioClient(baseUrl, key);
  const path = { ns: 'sweep', collection: 'items' };
  const auth = { Authorization: `Bearer ${key}` };
  const doc = await folio.POST('/{ns}/{collection}', { params: { path }, body: { sku: 'a-1', n: 1 } });
  record('createDocument', 201, doc.response);
  await called(
    'createDocument',
    201,
    folio.POST('/{ns}/{collection}', { params: { path }, body: { sku: 'b-2', n: 2 } }),
  );
  await called(
    'createDocument',
    400,
    folio.POST('/{ns}/{collection}', { params: { path }, body: { $bad: 1 } }),
  );
  await raw('createDocument', 415, 'POST', '/sweep/items', {
    headers: { ...auth, 'Content-Type': 'text/plain' },
    body: '{}',
  });
  await raw('createDocument', 401, 'POST', '/sweep/items', {
    headers: { 'Content-Type': 'application/json' },
    body: '{}',
  });
  const tooBig = JSON.stringify({ blob: 'x'.repeat(1024 * 1024 + 1) });
  await raw('createDocument', 413, 'POST', '/sweep/items', {
    headers: { ...auth, 'Content-Type': 'application/json' },
    body: tooBig,
  });
  const id = doc.data?._id as string;
  const docPath = { ...path, id };
  // Operator filters and a plain list: the answer is a DocumentList, no type guard.
  const list = await folio.GET('/{ns}/{collection}', {
    params: { path, query: { filter: { n: { gte: 2 } }, sort: '-n', limit: 10 } },
  });
  record('listDocuments', 200, list.response);
  expect(list.data?.data.map((d) => d.sku)).to.deep.equal(['b-2']);
  const selected = await folio.GET('/{ns}/{collection}', { params: { path, query: { select: 'sku' } } });
  record('listDocuments', 200, selected.response);
  expect(selected.data?.data[0]?.$version).to.equal(undefined);
  await called(
    'listDocuments',
    400,
    folio.GET('/{ns}/{collection}', {
      params: { path, query: { filter: { n: { gte: 'x' } }, sort: '$$' } },
    }),
  );
  await raw('listDocuments', 400, 'GET', '/sweep/items?limits=3', { headers: auth });
  await raw('listDocuments', 406, 'GET', '/sweep/items', { headers: { ...auth, Accept: 'text/csv' } });
  await raw('listDocuments', 401, 'GET', '/sweep/items');
  // From a browser page: CORS headers on the answer (a read-only key, as pages use).
  const pageKey = await account.POST('/api/keys', { body: { ...keyBody, name: 'page', scope: 'read-only' } });
  await raw('listDocuments', 200, 'GET', '/sweep/items', {
    headers: { Authorization: `Bearer ${pageKey.data?.rawKey}`, Origin: 'https://app.example.test' },
  });
  await raw('createDocument', 403, 'POST', '/sweep/items', {
    headers: { Authorization: `Bearer ${pageKey.data?.rawKey}`, 'Content-Type': 'application/json' },
    body: '{}',
  });
  const counted = await folio.count(path, { filter: { sku: { in: 'a-1,b-2' } } });
  record('listDocuments (count)', 200, counted.response);
  expect(counted.data?.count).to.equal(2);
  const plan = await folio.explain(path, { filter: { n: { lt: 5 } } });
  record('listDocuments (explain)', 200, plan.response);
  expect(plan.data?.plan.returned).to.equal(2);
  await called('readDocument', 200, folio.GET('/{ns}/{collection}/{id}', { params: { path: docPath } }));
  await called(
    'readDocument',
    404,
    folio.GET('/{ns}/{collection}/{id}', { params: { path: { ...path, id: 'missing' } } }),
  );
  await raw('readDocument', 406, 'GET', `/sweep/items/${id}`, { headers: { ...auth, Accept: 'text/csv' } });
  await raw('readDocument', 400, 'GET', `/sweep/items/${id}?select=sku`, { headers: auth });
  const replaced = await folio.PUT('/{ns}/{collection}/{id}', {
    params: { path: docPath },
    body: { sku: 'a-1', n: 10 },
  });
  record('replaceDocument', 200, replaced.response);
  const put = { params: { path: { ...path, id: 'made-by-put' } }, body: { sku: 'c-3' } };
  await called('replaceDocument', 201, folio.PUT('/{ns}/{collection}/{id}', put));
  const stale = { params: { path: docPath, header: { 'If-Match': '"1"' } }, body: { n: 3 } };
  await called('replaceDocument', 412, folio.PUT('/{ns}/{collection}/{id}', stale));
  const merged = await folio.PATCH('/{ns}/{collection}/{id}', {
    params: { path: docPath },
    body: { n: 11, tag: 'x' },
  });
  record('patchDocument (merge)', 200, merged.response);
  expect(merged.data?.n).to.equal(11);
  const patched = await folio.PATCH('/{ns}/{collection}/{id}', {
    params: { path: docPath },
    body: [{ op: 'replace', path: '/n', value: 12 }],
  });
  record('patchDocument (JSON patch)', 200, patched.response);
  expect(patched.data?.n).to.equal(12);
  const failing = { params: { path: docPath }, body: [{ op: 'test' as const, path: '/n', value: 0 }] };
  await called('patchDocument', 409, folio.PATCH('/{ns}/{collection}/{id}', failing));
  await raw('patchDocument', 415, 'PATCH', `/sweep/items/${id}`, {
    headers: { ...auth, 'Content-Type': 'application/json' },
    body: '{}',
  });
  const versionsPath = { params: { path: docPath } };
  await called('listVersions', 200, folio.GET('/{ns}/{collection}/{id}/versions', versionsPath));
  await called(
    'listVersions',
    404,
    folio.GET('/{ns}/{collection}/{id}/versions', { params: { path: { ...path, id: 'missing' } } }),
  );
  const diff = { params: { path: docPath, query: { from: 1, to: 2 } } };
  await called('diffVersions', 200, folio.GET('/{ns}/{collection}/{id}/versions/diff', diff));
  await raw('diffVersions', 400, 'GET', `/sweep/items/${id}/versions/diff?from=x&to=2`, { headers: auth });
  const v1 = { params: { path: { ...docPath, version: 1 } } };
  await called('readVersion', 200, folio.GET('/{ns}/{collection}/{id}/versions/{version}', v1));
  const v99 = { params: { path: { ...docPath, version: 99 } } };
  await called('readVersion', 404, folio.GET('/{ns}/{collection}/{id}/versions/{version}', v99));
  await called('restoreVersion', 200, folio.POST('/{ns}/{collection}/{id}/versions/{version}/restore', v1));

  // --- indexes (a unique index, then a write it refuses)
  const index = {
    params: { path },
    body: { fields: [{ path: 'sku', order: 1 as const }], unique: true, name: 'by_sku' },
  };
  const made = await folio.POST('/{ns}/{collection}/_indexes', index);
  record('createIndex', 201, made.response);
  await called(
    'createIndex',
    400,
    folio.POST('/{ns}/{collection}/_indexes', { params: { path }, body: { fields: [] } as never }),
  );
  await called('listIndexes', 200, folio.GET('/{ns}/{collection}/_indexes', { params: { path } }));
  const dup = { params: { path: { ...path, id: 'made-by-put' } }, body: { sku: 'a-1' } };
  await called('replaceDocument', 409, folio.PUT('/{ns}/{collection}/{id}', dup));
  const drop = { params: { path: { ...path, name: 'by_sku' } } };
  await called('dropIndex', 204, folio.DELETE('/{ns}/{collection}/_indexes/{name}', drop));
  await called('dropIndex', 404, folio.DELETE('/{ns}/{collection}/_indexes/{name}', drop));

  // --- webhooks
  const hook = {
    params: { path },
    body: { url: 'http://127.0.0.1:9/folio', events: ['document.created' as const] },
  };
  const registered = await folio.POST('/{ns}/{collection}/_webhooks', hook);
  record('registerWebhook', 201, registered.response);
  await called(
    'registerWebhook',
    400,
    folio.POST('/{ns}/{collection}/_webhooks', { params: { path }, body: { url: 'nope' } as never }),
  );
  await called('listWebhooks', 200, folio.GET('/{ns}/{collection}/_webhooks', { params: { path } }));
  const hookPath = { params: { path: { ...path, id: registered.data?.id as string } } };
  await called('readWebhook', 200, folio.GET('/{ns}/{collection}/_webhooks/{id}', hookPath));
  const noHook = { params: { path: { ...path, id: 'wh_missing' } } };
  await called('readWebhook', 404, folio.GET('/{ns}/{collection}/_webhooks/{id}', noHook));
  const update = { ...hookPath, body: { description: 'swept' } };
  await called('updateWebhook', 200, folio.PATCH('/{ns}/{collection}/_webhooks/{id}', update));
  await called(
    'rotateWebhookSecret',
    200,
    folio.POST('/{ns}/{collection}/_webhooks/{id}/rotate-secret', hookPath),
  );
  await called('testWebhook', 200, folio.POST('/{ns}/{collection}/_webhooks/{id}/test', hookPath));
  await called('deleteWebhook', 204, folio.DELETE('/{ns}/{collection}/_webhooks/{id}', hookPath));
  await called('deleteWebhook', 404, folio.DELETE('/{ns}/{collection}/_webhooks/{id}', hookPath));

  // --- transfer (the typed client sends a string body as CSV or NDJSON, an array as JSON)
  const importPath = { path: { ns: 'sweep', collection: 'imported' } };
  const csv = await folio.POST('/{ns}/{collection}/_import', {
    params: importPath,
    body: 'sku,n\nx-1,1\nx-2,2\n',
  });
  record('importDocuments', 200, csv.response);
  expect(csv.data?.imported).to.equal(2);
  const ndjson = await folio.POST('/{ns}/{collection}/_import', {
    params: importPath,
    body: '{"sku":"z-1"}\n{"sku":"z-2"}\n',
  });
  record('importDocuments', 200, ndjson.response);
  expect(ndjson.data?.imported).to.equal(2);
  const skipped = {
    params: { ...importPath, query: { onConflict: 'skip' as const } },
    body: [{ sku: 'y-1' }],
  };
  const json = await folio.POST('/{ns}/{collection}/_import', skipped);
  record('importDocuments', 200, json.response);
  expect(json.data?.imported).to.equal(1);
  await raw('importDocuments', 415, 'POST', '/sweep/imported/_import', {
    headers: { ...auth, 'Content-Type': 'text/xml' },
    body: '<a/>',
  });
  await raw('importDocuments', 400, 'POST', '/sweep/imported/_import?mode=fast', {
    headers: { ...auth, 'Content-Type': 'text/csv' },
    body: 'a\n1\n',
  });
  await called(
    'exportDocuments',
    200,
    folio.GET('/{ns}/{collection}/_export', { params: { path }, parseAs: 'text' }),
  );
  const exported = await folio.GET('/{ns}/{collection}/_export', {
    params: { path, query: { filter: { n: { gte: 1 } }, sort: 'sku' } },
    headers: { Accept: 'text/csv' },
    parseAs: 'text',
  });
  record('exportDocuments', 200, exported.response);
  expect(exported.data?.split('\n')[0]).to.include('sku');
  await raw('exportDocuments', 200, 'GET', '/sweep/items/_export?filter[n][gte]=1', {
    headers: { ...auth, Accept: 'text/csv' },
  });
  await raw('exportDocuments', 406, 'GET', '/sweep/items/_export', {
    headers: { ...auth, Accept: 'image/png' },
  });
  const bulk = {
    params: { path },
    body: {
      operations: [
        { method: 'POST' as const, body: { sku: 'bulk-1' } },
        { method: 'PATCH' as const, id, body: { n: 13 } },
        { method: 'DELETE' as const, id: 'missing' },
      ],
    },
  };
  await called('bulkDocuments', 207, folio.POST('/{ns}/{collection}/_bulk', bulk));
  await called(
    'bulkDocuments',
    400,
    folio.POST('/{ns}/{collection}/_bulk', { params: { path }, body: { operations: [] } }),
  );

  // --- change stream (Pro)
  await raw('streamChanges', 406, 'GET', '/sweep/items/_stream', {
    headers: { ...auth, Accept: 'application/json' },
  });
  await raw('streamChanges', 400, 'GET', '/sweep/items/_stream?since=now', {
    headers: { ...auth, Accept: 'text/event-stream' },
  });
  await raw('streamChanges', 410, 'GET', '/sweep/items/_stream', {
    headers: { ...auth, Accept: 'text/event-stream', 'Last-Event-ID': 'evt_forged' },
  });
  if (!options.viaProxy) {
    const controller = new AbortController();
    const stream = await fetch(`${baseUrl}/sweep/items/_stream`, {
      headers: { ...auth, Accept: 'text/event-stream' },
      signal: controller.signal,
    });
    record('streamChanges', 200, stream);
    controller.abort();
  }

  // --- a stream ticket (a browser's EventSource opens the stream with it)
  const ticket = await folio.POST('/{ns}/{collection}/_stream/tickets', { params: { path } });
  record('mintStreamTicket', 201, ticket.response);
  expect(ticket.data?.url).to.contain('ticket=');

  // --- a collection schema: set, read, a write it refuses, violations, the collection's document
  const schemaPath = { params: { path: { ns: 'sweep', collection: 'typed' } } };
  const schemaBody = {
    schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
    mode: 'enforce' as const,
  };
  await called('readSchema', 404, folio.GET('/{ns}/{collection}/_schema', schemaPath));
  await called(
    'setSchema',
    200,
    folio.PUT('/{ns}/{collection}/_schema', { ...schemaPath, body: schemaBody as never }),
  );
  await called(
    'setSchema',
    400,
    folio.PUT('/{ns}/{collection}/_schema', {
      ...schemaPath,
      body: { schema: { $ref: 'https://example.test/remote.json' } } as never,
    }),
  );
  await called('readSchema', 200, folio.GET('/{ns}/{collection}/_schema', schemaPath));
  await called(
    'createDocument',
    422,
    folio.POST('/{ns}/{collection}', { ...schemaPath, body: { n: 'one' } }),
  );
  await called('listSchemaViolations', 200, folio.GET('/{ns}/{collection}/_schema/violations', schemaPath));
  await called('collectionOpenApiDocument', 200, folio.GET('/{ns}/{collection}/_openapi', schemaPath));
  await called('removeSchema', 204, folio.DELETE('/{ns}/{collection}/_schema', schemaPath));
  await called('removeSchema', 404, folio.DELETE('/{ns}/{collection}/_schema', schemaPath));

  // --- the trash: a deleted document is listed, read, restored; another erased for good
  const trashed = await folio.POST('/{ns}/{collection}', { ...schemaPath, body: { n: 1 } });
  const trashedId = trashed.data?._id as string;
  const trashedPath = { params: { path: { ns: 'sweep', collection: 'typed', id: trashedId } } };
  await folio.DELETE('/{ns}/{collection}/{id}', trashedPath);
  await called('listTrash', 200, folio.GET('/{ns}/{collection}/_trash', schemaPath));
  await called('readTrashed', 200, folio.GET('/{ns}/{collection}/_trash/{id}', trashedPath));
  await called('restoreTrashed', 201, folio.POST('/{ns}/{collection}/_trash/{id}/restore', trashedPath));
  await called('restoreTrashed', 404, folio.POST('/{ns}/{collection}/_trash/{id}/restore', trashedPath));
  await folio.DELETE('/{ns}/{collection}/{id}', trashedPath);
  await called('eraseTrashed', 204, folio.DELETE('/{ns}/{collection}/_trash/{id}', trashedPath));
  await called('readTrashed', 404, folio.GET('/{ns}/{collection}/_trash/{id}', trashedPath));

  // --- the same data routes by session (the dashboard's mirror)
  const mirror = { params: { path: { env: 'test' as const, ...path } } };
  await called('listDocumentsBySession', 200, account.GET('/api/data/{env}/{ns}/{collection}', mirror));
  const elsewhere = { params: { path: { env: 'test' as const, ns: 'nobody', collection: 'items' } } };
  await called('listDocumentsBySession', 404, account.GET('/api/data/{env}/{ns}/{collection}', elsewhere));

  // --- a Free key over its plan's rate: 429 with Retry-After (its own account, on Free)
  const freeEmail = `free-${email}`;
  const free = await anon.POST('/api/auth/signup', { body: { email: freeEmail, password } });
  const freeAccount = createFolioClient(baseUrl, free.data?.token as string);
  await freeAccount.POST('/api/projects', { body: { name: 'limited' } });
  const freeKey = await freeAccount.POST('/api/keys', { body: { ...keyBody, project: 'limited' } });
  const limited = createFolioClient(baseUrl, freeKey.data?.rawKey as string);
  const limitedPath = { params: { path: { ns: 'limited', collection: 'items' } } };
  for (let i = 0; i < FREE_RATE; i += 1) {
    await called('listDocuments', 200, limited.GET('/{ns}/{collection}', limitedPath));
  }
  const over = await limited.GET('/{ns}/{collection}', limitedPath);
  record('listDocuments', 429, over.response);
  expect(over.response.headers.get('retry-after')).to.match(/^\d+$/);

  // --- the end of a session and of a document
  const staleDelete = { params: { path: docPath, header: { 'If-Match': '"1"' } } };
  await called('deleteDocument', 412, folio.DELETE('/{ns}/{collection}/{id}', staleDelete));
  await called('deleteDocument', 204, folio.DELETE('/{ns}/{collection}/{id}', { params: { path: docPath } }));
  await called('deleteDocument', 404, folio.DELETE('/{ns}/{collection}/{id}', { params: { path: docPath } }));
  await called('logout', 204, account.POST('/api/auth/logout'));
  return steps;
}
