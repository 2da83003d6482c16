/**
 * The key-rule matrix (issue 45): random rules, documents and requests over every surface a key
 * reads or writes through, each answer checked against the oracle (test/support/ruleOracle.ts,
 * mingo), and every answer's text searched for the ids of documents the key may not see there.
 * `RULES_MATRIX_RUNS` sets the number of runs (20 by default, so `npm test` stays quick); the
 * @slow case makes 300.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import {
  apartFrom,
  CollectionModel,
  type Fields,
  type Filter,
  fieldsArb,
  filterArb,
  filterParams,
  matches,
  mergePatch,
  patchArb,
  ruleJson,
  satisfying,
  userFieldsOf,
} from '../support/ruleOracle.js';
import type { ApiResponse, RequestOptions } from '../support/server.js';
import { StreamClient } from '../support/sse.js';
import { readSse, sseEvents } from '../support/sseText.js';
import { forEachStore, type SuiteContext, tenantCalls } from '../support/stores.js';

const RUNS = Number(process.env.RULES_MATRIX_RUNS ?? 20);
/** The @slow case (`npm run test:slow`). */
const SLOW_RUNS = 300;
const POOL = 8;

type Op =
  | { kind: 'get' | 'versions' | 'trashGet' | 'trashRestore' | 'trashErase'; id: number }
  | { kind: 'version'; id: number; v: number }
  | { kind: 'diff'; id: number; a: number; b: number }
  | { kind: 'restore'; id: number; v: number }
  | { kind: 'list'; filter: Filter; sort: string; limit: number }
  | { kind: 'count'; filter: Filter }
  | { kind: 'trashList'; limit: number }
  | { kind: 'export'; format: 'json' | 'ndjson' | 'csv'; filter: Filter }
  | { kind: 'import'; records: Array<{ id: number; fields: Fields }> }
  | { kind: 'bulk'; ops: BulkOp[] };

type BulkOp =
  | { method: 'POST' | 'PUT'; id: number; fields: Fields }
  | { method: 'PATCH'; id: number; patch: Record<string, unknown> }
  | { method: 'DELETE'; id: number };

const idArb = fc.nat({ max: POOL - 1 });
const versionArb = fc.integer({ min: 1, max: 4 });

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constantFrom('get', 'versions', 'trashGet', 'trashRestore', 'trashErase'),
    id: idArb,
  }),
  fc.record({ kind: fc.constant('version'), id: idArb, v: versionArb }),
  fc.record({ kind: fc.constant('diff'), id: idArb, a: versionArb, b: versionArb }),
  fc.record({ kind: fc.constant('restore'), id: idArb, v: versionArb }),
  fc.record({
    kind: fc.constant('list'),
    filter: filterArb(0),
    sort: fc.constantFrom('_id', '-_id', 'n,_id'),
    limit: fc.integer({ min: 1, max: 4 }),
  }),
  fc.record({ kind: fc.constant('count'), filter: filterArb(0) }),
  fc.record({ kind: fc.constant('trashList'), limit: fc.integer({ min: 1, max: 3 }) }),
  fc.record({
    kind: fc.constant('export'),
    format: fc.constantFrom('json', 'ndjson', 'csv'),
    filter: filterArb(0),
  }),
  fc.record({
    kind: fc.constant('import'),
    records: fc.uniqueArray(fc.record({ id: idArb, fields: fieldsArb }), {
      minLength: 1,
      maxLength: 4,
      selector: (r) => r.id,
    }),
  }),
  fc.record({
    kind: fc.constant('bulk'),
    ops: fc.array(
      fc.oneof(
        fc.record({ method: fc.constantFrom('POST', 'PUT'), id: idArb, fields: fieldsArb }),
        fc.record({ method: fc.constant('PATCH'), id: idArb, patch: patchArb }),
        fc.record({ method: fc.constant('DELETE'), id: idArb }),
      ) as fc.Arbitrary<BulkOp>,
      { minLength: 1, maxLength: 5 },
    ),
  }),
);

/** What the admin key writes first: per pooled id, its versions, then maybe a delete. */
const setupArb = fc.array(
  fc.record({ versions: fc.array(fieldsArb, { minLength: 1, maxLength: 3 }), deleted: fc.boolean() }),
  { minLength: POOL, maxLength: POOL },
);

const scenarioArb = fc.record({
  /** The resumed stream's own filter (kept off the rule's fields) and its `events` besides created. */
  streamFilter: filterArb(0),
  streamTypes: fc.subarray(['updated', 'deleted', 'removed']),
  rule: filterArb(1),
  setup: setupArb,
  ops: fc.array(opArb, { minLength: 4, maxLength: 12 }),
});

let matrixKey: { rawKey: string; id: string };

interface Tally {
  requests: number;
  leaks: string[];
}

forEachStore(
  'key rules matrix',
  (ctx) => {
    before(async () => {
      matrixKey = await ctx.tenant.newKey({ rules: [] });
    });
    let run = 0;

    for (const [runs, tag] of [
      [RUNS, ''],
      [SLOW_RUNS, ' @slow'],
    ] as const) {
      it(`${runs} generated runs: every surface answers as the oracle, and nothing outside a rule reaches the key${tag}`, async function () {
        this.timeout(60_000 + runs * 10_000);
        const tally: Tally = { requests: 0, leaks: [] };
        await fc.assert(
          fc.asyncProperty(scenarioArb, async (scenario) => {
            run += 1;
            await runScenario(ctx, `m${run}`, scenario, tally, run);
          }),
          { numRuns: runs, endOnFailure: true },
        );
        console.log(`      key rules matrix: ${tally.requests} requests, ${tally.leaks.length} leaks`);
        expect(tally.leaks).to.deep.equal([]);
      });
    }
  },
  { plan: 'team', config: { plans: { team: { storedVersions: 100 } } } },
);

async function runScenario(
  ctx: SuiteContext,
  collection: string,
  scenario: {
    rule: Filter;
    setup: Array<{ versions: Fields[]; deleted: boolean }>;
    ops: Op[];
    streamFilter: Filter;
    streamTypes: string[];
  },
  tally: Tally,
  run: number,
): Promise<void> {
  const { at, call } = tenantCalls(ctx);
  const ids = Array.from({ length: POOL }, (_, i) => `${collection}x${String(i).padStart(2, '0')}`);
  const model = new CollectionModel();
  const { rule } = scenario;
  // One key for every run, its rules changed through /api/keys (a plan caps the keys per project).
  const rules = [{ collections: [collection], access: 'write', filter: ruleJson(rule) }];
  const changed = await ctx.server.request('PATCH', `/api/keys/${matrixKey.id}`, {
    session: ctx.tenant.session,
    body: { rules },
  });
  expect(changed.status, changed.text).to.equal(200);
  const key = matrixKey.rawKey;
  const seen = (doc: Fields | null | undefined): doc is Fields => doc != null && matches(rule, doc);

  // The admin's seed event is where the key's stream resumes.
  const admin = new StreamClient(`${ctx.server.url}${at(collection, '/_stream')}`, ctx.tenant.key);
  await admin.opened;
  const seed = { n: 0, team: 'a' };
  expect((await call('PUT', at(collection, `/${collection}seed`), seed)).status).to.equal(201);
  model.put(`${collection}seed`, seed);
  const resumeAfter = (await admin.next(['document.created'])).id;
  admin.close();
  const logStart = model.log.length;
  for (const [i, { versions, deleted }] of scenario.setup.entries()) {
    const id = ids[i]!;
    for (const fields of versions) {
      expect((await call('PUT', at(collection, `/${id}`), fields)).status).to.be.oneOf([200, 201]);
      model.put(id, fields);
    }
    if (deleted) {
      expect((await call('DELETE', at(collection, `/${id}`))).status).to.equal(204);
      model.delete(id);
    }
  }

  const all = [`${collection}seed`, ...ids];
  /** The key's request; its text may name no id outside `allowed`. */
  const asKey: OpContext['asKey'] = async (method, path, allowed, options = {}) => {
    tally.requests += 1;
    const res = await ctx.server.request(method, at(collection, path), { key, ...options });
    const ok = new Set(allowed);
    for (const id of all) {
      if (!ok.has(id) && res.text.includes(id)) tally.leaks.push(`${method} ${path}: ${id}`);
    }
    return res;
  };
  const expectStatus = (label: string, got: number, want: number) => {
    if (got === 200 && want === 404) tally.leaks.push(`${label}: 200 where the oracle says 404`);
    expect(got, label).to.equal(want);
  };

  for (const op of scenario.ops) {
    await applyOp(op, { ids, model, seen, asKey, expectStatus });
  }

  // The marker: a document in view, last in the log, so the key's stream has an end to wait for.
  const streamFilter = apartFrom(scenario.streamFilter, rule);
  const marker = satisfying(streamFilter, satisfying(rule, { n: 0, team: 'a' }));
  expect((await call('PUT', at(collection, `/${collection}end`), marker)).status).to.equal(201);
  model.put(`${collection}end`, marker);
  const types = ['created', ...scenario.streamTypes];
  const expected = model.streamEvents(rule, logStart, streamFilter, types);
  // Resumed after the seed: by key on odd runs, by a ticket's URL on even ones (an EventSource).
  const query = [...filterParams(streamFilter), `events=${types.join(',')}`].join('&');
  let url = `${ctx.server.url}${at(collection, `/_stream?${query}`)}`;
  const headers: Record<string, string> = { 'Last-Event-ID': resumeAfter };
  if (run % 2 === 0) {
    const minted = await call('POST', at(collection, '/_stream/tickets'), undefined, key);
    url = `${ctx.server.url}${minted.body.url}&${query}`;
  } else {
    headers.Authorization = `Bearer ${key}`;
  }
  tally.requests += 1;
  const text = await readSse(url, `"_id":"${collection}end"`, headers);
  const got: string[] = [];
  for (const event of sseEvents(text)) {
    if (!event.type.startsWith('document.')) continue;
    const id = event.data.document._id as string;
    got.push(`${event.type} ${id}`);
    if (event.type === 'document.removed') expect(Object.keys(event.data.document)).to.deep.equal(['_id']);
    else if (!seen(userFieldsOf(event.data.document) as unknown as Fields))
      tally.leaks.push(`stream: ${event.type} ${id}`);
  }
  const expectedIds = new Set(expected.map((e) => e.split(' ')[1]!));
  for (const e of got) if (!expectedIds.has(e.split(' ')[1]!)) tally.leaks.push(`stream: ${e}`);
  expect(
    got,
    JSON.stringify({ rule: ruleJson(rule), log: model.log.slice(logStart), got, expected }),
  ).to.deep.equal(expected);
}

interface OpContext {
  ids: string[];
  model: CollectionModel;
  seen(doc: Fields | null | undefined): doc is Fields;
  asKey(
    method: string,
    path: string,
    allowed: Iterable<string>,
    options?: RequestOptions,
  ): Promise<ApiResponse>;
  expectStatus(label: string, got: number, want: number): void;
}

async function applyOp(op: Op, c: OpContext): Promise<void> {
  const { model, seen, asKey, expectStatus } = c;
  const inView = [...model.current.keys()].filter((id) => seen(model.last(id)));
  switch (op.kind) {
    case 'get':
    case 'versions': {
      const id = c.ids[op.id]!;
      const visible = seen(model.last(id));
      const res = await asKey('GET', op.kind === 'get' ? `/${id}` : `/${id}/versions`, visible ? [id] : []);
      expectStatus(`${op.kind} ${id}`, res.status, visible ? 200 : 404);
      if (visible && op.kind === 'get') expect(userFieldsOf(res.body)).to.deep.equal(model.last(id));
      if (visible && op.kind === 'versions')
        expect(res.body.versions).to.have.length(model.current.get(id)!.length);
      return;
    }
    case 'version': {
      const id = c.ids[op.id]!;
      const content = model.current.get(id)?.[op.v - 1];
      const visible = seen(model.last(id)) && seen(content);
      const res = await asKey('GET', `/${id}/versions/${op.v}`, visible ? [id] : []);
      expectStatus(`version ${id}@${op.v}`, res.status, visible ? 200 : 404);
      return;
    }
    case 'diff': {
      const id = c.ids[op.id]!;
      const versions = model.current.get(id);
      const visible = seen(model.last(id)) && seen(versions?.[op.a - 1]) && seen(versions?.[op.b - 1]);
      const res = await asKey('GET', `/${id}/versions/diff?from=${op.a}&to=${op.b}`, visible ? [id] : []);
      expectStatus(`diff ${id}`, res.status, visible ? 200 : 404);
      return;
    }
    case 'restore': {
      const id = c.ids[op.id]!;
      const versions = model.current.get(id);
      const old = versions?.[op.v - 1];
      const want = !old || !seen(model.last(id)) ? 404 : !seen(old) ? 403 : 200;
      const res = await asKey('POST', `/${id}/versions/${op.v}/restore`, want === 200 ? [id] : []);
      expectStatus(`restore ${id}@${op.v}`, res.status, want);
      if (want === 200) model.put(id, old!);
      return;
    }
    case 'list': {
      const want = inView
        .filter((id) => matches(op.filter, model.last(id)!))
        .sort((a, b) => compareFor(op.sort, model, a, b));
      const got: string[] = [];
      let after: string | null = null;
      do {
        const query = [...filterParams(op.filter), `sort=${op.sort}`, `limit=${op.limit}`];
        if (after) query.push(`after=${after}`);
        const res = await asKey('GET', `?${query.join('&')}`, want);
        expect(res.status, res.text).to.equal(200);
        got.push(...res.body.data.map((d: { _id: string }) => d._id));
        after = res.body.meta.next;
      } while (after);
      expect(got, `list ${op.sort}`).to.deep.equal(want);
      return;
    }
    case 'count': {
      const want = inView.filter((id) => matches(op.filter, model.last(id)!)).length;
      const res = await asKey('GET', `?${[...filterParams(op.filter), 'count=true'].join('&')}`, []);
      if (res.body.count > want) c.expectStatus('count', 200, 404);
      expect(res.body).to.deep.equal({ count: want });
      return;
    }
    case 'trashList': {
      const want = [...model.trash.keys()].filter((id) => seen(model.trash.get(id)!.at(-1)));
      const got: string[] = [];
      let after: string | null = null;
      do {
        const res = await asKey('GET', `/_trash?limit=${op.limit}${after ? `&after=${after}` : ''}`, want);
        expect(res.status).to.equal(200);
        got.push(...res.body.data.map((d: { _id: string }) => d._id));
        after = res.body.meta.next;
      } while (after);
      expect([...got].sort()).to.deep.equal([...want].sort());
      return;
    }
    case 'trashGet':
    case 'trashRestore':
    case 'trashErase': {
      const id = c.ids[op.id]!;
      const visible = seen(model.trash.get(id)?.at(-1));
      if (op.kind === 'trashGet') {
        const res = await asKey('GET', `/_trash/${id}`, visible ? [id] : []);
        expectStatus(`trash get ${id}`, res.status, visible ? 200 : 404);
      } else if (op.kind === 'trashErase') {
        const res = await asKey('DELETE', `/_trash/${id}`, []);
        expectStatus(`trash erase ${id}`, res.status, visible ? 204 : 404);
        if (visible) model.erase(id);
      } else {
        const want = !visible ? 404 : model.current.has(id) ? 409 : 201;
        const res = await asKey('POST', `/_trash/${id}/restore`, want === 404 ? [] : [id]);
        expectStatus(`trash restore ${id}`, res.status, want);
        if (want === 201) model.restoreFromTrash(id);
      }
      return;
    }
    case 'export': {
      const want = inView.filter((id) => matches(op.filter, model.last(id)!));
      const type = { json: 'application/json', ndjson: 'application/x-ndjson', csv: 'text/csv' }[op.format];
      const query = filterParams(op.filter).join('&');
      const res = await asKey('GET', `/_export${query ? `?${query}` : ''}`, want, {
        headers: { Accept: type },
      });
      expect(res.status, res.text).to.equal(200);
      const found = c.ids.filter((id) => res.text.includes(id));
      expect(found.sort(), `export ${op.format}`).to.deep.equal(
        want.filter((id) => c.ids.includes(id)).sort(),
      );
      expect(res.headers.get('x-total-count')).to.equal(String(want.length));
      return;
    }
    case 'import':
      return importOp(op.records, c);
    case 'bulk':
      return bulkOp(op.ops, c);
  }
}

function compareFor(sort: string, model: CollectionModel, a: string, b: string): number {
  const byId = a < b ? -1 : a > b ? 1 : 0;
  if (sort === '-_id') return -byId;
  if (sort === 'n,_id') return model.last(a)!.n - model.last(b)!.n || byId;
  return byId;
}

async function importOp(records: Array<{ id: number; fields: Fields }>, c: OpContext): Promise<void> {
  const { model, seen } = c;
  const body = records.map((r) => JSON.stringify({ _id: c.ids[r.id], ...r.fields })).join('\n');
  const wantErrors: number[] = [];
  const accepted: Array<[string, Fields]> = [];
  records.forEach((r, index) => {
    const id = c.ids[r.id]!;
    const current = model.last(id);
    if (!seen(r.fields) || (current && !seen(current))) wantErrors.push(index);
    else accepted.push([id, r.fields]);
  });
  const res = await c.asKey(
    'POST',
    '/_import?onConflict=overwrite',
    records.map((r) => c.ids[r.id]!),
    { rawBody: body, contentType: 'application/x-ndjson' },
  );
  expect(res.status, res.text).to.equal(200);
  expect(res.body.errors.map((e: { index: number }) => e.index)).to.deep.equal(wantErrors);
  expect(res.body.errors.every((e: { code: string }) => e.code === 'outside_rules')).to.equal(true);
  expect(res.body.imported).to.equal(accepted.length);
  for (const [id, fields] of accepted) model.put(id, fields);
}

async function bulkOp(ops: BulkOp[], c: OpContext): Promise<void> {
  const { model, seen } = c;
  const want: number[] = [];
  for (const op of ops) {
    const id = c.ids[op.id]!;
    const current = model.last(id);
    let status: number;
    if (op.method === 'POST') {
      status = !seen(op.fields) ? 403 : current ? 409 : 201;
      if (status === 201) model.put(id, op.fields);
    } else if (op.method === 'PUT') {
      status = current && !seen(current) ? 404 : !seen(op.fields) ? 403 : current ? 200 : 201;
      if (status < 300) model.put(id, op.fields);
    } else if (op.method === 'PATCH') {
      const next = current && mergePatch(current, op.patch);
      status = !current || !seen(current) ? 404 : !seen(next) ? 403 : 200;
      if (status === 200) model.put(id, next!);
    } else {
      status = !current || !seen(current) ? 404 : 204;
      if (status === 204) model.delete(id);
    }
    want.push(status);
  }
  const operations = ops.map((op) => {
    const id = c.ids[op.id]!;
    if (op.method === 'DELETE') return { method: op.method, id };
    return { method: op.method, id, body: op.method === 'PATCH' ? op.patch : op.fields };
  });
  const res = await c.asKey(
    'POST',
    '/_bulk',
    ops.map((op) => c.ids[op.id]!),
    { body: { operations } },
  );
  expect(res.status, res.text).to.equal(207);
  expect(
    res.body.results.map((r: { status: number }) => r.status),
    JSON.stringify(operations),
  ).to.deep.equal(want);
}
