/**
 * Is this MongoDB deployment usable by Folio? Decided from the server's own `hello` and
 * `buildInfo` replies, by a pure function so every case is unit-tested without a server.
 *
 * Folio needs multi-document transactions (a document and its version record commit together)
 * and change streams with pre- and post-images (the change feed): a replica set or a sharded
 * cluster, MongoDB 6.0 or later.
 */
import type { Db, Document } from 'mongodb';
import { StoreStartError } from '../../port.js';

export const MIN_SERVER_VERSION: readonly [major: number, minor: number] = [6, 0];

export type Topology = 'replicaSet' | 'sharded';
export type ServerProblem = 'standalone' | 'uninitiatedReplicaSet' | 'version' | 'notPrimary';

export type ServerCheck =
  | { ok: true; topology: Topology; version: string; versionArray: number[] | null }
  | { ok: false; problems: ServerProblem[]; message: string };

const WHY_REPLICA_SET =
  'Folio commits each document together with its version record in a multi-document transaction, ' +
  'and its change feed reads MongoDB change streams; MongoDB offers both only on a replica set or ' +
  'a sharded cluster.';

const HOW_REPLICA_SET =
  'A single-node replica set is enough: start mongod with --replSet rs0, run rs.initiate() once ' +
  '(mongosh --eval "rs.initiate()"), and set MONGODB_URI=mongodb://<host>:27017/?replicaSet=rs0. ' +
  'With Docker: docker run -d --name folio-mongo -p 27017:27017 mongo:7 --replSet rs0, then ' +
  'docker exec folio-mongo mongosh --eval ' +
  "\"rs.initiate({_id: 'rs0', members: [{_id: 0, host: 'localhost:27017'}]})\" " +
  '(the member must be named by an address the clients can reach: see docs/mongodb.md).';

/** `[major, minor, patch]` from buildInfo (`versionArray` when present, else `version`). */
export function parseServerVersion(buildInfo: Document): number[] | null {
  const array: unknown = buildInfo.versionArray;
  if (Array.isArray(array) && array.length >= 2 && array.every((n) => typeof n === 'number')) {
    return array.slice(0, 3) as number[];
  }
  const text: unknown = buildInfo.version;
  if (typeof text !== 'string') return null;
  const match = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (!match) return null;
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
}

function versionText(buildInfo: Document): string {
  return typeof buildInfo.version === 'string' ? buildInfo.version : 'an unknown version';
}

export function checkServer(hello: Document, buildInfo: Document): ServerCheck {
  const problems: ServerProblem[] = [];
  const lines: string[] = [];

  const version = parseServerVersion(buildInfo);
  const [minMajor, minMinor] = MIN_SERVER_VERSION;
  const [major = 0, minor = 0] = version ?? [];
  if (!version || major < minMajor || (major === minMajor && minor < minMinor)) {
    problems.push('version');
    lines.push(
      `Folio needs MongoDB ${minMajor}.${minMinor} or later (for change-stream pre- and post-images), ` +
        `but the server runs ${versionText(buildInfo)}. Upgrade MongoDB to ${minMajor}.${minMinor} or later.`,
    );
  }

  const sharded = hello.msg === 'isdbgrid';
  const replicaSet = typeof hello.setName === 'string' && hello.setName.length > 0;
  if (!sharded && !replicaSet) {
    if (hello.isreplicaset === true) {
      // Started with --replSet but rs.initiate() never ran.
      problems.push('uninitiatedReplicaSet');
      lines.push(
        'The MongoDB server was started as a replica set member but the replica set was never ' +
          'initiated. Run rs.initiate() once (mongosh --eval "rs.initiate()") and add ' +
          '?replicaSet=<name> to MONGODB_URI.',
      );
    } else {
      problems.push('standalone');
      lines.push(
        `MONGODB_URI points at a standalone MongoDB server, which Folio cannot use. ${WHY_REPLICA_SET} ` +
          HOW_REPLICA_SET,
      );
    }
  }

  const primary = hello.isWritablePrimary === true || hello.ismaster === true;
  if (replicaSet && !sharded && !primary) {
    // The driver sends start-up commands to the primary; a non-primary answers only when the
    // URI pins one host (directConnection=true), and every write would then fail.
    problems.push('notPrimary');
    const host = typeof hello.me === 'string' ? hello.me : 'the host in MONGODB_URI';
    const role =
      hello.secondary === true
        ? 'a secondary'
        : hello.arbiterOnly === true
          ? 'an arbiter'
          : 'not the primary';
    lines.push(
      `MONGODB_URI connects directly to ${host}, which is ${role} of replica set ${String(hello.setName)}; ` +
        'Folio writes, so it must reach the primary, whichever member that is after an election. ' +
        `Remove directConnection=true and name the set instead: ?replicaSet=${String(hello.setName)} ` +
        '(listing one or more members is enough; the driver finds the primary).',
    );
  }

  if (problems.length > 0) return { ok: false, problems, message: lines.join('\n') };
  return {
    ok: true,
    topology: sharded ? 'sharded' : 'replicaSet',
    version: versionText(buildInfo),
    versionArray: version,
  };
}

export class UnsupportedServerError extends StoreStartError {
  constructor(
    message: string,
    readonly problems: ServerProblem[],
  ) {
    super(message);
    this.name = 'UnsupportedServerError';
  }
}

/**
 * A read preference other than `primary` in the URI: Folio reads its own writes (a document
 * just written, a version just committed, a key just created), which a secondary may not have
 * yet. Refused at start-up rather than overridden, so the URI never says one thing while Folio
 * does another. Null when fine.
 */
export function readPreferenceProblem(mode: string | undefined): string | null {
  if (mode === undefined || mode === 'primary') return null;
  return (
    `MONGODB_URI sets readPreference=${mode}, but Folio reads its own writes and needs them from ` +
    'the primary (a secondary may not have a write yet). Remove readPreference from MONGODB_URI ' +
    '(or set readPreference=primary); to offload reads, add members for availability instead.'
  );
}

/** Run the check against a live server; returns the hello reply for callers that want more. */
export async function assertServerUsable(
  admin: Db,
): Promise<{ hello: Document; topology: Topology; version: number[] | null }> {
  const buildInfo = await admin.command({ buildInfo: 1 });
  // `hello` exists from 4.4.2 on; older servers answer the legacy `isMaster` with the same
  // fields, so they still get the version message rather than an unknown-command error.
  const hello = await admin.command({ hello: 1 }).catch(() => admin.command({ isMaster: 1 }));
  const verdict = checkServer(hello, buildInfo);
  if (!verdict.ok) throw new UnsupportedServerError(verdict.message, verdict.problems);
  return { hello, topology: verdict.topology, version: verdict.versionArray };
}
