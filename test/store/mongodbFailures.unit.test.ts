/**
 * How the MongoDB store reports the deployment's state, without a server: which driver errors
 * become the port's StoreUnavailableError (and with which reason), the wrapper that applies that
 * to every repository method, the bounded transaction's retry rules, the collection re-check,
 * and the one-round-trip key look-up (its pipeline evaluated by mingo).
 */
import { expect } from 'chai';
import { Aggregator } from 'mingo';
import {
  type Document,
  MongoError,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  MongoWriteConcernError,
} from 'mongodb';
import {
  fromResolvedKeyDoc,
  type ResolvedKeyDoc,
  resolveKeyPipeline,
  toAccountDoc,
  toKeyDoc,
  toProjectDoc,
} from '../../src/store/mongodb/accounts/systemRecords.js';
import { translatingFailures } from '../../src/store/mongodb/database/failureTranslation.js';
import { DEFAULT_MONGO_LIMITS } from '../../src/store/mongodb/database/limits.js';
import {
  RETRY_AFTER_SECONDS,
  UNAVAILABLE_CODES,
  unavailability,
} from '../../src/store/mongodb/database/serverErrors.js';
import { nextStep, retryDelayMs } from '../../src/store/mongodb/database/transactions.js';
import { createMongoStore } from '../../src/store/mongodb/index.js';
import { collectionRepair, isCheckDue } from '../../src/store/mongodb/layout/collections.js';
import { SYSTEM_COLLECTIONS } from '../../src/store/mongodb/layout/naming.js';
import { type ApiKeyRecord, StoreUnavailableError } from '../../src/store/port.js';

const serverError = (code: number, errorLabels: string[] = []) =>
  new MongoServerError({ message: `error ${code}`, code, errorLabels });

describe('MongoDB store: the deployment’s state as StoreUnavailableError', () => {
  const reasonOf = (error: unknown) => unavailability(error, 10_000)?.reason ?? null;

  it('a commit or majority write not confirmed in time: write_unconfirmed (it may have been applied)', () => {
    const commitOutOfTime = serverError(50, ['UnknownTransactionCommitResult']);
    expect(reasonOf(commitOutOfTime)).to.equal('write_unconfirmed');
    const wtimeout = new MongoWriteConcernError({
      writeConcernError: {
        code: 64,
        errmsg: 'waiting for replication timed out',
        errInfo: { wtimeout: true },
      },
      ok: 1,
    });
    expect(reasonOf(wtimeout)).to.equal('write_unconfirmed');
    const commitConcernOutOfTime = new MongoWriteConcernError({
      writeConcernError: { code: 50, errmsg: 'operation exceeded time limit' },
      ok: 1,
    });
    expect(reasonOf(commitConcernOutOfTime)).to.equal('write_unconfirmed');
    expect(unavailability(wtimeout, 1)?.message).to.include('may or may not have been applied');
  });

  it('a query past maxTimeMS (code 50): query_timeout, naming the limit', () => {
    const error = unavailability(serverError(50), 1234);
    expect(error?.reason).to.equal('query_timeout');
    expect(error?.message).to.include('1234 ms');
  });

  it('no reachable primary, network failures, elections: store_unavailable', () => {
    const selection = new MongoServerSelectionError('Server selection timed out after 30000 ms', {
      servers: new Map(),
    } as never);
    expect(reasonOf(selection)).to.equal('store_unavailable');
    expect(reasonOf(new MongoNetworkError('connection reset'))).to.equal('store_unavailable');
    for (const code of UNAVAILABLE_CODES)
      expect(reasonOf(serverError(code)), String(code)).to.equal('store_unavailable');
    // A write conflict that outlasted the retry budget: the transaction was aborted.
    expect(reasonOf(serverError(112, ['TransientTransactionError']))).to.equal('store_unavailable');
  });

  it('anything else stays what it is (a 500): duplicate keys, refused queries, plain errors', () => {
    expect(reasonOf(serverError(11000))).to.equal(null);
    expect(reasonOf(serverError(2))).to.equal(null);
    expect(reasonOf(new Error('bug'))).to.equal(null);
    expect(reasonOf(new MongoError('driver'))).to.equal(null);
  });

  it('tells the client when to retry, and keeps the driver’s error as the cause', () => {
    const cause = serverError(10107);
    const error = unavailability(cause, 1)!;
    expect(error).to.be.instanceOf(StoreUnavailableError);
    expect(error.retryAfterSeconds).to.equal(RETRY_AFTER_SECONDS);
    expect(error.cause).to.equal(cause);
  });
});

describe('MongoDB store: every repository method translates failures', () => {
  class Repository {
    readonly #secret = 42;
    calls = 0;
    async read(): Promise<number> {
      this.calls++;
      return this.#secret;
    }
    async fail(error: unknown): Promise<never> {
      throw error;
    }
    failNow(error: unknown): never {
      throw error;
    }
    iterate(): number[] {
      return [1, 2];
    }
  }
  const wrapped = () => {
    const target = new Repository();
    return { target, repo: translatingFailures(target, (e) => unavailability(e, 10)) };
  };

  it('passes results through, on the real object (private fields work)', async () => {
    const { target, repo } = wrapped();
    expect(await repo.read()).to.equal(42);
    expect(target.calls).to.equal(1);
    expect(repo.iterate()).to.deep.equal([1, 2]);
    expect(repo.read).to.equal(repo.read);
  });

  it('turns a timeout into StoreUnavailableError, async or not, and leaves other errors alone', async () => {
    const { repo } = wrapped();
    const rejected = await repo.fail(serverError(50)).catch((e: unknown) => e);
    expect(rejected).to.be.instanceOf(StoreUnavailableError);
    expect(() => repo.failNow(serverError(91))).to.throw(StoreUnavailableError);
    const bug = new Error('bug');
    expect(await repo.fail(bug).catch((e: unknown) => e)).to.equal(bug);
  });

  it('covers the real store: an unreachable server makes every repository answer store_unavailable', async () => {
    const store = createMongoStore({ uri: 'mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200' });
    try {
      const scope = { projectId: 'prj_x', env: 'test' as const };
      const failures = await Promise.all([
        store.documents.get(scope, 'things', 'doc_1').catch((e: unknown) => e),
        store.accounts.resolveKey('hash').catch((e: unknown) => e),
        store.counters.hit('k', 1000, Date.now()).catch((e: unknown) => e),
      ]);
      for (const failure of failures) {
        expect(failure).to.be.instanceOf(StoreUnavailableError);
        expect((failure as StoreUnavailableError).reason).to.equal('store_unavailable');
      }
    } finally {
      await store.close();
    }
  });
});

describe('MongoDB store: bounded transactions', () => {
  const budget = DEFAULT_MONGO_LIMITS.commitTimeoutMs;

  it('starts over after a transient error, within the budget only', () => {
    const conflict = serverError(112, ['TransientTransactionError']);
    expect(nextStep(conflict, 'body', 0, budget)).to.equal('retryTransaction');
    expect(nextStep(conflict, 'commit', budget - 1, budget)).to.equal('retryTransaction');
    expect(nextStep(conflict, 'body', budget, budget)).to.equal('fail');
  });

  it('retries a commit of unknown outcome, but not one that ran out of time', () => {
    const unknown = serverError(91, ['UnknownTransactionCommitResult']);
    expect(nextStep(unknown, 'commit', 0, budget)).to.equal('retryCommit');
    expect(nextStep(unknown, 'commit', budget, budget)).to.equal('fail');
    expect(nextStep(serverError(50, ['UnknownTransactionCommitResult']), 'commit', 0, budget)).to.equal(
      'fail',
    );
    const concernOutOfTime = new MongoWriteConcernError({
      writeConcernError: { code: 50, errmsg: 'operation exceeded time limit' },
      ok: 1,
      errorLabels: ['UnknownTransactionCommitResult'],
    });
    expect(concernOutOfTime.hasErrorLabel('UnknownTransactionCommitResult')).to.equal(true);
    expect(nextStep(concernOutOfTime, 'commit', 0, budget)).to.equal('fail');
    // In the body, that label means nothing to retry.
    expect(nextStep(unknown, 'body', 0, budget)).to.equal('fail');
  });

  it('never retries other errors', () => {
    expect(nextStep(serverError(11000), 'body', 0, budget)).to.equal('fail');
    expect(nextStep(new Error('bug'), 'commit', 0, budget)).to.equal('fail');
  });

  it('backs off with jitter, growing to at most 500 ms', () => {
    expect(retryDelayMs(1, 1)).to.equal(7.5);
    expect(retryDelayMs(2, 0.5)).to.equal(5.625);
    expect(retryDelayMs(40, 1)).to.equal(500);
    expect(retryDelayMs(3, 0)).to.equal(0);
  });
});

describe('MongoDB store: collection re-check and repair', () => {
  it('creates a missing collection, switches images on where they are off, leaves a good one alone', () => {
    expect(collectionRepair(undefined)).to.equal('create');
    expect(collectionRepair({ options: {} })).to.equal('enableImages');
    expect(collectionRepair({ options: { changeStreamPreAndPostImages: { enabled: false } } })).to.equal(
      'enableImages',
    );
    expect(collectionRepair({ options: { changeStreamPreAndPostImages: { enabled: true } } })).to.equal(
      'none',
    );
  });

  it('checks again once collectionRecheckMs has passed, not before', () => {
    expect(isCheckDue(1000, 1000 + 29_999, 30_000)).to.equal(false);
    expect(isCheckDue(1000, 1000 + 30_000, 30_000)).to.equal(true);
    expect(isCheckDue(1000, 1000, 0)).to.equal(true);
  });
});

describe('MongoDB store: API key, project and account in one round trip', () => {
  const at = '2024-01-01T00:00:00.000Z';
  const account = {
    id: 'acc_1',
    email: 'a@example.test',
    passwordHash: 'x',
    plan: 'pro' as const,
    createdAt: at,
  };
  const project = { id: 'prj_1', accountId: 'acc_1', name: 'app', createdAt: at, allowedOrigins: null };
  const key = (id: string, projectId: string, keyHash: string): ApiKeyRecord => ({
    id,
    projectId,
    name: 'k',
    env: 'live',
    scope: 'read-only',
    config: { a: 1 },
    status: 'active',
    keyHash,
    hint: 'folio_sk_live_...abcd',
    createdAt: at,
    lastUsedAt: null,
    revokedAt: null,
    rotatedFrom: null,
    rules: null,
  });
  const collections = new Map<string, Document[]>([
    [
      SYSTEM_COLLECTIONS.accounts,
      [toAccountDoc(account), toAccountDoc({ ...account, id: 'acc_2', email: 'b@x.test' })],
    ],
    [
      SYSTEM_COLLECTIONS.projects,
      [toProjectDoc(project), toProjectDoc({ ...project, id: 'prj_gone', accountId: 'acc_none' })],
    ],
  ]);
  const keys = [key('key_1', 'prj_1', 'h1'), key('key_2', 'prj_2', 'h2'), key('key_3', 'prj_gone', 'h3')].map(
    toKeyDoc,
  );
  const run = (keyHash: string) =>
    new Aggregator(resolveKeyPipeline(keyHash, SYSTEM_COLLECTIONS), {
      collectionResolver: (name: string) => collections.get(name) ?? [],
    }).run(keys) as ResolvedKeyDoc[];

  it('returns the key with its project and the project’s account, as the port’s records', () => {
    const rows = run('h1');
    expect(rows).to.have.length(1);
    expect(fromResolvedKeyDoc(rows[0]!)).to.deep.equal({
      key: key('key_1', 'prj_1', 'h1'),
      project,
      account,
    });
  });

  it('returns nothing for an unknown hash, or a key whose project or account is gone', () => {
    expect(run('nope')).to.deep.equal([]);
    expect(run('h2')).to.deep.equal([]);
    expect(run('h3')).to.deep.equal([]);
  });
});
