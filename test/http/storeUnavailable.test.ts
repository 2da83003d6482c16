/**
 * A Folio whose MongoDB cannot be reached answers 503 with a JSON error and Retry-After, not 500.
 * The store here is real and its server really absent (nothing listens on port 1): the app is
 * built over a MongoDB store that never connected, as if the deployment had gone away after
 * start-up. The other reasons (query_timeout, write_unconfirmed) take the same path; the
 * MongoDB suite provokes them on a live server.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { createApp } from '../../src/http/app.js';
import { createServices } from '../../src/services/index.js';
import { RETRY_AFTER_SECONDS } from '../../src/store/mongodb/database/serverErrors.js';
import { createMongoStore, type MongoStore } from '../../src/store/mongodb/index.js';

describe('a store that cannot be reached', () => {
  let store: MongoStore;
  let server: Server;
  let url: string;

  before(async () => {
    store = createMongoStore({ uri: 'mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200' });
    const services = createServices(store, loadConfig({}, { logLevel: 'silent' }));
    server = createApp(services, pino({ level: 'silent' })).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    await store.close();
  });

  it('answers a keyed request 503 store_unavailable with Retry-After', async () => {
    const res = await fetch(`${url}/app/things`, {
      headers: { Authorization: `Bearer folio_sk_test_${'a'.repeat(40)}` },
    });
    expect(res.status).to.equal(503);
    expect(res.headers.get('retry-after')).to.equal(String(RETRY_AFTER_SECONDS));
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).to.equal('store_unavailable');
    expect(body.error.message).to.match(/unreachable or electing a new primary/);
  });

  it('answers signup (a session-side write) the same way', async () => {
    const res = await fetch(`${url}/api/auth/signup`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: 'a@example.test', password: 'correct horse battery' }),
    });
    expect(res.status).to.equal(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).to.equal('store_unavailable');
  });
});
