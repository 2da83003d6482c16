/**
 * Concurrent writers on one document (and, in the long form, across documents): no lost update,
 * contiguous versions, every committed write emitted exactly once on the change stream.
 *
 * Every write answers the document as it committed it, so the chain of answers proves each
 * write was applied on top of the version just before it: a PATCH's answer is the previous
 * version plus its fields, a PUT's answer is its body. Short form in `npm test` (200 writes on
 * one document); `npm run test:reliability` runs RELIABILITY_LONG=1: 1,000 writes on one
 * document and 1,000 across 20 documents.
 */
import { expect } from 'chai';
import type { ApiResponse, Json, TestServer } from '../support/server.js';
import { StreamClient } from '../support/sse.js';
import { forEachStore } from '../support/stores.js';

const LONG = process.env.RELIABILITY_LONG === '1';
const WRITES_ON_ONE = LONG ? 1000 : 200;

/** User fields only: the metadata fields are checked on their own. */
function fields(document: Json): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(document as Record<string, unknown>)) {
    if (name !== '_id' && !name.startsWith('$')) out[name] = value;
  }
  return out;
}

interface Write {
  kind: 'patch' | 'put';
  body: Record<string, unknown>;
  response: ApiResponse;
}

/** `count` concurrent writes on `id`, alternating merge-PATCH (adds a field) and PUT (replaces). */
async function hammer(
  server: TestServer,
  key: string,
  path: string,
  count: number,
  tag: string,
): Promise<Write[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i): Promise<Write> => {
      const kind = i % 3 === 2 ? 'put' : 'patch';
      const body = kind === 'put' ? { replacedBy: `${tag}-${i}` } : { [`w${i}`]: i };
      const contentType = kind === 'patch' ? 'application/merge-patch+json' : 'application/json';
      const response = await server.request(kind.toUpperCase(), path, { key, body, contentType });
      return { kind, body, response };
    }),
  );
}

/** The answers form one chain 1..n+1 in which each write applied on top of the one before. */
function checkChain(created: Json, writes: Write[]): Map<number, Json> {
  for (const w of writes) expect(w.response.status, w.response.text).to.equal(200);
  const byVersion = new Map<number, Json>([[1, created]]);
  const writeAt = new Map<number, Write>();
  for (const w of writes) {
    const version: number = w.response.body.$version;
    expect(byVersion.has(version), `version ${version} answered twice`).to.equal(false);
    byVersion.set(version, w.response.body);
    writeAt.set(version, w);
  }
  const versions = [...byVersion.keys()].sort((a, b) => a - b);
  expect(versions).to.deep.equal(Array.from({ length: writes.length + 1 }, (_, i) => i + 1));
  for (let v = 2; v <= writes.length + 1; v++) {
    const w = writeAt.get(v) as Write;
    const expected = w.kind === 'put' ? w.body : { ...fields(byVersion.get(v - 1)), ...w.body };
    expect(fields(byVersion.get(v)), `version ${v} (${w.kind})`).to.deep.equal(expected);
  }
  return byVersion;
}

forEachStore(
  'reliability: concurrent writes',
  (ctx) => {
    it(`${WRITES_ON_ONE} concurrent PATCH and PUT on one document: no lost update, contiguous versions, each event once`, async () => {
      const { server, tenant } = ctx;
      const stream = new StreamClient(`${server.url}/${tenant.project}/contended/_stream`, tenant.key);
      try {
        await stream.opened;
        const created = await server.request('POST', `/${tenant.project}/contended`, {
          key: tenant.key,
          body: { start: true },
        });
        expect(created.status).to.equal(201);
        const path = `/${tenant.project}/contended/${created.body._id}`;
        const writes = await hammer(server, tenant.key, path, WRITES_ON_ONE, 'one');
        const chain = checkChain(created.body, writes);

        const seen = new Map<number, number>();
        for (let i = 0; i <= WRITES_ON_ONE; i++) {
          const event = await stream.next(['document.created', 'document.updated']);
          const version: number = event.data.document.$version;
          seen.set(version, (seen.get(version) ?? 0) + 1);
          expect(event.data.document, `event of version ${version}`).to.deep.equal(chain.get(version));
        }
        expect([...seen.values()].every((n) => n === 1)).to.equal(true);
        expect(seen.size).to.equal(WRITES_ON_ONE + 1);
        // Nothing more: a second event for any version would show here.
        await new Promise((r) => setTimeout(r, 300));
        const extra = stream.received.length - (WRITES_ON_ONE + 1);
        expect(extra, 'events beyond one per write').to.equal(0);
      } finally {
        stream.close();
      }
    });

    if (LONG) {
      it('1,000 concurrent writes across 20 documents: each document its own contiguous chain', async () => {
        const { server, tenant } = ctx;
        const docs = await Promise.all(
          Array.from({ length: 20 }, () =>
            server.request('POST', `/${tenant.project}/spread`, { key: tenant.key, body: { start: true } }),
          ),
        );
        const all = await Promise.all(
          docs.map((d, n) =>
            hammer(server, tenant.key, `/${tenant.project}/spread/${d.body._id}`, 50, `d${n}`),
          ),
        );
        for (const [n, writes] of all.entries()) checkChain(docs[n]?.body, writes);
      });
    }
  },
  { plan: 'pro', config: { plans: { pro: { storedVersions: 5 } }, streams: { bufferLimit: 5000 } } },
);
