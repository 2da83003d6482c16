/**
 * Whether the MongoDB user can do what Folio does, from `connectionStatus` with
 * `showPrivileges` (every privilege of every role the user holds, inherited ones included), so a
 * missing right stops start-up with its name instead of failing a write later.
 */
import type { Db, Document } from 'mongodb';
import { StoreStartError } from '../../port.js';

/** Reading and writing documents in collections the store creates: needed in every database. */
const DOCUMENT_ACTIONS = ['find', 'insert', 'update', 'remove', 'createCollection', 'createIndex'] as const;

/** In the system database: accounts, keys, sessions, counters, jobs, and the capability probe. */
export const SYSTEM_DB_ACTIONS = [...DOCUMENT_ACTIONS, 'dropCollection', 'listCollections'] as const;

/**
 * In every project database. Those are created as projects appear, so only a privilege on every
 * database (`{db: "", collection: ""}`) covers them. `changeStream` feeds SSE and webhooks;
 * `listIndexes` and `dropIndex` list and drop declared (and automatic) indexes.
 */
export const PROJECT_DB_ACTIONS = [
  ...DOCUMENT_ACTIONS,
  'listIndexes',
  'dropIndex',
  'listCollections',
  'changeStream',
] as const;

/** On the cluster (`{cluster: true}`): a restore checks that no project database holds data. */
export const CLUSTER_ACTIONS = ['listDatabases'] as const;

/**
 * Not needed to run, only to repair a collection dropped behind Folio's back (switching its pre-
 * and post-images on again): missing, it is a warning, not a refusal.
 */
export const REPAIR_ACTIONS = ['collMod'] as const;

interface Privilege {
  resource?: { db?: unknown; collection?: unknown; anyResource?: unknown; cluster?: unknown };
  actions?: unknown;
}

/** Whether `resource` is the cluster (or any resource). */
function coversCluster(resource: Privilege['resource']): boolean {
  return resource?.anyResource === true || resource?.cluster === true;
}

/** Whether `resource` covers every collection of database `db` (`null`: of every database). */
function coversDatabase(resource: Privilege['resource'], db: string | null): boolean {
  if (!resource) return false;
  if (resource.anyResource === true) return true;
  if (resource.collection !== '') return false;
  return resource.db === '' || (db !== null && resource.db === db);
}

export interface PrivilegeCheck {
  /** Folio cannot run without these (`"action on resource"` texts). */
  missing: string[];
  /** Folio runs without these but cannot repair dropped collections. */
  missingForRepair: string[];
}

/**
 * The privileges Folio lacks; nothing when nobody is authenticated (access control is off:
 * nothing to check).
 */
export function missingPrivileges(connectionStatus: Document, systemDb: string): PrivilegeCheck {
  const authInfo = (connectionStatus.authInfo ?? {}) as {
    authenticatedUsers?: unknown;
    authenticatedUserPrivileges?: unknown;
  };
  const users = Array.isArray(authInfo.authenticatedUsers) ? authInfo.authenticatedUsers : [];
  if (users.length === 0) return { missing: [], missingForRepair: [] };
  const privileges = (
    Array.isArray(authInfo.authenticatedUserPrivileges) ? authInfo.authenticatedUserPrivileges : []
  ) as Privilege[];
  const grants = (p: Privilege, action: string) => Array.isArray(p.actions) && p.actions.includes(action);
  const allowed = (action: string, db: string | null) =>
    privileges.some((p) => coversDatabase(p.resource, db) && grants(p, action));
  const missing: string[] = [];
  for (const action of SYSTEM_DB_ACTIONS) {
    if (!allowed(action, systemDb)) missing.push(`${action} on database ${systemDb}`);
  }
  for (const action of PROJECT_DB_ACTIONS) {
    if (!allowed(action, null)) missing.push(`${action} on every database`);
  }
  for (const action of CLUSTER_ACTIONS) {
    if (!privileges.some((p) => coversCluster(p.resource) && grants(p, action))) {
      missing.push(`${action} on the cluster`);
    }
  }
  const missingForRepair = REPAIR_ACTIONS.filter((action) => !allowed(action, null)).map(
    (action) => `${action} on every database`,
  );
  return { missing, missingForRepair };
}

const GRANT =
  'Grant the roles readWriteAnyDatabase and dbAdminAnyDatabase (or a custom role with these actions ' +
  'on {db: "", collection: ""}, and listDatabases on {cluster: true}); see docs/mongodb.md.';

export function privilegesMessage(missing: readonly string[]): string {
  return `The MongoDB user in MONGODB_URI lacks privileges Folio needs: ${missing.join(', ')}. ${GRANT}`;
}

export function repairPrivilegesWarning(missing: readonly string[]): string {
  return (
    `The MongoDB user in MONGODB_URI lacks ${missing.join(', ')}: Folio runs, but cannot switch ` +
    `change-stream pre- and post-images back on for a collection dropped behind its back. ${GRANT}`
  );
}

/**
 * Refuse to start, naming what is missing, when the user cannot do everything Folio does; warn
 * when it could not repair a dropped collection.
 */
export async function assertPrivileges(
  admin: Db,
  systemDb: string,
  warn: (message: string) => void,
): Promise<void> {
  const status = await admin.command({ connectionStatus: 1, showPrivileges: true });
  const { missing, missingForRepair } = missingPrivileges(status, systemDb);
  if (missing.length > 0) throw new StoreStartError(privilegesMessage(missing));
  if (missingForRepair.length > 0) warn(repairPrivilegesWarning(missingForRepair));
}
