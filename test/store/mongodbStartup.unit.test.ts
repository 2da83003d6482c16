/**
 * The MongoDB store's start-up decisions that need no server: what a failed connection means
 * (from `hello` replies and driver errors shaped as the driver makes them), the probe's
 * connection string, the privileges Folio needs, the pre- and post-image probe's message, and
 * the change-history retention warning. Their live counterparts are in mongodb.live.test.ts.
 */
import { expect } from 'chai';
import { type Document, MongoNetworkError, MongoServerError, MongoServerSelectionError } from 'mongodb';
import { ConnectionString } from 'mongodb-connection-string-url';
import {
  classifyProbe,
  diagnose,
  type HostProbe,
  hostsToProbeNext,
  isAuthFailure,
  MAX_PROBES,
  networkFailure,
  probeUri,
} from '../../src/store/mongodb/startup/connectDiagnosis.js';
import {
  featureCompatibilityVersion,
  imagesRefusedMessage,
} from '../../src/store/mongodb/startup/imagesProbe.js';
import { imagesExpiry, OPLOG_FULL_RATIO, oplogWarning } from '../../src/store/mongodb/startup/oplogWindow.js';
import {
  CLUSTER_ACTIONS,
  missingPrivileges,
  PROJECT_DB_ACTIONS,
  privilegesMessage,
  REPAIR_ACTIONS,
  repairPrivilegesWarning,
  SYSTEM_DB_ACTIONS,
} from '../../src/store/mongodb/startup/privileges.js';

// `hello` replies as MongoDB 7 sends them (trimmed to the fields that matter plus a few others).
const common = { maxBsonObjectSize: 16_777_216, maxWireVersion: 21, minWireVersion: 0, ok: 1 };
const standalone = { isWritablePrimary: true, readOnly: false, ...common };
const uninitiated = {
  isWritablePrimary: false,
  secondary: false,
  info: 'Does not have a valid replica set config',
  isreplicaset: true,
  ...common,
};
const member = (host: string, overrides: Document = {}) => ({
  hosts: [host],
  setName: 'rs0',
  setVersion: 1,
  isWritablePrimary: true,
  secondary: false,
  primary: host,
  me: host,
  ...common,
  ...overrides,
});
const mongos = { isWritablePrimary: true, msg: 'isdbgrid', ...common };

/** A server-selection failure as the driver builds it: network error inside, per server. */
function unreachableError(host: string, code: string): MongoServerSelectionError {
  const socket = Object.assign(new Error(`connect ${code} ${host}`), { code });
  const network = new MongoNetworkError(socket.message, { cause: socket });
  const reason = {
    type: 'Single',
    servers: new Map([[host, { type: 'Unknown', error: network }]]),
    error: network,
  };
  return new MongoServerSelectionError(socket.message, reason as never);
}

const authError = () =>
  new MongoServerError({ message: 'Authentication failed.', code: 18, codeName: 'AuthenticationFailed' });

describe('MongoDB start-up: what each host says', () => {
  it('tells a standalone, an uninitiated member, a member, an arbiter and a mongos apart', () => {
    expect(classifyProbe({ host: 'h:1', reply: standalone })).to.deep.equal({
      host: 'h:1',
      kind: 'standalone',
    });
    expect(classifyProbe({ host: 'h:1', reply: uninitiated })).to.deep.equal({
      host: 'h:1',
      kind: 'notInitiated',
    });
    expect(classifyProbe({ host: 'h:1', reply: mongos })).to.deep.equal({ host: 'h:1', kind: 'mongos' });
    expect(
      classifyProbe({ host: 'h:1', reply: member('h:1', { arbiterOnly: true, isWritablePrimary: false }) }),
    ).to.deep.equal({ host: 'h:1', kind: 'arbiter', setName: 'rs0' });
    expect(
      classifyProbe({
        host: 'h:1',
        reply: member('db1:27017', { passives: ['db9:27017'], arbiters: ['arb:1'] }),
      }),
    ).to.deep.equal({
      host: 'h:1',
      kind: 'member',
      setName: 'rs0',
      primary: 'db1:27017',
      members: ['db1:27017', 'db9:27017'],
      state: 'PRIMARY',
    });
    const secondary = classifyProbe({
      host: 'h:1',
      reply: member('h:1', { isWritablePrimary: false, secondary: true, primary: undefined }),
    });
    expect(secondary).to.deep.include({ primary: null, state: 'SECONDARY' });
  });

  it('reads an unreachable host’s cause from the error chain, and knows refused credentials', () => {
    expect(classifyProbe({ host: 'h:1', error: unreachableError('h:1', 'ECONNREFUSED') })).to.deep.equal({
      host: 'h:1',
      kind: 'unreachable',
      cause: 'ECONNREFUSED: connection refused: nothing listens on that port',
    });
    expect(networkFailure(unreachableError('x:1', 'ENOTFOUND'))).to.equal(
      'ENOTFOUND: the host name does not resolve',
    );
    expect(networkFailure(unreachableError('x:1', 'SELF_SIGNED_CERT_IN_CHAIN'))).to.match(/^TLS failed/);
    expect(networkFailure(new MongoNetworkError('socket hang up'))).to.equal('socket hang up');
    expect(networkFailure(new Error('other'))).to.equal(null);
    expect(classifyProbe({ host: 'h:1', error: authError() })).to.deep.equal({
      host: 'h:1',
      kind: 'authFailed',
    });
    expect(isAuthFailure(new MongoServerError({ message: 'x', code: 13 }))).to.equal(false);
    // The pool reports refused credentials inside other errors too.
    expect(isAuthFailure(new MongoNetworkError('handshake', { cause: authError() }))).to.equal(true);
  });

  it('probes the hosts the members name that the URI did not list, at most MAX_PROBES in all', () => {
    const probes: HostProbe[] = [
      { host: 'localhost:27017', reply: member('3f2a1c9b8d7e:27017') },
      { host: 'localhost:27018', error: unreachableError('localhost:27018', 'ECONNREFUSED') },
    ];
    expect(hostsToProbeNext(probes)).to.deep.equal(['3f2a1c9b8d7e:27017']);
    expect(
      hostsToProbeNext([...probes, { host: '3F2A1C9B8D7E:27017', error: new Error('x') }]),
    ).to.deep.equal([]);
    const many = Array.from({ length: 20 }, (_, i) => `db${i}:27017`);
    expect(
      hostsToProbeNext([{ host: 'seed:1', reply: member('db0:27017', { hosts: many }) }]),
    ).to.have.length(MAX_PROBES - 1);
  });
});

describe('MongoDB start-up: one line saying what is wrong', () => {
  it('a standalone reached with ?replicaSet=: says so and how to make it a replica set', () => {
    const line = diagnose([{ host: 'localhost:27017', reply: standalone }], 'rs0');
    expect(line).to.include('localhost:27017 is a standalone mongod');
    expect(line).to.include('asks for replica set "rs0"');
    expect(line).to.include('--replSet rs0');
    expect(line).to.include('rs.initiate()');
  });

  it('an uninitiated member: run rs.initiate() once, with the Docker hint', () => {
    const line = diagnose([{ host: 'localhost:27017', reply: uninitiated }], 'rs0');
    expect(line).to.include('never initiated');
    expect(line).to.include('rs.initiate()');
    expect(line).to.include('localhost:27017');
  });

  it('members named by addresses this machine cannot reach (Docker’s container hostname)', () => {
    const line = diagnose(
      [
        { host: 'localhost:27017', reply: member('3f2a1c9b8d7e:27017') },
        { host: '3f2a1c9b8d7e:27017', error: unreachableError('3f2a1c9b8d7e:27017', 'ENOTFOUND') },
      ],
      'rs0',
    );
    expect(line).to.include('replica set "rs0" names its members 3f2a1c9b8d7e:27017');
    expect(line).to.include('cannot reach 3f2a1c9b8d7e:27017 (ENOTFOUND');
    expect(line).to.include('initiate it with host localhost:27017');
    // The member's own unreachability is not repeated as a separate finding.
    expect(line.split('; ')).to.have.length(1);
  });

  it('a wrong set name: names the set the server belongs to', () => {
    const line = diagnose([{ host: 'db:27017', reply: member('db:27017', { setName: 'prod' }) }], 'rs0');
    expect(line).to.equal(
      'db:27017 belongs to replica set "prod", not "rs0": set replicaSet=prod in MONGODB_URI',
    );
  });

  it('unreachable hosts and refused credentials, each named', () => {
    const line = diagnose(
      [
        { host: 'a:1', error: unreachableError('a:1', 'ECONNREFUSED') },
        { host: 'b:2', error: authError() },
      ],
      null,
    );
    expect(line).to.equal(
      'a:1 is unreachable (ECONNREFUSED: connection refused: nothing listens on that port); ' +
        'b:2 refused the credentials in MONGODB_URI (check the user, password and authSource)',
    );
  });

  it('a set without a primary, and a mongos behind ?replicaSet=', () => {
    const secondary = member('db:27017', { isWritablePrimary: false, secondary: true, primary: undefined });
    expect(diagnose([{ host: 'db:27017', reply: secondary }], 'rs0')).to.include('has no primary right now');
    expect(diagnose([{ host: 'r:27017', reply: mongos }], 'rs0')).to.include('remove replicaSet=rs0');
  });

  it('says nothing about a healthy reachable member (the caller then keeps the driver’s message)', () => {
    expect(diagnose([{ host: 'db:27017', reply: member('db:27017') }], 'rs0')).to.equal('');
  });
});

describe('MongoDB start-up: the probe’s connection string', () => {
  const parse = (uri: string) => {
    const cs = new ConnectionString(uri);
    return { cs, params: Object.fromEntries(cs.typedSearchParams<Record<string, string>>()) };
  };

  it('reaches one host directly and fails fast, keeping credentials, TLS and authSource', () => {
    const { cs, params } = parse(
      probeUri(
        'mongodb://app:s%40cret@a:1,b:2/folio?ReplicaSet=rs0&tls=true&authSource=admin&serverSelectionTimeoutMS=30000',
        'b:2',
        3000,
      ),
    );
    expect(cs.hosts).to.deep.equal(['b:2']);
    expect(cs.username).to.equal('app');
    expect(decodeURIComponent(cs.password)).to.equal('s@cret');
    expect(cs.pathname).to.equal('/folio');
    expect(params).to.deep.equal({
      tls: 'true',
      authSource: 'admin',
      directConnection: 'true',
      serverSelectionTimeoutMS: '3000',
      connectTimeoutMS: '3000',
      socketTimeoutMS: '3000',
    });
  });

  it('turns an SRV URI into a direct one with TLS on and the resolved authSource', () => {
    const { cs, params } = parse(
      probeUri(
        'mongodb+srv://app:pw@cluster0.example.net/?srvMaxHosts=2',
        'shard-00-01.example.net:27017',
        2000,
        'admin',
      ),
    );
    expect(cs.protocol).to.equal('mongodb:');
    expect(cs.hosts).to.deep.equal(['shard-00-01.example.net:27017']);
    expect(params).to.deep.include({ tls: 'true', authSource: 'admin', directConnection: 'true' });
    expect(params).not.to.have.property('srvMaxHosts');
    const withTls = parse(probeUri('mongodb+srv://c.example.net/?tls=false', 'h:1', 2000)).params;
    expect(withTls.tls).to.equal('false');
  });
});

describe('MongoDB start-up: privileges', () => {
  const status = (privileges: Document[], users = [{ user: 'folio', db: 'admin' }]) => ({
    authInfo: {
      authenticatedUsers: users,
      authenticatedUserRoles: [],
      authenticatedUserPrivileges: privileges,
    },
    ok: 1,
  });
  // What readWriteAnyDatabase and dbAdminAnyDatabase grant on {db: '', collection: ''} (abridged),
  // and readWriteAnyDatabase on the cluster.
  const readWriteAnyActions = {
    resource: { db: '', collection: '' },
    actions: [
      'changeStream',
      'collStats',
      'createCollection',
      'createIndex',
      'dropCollection',
      'dropIndex',
      'find',
      'insert',
      'killCursors',
      'listCollections',
      'listIndexes',
      'remove',
      'update',
    ],
  };
  const listDatabases = { resource: { cluster: true }, actions: ['listDatabases'] };
  const readWriteAny = [readWriteAnyActions, listDatabases];
  const dbAdminAny = {
    resource: { db: '', collection: '' },
    actions: ['collMod', 'collStats', 'createCollection', 'createIndex', 'dropCollection', 'listCollections'],
  };
  const none = { missing: [], missingForRepair: [] };

  it('finds nothing missing for readWriteAnyDatabase + dbAdminAnyDatabase, or an anyResource privilege', () => {
    expect(missingPrivileges(status([...readWriteAny, dbAdminAny]), 'folio_system')).to.deep.equal(none);
    const all = [...SYSTEM_DB_ACTIONS, ...PROJECT_DB_ACTIONS, ...CLUSTER_ACTIONS, ...REPAIR_ACTIONS];
    expect(
      missingPrivileges(status([{ resource: { anyResource: true }, actions: all }]), 'folio_system'),
    ).to.deep.equal(none);
  });

  it('runs with readWriteAnyDatabase alone, only without collMod for repairs', () => {
    expect(missingPrivileges(status(readWriteAny), 'folio_system')).to.deep.equal({
      missing: [],
      missingForRepair: ['collMod on every database'],
    });
  });

  it('names every action a read-only user lacks', () => {
    const readAny = {
      resource: { db: '', collection: '' },
      actions: ['changeStream', 'find', 'listCollections'],
    };
    expect(missingPrivileges(status([readAny]), 'folio_system').missing).to.deep.equal([
      'insert on database folio_system',
      'update on database folio_system',
      'remove on database folio_system',
      'createCollection on database folio_system',
      'createIndex on database folio_system',
      'dropCollection on database folio_system',
      'insert on every database',
      'update on every database',
      'remove on every database',
      'createCollection on every database',
      'createIndex on every database',
      'listIndexes on every database',
      'dropIndex on every database',
      'listDatabases on the cluster',
    ]);
  });

  it('needs listIndexes and dropIndex on every database, and listDatabases on the cluster', () => {
    // A custom role granting only what the docs listed before: index lists, drops and restore failed later.
    const older = {
      resource: { db: '', collection: '' },
      actions: readWriteAnyActions.actions.filter((a) => a !== 'listIndexes' && a !== 'dropIndex'),
    };
    expect(missingPrivileges(status([older]), 'folio_system').missing).to.deep.equal([
      'listIndexes on every database',
      'dropIndex on every database',
      'listDatabases on the cluster',
    ]);
    // listDatabases granted on a database is not on the cluster.
    const onDb = { resource: { db: '', collection: '' }, actions: ['listDatabases'] };
    expect(missingPrivileges(status([readWriteAnyActions, onDb]), 'folio_system').missing).to.deep.equal([
      'listDatabases on the cluster',
    ]);
    expect(
      missingPrivileges(status([readWriteAnyActions, listDatabases]), 'folio_system').missing,
    ).to.deep.equal([]);
  });

  it('does not count privileges on one database for databases created later', () => {
    const oneDb = { resource: { db: 'folio_prj_x_live', collection: '' }, actions: [...PROJECT_DB_ACTIONS] };
    const system = { resource: { db: 'folio_system', collection: '' }, actions: [...SYSTEM_DB_ACTIONS] };
    const { missing } = missingPrivileges(status([oneDb, system]), 'folio_system');
    expect(missing).to.deep.equal([
      ...PROJECT_DB_ACTIONS.map((a) => `${a} on every database`),
      'listDatabases on the cluster',
    ]);
    // A privilege on one collection covers no database.
    const oneCollection = {
      resource: { db: 'folio_system', collection: 'keys' },
      actions: [...SYSTEM_DB_ACTIONS],
    };
    expect(missingPrivileges(status([oneCollection]), 'folio_system').missing).to.include(
      'find on database folio_system',
    );
  });

  it('checks nothing when nobody is authenticated (access control off)', () => {
    expect(missingPrivileges(status([], []), 'folio_system')).to.deep.equal(none);
    expect(missingPrivileges({ ok: 1 }, 'folio_system')).to.deep.equal(none);
  });

  it('says which roles to grant', () => {
    expect(privilegesMessage(['insert on every database'])).to.include('insert on every database');
    expect(privilegesMessage(['x'])).to.include('dbAdminAnyDatabase');
    expect(repairPrivilegesWarning(['collMod on every database'])).to.include('dropped behind its back');
  });
});

describe('MongoDB start-up: pre- and post-images', () => {
  it('reads the featureCompatibilityVersion, and names it when images are refused', () => {
    expect(featureCompatibilityVersion({ featureCompatibilityVersion: { version: '5.0' }, ok: 1 })).to.equal(
      '5.0',
    );
    expect(featureCompatibilityVersion({ ok: 1 })).to.equal(null);
    const refused = new MongoServerError({
      message: 'unknown option changeStreamPreAndPostImages',
      code: 72,
    });
    const message = imagesRefusedMessage(refused, '5.0');
    expect(message).to.include('featureCompatibilityVersion is 5.0');
    expect(message).to.include('setFeatureCompatibilityVersion');
    expect(
      imagesRefusedMessage(new MongoServerError({ message: 'not authorized', code: 13 }), null),
    ).to.include('may not create collections');
  });
});

describe('MongoDB start-up: change-history retention', () => {
  const full = { sizeBytes: 990, maxSizeBytes: 1000, imagesExpireAfterSeconds: null };
  const retentionMs = 300_000;

  it('warns when a full oplog holds less than events.retentionMs, and not at exactly that', () => {
    expect(oplogWarning({ ...full, firstSeconds: 1000, lastSeconds: 1299 }, retentionMs)).to.include(
      'the oplog holds 299 s of writes',
    );
    expect(oplogWarning({ ...full, firstSeconds: 1000, lastSeconds: 1300 }, retentionMs)).to.equal(null);
  });

  it('does not warn while the oplog has never filled: its window is still growing', () => {
    const growing = {
      ...full,
      sizeBytes: full.maxSizeBytes * OPLOG_FULL_RATIO - 1,
      firstSeconds: 1000,
      lastSeconds: 1010,
    };
    expect(oplogWarning(growing, retentionMs)).to.equal(null);
  });

  it('warns when pre- and post-images expire sooner than events.retentionMs', () => {
    const long = { ...full, firstSeconds: 0, lastSeconds: 86_400 };
    expect(oplogWarning({ ...long, imagesExpireAfterSeconds: 299 }, retentionMs)).to.include(
      'expire after 299 s',
    );
    expect(oplogWarning({ ...long, imagesExpireAfterSeconds: 300 }, retentionMs)).to.equal(null);
  });

  it('reads the images’ expiry from getClusterParameter; "off" means none', () => {
    const reply = (expireAfterSeconds: unknown) => ({
      clusterParameters: [{ _id: 'changeStreamOptions', preAndPostImages: { expireAfterSeconds } }],
      ok: 1,
    });
    expect(imagesExpiry(reply(600))).to.equal(600);
    expect(imagesExpiry(reply(600n))).to.equal(600);
    expect(imagesExpiry(reply('off'))).to.equal(null);
    expect(imagesExpiry({ ok: 1 })).to.equal(null);
  });
});
