/**
 * The change log keeps the rows this connection commits for the tail, so it publishes them
 * without reading them back: exactly the rows that stayed written, in seq order, none past a gap
 * or the held-back boundary, and no more than its byte bound.
 */
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { ChangeLog, type ChangeRow, ownRowBytes } from '../../src/store/embedded/changes/changeLog.js';
import { GroupCommit } from '../../src/store/embedded/documents/groupCommit.js';
import { applySchema } from '../../src/store/embedded/layout/schema.js';

interface Append {
  id: string;
  /** Throw after appending: the commit fails and its row must not stay. */
  fail?: boolean;
}

const TS = '2026-11-28T00:00:00.000Z';

function setUp(options: { ownRowsMaxBytes?: number } = {}) {
  const db = new Database(':memory:');
  applySchema(db);
  const log = new ChangeLog(db, options);
  // The documents' group commit, reduced to the hooks the log relies on.
  const commits = new GroupCommit(
    db,
    ({ id, fail }: Append) => {
      log.append('prj_s:live', 'c', 'created', id, `{"_id":"${id}"}`, TS);
      if (fail) throw new Error(`refused ${id}`);
      return id;
    },
    {
      beforeGroup: () => log.groupStarted(),
      beforeDeferred: () => log.hold(),
      afterCommit: () => log.groupCommitted(),
    },
    { optimistic: true },
  );
  const commit = (appends: Append[], durable = true) =>
    Promise.allSettled(appends.map((append) => commits.commit(append, durable)));
  return { db, log, commit };
}

const ids = (rows: { event: { documentId: string } }[] | null) =>
  rows?.map((row) => row.event.documentId) ?? null;

describe('embedded change log: the rows this connection committed, kept for the tail', () => {
  it('hands over the committed rows as appended, without reading the table', async () => {
    const { db, log, commit } = setUp();
    log.keepOwnRows(true);
    await commit([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    const fromTable = log.after(0, 10);
    // Gone from the table, still handed over: they come from memory.
    db.exec('DELETE FROM changes');
    const own = log.takeOwnAfter(0);
    expect(own?.map((row) => row.seq)).to.deep.equal([1, 2, 3]);
    expect(own?.map((row) => ({ ...row.event }))).to.deep.equal(fromTable.map((row) => ({ ...row.event })));
    expect(own?.map((row) => row.key)).to.deep.equal(fromTable.map((row) => row.key));
    expect(log.ownRowsLeft).to.equal(false);
    expect(log.takeOwnAfter(3)).to.equal(null);
  });

  it('keeps nothing while the tail does not run', async () => {
    const { log, commit } = setUp();
    await commit([{ id: 'a' }]);
    expect(log.takeOwnAfter(0)).to.equal(null);
    log.keepOwnRows(true);
    await commit([{ id: 'b' }]);
    log.keepOwnRows(false);
    expect(log.takeOwnAfter(1)).to.equal(null);
  });

  for (const [name, appends] of [
    ['in the middle of a group', [{ id: 'a' }, { id: 'x', fail: true }, { id: 'b' }]],
    ['at the end of a group', [{ id: 'a' }, { id: 'b' }, { id: 'x', fail: true }]],
    ['alone in a group', [{ id: 'x', fail: true }]],
  ] as const) {
    it(`forgets a row its savepoint rolled back ${name}`, async () => {
      const { log, commit } = setUp();
      log.keepOwnRows(true);
      const outcomes = await commit([...appends]);
      expect(outcomes.map((o) => o.status)).to.deep.equal(
        appends.map((a) => ('fail' in a ? 'rejected' : 'fulfilled')),
      );
      const kept = appends.filter((a) => !('fail' in a)).map((a) => a.id);
      expect(ids(log.after(0, 10))).to.deep.equal(kept);
      if (kept.length === 0) {
        expect(log.takeOwnAfter(0)).to.equal(null);
        return;
      }
      const own = log.takeOwnAfter(0);
      expect(ids(own)).to.deep.equal(kept);
      expect(own?.map((row) => row.seq)).to.deep.equal(log.after(0, 10).map((row) => row.seq));
    });
  }

  it("stops before another connection's row and hands over nothing past it", async () => {
    const { db, log, commit } = setUp();
    log.keepOwnRows(true);
    await commit([{ id: 'a' }]);
    // Another connection commits between two of this connection's groups.
    db.prepare(
      "INSERT INTO changes (scope, collection, type, doc_id, document, timestamp) VALUES ('prj_s:live', 'c', 'created', 'other', '{}', ?)",
    ).run(TS);
    await commit([{ id: 'b' }]);
    expect(ids(log.takeOwnAfter(0))).to.deep.equal(['a']);
    expect(log.ownRowsLeft).to.equal(true);
    // The gap: the tail reads the table from here, then skips what it read.
    expect(log.takeOwnAfter(1)).to.equal(null);
    expect(ids(log.after(1, 10))).to.deep.equal(['other', 'b']);
    expect(log.takeOwnAfter(3)).to.equal(null);
    expect(log.ownRowsLeft).to.equal(false);
  });

  it('hands over rows held back behind deferred commits only once they are released', async () => {
    const { log, commit } = setUp();
    log.keepOwnRows(true);
    await commit([{ id: 'a' }]);
    await commit([{ id: 'b' }, { id: 'c' }], false);
    expect(ids(log.takeOwnAfter(0))).to.deep.equal(['a']);
    expect(log.takeOwnAfter(1)).to.deep.equal([]);
    expect(log.ownRowsLeft).to.equal(true);
    log.release();
    expect(ids(log.takeOwnAfter(1))).to.deep.equal(['b', 'c']);
  });

  it('keeps rows up to its byte bound and drops them all past it', async () => {
    const row = (id: string): ChangeRow => ({
      seq: 0,
      scope: 'prj_s:live',
      collection: 'c',
      type: 'created',
      doc_id: id,
      document: `{"_id":"${id}"}`,
      timestamp: TS,
    });
    const two = ownRowBytes(row('a')) + ownRowBytes(row('b'));
    for (const [bound, kept] of [
      [two, ['a', 'b']],
      [two - 1, null],
    ] as const) {
      const { log, commit } = setUp({ ownRowsMaxBytes: bound });
      log.keepOwnRows(true);
      await commit([{ id: 'a' }, { id: 'b' }]);
      expect(ids(log.takeOwnAfter(0)), `bound ${bound}`).to.deep.equal(kept);
    }
  });
});
