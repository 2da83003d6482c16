/**
 * Group commit on SQLite: commits arriving together share one transaction (one sync), yet each
 * succeeds, reports or fails on its own; the embedded store syncs every commit by default.
 */

import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { newId } from '../../src/ids.js';
import { GroupCommit } from '../../src/store/embedded/documents/groupCommit.js';
import { createEmbeddedStore } from '../../src/store/embedded/index.js';
import type { ChangeEvent, ChangeSubscription } from '../../src/store/port.js';
import { firstVersion, nextVersion, putWrite } from './fixtures.js';

/** A database of one table `t (k, v)`, and a commit body that inserts a row and refuses v < 0. */
function keyValueTable(
  file: string,
  extra = '',
): {
  db: Database.Database;
  insertOrRefuse: (row: { k: string; v: number }) => string;
} {
  const db = new Database(file);
  db.exec(`CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER);${extra}`);
  const insert = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
  return {
    db,
    insertOrRefuse: ({ k, v }) => {
      insert.run(k, v);
      if (v < 0) throw new Error(`refused ${k}`);
      return k;
    },
  };
}

describe('embedded store: group commit and durability', () => {
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'folio-group-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('runs endOfGroup once per group inside it; without isolation one failure fails the whole group', async () => {
    const { db, insertOrRefuse } = keyValueTable(join(dir, 'g.db'), ' CREATE TABLE ends (n INTEGER)');
    let ends = 0;
    const group = new GroupCommit(
      db,
      insertOrRefuse,
      {
        afterCommit: () => {},
        beforeDeferred: () => {},
        endOfGroup: () => {
          ends += 1;
          db.prepare('INSERT INTO ends (n) VALUES (?)').run(ends);
        },
      },
      { isolated: false },
    );
    expect(await Promise.all([group.commit({ k: 'a', v: 1 }), group.commit({ k: 'b', v: 2 })])).to.deep.equal(
      ['a', 'b'],
    );
    expect(ends).to.equal(1);
    const failed = await Promise.allSettled([
      group.commit({ k: 'c', v: 3 }),
      group.commit({ k: 'd', v: -1 }),
    ]);
    expect(failed.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    expect(db.prepare('SELECT k FROM t ORDER BY k').pluck().all()).to.deep.equal(['a', 'b']);
    expect(db.prepare('SELECT count(*) FROM ends').pluck().get()).to.equal(1);
    db.close();
  });

  it('commits what arrives together in one transaction, each commit in its own savepoint', async () => {
    const { db, insertOrRefuse } = keyValueTable(join(dir, 'g.db'));
    let flushed = 0;
    const group = new GroupCommit(db, insertOrRefuse, {
      afterCommit: () => {
        flushed += 1;
      },
      beforeDeferred: () => {},
    });
    const results = await Promise.allSettled([
      group.commit({ k: 'a', v: 1 }),
      group.commit({ k: 'b', v: -1 }),
      group.commit({ k: 'a', v: 2 }),
      group.commit({ k: 'c', v: 3 }),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect(group.groups, 'one group, one sync').to.equal(1);
    expect(flushed).to.equal(1);
    // The refused commits left nothing behind; the others are in.
    expect(db.prepare('SELECT k, v FROM t ORDER BY k').all()).to.deep.equal([
      { k: 'a', v: 1 },
      { k: 'c', v: 3 },
    ]);
    // Commits made after the group ran form a group of their own.
    await group.commit({ k: 'd', v: 4 });
    expect(group.groups).to.equal(2);
    db.close();
  });

  it('optimistic: no savepoints while every commit succeeds; one that throws makes the group run again, each commit in its own savepoint', async () => {
    const { db, insertOrRefuse } = keyValueTable(join(dir, 'o.db'));
    const applied: string[] = [];
    let groupsStarted = 0;
    const group = new GroupCommit(
      db,
      (row: { k: string; v: number }) => {
        applied.push(row.k);
        return insertOrRefuse(row);
      },
      {
        beforeGroup: () => {
          groupsStarted += 1;
        },
        afterCommit: () => {},
        beforeDeferred: () => {},
      },
      { optimistic: true },
    );
    expect(await Promise.all([group.commit({ k: 'a', v: 1 }), group.commit({ k: 'b', v: 2 })])).to.deep.equal(
      ['a', 'b'],
    );
    expect(applied, 'each commit applied once').to.deep.equal(['a', 'b']);
    expect(groupsStarted).to.equal(1);
    applied.length = 0;
    const results = await Promise.allSettled([
      group.commit({ k: 'c', v: 3 }),
      group.commit({ k: 'd', v: -1 }),
      group.commit({ k: 'e', v: 5 }),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    // The first run stopped at the refusal and rolled back; the second ran every commit.
    expect(applied).to.deep.equal(['c', 'd', 'c', 'd', 'e']);
    expect(groupsStarted, 'beforeGroup again before the second run').to.equal(3);
    expect(group.groups, 'still one group, one commit').to.equal(2);
    expect(db.prepare('SELECT k FROM t ORDER BY k').pluck().all()).to.deep.equal(['a', 'b', 'c', 'e']);
    db.close();
  });

  it('optimistic: a group that fails outside its commits (endOfGroup) is not run a second time', async () => {
    const db = new Database(join(dir, 'p.db'));
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY)');
    let runs = 0;
    const group = new GroupCommit(
      db,
      (k: string) => {
        runs += 1;
        return db.prepare('INSERT INTO t (k) VALUES (?)').run(k);
      },
      {
        beforeGroup: () => {},
        afterCommit: () => {},
        beforeDeferred: () => {},
        endOfGroup: () => {
          throw new Error('end of group refused');
        },
      },
      { optimistic: true },
    );
    const results = await Promise.allSettled([group.commit('x'), group.commit('y')]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    expect(runs, 'applied once each: a failure outside the commits is not retried').to.equal(2);
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).to.equal(0);
    db.close();
  });

  it('documents: a commit a unique index refuses in the middle of a group leaves the others whole (rows, versions, events)', async () => {
    const store = createEmbeddedStore({ dataDir: join(dir, 'unique'), eventRetentionMs: 60_000 });
    await store.init();
    try {
      const scope = { projectId: newId('prj'), env: 'test' as const };
      await store.indexes.create(
        scope,
        'u',
        { name: 'email_1', fields: [{ path: 'email', order: 1 }], unique: true },
        10,
      );
      const before = firstVersion({ email: 'a@x.io' });
      await store.documents.commit(scope, 'u', [putWrite(before)]);
      const seqBefore = Number(store.db.prepare('SELECT max(seq) FROM changes').pluck().get());
      const updated = nextVersion(before, { email: 'b@x.io' });
      const refused = firstVersion({ email: 'b@x.io' });
      const third = firstVersion({ email: 'c@x.io' });
      const results = await Promise.allSettled([
        store.documents.commit(scope, 'u', [putWrite(updated)]),
        store.documents.commit(scope, 'u', [putWrite(refused)]),
        store.documents.commit(scope, 'u', [putWrite(third)]),
      ]);
      expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
      expect(store.documents.commitGroups.groups, 'the three in one group').to.equal(2);
      expect(await store.documents.get(scope, 'u', updated._id)).to.deep.equal(updated);
      expect(await store.documents.get(scope, 'u', third._id)).to.deep.equal(third);
      expect(await store.documents.get(scope, 'u', refused._id)).to.equal(null);
      expect(
        (await store.documents.listVersions(scope, 'u', updated._id)).map((v) => v.version),
      ).to.deep.equal([2, 1]);
      expect(await store.documents.listVersions(scope, 'u', refused._id)).to.deep.equal([]);
      // One event each for the two that landed, on consecutive seqs (no gap from the rollback).
      const events = store.db
        .prepare('SELECT seq, doc_id, type FROM changes WHERE seq > ? ORDER BY seq')
        .all(seqBefore);
      expect(events).to.deep.equal([
        { seq: seqBefore + 1, doc_id: updated._id, type: 'updated' },
        { seq: seqBefore + 2, doc_id: third._id, type: 'created' },
      ]);
    } finally {
      await store.close();
    }
  });

  it('fails every commit of a group whose own commit fails, and writes none of them', async () => {
    const db = new Database(join(dir, 'h.db'));
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY)');
    const group = new GroupCommit(db, (k: string) => db.prepare('INSERT INTO t (k) VALUES (?)').run(k), {
      afterCommit: () => {},
      beforeDeferred: () => {},
    });
    // A second connection holding the write lock makes the group's BEGIN IMMEDIATE fail.
    const other = new Database(join(dir, 'h.db'), { timeout: 0 });
    other.exec('BEGIN IMMEDIATE');
    db.pragma('busy_timeout = 0');
    const results = await Promise.allSettled([group.commit('x'), group.commit('y')]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    other.exec('ROLLBACK');
    expect(db.prepare('SELECT count(*) AS n FROM t').get()).to.deep.equal({ n: 0 });
    other.close();
    db.close();
  });

  it('commits a group of deferred commits without its sync, and any group holding a durable one with it', async () => {
    const db = new Database(join(dir, 'd.db'));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY)');
    const hooks: string[] = [];
    const group = new GroupCommit(
      db,
      // What each commit's body sees: the connection's synchronous level during its transaction.
      (k: string) => {
        db.prepare('INSERT INTO t (k) VALUES (?)').run(k);
        return Number(db.pragma('synchronous', { simple: true }));
      },
      {
        afterCommit: (durable) => hooks.push(durable ? 'durable' : 'deferred'),
        beforeDeferred: () => hooks.push('before deferred'),
      },
    );
    // Deferred alone: NORMAL (1) for that one transaction, FULL (2) again after it.
    expect(await Promise.all([group.commit('a', false), group.commit('b', false)])).to.deep.equal([1, 1]);
    expect(db.pragma('synchronous', { simple: true })).to.equal(2);
    // One durable commit in the group: the whole group syncs.
    expect(await Promise.all([group.commit('c', false), group.commit('d', true)])).to.deep.equal([2, 2]);
    expect(await group.commit('e')).to.equal(2);
    expect(hooks).to.deep.equal(['before deferred', 'deferred', 'durable', 'durable']);
    expect({ groups: group.groups, durable: group.durableGroups }).to.deep.equal({ groups: 3, durable: 2 });
    db.close();

    // A connection that never syncs on commit has nothing to defer: every group is "durable".
    const normal = new Database(join(dir, 'n.db'));
    normal.pragma('journal_mode = WAL');
    normal.pragma('synchronous = NORMAL');
    const seen: boolean[] = [];
    const plain = new GroupCommit(normal, () => Number(normal.pragma('synchronous', { simple: true })), {
      afterCommit: (durable) => seen.push(durable),
      beforeDeferred: () => seen.push(false),
    });
    expect(await plain.commit('x', false)).to.equal(1);
    expect(seen).to.deep.equal([true]);
    normal.close();
  });

  it('holds a deferred commit’s events back from live subscribers and history reads until sync()', async () => {
    const store = createEmbeddedStore({ dataDir: join(dir, 'held'), eventRetentionMs: 60_000 });
    await store.init();
    try {
      const scope = { projectId: newId('prj'), env: 'test' as const };
      const live = store.changes.watch(scope, 'c');
      await live.ready;
      await store.documents.commit(scope, 'c', [putWrite(firstVersion({ n: 0 }))]);
      const start = (await nextEvent(live, 2000))?.token;
      expect(start).to.be.a('string');
      const before = store.documents.commitGroups;
      const docs = Array.from({ length: 5 }, (_, n) => firstVersion({ n: n + 1 }));
      for (const doc of docs) {
        const result = await store.documents.commit(scope, 'c', [putWrite(doc)], { durable: false });
        expect(result.ok).to.equal(true);
      }
      // Applied (a read sees it) but not published, live or read back from the log.
      expect(await store.documents.count(scope, 'c', {})).to.equal(6);
      expect(await nextEvent(live, 100)).to.equal(null);
      const history = store.changes.watch(scope, 'c', { after: start });
      await history.ready;
      expect(await nextEvent(history, 100)).to.equal(null);
      expect(store.documents.commitGroups.durable, 'no sync yet').to.equal(before.durable);

      await store.documents.sync();
      expect(store.documents.commitGroups.durable - before.durable, 'one sync for the five').to.equal(1);
      for (const sub of [live, history]) {
        const ids: Array<string | undefined> = [];
        for (let i = 0; i < 5; i++) ids.push((await nextEvent(sub, 2000))?.document._id);
        expect(ids).to.deep.equal(docs.map((d) => d._id));
        sub.close();
      }
      // Nothing owed: sync() commits nothing.
      await store.documents.sync();
      expect(store.documents.commitGroups.durable - before.durable).to.equal(1);
    } finally {
      await store.close();
    }
  });

  it('syncs every commit by default (synchronous=FULL), NORMAL only when configured', async () => {
    for (const [synchronous, expected] of [
      [undefined, 2],
      ['full', 2],
      ['normal', 1],
    ] as const) {
      const store = createEmbeddedStore({
        dataDir: join(dir, String(synchronous)),
        eventRetentionMs: 60_000,
        ...(synchronous ? { synchronous } : {}),
      });
      await store.init();
      expect(store.db.pragma('synchronous', { simple: true }), String(synchronous)).to.equal(expected);
      await store.close();
    }
  });

  it('keeps a group’s savepoint journals in memory: a group of creates writes little more than its WAL frames', async function () {
    // Write syscalls and bytes of this process, Linux only.
    const io = () => {
      const text = readFileSync('/proc/self/io', 'utf8');
      return { calls: Number(/syscw: (\d+)/.exec(text)?.[1]), bytes: Number(/wchar: (\d+)/.exec(text)?.[1]) };
    };
    if (!existsSync('/proc/self/io')) this.skip();
    const store = createEmbeddedStore({ dataDir: join(dir, 'journal'), eventRetentionMs: 60_000 });
    await store.init();
    try {
      expect(store.db.pragma('temp_store', { simple: true }), 'MEMORY').to.equal(2);
      const scope = { projectId: newId('prj'), env: 'test' as const };
      const text = 'x'.repeat(1000);
      const group = () =>
        Promise.all(
          Array.from({ length: 64 }, (_, i) =>
            store.documents.commit(scope, 'c', [putWrite(firstVersion({ i, text }))]),
          ),
        );
      await group();
      const before = io();
      await group();
      const after = io();
      const perCreate = {
        calls: (after.calls - before.calls) / 64,
        bytes: (after.bytes - before.bytes) / 64,
      };
      // Measured: 3 calls and 6 KiB per create in memory; 25 calls and 51 KiB with the journals
      // spilled to temporary files (a 1 KB document is stored three times: row, version, event).
      expect(perCreate.calls, JSON.stringify(perCreate)).to.be.below(8);
      expect(perCreate.bytes, JSON.stringify(perCreate)).to.be.below(16 * 1024);
    } finally {
      await store.close();
    }
  });

  it('gives each of many concurrent commits its own answer: one create of an id wins, the rest conflict', async () => {
    const store = createEmbeddedStore({ dataDir: join(dir, 'race'), eventRetentionMs: 60_000 });
    await store.init();
    try {
      const scope = { projectId: newId('prj'), env: 'test' as const };
      const same = firstVersion({ n: 0 });
      const others = Array.from({ length: 40 }, (_, n) => firstVersion({ n }));
      const results = await Promise.all([
        ...Array.from({ length: 10 }, () => store.documents.commit(scope, 'c', [putWrite(same)])),
        ...others.map((doc) => store.documents.commit(scope, 'c', [putWrite(doc)])),
      ]);
      expect(results.slice(0, 10).filter((r) => r.ok)).to.have.length(1);
      expect(results.slice(10).every((r) => r.ok)).to.equal(true);
      expect(await store.documents.count(scope, 'c', {})).to.equal(41);
    } finally {
      await store.close();
    }
  });
});

/** The subscription's next event, or null if none comes within `ms`. */
async function nextEvent(sub: ChangeSubscription, ms: number): Promise<ChangeEvent | null> {
  const deadline = Date.now() + ms;
  for (;;) {
    const event = sub.take();
    if (event) return event;
    if (Date.now() > deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
