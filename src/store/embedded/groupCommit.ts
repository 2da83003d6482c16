/**
 * Group commit for the embedded store. With `synchronous=FULL` every SQLite commit waits for the
 * WAL to reach the disk; commits that arrive in the same turn of the event loop therefore share
 * one IMMEDIATE transaction and so one sync. Each still runs in its own savepoint (better-sqlite3
 * nests a transaction function called inside another as a savepoint), so each succeeds, reports
 * its conflicts or fails on its own; only a failure of the group's own commit (disk full, I/O)
 * fails them all, and then none of them was written.
 */
import type Database from 'better-sqlite3';

interface Pending<A, R> {
  args: A;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

/** Commits in one group at most: bounds the time the write lock is held. */
const MAX_GROUP = 256;

export class GroupCommit<A, R> {
  #pending: Array<Pending<A, R>> = [];
  #scheduled = false;
  /** Groups committed so far (for tests and metrics: commits per sync). */
  groups = 0;
  readonly #group: (batch: Array<Pending<A, R>>) => Array<Outcome<R>>;

  /**
   * `apply` is one commit's body; `afterCommit` runs once after each group's commit (the change
   * feed reads the new rows then).
   */
  constructor(
    db: Database.Database,
    apply: (args: A) => R,
    private readonly afterCommit: () => void,
  ) {
    const savepoint = db.transaction(apply);
    this.#group =
      // IMMEDIATE takes the write lock up front, so each commit's checks and writes see the same
      // state even if another connection (a CLI next to the server) writes the same file.
      db.transaction((batch: Array<Pending<A, R>>) =>
        batch.map((item): Outcome<R> => {
          try {
            return { ok: true, value: savepoint(item.args) };
          } catch (error) {
            return { ok: false, error };
          }
        }),
      ).immediate;
  }

  /** Resolves with `apply`'s result once the group holding this commit is on disk. */
  commit(args: A): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#pending.push({ args, resolve, reject });
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
    let outcomes: Array<Outcome<R>>;
    try {
      outcomes = this.#group(batch);
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    this.groups += 1;
    this.afterCommit();
    outcomes.forEach((outcome, i) => {
      if (outcome.ok) batch[i]!.resolve(outcome.value);
      else batch[i]!.reject(outcome.error);
    });
  }
}
