import { expect } from 'chai';
import { ConfigError, envName, loadConfig, unknownFolioVariables } from '../src/config/load.js';
import { MAX_BSON_BYTES_CEILING, MONGODB_MAX_BSON_BYTES } from '../src/store/documentSize.js';

describe('configuration', () => {
  it('defaults hold the documented plan numbers', () => {
    const { plans, rateLimit } = loadConfig({});
    expect(rateLimit.windowMs).to.equal(1000);
    const documented = {
      free: { requestsPerSecond: 10, activeKeys: 2, storedVersions: 5, versionDiff: false },
      pro: { requestsPerSecond: 50, activeKeys: 20, storedVersions: 50, versionDiff: true },
      team: { requestsPerSecond: 200, activeKeys: 100, storedVersions: 100, versionDiff: true },
    } as const;
    for (const plan of ['free', 'pro', 'team'] as const)
      expect(plans[plan], plan).to.include(documented[plan]);
    expect(plans.team).to.include({
      maxFilters: 50,
      maxPageSize: 500,
      maxOffset: 250000,
      maxBulkOperations: 500,
    });
  });

  it('maps a.bKey to FOLIO_A_B_KEY', () => {
    expect(envName('plans.free.requestsPerSecond')).to.equal('FOLIO_PLANS_FREE_REQUESTS_PER_SECOND');
    expect(envName('webhooks.allowPrivateTargets')).to.equal('FOLIO_WEBHOOKS_ALLOW_PRIVATE_TARGETS');
    expect(envName('dataDir')).to.equal('FOLIO_DATA_DIR');
  });

  it('environment variables override defaults, typed like the default', () => {
    const config = loadConfig({
      PORT: '8080',
      FOLIO_DATA_DIR: '/tmp/x',
      MONGODB_URI: 'mongodb://h/?replicaSet=rs0',
      FOLIO_PLANS_FREE_REQUESTS_PER_SECOND: '3',
      FOLIO_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
      FOLIO_AUTH_SIGNUP: 'closed',
    });
    expect(config.port).to.equal(8080);
    expect(config.dataDir).to.equal('/tmp/x');
    expect(config.mongodbUri).to.equal('mongodb://h/?replicaSet=rs0');
    expect(config.plans.free.requestsPerSecond).to.equal(3);
    expect(config.webhooks.allowPrivateTargets).to.equal(true);
    expect(config.auth.signup).to.equal('closed');
  });

  it('a bad value stops start-up with a message naming the variable', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ PORT: 'eighty' }, /PORT: expected a number/],
      [{ PORT: '70000' }, /PORT:/],
      [{ FOLIO_PLANS_PRO_STORED_VERSIONS: '0' }, /FOLIO_PLANS_PRO_STORED_VERSIONS:/],
      [{ FOLIO_AUTH_SIGNUP: 'maybe' }, /FOLIO_AUTH_SIGNUP:/],
      [
        { FOLIO_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'yes please' },
        /FOLIO_WEBHOOKS_ALLOW_PRIVATE_TARGETS: expected true or false/,
      ],
    ];
    for (const [env, message] of cases) {
      expect(() => loadConfig(env), JSON.stringify(env)).to.throw(ConfigError, message);
    }
  });

  it('bounds every MongoDB wait by default, and reads each bound from its variable', () => {
    expect(loadConfig({}).mongodb).to.deep.equal({
      dbPrefix: 'folio',
      queryTimeoutMs: 10_000,
      commitTimeoutMs: 10_000,
      writeConcernTimeoutMs: 10_000,
      collectionRecheckMs: 30_000,
      poolWaitTimeoutMs: 10_000,
      changeRingBytes: 64 * 1024 * 1024,
      maxCatchUpStreams: 8,
      catchUpWaitMs: 5_000,
      streamReadyTimeoutMs: 15_000,
    });
    expect(
      loadConfig({
        FOLIO_MONGODB_POOL_WAIT_TIMEOUT_MS: '7',
        FOLIO_MONGODB_CHANGE_RING_BYTES: '0',
        FOLIO_MONGODB_MAX_CATCH_UP_STREAMS: '2',
        FOLIO_MONGODB_CATCH_UP_WAIT_MS: '9',
        FOLIO_MONGODB_STREAM_READY_TIMEOUT_MS: '11',
      }).mongodb,
    ).to.include({
      poolWaitTimeoutMs: 7,
      changeRingBytes: 0,
      maxCatchUpStreams: 2,
      catchUpWaitMs: 9,
      streamReadyTimeoutMs: 11,
    });
    expect(() => loadConfig({ FOLIO_MONGODB_MAX_CATCH_UP_STREAMS: '0' })).to.throw(
      ConfigError,
      /MAX_CATCH_UP_STREAMS/,
    );
    const env = {
      FOLIO_MONGODB_QUERY_TIMEOUT_MS: '1',
      FOLIO_MONGODB_COMMIT_TIMEOUT_MS: '2',
      FOLIO_MONGODB_WRITE_CONCERN_TIMEOUT_MS: '3',
      FOLIO_MONGODB_COLLECTION_RECHECK_MS: '0',
      FOLIO_AUTH_KEY_CACHE_MS: '0',
    };
    expect(loadConfig(env).mongodb).to.include({
      queryTimeoutMs: 1,
      commitTimeoutMs: 2,
      writeConcernTimeoutMs: 3,
      collectionRecheckMs: 0,
    });
    expect(loadConfig(env).auth.keyCacheMs).to.equal(0);
    expect(loadConfig({}).auth.keyCacheMs).to.equal(1000);
    expect(() => loadConfig({ FOLIO_MONGODB_QUERY_TIMEOUT_MS: '0' })).to.throw(
      ConfigError,
      /QUERY_TIMEOUT_MS/,
    );
  });

  it('keeps the stored-size limit low enough for a change event carrying the document twice', () => {
    expect(loadConfig({}).documents.maxBsonBytes).to.equal(4 * 1024 * 1024);
    expect(2 * MAX_BSON_BYTES_CEILING).to.be.below(MONGODB_MAX_BSON_BYTES);
    const at = String(MAX_BSON_BYTES_CEILING);
    expect(loadConfig({ FOLIO_DOCUMENTS_MAX_BSON_BYTES: at }).documents.maxBsonBytes).to.equal(
      MAX_BSON_BYTES_CEILING,
    );
    const over = String(MAX_BSON_BYTES_CEILING + 1);
    expect(() => loadConfig({ FOLIO_DOCUMENTS_MAX_BSON_BYTES: over })).to.throw(
      ConfigError,
      /MAX_BSON_BYTES/,
    );
  });

  it('names the FOLIO_ variables that are no configuration key, and only those', () => {
    const env = {
      FOLIO_DATADIR: '/tmp/typo',
      FOLIO_PLANS_FREE: '3',
      FOLIO_LOGLEVEL: 'debug',
      FOLIO_DATA_DIR: '/tmp/x',
      FOLIO_PORT: '8080',
      FOLIO_MONGODB_URI: 'mongodb://h/',
      FOLIO_PLANS_FREE_REQUESTS_PER_SECOND: '3',
      FOLIO_HTTP_REQUEST_TIMEOUT_MS: '1000',
      FOLIO_URL: 'http://localhost:3000',
      FOLIO_API_KEY: 'folio_sk_test_x',
      FOLIO_REQUIRE_MONGODB: '1',
      PORT: '1',
      MONGODB_URI: '',
      FOLIOX: 'not ours',
    };
    expect(unknownFolioVariables(env)).to.deep.equal(['FOLIO_DATADIR', 'FOLIO_LOGLEVEL', 'FOLIO_PLANS_FREE']);
    expect(unknownFolioVariables({})).to.deep.equal([]);
    expect(
      unknownFolioVariables({ FOLIO_ALLOW_FAULTY_JSON_PARSE: 'true', FOLIO_PROJECT: 'x' }),
    ).to.deep.equal([]);
  });

  it('HTTP timeouts: defaults, and a headers timeout longer than the request timeout is refused', () => {
    expect(loadConfig({}).http).to.deep.equal({
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 5_000,
      trustProxy: false,
    });
    const equal = loadConfig({
      FOLIO_HTTP_REQUEST_TIMEOUT_MS: '2000',
      FOLIO_HTTP_HEADERS_TIMEOUT_MS: '2000',
    });
    expect(equal.http.headersTimeoutMs).to.equal(2000);
    expect(() =>
      loadConfig({ FOLIO_HTTP_REQUEST_TIMEOUT_MS: '2000', FOLIO_HTTP_HEADERS_TIMEOUT_MS: '2001' }),
    ).to.throw(ConfigError, /FOLIO_HTTP_HEADERS_TIMEOUT_MS: must not exceed FOLIO_HTTP_REQUEST_TIMEOUT_MS/);
  });
});
