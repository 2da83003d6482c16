/**
 * A tenant's schema at every bound Folio accepts (both catastrophic-backtracking patterns, 30
 * levels of nesting, an enum of 1,000 objects) meets documents built to hurt it, while another
 * tenant writes. Functional checks first (the right 422s, every other write answered 201); the
 * one timing check has a bound far above the real cost (about 10 ms a document, see
 * docs/collections.md) and far below what backtracking would take (hours at this length).
 */
import { expect } from 'chai';
import { hostileSchema } from '../support/hostileSchema.js';
import type { Json } from '../support/server.js';
import { forEachStore } from '../support/stores.js';

const GENEROUS_MS = 5_000;

function nested(levels: number, leaf: Json): Json {
  let node = leaf;
  for (let i = 0; i < levels; i++) node = { type: 'object', properties: { a: node } };
  return node;
}

function nestedValue(levels: number, leaf: Json): Json {
  let node = leaf;
  for (let i = 0; i < levels; i++) node = { a: node };
  return node;
}

forEachStore('reliability: hostile schemas', (ctx) => {
  it('validation stays bounded at every schema bound and another tenant keeps writing', async () => {
    const { server, tenant: attacker } = ctx;
    const victim = await server.tenant();
    const schema = hostileSchema(nested(14, { type: 'string', pattern: '^(a+)+$' }));
    const set = await server.request('PUT', `/${attacker.project}/evil/_schema`, {
      key: attacker.key,
      body: { schema },
    });
    expect(set.status, set.text).to.equal(200);
    const evil = `${'a'.repeat(100_000)}!`;
    const hostile = { s: evil, t: evil, e: { k: 999, v: [999, 'not it'] }, deep: nestedValue(14, evil) };

    const slowest = { ms: 0 };
    const attack = (async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) {
        const started = performance.now();
        const res = await server.request('POST', `/${attacker.project}/evil`, {
          key: attacker.key,
          body: hostile,
        });
        slowest.ms = Math.max(slowest.ms, performance.now() - started);
        statuses.push(res.status);
        if (i === 0) {
          expect(res.body.error.details.errors.map((e: Json) => [e.instancePath, e.keyword])).to.deep.equal([
            ['/s', 'pattern'],
            ['/t', 'pattern'],
            ['/e', 'enum'],
            [`/deep${'/a'.repeat(14)}`, 'pattern'],
          ]);
        }
      }
      return statuses;
    })();
    const writes = (async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) {
        const res = await server.request('POST', `/${victim.project}/notes`, {
          key: victim.key,
          body: { i },
        });
        statuses.push(res.status);
      }
      return statuses;
    })();
    const [attackStatuses, victimStatuses] = await Promise.all([attack, writes]);
    expect(new Set(attackStatuses)).to.deep.equal(new Set([422]));
    expect(new Set(victimStatuses)).to.deep.equal(new Set([201]));
    expect(slowest.ms).to.be.below(GENEROUS_MS);
    // The same schema still accepts what fits it.
    const fits = { s: 'aaa', t: 'aa', e: { k: 3, v: [3, '3'] }, deep: nestedValue(14, 'a') };
    expect(
      (await server.request('POST', `/${attacker.project}/evil`, { key: attacker.key, body: fits })).status,
    ).to.equal(201);
  });
});
