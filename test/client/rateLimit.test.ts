/**
 * The client library and 429s, against a server with the plans' real rates (Free: 10 requests a
 * second per key): reads wait out `Retry-After` and succeed, a bounded number of times; writes
 * are retried only when asked. Each case takes a fresh key, so it starts with a full window.
 */
import { expect } from 'chai';
import { type ClientOptions, createClient, FolioError } from '../../client/folio.js';
import { startTestServer, type TestServer } from '../support/server.js';

interface Item {
  n: number;
}

const BURST = 20;

describe('client library: rate limits (429)', function () {
  this.timeout(30_000);
  let server: TestServer;

  before(async () => {
    server = await startTestServer({ realRateLimits: true });
  });
  after(() => server?.close());

  const items = async (options: Omit<ClientOptions, 'baseUrl' | 'key'> = {}) => {
    const tenant = await server.tenant({ plan: 'free' });
    return createClient({ baseUrl: server.url, key: tenant.key, ...options })
      .project(tenant.project)
      .collection<Item>('items');
  };
  /** How each call of a burst ended: 'ok', or the error's code. */
  const outcomes = (calls: Promise<unknown>[]) =>
    Promise.all(
      calls.map((call) =>
        call.then(
          () => 'ok',
          (error: FolioError) => error.code,
        ),
      ),
    );

  it('retries reads after Retry-After by default, so a burst past the rate succeeds', async () => {
    const c = await items();
    const started = Date.now();
    const results = await outcomes(Array.from({ length: BURST }, () => c.count()));
    expect(results).to.deep.equal(Array(BURST).fill('ok'));
    // Half the burst waited for the next window.
    expect(Date.now() - started).to.be.at.least(500);
  });

  it('does not retry writes unless asked: per call (`retry: true`) or for the client (`writes`)', async () => {
    const plain = await items();
    const refused = await outcomes(Array.from({ length: BURST }, (_, n) => plain.create({ n })));
    expect(refused.filter((r) => r === 'ok')).to.have.length(10);
    expect(refused.filter((r) => r === 'rate_limited')).to.have.length(BURST - 10);

    const perCall = await items();
    const asked = await outcomes(
      Array.from({ length: BURST }, (_, n) => perCall.create({ n }, { retry: true })),
    );
    expect(asked).to.deep.equal(Array(BURST).fill('ok'));

    const writes = await items({ retry: { writes: true } });
    const all = await outcomes(Array.from({ length: BURST }, (_, n) => writes.create({ n })));
    expect(all).to.deep.equal(Array(BURST).fill('ok'));
  });

  it('is bounded: `retry: false`, no attempts, or a Retry-After past maxWaitMs throw the 429', async () => {
    for (const retry of [false, { attempts: 0 }, { maxWaitMs: 100 }] as const) {
      const c = await items({ retry });
      const calls = Array.from({ length: BURST }, () => c.count());
      const results = await outcomes(calls);
      expect(
        results.filter((r) => r === 'rate_limited'),
        JSON.stringify(retry),
      ).to.have.length(BURST - 10);
      const errors = await Promise.allSettled(calls);
      const tooMany = errors.find((e) => e.status === 'rejected')?.reason;
      expect(tooMany).to.be.instanceOf(FolioError).and.include({ status: 429 });
      expect(tooMany.requestId).to.be.a('string');
    }
  });
});
