/**
 * A bulk request on generated operations gives what its operations give sent one by one to
 * their own endpoints: the same statuses, in order, and the same documents after. Generated
 * over a few ids, so operations meet the documents earlier ones made, changed or deleted,
 * including ones there before the request.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { isJsonObject } from '../../src/services/documentRules.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';

const RUNS = Number(process.env.BULK_PROPERTY_RUNS ?? 30);
const IDS = ['a', 'b', 'c'];

type Operation = { method: 'POST' | 'PUT' | 'PATCH' | 'DELETE'; id?: string; body?: unknown };

const id = fc.constantFrom(...IDS);
/** A document body the rules take, or one they refuse (a reserved field, not an object). */
const body = fc.oneof(
  { weight: 4, arbitrary: fc.record({ v: fc.integer({ min: 0, max: 9 }) }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>({ $bad: 1 }, [1], 'text') },
);
const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({ method: fc.constant('POST' as const), id, body }),
  fc.record({ method: fc.constant('POST' as const), body }),
  fc.record({ method: fc.constant('PUT' as const), id, body }),
  fc.record({
    method: fc.constant('PATCH' as const),
    id,
    body: fc.oneof(
      fc.record({ w: fc.oneof(fc.integer({ min: 0, max: 9 }), fc.constant(null)) }),
      fc.constant<unknown>([1]),
    ),
  }),
  fc.record({ method: fc.constant('DELETE' as const), id }),
);

describe('bulk on generated operations: as their endpoints one by one [embedded]', function () {
  this.timeout(120_000);
  let server: TestServer;
  let tenant: Tenant;
  let run = 0;
  before(async () => {
    server = await startTestServer();
    tenant = await server.tenant({ plan: 'pro' });
  });
  after(async () => {
    await server?.close();
  });

  const send = (method: string, path: string, payload?: unknown, contentType?: string) =>
    server.request(method, `/${tenant.project}${path}`, {
      key: tenant.key,
      ...(payload === undefined ? {} : { body: payload }),
      ...(contentType === undefined ? {} : { contentType }),
    });

  /** The operation as its own request: the endpoint and body a client would send. */
  function alone(collection: string, op: Operation) {
    if (op.method === 'POST') {
      // A POST with an id is a POST with that `_id` in its body.
      const payload = op.id !== undefined && isJsonObject(op.body) ? { ...op.body, _id: op.id } : op.body;
      return send('POST', `/${collection}`, payload);
    }
    // A bulk PATCH is a merge patch (RFC 7396), which its endpoint takes by its media type.
    const type = op.method === 'PATCH' ? 'application/merge-patch+json' : undefined;
    return send(op.method, `/${collection}/${op.id}`, op.body, type);
  }

  /** The named documents' fields and versions, and how many documents have made-up ids. */
  async function documents(collection: string) {
    const res = await send('GET', `/${collection}?limit=100&sort=_id`);
    const docs = (res.status === 200 ? res.body.data : []) as Array<Record<string, unknown>>;
    const named = docs
      .filter((d) => IDS.includes(d._id as string))
      .map(({ $createdAt: _c, $updatedAt: _u, ...rest }) => rest);
    return { named, madeUp: docs.length - named.length };
  }

  it('the same statuses in order and the same documents after', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.subarray(IDS),
        fc.array(operation, { minLength: 1, maxLength: 10 }),
        async (existing, operations) => {
          run += 1;
          const bulk = `bulk${run}`;
          const single = `single${run}`;
          // Documents there before the request.
          for (const collection of [bulk, single])
            for (const name of existing)
              expect((await send('PUT', `/${collection}/${name}`, { v: -1 })).status).to.equal(201);
          const res = await send('POST', `/${bulk}/_bulk`, { operations });
          expect(res.status).to.equal(207);
          const statuses: number[] = [];
          for (const op of operations) statuses.push((await alone(single, op)).status);
          expect(res.body.results.map((r: { status: number }) => r.status)).to.deep.equal(statuses);
          expect(await documents(bulk)).to.deep.equal(await documents(single));
        },
      ),
      { numRuns: RUNS },
    );
  });
});
