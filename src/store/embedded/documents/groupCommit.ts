/**
 * Group commit for the embedded store. With `synchronous=FULL` every SQLite commit waits for the
 * WAL to reach the disk; commits that arrive in the same turn of the event loop therefore share
 * one IMMEDIATE transaction and so one sync. Each still runs in its own savepoint (better-sqlite3
 * nests a transaction function called inside another as a savepoint), so each succeeds, reports
 * its conflicts or fails on its own; only a failure of the group's own commit (disk full, I/O)
 * fails them all, and then none of them was written. An optimistic group (the documents') takes
 * the savepoints only when one of its commits fails: it then runs again with them.
 *
 * A commit may also be deferred (`durable: false`): a group made only of deferred commits is
 * committed without the sync (`synchronous=NORMAL` for that one commit), and the next durable
 * group's sync carries it to the disk too, since syncing the WAL file syncs every frame already
 * in it. A bulk request commits its operations so, the last one durable: one sync per bulk.
 */
import type Database from 'better-sqlite3';

interface Pending<A, R> {
  args: A;
  durable: boolean;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

/** Commits in one group at most: bounds the time the write lock is held. */
const MAX_GROUP = 256;

export interface GroupCommitHooks {
  /** Runs before each group's transaction, whether it then commits or fails. */
  beforeGroup?(): void;
  /**
   * Runs once after each group's commit; `durable`: the group was synced (and with it every
   * deferred group before it).
   */
  afterCommit(durable: boolean): void;
  /** Runs before a group that will commit without its sync (the change feed holds its rows back). */
  beforeDeferred(): void;
  /**
   * Runs inside each group's transaction after its commits (work shared by the group, done once
   * rather than per commit); if it throws, the whole group fails.
   */
  endOfGroup?(): void;
}

export class GroupCommit<A, R> {
  #pending: Array<Pending<A, R>> = [];
  #scheduled = false;
  /** Groups committed so far (for tests and metrics: commits per sync). */
  groups = 0;
  /** Of those, the groups committed with their sync. */
  durableGroups = 0;
  readonly #group: (batch: Array<Pending<A, R>>) => Array<Outcome<R>>;
  readonly #db: Database.Database;
  /** The connection's `synchronous` level (2 FULL, 3 EXTRA sync on commit; 1 NORMAL does not). */
  readonly #synchronous: number;

  /**
   * `apply` is one commit's body. `isolated: false` runs the commits of a group without a
   * savepoint each: for commits that cannot conflict (plain upserts), where a savepoint per
   * commit was most of a group's cost; a failing one then fails its whole group.
   * `optimistic: true` keeps each commit's own outcome at the price of a savepoint only when one
   * fails: the group first runs without savepoints; should a commit throw, the whole transaction
   * rolls back and the group runs again, each commit in its own savepoint. `apply` must then be
   * safe to run again after a rollback (whatever it does outside the transaction idempotent), and
   * `beforeGroup` runs again before the second run.
   */
  constructor(
    db: Database.Database,
    apply: (args: A) => R,
    private readonly hooks: GroupCommitHooks,
    options: { isolated?: boolean; optimistic?: boolean } = {},
  ) {
    this.#db = db;
    this.#synchronous = Number(db.pragma('synchronous', { simple: true }));
    const isolated = options.isolated !== false;
    // IMMEDIATE takes the write lock up front, so each commit's checks and writes see the same
    // state even if another connection (a CLI next to the server) writes the same file.
    const inSavepoints = groupTransaction(db, db.transaction(apply), true, hooks);
    const plain = groupTransaction(db, apply, false, hooks);
    if (!isolated) this.#group = plain;
    else if (!options.optimistic) this.#group = inSavepoints;
    else {
      // A savepoint per commit was about a sixth of a single-document write's CPU, and a commit
      // that throws after its checks passed (a unique index refusing it) is rare.
      this.#group = (batch) => {
        let failedInApply = false;
        try {
          return plain(batch, () => {
            failedInApply = true;
          });
        } catch (error) {
          // The group's own work failed (BEGIN, endOfGroup, COMMIT): it would fail again.
          if (!failedInApply) throw error;
          hooks.beforeGroup?.();
          return inSavepoints(batch);
        }
      };
    }
  }

  /**
   * Resolves with `apply`'s result once the group holding this commit has committed: on disk,
   * or with `durable: false` (where the connection syncs at all) as soon as it is applied,
   * durable only once a later durable group has committed.
   */
  commit(args: A, durable = true): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#pending.push({ args, durable, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // setImmediate: after the I/O callbacks of this turn, so requests that arrived together group.
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#pending.splice(0, MAX_GROUP);
    if (this.#pending.length > 0) this.#schedule();
    // A connection that never syncs on commit has nothing to defer.
    const durable = this.#synchronous < 2 || batch.some((item) => item.durable);
    let outcomes: Array<Outcome<R>>;
    this.hooks.beforeGroup?.();
    try {
      outcomes = durable ? this.#group(batch) : this.#deferred(batch);
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    this.groups += 1;
    if (durable) this.durableGroups += 1;
    this.hooks.afterCommit(durable);
    outcomes.forEach((outcome, i) => {
      if (outcome.ok) batch[i]!.resolve(outcome.value);
      else batch[i]!.reject(outcome.error);
    });
  }

  /** The group committed without waiting for the disk; the connection syncs again after it. */
  #deferred(batch: Array<Pending<A, R>>): Array<Outcome<R>> {
    this.hooks.beforeDeferred();
    this.#db.pragma('synchronous = NORMAL');
    try {
      return this.#group(batch);
    } finally {
      // A number read from SQLite itself, not user input.
      this.#db.pragma(`synchronous = ${this.#synchronous}`);
    }
  }
}

/**
 * One group's IMMEDIATE transaction: each commit's outcome, `endOfGroup`, then the commit.
 * With `caught`, a commit that throws has failed alone (`apply` runs it in a savepoint); without,
 * its error rolls back the whole transaction (after `onApplyError`).
 */
function groupTransaction<A, R>(
  db: Database.Database,
  apply: (args: A) => R,
  caught: boolean,
  hooks: GroupCommitHooks,
): (batch: Array<Pending<A, R>>, onApplyError?: () => void) => Array<Outcome<R>> {
  return db.transaction((batch: Array<Pending<A, R>>, onApplyError?: () => void) => {
    const outcomes = batch.map((item): Outcome<R> => {
      try {
        return { ok: true, value: apply(item.args) };
      } catch (error) {
        if (caught) return { ok: false, error };
        onApplyError?.();
        throw error;
      }
    });
    hooks.endOfGroup?.();
    return outcomes;
  }).immediate;
}
