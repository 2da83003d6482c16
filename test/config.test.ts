import { expect } from 'chai';
import { ConfigError, envName, loadConfig } from '../src/config/load.js';

describe('configuration', () => {
  it('defaults hold the plan numbers of DESIGN.md', () => {
    const { plans, rateLimit } = loadConfig({});
    expect(rateLimit.windowMs).to.equal(1000);
    expect(plans.free).to.include({
      requestsPerSecond: 10,
      activeKeys: 2,
      storedVersions: 5,
      versionDiff: false,
    });
    expect(plans.pro).to.include({
      requestsPerSecond: 50,
      activeKeys: 20,
      storedVersions: 50,
      versionDiff: true,
    });
    expect(plans.team).to.include({
      requestsPerSecond: 200,
      activeKeys: 100,
      storedVersions: 100,
      versionDiff: true,
    });
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
});
