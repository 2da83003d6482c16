/**
 * The sign-in surface against guessing: failed logins are limited per account and per client
 * address, signups per address (429 with Retry-After), each at its boundary; the client address
 * comes from X-Forwarded-For only when FOLIO_HTTP_TRUST_PROXY says a proxy is in front; the
 * counters are bounded in keys and in time.
 */
import { expect } from 'chai';
import { loadConfig } from '../../src/config/load.js';
import { AttemptCounter, MAX_TRACKED } from '../../src/services/signInThrottle.js';
import { type ApiResponse, startTestServer, type TestServer } from '../support/server.js';

const PASSWORD = 'correct horse battery';
const PER_ACCOUNT = 3;
const PER_ADDRESS = 7;
const SIGNUPS = 4;
const WINDOW_MS = 600_000;

let counter = 0;
const newEmail = (what: string) => `${what}-${Date.now()}-${++counter}@example.test`;

describe('sign-in throttles', () => {
  let server: TestServer;
  const auth = {
    loginFailuresPerAccount: PER_ACCOUNT,
    loginFailuresPerAddress: PER_ADDRESS,
    signupsPerAddress: SIGNUPS,
    throttleWindowMs: WINDOW_MS,
  };
  before(async () => {
    // A proxy in front, so each test is its own client address (X-Forwarded-For).
    server = await startTestServer({ config: { auth, http: { trustProxy: true } } });
  });
  after(async () => {
    await server.close();
  });

  let addressCounter = 0;
  const newAddress = () => `198.51.100.${++addressCounter}`;
  const signup = (email: string, address: string) =>
    server.request('POST', '/api/auth/signup', {
      body: { email, password: PASSWORD },
      headers: { 'X-Forwarded-For': address },
    });
  const login = (email: string, password: string, address: string) =>
    server.request('POST', '/api/auth/login', {
      body: { email, password },
      headers: { 'X-Forwarded-For': address },
    });
  const expectThrottled = (res: ApiResponse, setting: string) => {
    expect(res.status, res.text).to.equal(429);
    expect(res.body.error.code).to.equal('too_many_attempts');
    expect(res.body.error.message).to.include(setting);
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).to.be.within(WINDOW_MS / 1000 - 5, WINDOW_MS / 1000);
  };

  it(`${PER_ACCOUNT} wrong passwords for one account are 401; the next login, even right, is 429 with Retry-After`, async () => {
    const email = newEmail('guessed');
    expect((await signup(email, newAddress())).status).to.equal(201);
    // Each guess from another address: the account's own limit applies.
    for (let i = 0; i < PER_ACCOUNT; i += 1) {
      expect((await login(email, `wrong-${i}-password`, newAddress())).status).to.equal(401);
    }
    expectThrottled(await login(email, PASSWORD, newAddress()), 'FOLIO_AUTH_LOGIN_FAILURES_PER_ACCOUNT');
    // Another account is not affected, nor is the email's case a way around it.
    const other = newEmail('other');
    expect((await signup(other, newAddress())).status).to.equal(201);
    expect((await login(other, PASSWORD, newAddress())).status).to.equal(200);
    expect((await login(email.toUpperCase(), PASSWORD, newAddress())).status).to.equal(429);
  });

  it('a successful login before the limit starts the account’s count again', async () => {
    const email = newEmail('forgetful');
    const address = newAddress();
    expect((await signup(email, address)).status).to.equal(201);
    for (let i = 0; i < PER_ACCOUNT - 1; i += 1) {
      expect((await login(email, 'wrong password', newAddress())).status).to.equal(401);
    }
    expect((await login(email, PASSWORD, newAddress())).status).to.equal(200);
    for (let i = 0; i < PER_ACCOUNT; i += 1) {
      expect((await login(email, 'wrong password', newAddress())).status).to.equal(401);
    }
    expect((await login(email, PASSWORD, newAddress())).status).to.equal(429);
  });

  it(`parallel guesses cannot outrun the check: of ${PER_ACCOUNT * 4} at once, ${PER_ACCOUNT} are 401, the rest 429`, async () => {
    const email = newEmail('burst');
    expect((await signup(email, newAddress())).status).to.equal(201);
    const answers = await Promise.all(
      Array.from({ length: PER_ACCOUNT * 4 }, (_, i) => login(email, `guess-${i}-password`, newAddress())),
    );
    const statuses = answers.map((res) => res.status).sort();
    expect(statuses.filter((s) => s === 401)).to.have.length(PER_ACCOUNT);
    expect(statuses.filter((s) => s === 429)).to.have.length(PER_ACCOUNT * 3);
  });

  it('successful logins do not use up the address’s failures', async () => {
    const email = newEmail('regular');
    const address = newAddress();
    expect((await signup(email, address)).status).to.equal(201);
    for (let i = 0; i < PER_ADDRESS + 2; i += 1) {
      expect((await login(email, PASSWORD, address)).status).to.equal(200);
    }
    for (let i = 0; i < PER_ADDRESS; i += 1) {
      expect((await login(newEmail('x'), 'wrong password', address)).status).to.equal(401);
    }
    expect((await login(email, PASSWORD, address)).status).to.equal(429);
  });

  it(`an address gets ${PER_ADDRESS} failed logins over any emails (unknown ones too); the next is 429`, async () => {
    const address = newAddress();
    for (let i = 0; i < PER_ADDRESS; i += 1) {
      expect((await login(newEmail('sprayed'), 'wrong password', address)).status).to.equal(401);
    }
    expectThrottled(
      await login(newEmail('sprayed'), 'wrong password', address),
      'FOLIO_AUTH_LOGIN_FAILURES_PER_ADDRESS',
    );
    // Another address is not affected.
    expect((await login(newEmail('sprayed'), 'wrong password', newAddress())).status).to.equal(401);
  });

  it(`an address gets ${SIGNUPS} signups, new emails or taken ones; the next is 429`, async () => {
    const address = newAddress();
    const taken = newEmail('taken');
    expect((await signup(taken, address)).status).to.equal(201);
    for (let i = 1; i < SIGNUPS; i += 1) {
      expect((await signup(taken, address)).status).to.equal(409);
    }
    expectThrottled(await signup(newEmail('probe'), address), 'FOLIO_AUTH_SIGNUPS_PER_ADDRESS');
    expect((await signup(newEmail('elsewhere'), newAddress())).status).to.equal(201);
  });

  it('without FOLIO_HTTP_TRUST_PROXY, X-Forwarded-For is the client’s own and changes nothing', async () => {
    const direct = await startTestServer({ config: { auth } });
    try {
      for (let i = 0; i < PER_ADDRESS; i += 1) {
        const res = await direct.request('POST', '/api/auth/login', {
          body: { email: newEmail('spoof'), password: 'wrong password' },
          headers: { 'X-Forwarded-For': `203.0.113.${i}` },
        });
        expect(res.status).to.equal(401);
      }
      const res = await direct.request('POST', '/api/auth/login', {
        body: { email: newEmail('spoof'), password: 'wrong password' },
        headers: { 'X-Forwarded-For': '203.0.113.200' },
      });
      expect(res.status).to.equal(429);
    } finally {
      await direct.close();
    }
  });

  it('behind a proxy the client is the last X-Forwarded-For entry (the one the proxy added)', async () => {
    const address = newAddress();
    for (let i = 0; i < PER_ADDRESS; i += 1) {
      const res = await server.request('POST', '/api/auth/login', {
        body: { email: newEmail('chain'), password: 'wrong password' },
        headers: { 'X-Forwarded-For': `10.9.9.${i}, ${address}` },
      });
      expect(res.status).to.equal(401);
    }
    expect((await login(newEmail('chain'), 'wrong password', address)).status).to.equal(429);
  });
});

describe('sign-in throttle counters', () => {
  it('count in a window that ends windowMs after the first attempt, then start afresh', () => {
    const counter = new AttemptCounter(1000);
    expect(counter.add('a', 5000)).to.equal(1);
    expect(counter.add('a', 5999)).to.equal(2);
    expect(counter.count('a', 5999)).to.equal(2);
    expect(counter.remainingMs('a', 5999)).to.equal(1);
    expect(counter.count('a', 6000)).to.equal(0);
    expect(counter.add('a', 6000)).to.equal(1);
    counter.release('a', 6001);
    expect(counter.count('a', 6001)).to.equal(0);
    counter.release('a', 6001);
    expect(counter.count('a', 6001)).to.equal(0);
  });

  it('keep at most maxKeys keys, forgetting the oldest window first, and drop ended windows', () => {
    const counter = new AttemptCounter(1000, 3);
    counter.add('a', 0);
    counter.add('b', 10);
    counter.add('c', 20);
    counter.add('d', 30);
    expect(counter.size).to.equal(3);
    expect(counter.count('a', 30)).to.equal(0);
    expect(counter.count('b', 30)).to.equal(1);
    // At 1015, b's window (opened at 10) has ended; c's and d's have not.
    counter.add('e', 1015);
    expect(counter.size).to.equal(3);
    expect(counter.count('c', 1015)).to.equal(1);
    expect(new AttemptCounter(1000).size).to.equal(0);
    expect(MAX_TRACKED).to.equal(10_000);
  });

  it('when full, forget the window opened first, however recently it counted', () => {
    const counter = new AttemptCounter(1000, 3);
    counter.add('a', 0);
    counter.add('b', 10);
    counter.add('c', 20);
    expect(counter.add('a', 30)).to.equal(2);
    counter.add('d', 40);
    expect([counter.count('a', 40), counter.count('b', 40), counter.count('c', 40)]).to.deep.equal([0, 1, 1]);
  });

  it('a flood of addresses never holds more than MAX_TRACKED keys', () => {
    const counter = new AttemptCounter(60_000);
    for (let i = 0; i < MAX_TRACKED + 500; i += 1) {
      counter.add(`addr-${i}`, 1000);
    }
    expect(counter.size).to.equal(MAX_TRACKED);
  });

  it('defaults: 5 failures per account, 20 per address, 10 signups per address, 15 minutes', () => {
    expect(loadConfig({}).auth).to.include({
      loginFailuresPerAccount: 5,
      loginFailuresPerAddress: 20,
      signupsPerAddress: 10,
      throttleWindowMs: 900_000,
    });
    expect(loadConfig({}).http.trustProxy).to.equal(false);
    expect(loadConfig({ FOLIO_HTTP_TRUST_PROXY: 'true' }).http.trustProxy).to.equal(true);
  });
});
