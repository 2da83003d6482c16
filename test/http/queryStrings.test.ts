/**
 * Shared parses of query strings (src/http/queryStrings.ts): the same object Koa's own parse
 * gives, frozen, one per distinct query string while the memo holds it, and the memo bounded
 * in bytes.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import fc from 'fast-check';
import Koa from 'koa';
import {
  parsedQueryBytes,
  QUERY_MEMO_BYTES,
  QUERY_MEMO_ENTRIES,
  QueryStringMemo,
  shareParsedQueries,
} from '../../src/http/queryStrings.js';
import type { RawQuery } from '../../src/query/filterParams.js';

const require = createRequire(import.meta.url);
/** Koa's own parse of `ctx.query` (koa/lib/request.js), the reference. */
const koaParse = (require('koa/lib/search-params.js') as { parse: (text: string) => RawQuery }).parse;

/** `ctx.query` of `app` for a request to `/?<text>` (no server: Koa's own context). */
function queryOf(app: Koa, text: string): object {
  const req = { url: `/?${text}`, headers: {}, socket: {} } as unknown as IncomingMessage;
  return app.createContext(req, {} as ServerResponse).query;
}

/** Names and values as a client might spell them: escapes (valid or not), `+`, `&`, `=`, brackets. */
const queryText = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        '&',
        '=',
        '+',
        '%',
        '%2',
        '%zz',
        '%26',
        '%3D',
        '%E2%82%AC',
        '%C3',
        '[',
        ']',
        '__proto__',
        'a',
        'a',
      ),
      fc.string({ maxLength: 6 }),
      fc.string({ unit: 'grapheme', maxLength: 3 }),
    ),
    { maxLength: 12 },
  )
  .map((parts) => parts.join(''));

describe('shared parses of query strings', () => {
  it('ctx.query is what Koa gives without the memo, names in the same order, for any query string, asked again too', () => {
    const plain = new Koa();
    const shared = new Koa();
    shareParsedQueries(shared);
    fc.assert(
      fc.property(queryText, (text) => {
        const koa = queryOf(plain, text);
        for (let asked = 0; asked < 2; asked++) {
          const ours = queryOf(shared, text);
          expect(Object.entries(ours)).to.deep.equal(Object.entries(koa));
          expect(Object.getPrototypeOf(ours)).to.equal(Object.getPrototypeOf(koa));
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('are frozen, arrays of repeated names too: no request can change another’s', () => {
    const parsed = new QueryStringMemo().parse('a=1&a=2&__proto__=x&b=3', koaParse);
    expect(Object.isFrozen(parsed)).to.equal(true);
    expect(Object.isFrozen(parsed.a)).to.equal(true);
    expect(parsed.a).to.deep.equal(['1', '2']);
    // An own property, not the prototype: Object.prototype is untouched.
    expect(Object.hasOwn(parsed, '__proto__')).to.equal(true);
    expect(() => {
      (parsed as Record<string, unknown>).b = 'changed';
    }).to.throw(TypeError);
    expect(() => (parsed.a as string[]).push('3')).to.throw(TypeError);
  });

  it('one object per distinct query string while the memo holds it', () => {
    const memo = new QueryStringMemo();
    const first = memo.parse('count=true&filter[x]=1', koaParse);
    expect(memo.parse('count=true&filter[x]=1', koaParse)).to.equal(first);
    expect(memo.parse('count=true&filter[x]=2', koaParse)).to.not.equal(first);
  });

  it('the memo keeps a query string whose parse fits its byte budget exactly, and not one a byte larger', () => {
    // The longest text whose estimate is the whole budget.
    const fits = (QUERY_MEMO_BYTES - parsedQueryBytes('')) / 4;
    expect(parsedQueryBytes('x'.repeat(fits))).to.equal(QUERY_MEMO_BYTES);
    const memo = new QueryStringMemo();
    const kept = `a=${'x'.repeat(fits - 2)}`;
    expect(memo.parse(kept, koaParse)).to.equal(memo.parse(kept, koaParse));
    const tooLarge = `${kept}x`;
    const parsed = memo.parse(tooLarge, koaParse);
    expect(parsed.a).to.equal('x'.repeat(fits - 1));
    expect(memo.parse(tooLarge, koaParse)).to.not.equal(parsed);
  });

  it(`the memo keeps the ${QUERY_MEMO_ENTRIES} query strings used last, and answers the same after`, () => {
    const memo = new QueryStringMemo();
    const first = memo.parse('n=0', koaParse);
    for (let i = 1; i < QUERY_MEMO_ENTRIES; i++) memo.parse(`n=${i}`, koaParse);
    expect(memo.parse('n=1', koaParse)).to.equal(memo.parse('n=1', koaParse));
    memo.parse(`n=${QUERY_MEMO_ENTRIES}`, koaParse);
    const again = memo.parse('n=0', koaParse);
    expect(again).to.not.equal(first);
    expect(again).to.deep.equal(first);
  });

  it('serve ctx.query over HTTP: the same frozen object for two requests, and setting ctx.query works as in Koa', async () => {
    const app = new Koa();
    shareParsedQueries(app);
    const seen: object[] = [];
    app.use((ctx) => {
      seen.push(ctx.query);
      if (ctx.path === '/set') ctx.query = { z: '9', y: ['1', '2'] };
      ctx.body = {
        query: ctx.query,
        querystring: ctx.querystring,
        frozen: Object.isFrozen(ctx.request.query),
      };
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const answers = [];
      for (const path of ['/q?b=2&a=1&a=3', '/q?b=2&a=1&a=3', '/set?x=1'])
        answers.push(await (await fetch(base + path)).json());
      expect(answers[0]).to.deep.equal({
        query: { b: '2', a: ['1', '3'] },
        querystring: 'b=2&a=1&a=3',
        frozen: true,
      });
      expect(seen[1]).to.equal(seen[0]);
      expect(answers[2]).to.deep.equal({
        query: { z: '9', y: ['1', '2'] },
        querystring: 'z=9&y=1&y=2',
        frozen: true,
      });
    } finally {
      server.close();
    }
  });
});
